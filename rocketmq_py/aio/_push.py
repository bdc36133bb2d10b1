"""The asyncio :class:`PushConsumer`: :class:`rocketmq_py.PushConsumer` hosted on the asyncio loop."""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Mapping
from typing import Any

from rocketmq_py._client._config import ClientConfig
from rocketmq_py.aio._client import AioClient
from rocketmq_py.consumer._allocate import AllocateStrategy
from rocketmq_py.consumer._flow import (
    CONSUME_CONCURRENCY,
    CONSUME_MESSAGE_BATCH_MAX_SIZE,
    CONSUME_TIMEOUT_MS,
    PERSIST_CONSUMER_OFFSET_INTERVAL_MS,
    PULL_BATCH_SIZE,
    PULL_MAX_IDLE_TIME_MS,
    REBALANCE_INTERVAL_MS,
    SUSPEND_CURRENT_QUEUE_TIME_MS,
    FlowLimits,
)
from rocketmq_py.consumer._pop_rules import POP_BATCH_NUMS, POP_INVISIBLE_TIME_MS
from rocketmq_py.consumer._push import Listener, PopQueueStatistics, QueueStatistics, RebalanceListener
from rocketmq_py.consumer._push import PushConsumer as AsyncPushConsumer
from rocketmq_py.hooks import Hook
from rocketmq_py.protocol import (
    ConsumeFromWhere,
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    MessageExt,
    MessageModel,
    MessageQueue,
)

__all__ = ["PushConsumer"]


class PushConsumer(AioClient[AsyncPushConsumer]):
    """Consumes topics with a listener, from asyncio code (Java ``DefaultMQPushConsumer``).

    An ``async def`` listener is an asyncio coroutine run on the consumer's loop (it may use any
    asyncio library); a plain function runs in a worker thread::

        async def handle(msgs: list[MessageExt]) -> None:
            await db.insert_many(msgs)

        consumer = PushConsumer("my-group", namesrv="127.0.0.1:9876", listener=handle)
        consumer.subscribe("orders", "TagA || TagB")
        async with consumer:
            await stop.wait()

    A consume timeout or a shutdown cancels a running listener task and waits for it to end.
    ``on_assigned`` / ``on_revoked`` of a rebalance listener may be ``async def`` too (asyncio).

    Args: as :class:`rocketmq_py.PushConsumer`.
    """

    def __init__(
        self,
        group: str,
        *,
        namesrv: str | None = None,
        namespace: str | None = None,
        listener: Listener | None = None,
        strategy: str | AllocateStrategy = "AVG",
        message_model: MessageModel | str = MessageModel.CLUSTERING,
        consume_from_where: ConsumeFromWhere | str = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        consume_timestamp: str | None = None,
        consume_concurrency: int = CONSUME_CONCURRENCY,
        consume_batch_max_size: int = CONSUME_MESSAGE_BATCH_MAX_SIZE,
        pull_batch_size: int = PULL_BATCH_SIZE,
        max_reconsume_times: int | None = None,
        consume_timeout: float = CONSUME_TIMEOUT_MS / 1000,
        flow_limits: FlowLimits | None = None,
        rebalance_interval: float = REBALANCE_INTERVAL_MS / 1000,
        persist_interval: float = PERSIST_CONSUMER_OFFSET_INTERVAL_MS / 1000,
        orderly: bool = False,
        suspend_current_queue_time: float = SUSPEND_CURRENT_QUEUE_TIME_MS / 1000,
        rebalance_listener: RebalanceListener | None = None,
        handoff_timeout: float = 5.0,
        handoff_delay: float = 1.0,
        pull_max_idle_time: float = PULL_MAX_IDLE_TIME_MS / 1000,
        offsets_dir: str | None = None,
        hooks: Iterable[Hook] = (),
        enable_trace: bool = False,
        trace_topic: str | None = None,
        client_rebalance: bool = True,
        pop_invisible_time: float = POP_INVISIBLE_TIME_MS / 1000,
        pop_batch_nums: int = POP_BATCH_NUMS,
        config: ClientConfig | None = None,
        **client_options: Any,
    ) -> None:
        super().__init__(
            AsyncPushConsumer(
                group,
                namesrv=namesrv,
                namespace=namespace,
                listener=None if listener is None else self._on_loop(listener),
                strategy=strategy,
                message_model=message_model,
                consume_from_where=consume_from_where,
                consume_timestamp=consume_timestamp,
                consume_concurrency=consume_concurrency,
                consume_batch_max_size=consume_batch_max_size,
                pull_batch_size=pull_batch_size,
                max_reconsume_times=max_reconsume_times,
                consume_timeout=consume_timeout,
                flow_limits=flow_limits,
                rebalance_interval=rebalance_interval,
                persist_interval=persist_interval,
                orderly=orderly,
                suspend_current_queue_time=suspend_current_queue_time,
                rebalance_listener=None if rebalance_listener is None else _OnLoop(self, rebalance_listener),
                handoff_timeout=handoff_timeout,
                handoff_delay=handoff_delay,
                pull_max_idle_time=pull_max_idle_time,
                offsets_dir=offsets_dir,
                hooks=hooks,
                enable_trace=enable_trace,
                trace_topic=trace_topic,
                client_rebalance=client_rebalance,
                pop_invisible_time=pop_invisible_time,
                pop_batch_nums=pop_batch_nums,
                config=config,
                **client_options,
            )
        )

    def register_hook(self, hook: Hook) -> None:
        """Call ``hook`` around every consumption from now on (as the trio class's ``register_hook``)."""
        self._client.register_hook(hook)

    def subscribe(self, topic: str, expression: str = "*", *, expression_type: str = "TAG") -> None:
        """Consume ``topic`` (before ``start()``, or while running)."""
        self._client.subscribe(topic, expression, expression_type=expression_type)

    def register_listener(self, listener: Listener) -> None:
        """Set the listener (before opening, or while running)."""
        self._client.register_listener(self._on_loop(listener))

    @property
    def client_id(self) -> str:
        """``ip@instance``: how the brokers know this member."""
        return self._client.client_id

    def owned_queues(self) -> list[MessageQueue]:
        """The queues this member currently pulls, sorted."""
        return self._client.owned_queues()

    def statistics(self) -> list[QueueStatistics]:
        """Per owned queue: cache, flow control, lock, pull/consume times and the committed offset."""
        return self._client.statistics()

    def pop_statistics(self) -> list[PopQueueStatistics]:
        """Per queue this member pops (POP consumption; empty otherwise): unacknowledged and popped
        counts and the last pop time, in queue order."""
        return self._client.pop_statistics()

    async def rebalance(self) -> None:
        """Rebalance every subscribed topic now."""
        await self._call(self._client.rebalance)

    @property
    def broadcasting(self) -> bool:
        """Every member consumes every queue (BROADCASTING)."""
        return self._client.broadcasting

    @property
    def consumed(self) -> int:
        """Messages consumed successfully so far."""
        return self._client.consumed

    @property
    def failed(self) -> int:
        """Messages whose listener call failed so far (each delivery counted)."""
        return self._client.failed

    def running_info(self) -> ConsumerRunningInfo:
        """What ``mqadmin consumerStatus`` shows: properties, subscriptions, per-queue state."""
        return self._client.running_info()

    async def reset_offsets(self, topic: str, offsets: Mapping[MessageQueue, int]) -> None:
        """Restart the given queues of ``topic`` from these offsets (also written to the broker)."""
        await self._call(self._client.reset_offsets, topic, offsets)

    async def consume_directly(
        self, msg: MessageExt, broker_name: str | None
    ) -> ConsumeMessageDirectlyResult:
        """Hand one message to the listener once, as the broker's CONSUME_MESSAGE_DIRECTLY does."""
        return await self._call(self._client.consume_directly, msg, broker_name)


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
