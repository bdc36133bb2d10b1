"""The blocking :class:`LitePullConsumer`: :class:`rocketmq_py.LitePullConsumer` in a trio thread."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from os import PathLike
from typing import Any

import trio

from rocketmq_py._client._config import ClientConfig
from rocketmq_py.consumer._allocate import AllocateStrategy
from rocketmq_py.consumer._flow import (
    PULL_THRESHOLD_FOR_QUEUE,
    PULL_THRESHOLD_SIZE_FOR_QUEUE_MIB,
    REBALANCE_INTERVAL_MS,
)
from rocketmq_py.consumer._listener import is_async_listener
from rocketmq_py.consumer._lite_pull import (
    AUTO_COMMIT_INTERVAL_MS,
    CONSUME_MAX_SPAN,
    LITE_PULL_BATCH_SIZE,
    POLL_TIMEOUT_MS,
    PULL_THRESHOLD_FOR_ALL,
)
from rocketmq_py.consumer._lite_pull import LitePullConsumer as AsyncLitePullConsumer
from rocketmq_py.consumer._queue_watch import TOPIC_METADATA_CHECK_INTERVAL_MS, QueueChangeListener
from rocketmq_py.errors import StateError
from rocketmq_py.hooks import Hook
from rocketmq_py.protocol import ConsumeFromWhere, ConsumerRunningInfo, MessageExt, MessageModel, MessageQueue
from rocketmq_py.sync._facade import SyncClient
from rocketmq_py.sync._portal import PortalState

__all__ = ["LitePullConsumer"]


class LitePullConsumer(SyncClient[AsyncLitePullConsumer]):
    """Pulls topics on demand, blocking API (Java ``DefaultLitePullConsumer``)::

        with LitePullConsumer("my-group", namesrv="127.0.0.1:9876") as consumer:
            consumer.subscribe("orders")
            for msg in consumer:  # ends when the consumer is shut down
                handle(msg)

    Args: as :class:`rocketmq_py.LitePullConsumer`.
    """

    def __init__(
        self,
        group: str,
        *,
        namesrv: str | None = None,
        namespace: str | None = None,
        strategy: str | AllocateStrategy = "AVG",
        message_model: MessageModel | str = MessageModel.CLUSTERING,
        consume_from_where: ConsumeFromWhere | str = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        consume_timestamp: str | None = None,
        auto_commit: bool = True,
        auto_commit_interval: float = AUTO_COMMIT_INTERVAL_MS / 1000,
        pull_batch_size: int = LITE_PULL_BATCH_SIZE,
        pull_threshold_for_all: int = PULL_THRESHOLD_FOR_ALL,
        pull_threshold_for_queue: int = PULL_THRESHOLD_FOR_QUEUE,
        pull_threshold_size_for_queue_mib: int = PULL_THRESHOLD_SIZE_FOR_QUEUE_MIB,
        consume_max_span: int = CONSUME_MAX_SPAN,
        rebalance_interval: float = REBALANCE_INTERVAL_MS / 1000,
        offsets_dir: str | PathLike[str] | None = None,
        handoff_delay: float = 1.0,
        topic_metadata_check_interval: float = TOPIC_METADATA_CHECK_INTERVAL_MS / 1000,
        hooks: Iterable[Hook] = (),
        enable_trace: bool = False,
        trace_topic: str | None = None,
        config: ClientConfig | None = None,
        **client_options: Any,
    ) -> None:
        super().__init__(
            AsyncLitePullConsumer(
                group,
                namesrv=namesrv,
                namespace=namespace,
                strategy=strategy,
                message_model=message_model,
                consume_from_where=consume_from_where,
                consume_timestamp=consume_timestamp,
                auto_commit=auto_commit,
                auto_commit_interval=auto_commit_interval,
                pull_batch_size=pull_batch_size,
                pull_threshold_for_all=pull_threshold_for_all,
                pull_threshold_for_queue=pull_threshold_for_queue,
                pull_threshold_size_for_queue_mib=pull_threshold_size_for_queue_mib,
                consume_max_span=consume_max_span,
                rebalance_interval=rebalance_interval,
                offsets_dir=offsets_dir,
                handoff_delay=handoff_delay,
                topic_metadata_check_interval=topic_metadata_check_interval,
                hooks=hooks,
                enable_trace=enable_trace,
                trace_topic=trace_topic,
                config=config,
                **client_options,
            )
        )

    def register_hook(self, hook: Hook) -> None:
        """Call ``hook`` around every consumption from now on (as the trio class's ``register_hook``)."""
        self._read(self._client.register_hook, hook)

    # --- configuration -----------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str = "*", *, expression_type: str = "TAG") -> None:
        """Consume ``topic`` with the group (rebalanced): ``"*"``, ``"TagA || TagB"`` or SQL92.

        Raises:
            StateError: :meth:`assign` was called (the two modes exclude each other).
        """
        self._read(self._client.subscribe, topic, expression, expression_type=expression_type)

    def assign(
        self, queues: Iterable[MessageQueue], expression: str | None = None, *, expression_type: str = "TAG"
    ) -> None:
        """Pull exactly ``queues`` (no rebalance), filtered by ``expression``; replaces the previous assignment.

        As :meth:`rocketmq_py.LitePullConsumer.assign`: ``expression`` applies to every topic among
        ``queues``; ``None`` keeps each topic's expression (at first ``"*"``).

        Raises:
            StateError: :meth:`subscribe` was called (the two modes exclude each other).
        """
        self._read(self._client.assign, list(queues), expression, expression_type=expression_type)

    def register_queue_change_listener(self, topic: str, listener: QueueChangeListener) -> None:
        """Call ``listener(topic, queues)`` with ``topic``'s readable queues now and when they change.

        As :meth:`rocketmq_py.LitePullConsumer.register_queue_change_listener`. A plain function
        runs in a worker thread, so it may block and call this consumer's methods (``assign``);
        an ``async def`` runs in the consumer's trio thread.
        """
        self._read(self._client.register_queue_change_listener, topic, _in_worker_thread(listener))

    @property
    def client_id(self) -> str:
        """``ip@instance``: how the brokers know this member."""
        return self._read(lambda: self._client.client_id)

    @property
    def broadcasting(self) -> bool:
        """Every member consumes every queue (BROADCASTING)."""
        return self._client.broadcasting

    def assignment(self) -> frozenset[MessageQueue]:
        """The queues this consumer pulls now (after the last rebalance, or as assigned)."""
        return self._read(self._client.assignment)

    def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        """The readable queues of ``topic`` from its route, sorted (for :meth:`assign`)."""
        return self._call(self._client.fetch_message_queues, topic)

    def rebalance(self) -> None:
        """Rebalance every subscribed topic now (errors are logged; the next round retries)."""
        self._call(self._client.rebalance)

    # --- polling -----------------------------------------------------------------------------

    def poll(self, timeout: float = POLL_TIMEOUT_MS / 1000) -> list[MessageExt]:
        """The next batch of one queue (at most ``pull_batch_size`` messages), in offset order.

        Blocks up to ``timeout`` seconds for messages; returns ``[]`` when none came.
        """
        return self._call(self._client.poll, timeout)

    def getmany(
        self, max_records: int | None = None, timeout: float = POLL_TIMEOUT_MS / 1000
    ) -> dict[MessageQueue, list[MessageExt]]:
        """Everything buffered (at most ``max_records`` messages), by queue, as aiokafka's ``getmany``."""
        return self._call(self._client.getmany, max_records, timeout)

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

    # --- pause, seek -------------------------------------------------------------------------

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        """Stop pulling ``queues`` and keep their buffered messages from poll until resumed."""
        self._call_sync(self._client.pause, list(queues))

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        """Undo :meth:`pause`."""
        self._call_sync(self._client.resume, list(queues))

    def paused(self) -> frozenset[MessageQueue]:
        """The queues paused now."""
        return self._read(self._client.paused)

    def seek(self, mq: MessageQueue, offset: int) -> None:
        """Pull ``mq`` from ``offset`` next; its buffered messages are discarded."""
        self._call_sync(self._client.seek, mq, offset)

    def seek_to_begin(self, mq: MessageQueue) -> None:
        """Seek to the queue's smallest offset (GET_MIN_OFFSET)."""
        self._call(self._client.seek_to_begin, mq)

    def seek_to_end(self, mq: MessageQueue) -> None:
        """Seek past the queue's last message (GET_MAX_OFFSET): only new messages follow."""
        self._call(self._client.seek_to_end, mq)

    def seek_to_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> None:
        """Seek to the first message stored at or after ``timestamp_ms`` (SEARCH_OFFSET_BY_TIMESTAMP)."""
        self._call(self._client.seek_to_timestamp, mq, timestamp_ms)

    def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """The offset of the first message of ``mq`` stored at or after ``timestamp_ms``; the max offset if none.

        As :meth:`rocketmq_py.LitePullConsumer.offset_for_timestamp`.
        """
        return self._call(self._client.offset_for_timestamp, mq, timestamp_ms)

    def running_info(self) -> ConsumerRunningInfo:
        """What ``mqadmin consumerStatus`` shows: properties, subscriptions, per-queue state."""
        return self._call_sync(self._client.running_info)

    def reset_offsets(self, topic: str, offsets: Mapping[MessageQueue, int]) -> None:
        """Seek the given assigned queues of ``topic`` to these offsets (also written to the broker)."""
        self._call(self._client.reset_offsets, topic, offsets)

    # --- offsets -----------------------------------------------------------------------------

    def committed(self, mq: MessageQueue) -> int:
        """The group's committed offset of ``mq`` as stored (broker, or local file); -1 if none."""
        return self._call(self._client.committed, mq)

    def commit(self, offsets: Mapping[MessageQueue, int] | None = None) -> None:
        """Commit now, synchronously (default: every assigned queue's consumed offset).

        As :meth:`rocketmq_py.LitePullConsumer.commit`.
        """
        self._call(self._client.commit, offsets)


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
