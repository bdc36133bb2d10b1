"""The hand-written parts of the asyncio clients; the generated classes (``_generated.py``) inherit them.

``scripts/gen_facades.py`` writes the constructors and the plain forwarding. What it cannot write
is here: a rebalance listener whose ``async def`` methods run on the asyncio loop, and the lite
pull consumer's async iteration and its putting back of a batch whose caller was cancelled.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any, Self

from rocketmq_py.aio._client import AioClient
from rocketmq_py.consumer._lite_pull import LitePullConsumer as TrioLitePullConsumer
from rocketmq_py.consumer._push import PushConsumer as TrioPushConsumer
from rocketmq_py.consumer._push import RebalanceListener
from rocketmq_py.errors import RocketMQError, StateError
from rocketmq_py.protocol import MessageExt, MessageQueue

__all__ = ["LitePullConsumerBase", "PushConsumerBase"]

log = logging.getLogger("rocketmq_py.aio")


class PushConsumerBase(AioClient[TrioPushConsumer]):
    """The asyncio :class:`~rocketmq_py.aio.PushConsumer`'s adapter of rebalance listeners."""

    def _rebalance_on_loop(self, listener: RebalanceListener) -> RebalanceListener:
        return _OnLoop(self, listener)


class _OnLoop:
    """A rebalance listener whose ``async def`` methods run on the asyncio loop."""

    def __init__(self, client: AioClient[Any], listener: RebalanceListener) -> None:
        self._client = client
        self._listener = listener

    def on_revoked(self, queues: list[MessageQueue]) -> Awaitable[None] | None:
        return self._forward("on_revoked", queues)

    def on_assigned(self, queues: list[MessageQueue]) -> Awaitable[None] | None:
        return self._forward("on_assigned", queues)

    def _forward(self, name: str, queues: list[MessageQueue]) -> Awaitable[None] | None:
        method = getattr(self._listener, name, None)
        if method is None:
            return None
        result: Awaitable[None] | None = self._client._on_loop(method)(queues)
        return result


class LitePullConsumerBase(AioClient[TrioLitePullConsumer]):
    """The asyncio :class:`~rocketmq_py.aio.LitePullConsumer`'s iteration, and what a cancelled
    ``poll`` / ``getmany`` / ``__anext__`` puts back."""

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> MessageExt:
        """The next message; iteration ends when the consumer is closed."""
        if self._guest is None and self._used:
            raise StopAsyncIteration
        try:
            return await self._call_keeping(self._unnext, self._client.__anext__)
        except StateError:
            if self._guest is None:  # closed meanwhile
                raise StopAsyncIteration from None
            raise

    # A batch taken by a call whose caller was cancelled (``asyncio.wait_for`` timing out as the
    # batch came) moved the consumed offset: it is put back, so the next call returns it again.

    def _unpoll(self, msgs: list[MessageExt]) -> None:
        if msgs:
            first = msgs[0]
            self._seek_back(MessageQueue(first.topic, first.broker_name, first.queue_id), first.queue_offset)

    def _ungetmany(self, batches: dict[MessageQueue, list[MessageExt]]) -> None:
        for mq, msgs in batches.items():
            if msgs:
                self._seek_back(mq, msgs[0].queue_offset)

    def _unnext(self, msg: MessageExt) -> None:
        self._client._pending.appendleft(msg)

    def _seek_back(self, mq: MessageQueue, offset: int) -> None:
        try:
            self._client.seek(mq, offset)
        except RocketMQError as exc:  # e.g. the queue was rebalanced away meanwhile: its owner reads it
            log.info("%s: a cancelled poll's batch of %s not put back: %s", self._client.group, mq, exc)
