"""The hand-written parts of the blocking clients; the generated classes (``_generated.py``) inherit them.

``scripts/gen_facades.py`` writes the constructors and the plain forwarding. What it cannot write
is here: the lite pull consumer's iteration, and its queue-change listeners moved to a worker
thread (where they may block and call the consumer).
"""

from __future__ import annotations

from collections.abc import Iterator

import trio

from rocketmq_py.consumer._listener import is_async_listener
from rocketmq_py.consumer._lite_pull import LitePullConsumer as TrioLitePullConsumer
from rocketmq_py.consumer._queue_watch import QueueChangeListener
from rocketmq_py.errors import StateError
from rocketmq_py.protocol import MessageExt, MessageQueue
from rocketmq_py.sync._facade import SyncClient
from rocketmq_py.sync._portal import PortalState

__all__ = ["LitePullConsumerBase"]


class LitePullConsumerBase(SyncClient[TrioLitePullConsumer]):
    """The blocking :class:`~rocketmq_py.sync.LitePullConsumer`'s iteration and listener adapter."""

    def __iter__(self) -> Iterator[MessageExt]:
        return self

    def __next__(self) -> MessageExt:
        """The next message; iteration ends when the consumer is shut down."""
        try:
            return self._call(self._client.__anext__)
        except StopAsyncIteration:
            raise StopIteration from None
        except StateError:
            if self._portal.state in (PortalState.CLOSING, PortalState.CLOSED):
                raise StopIteration from None
            raise

    @staticmethod
    def _in_worker_thread(listener: QueueChangeListener) -> QueueChangeListener:
        """``listener`` as the trio consumer calls it: a plain function moves to a worker thread.

        There it may block, and call the blocking consumer (whose calls from the trio thread itself
        would deadlock and are refused).
        """
        if is_async_listener(listener):
            return listener

        async def in_thread(topic: str, queues: frozenset[MessageQueue]) -> None:
            await trio.to_thread.run_sync(listener, topic, queues, abandon_on_cancel=True)

        return in_thread
