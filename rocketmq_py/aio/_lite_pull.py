"""The asyncio :class:`LitePullConsumer`: :class:`rocketmq_py.LitePullConsumer` hosted on the asyncio loop."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from os import PathLike
from typing import Any, Self

from rocketmq_py._client._config import ClientConfig
from rocketmq_py.aio._client import AioClient
from rocketmq_py.consumer._allocate import AllocateStrategy
from rocketmq_py.consumer._flow import (
    PULL_THRESHOLD_FOR_QUEUE,
    PULL_THRESHOLD_SIZE_FOR_QUEUE_MIB,
    REBALANCE_INTERVAL_MS,
)
from rocketmq_py.consumer._lite_pull import (
    AUTO_COMMIT_INTERVAL_MS,
    CONSUME_MAX_SPAN,
    LITE_PULL_BATCH_SIZE,
    POLL_TIMEOUT_MS,
    PULL_THRESHOLD_FOR_ALL,
)
from rocketmq_py.consumer._lite_pull import LitePullConsumer as AsyncLitePullConsumer
from rocketmq_py.consumer._queue_watch import TOPIC_METADATA_CHECK_INTERVAL_MS, QueueChangeListener
from rocketmq_py.errors import RocketMQError, StateError
from rocketmq_py.hooks import Hook
from rocketmq_py.protocol import ConsumeFromWhere, ConsumerRunningInfo, MessageExt, MessageModel, MessageQueue

__all__ = ["LitePullConsumer"]

log = logging.getLogger("rocketmq_py.aio")


class LitePullConsumer(AioClient[AsyncLitePullConsumer]):
    """Pulls topics on demand from asyncio code (Java ``DefaultLitePullConsumer``)::

        async with LitePullConsumer("my-group", namesrv="127.0.0.1:9876") as consumer:
            consumer.subscribe("orders")
            async for msg in consumer:  # ends when the consumer is closed
                await handle(msg)

    Cancelling a task waiting in ``poll`` or ``getmany`` cancels the wait; messages not yet
    handed out stay buffered for the next call.

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
        self._client.register_hook(hook)

    # --- configuration -----------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str = "*", *, expression_type: str = "TAG") -> None:
        """Consume ``topic`` with the group (rebalanced): ``"*"``, ``"TagA || TagB"`` or SQL92."""
        self._client.subscribe(topic, expression, expression_type=expression_type)

    def assign(
        self, queues: Iterable[MessageQueue], expression: str | None = None, *, expression_type: str = "TAG"
    ) -> None:
        """Pull exactly ``queues`` (no rebalance), filtered by ``expression``; replaces the previous assignment.

        As :meth:`rocketmq_py.LitePullConsumer.assign`: ``expression`` applies to every topic among
        ``queues``; ``None`` keeps each topic's expression (at first ``"*"``).
        """
        self._client.assign(list(queues), expression, expression_type=expression_type)

    def register_queue_change_listener(self, topic: str, listener: QueueChangeListener) -> None:
        """Call ``listener(topic, queues)`` with ``topic``'s readable queues now and when they change.

        As :meth:`rocketmq_py.LitePullConsumer.register_queue_change_listener`. An ``async def``
        listener is an asyncio coroutine run on this loop; a plain function is called on the loop
        too (it should not block), so either may call this consumer's methods, e.g. ``assign``.
        """
        self._client.register_queue_change_listener(topic, self._on_loop(listener))

    @property
    def client_id(self) -> str:
        """``ip@instance``: how the brokers know this member."""
        return self._client.client_id

    @property
    def broadcasting(self) -> bool:
        """Every member consumes every queue (BROADCASTING)."""
        return self._client.broadcasting

    def assignment(self) -> frozenset[MessageQueue]:
        """The queues this consumer pulls now (after the last rebalance, or as assigned)."""
        return self._client.assignment()

    async def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        """The readable queues of ``topic`` from its route, sorted (for :meth:`assign`)."""
        return await self._call(self._client.fetch_message_queues, topic)

    async def rebalance(self) -> None:
        """Rebalance every subscribed topic now (errors are logged; the next round retries)."""
        await self._call(self._client.rebalance)

    # --- polling -----------------------------------------------------------------------------

    async def poll(self, timeout: float = POLL_TIMEOUT_MS / 1000) -> list[MessageExt]:  # noqa: ASYNC109
        """The next batch of one queue (at most ``pull_batch_size`` messages), in offset order."""
        return await self._call_keeping(self._unpoll, self._client.poll, timeout)

    async def getmany(
        self,
        max_records: int | None = None,
        timeout: float = POLL_TIMEOUT_MS / 1000,  # noqa: ASYNC109
    ) -> dict[MessageQueue, list[MessageExt]]:
        """Everything buffered (at most ``max_records`` messages), by queue, as aiokafka's ``getmany``."""
        return await self._call_keeping(self._ungetmany, self._client.getmany, max_records, timeout)

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

    # --- pause, seek -------------------------------------------------------------------------

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        """Stop pulling ``queues`` and keep their buffered messages from poll until resumed."""
        self._client.pause(list(queues))

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        """Undo :meth:`pause`."""
        self._client.resume(list(queues))

    def paused(self) -> frozenset[MessageQueue]:
        """The queues paused now."""
        return self._client.paused()

    def seek(self, mq: MessageQueue, offset: int) -> None:
        """Pull ``mq`` from ``offset`` next; its buffered messages are discarded."""
        self._client.seek(mq, offset)

    async def seek_to_begin(self, mq: MessageQueue) -> None:
        """Seek to the queue's smallest offset (GET_MIN_OFFSET)."""
        await self._call(self._client.seek_to_begin, mq)

    async def seek_to_end(self, mq: MessageQueue) -> None:
        """Seek past the queue's last message (GET_MAX_OFFSET): only new messages follow."""
        await self._call(self._client.seek_to_end, mq)

    async def seek_to_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> None:
        """Seek to the first message stored at or after ``timestamp_ms`` (SEARCH_OFFSET_BY_TIMESTAMP)."""
        await self._call(self._client.seek_to_timestamp, mq, timestamp_ms)

    async def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """The offset of the first message of ``mq`` stored at or after ``timestamp_ms``; the max offset if none.

        As :meth:`rocketmq_py.LitePullConsumer.offset_for_timestamp`.
        """
        return await self._call(self._client.offset_for_timestamp, mq, timestamp_ms)

    def running_info(self) -> ConsumerRunningInfo:
        """What ``mqadmin consumerStatus`` shows: properties, subscriptions, per-queue state."""
        return self._client.running_info()

    async def reset_offsets(self, topic: str, offsets: Mapping[MessageQueue, int]) -> None:
        """Seek the given assigned queues of ``topic`` to these offsets (also written to the broker)."""
        await self._call(self._client.reset_offsets, topic, offsets)

    # --- offsets -----------------------------------------------------------------------------

    async def committed(self, mq: MessageQueue) -> int:
        """The group's committed offset of ``mq`` as stored (broker, or local file); -1 if none."""
        return await self._call(self._client.committed, mq)

    async def commit(self, offsets: Mapping[MessageQueue, int] | None = None) -> None:
        """Commit now, synchronously."""
        await self._call(self._client.commit, offsets)
