"""The push consumer (concurrent consumption, clustering model), Java ``DefaultMQPushConsumer`` on trio.

``async with PushConsumer(group, namesrv=...) as consumer`` runs, under one nursery:

- the **rebalance loop**: at start, every ``rebalance_interval`` seconds and whenever a broker sends
  NOTIFY_CONSUMER_IDS_CHANGED. Per subscribed topic: the readable queues from the route, the
  group's client ids from a broker, both sorted, allocated by the strategy; queues no longer ours
  (or whose pull has been idle for 120 s) are dropped (pull stopped, offset persisted), new ones
  get a start offset (ConsumeFromWhere) and a pull loop. On any change the topic's subscription
  version moves and a heartbeat goes out before the new pulls;
- one **pull loop** per owned queue: long polling (the broker holds the pull 15 s), flow control
  from the ProcessQueue counters, FOUND messages cached and handed to the consume workers;
- ``consume_concurrency`` **consume workers** calling the listener; a failure (RECONSUME_LATER,
  an exception, or ``consume_timeout``) sends the message back to the broker (retry topic, next
  delay level), or re-sends it to ``%RETRY%group`` if that fails, or consumes it again in 5 s;
- the **offset persister**: every ``persist_interval`` seconds, and on drop and close.
"""

from __future__ import annotations

import enum
import inspect
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

import trio

from rocketmq_py._client._config import ClientConfig
from rocketmq_py._client._instance import ClientInstance
from rocketmq_py._transport._nursery import open_service_nursery
from rocketmq_py.consumer._allocate import AllocateStrategy, get_strategy, sort_consumers, sort_queues
from rocketmq_py.consumer._filter import MessageFilter
from rocketmq_py.consumer._flow import (
    BROKER_SUSPEND_MAX_TIME_MS,
    CONSUME_CONCURRENCY,
    CONSUME_MESSAGE_BATCH_MAX_SIZE,
    CONSUME_TIMEOUT_MS,
    CONSUMER_TIMEOUT_WHEN_SUSPEND_MS,
    MAX_RECONSUME_TIMES,
    PERSIST_CONSUMER_OFFSET_INTERVAL_MS,
    PULL_BATCH_SIZE,
    PULL_MAX_IDLE_TIME_MS,
    PULL_TIME_DELAY_WHEN_EXCEPTION_MS,
    REBALANCE_INTERVAL_MS,
    SEND_BACK_LOCAL_RETRY_DELAY_MS,
    FlowLimits,
    FlowVerdict,
    flow_control,
    retry_topic,
)
from rocketmq_py.consumer._offset_store import RemoteOffsetStore
from rocketmq_py.consumer._process_queue import ProcessQueue
from rocketmq_py.consumer._pull_result import (
    PullStatus,
    interpret_pull_response,
    next_pull_action,
    process_found_messages,
    pull_error_delay_ms,
    pull_sys_flag,
    restore_retry_topic,
    set_consume_start_time,
)
from rocketmq_py.consumer._start_offset import StartFrom, compute_pull_from_where
from rocketmq_py.errors import ClientError, RocketMQError, StateError
from rocketmq_py.producer._validation import validate_group, validate_topic
from rocketmq_py.protocol import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    ExpressionType,
    Message,
    MessageExt,
    MessageModel,
    MessageQueue,
    PropertyKey,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    RemotingCommand,
    RequestCode,
    SubscriptionData,
    build_subscription_data,
    decode_messages,
    from_ext_fields,
)

__all__ = ["ConsumeStatus", "Listener", "PushConsumer", "QueueStatistics"]

log = logging.getLogger("rocketmq_py.consumer")

#: Java ``MixAll.CLIENT_INNER_PRODUCER_GROUP``: re-sends to the retry topic when send-back fails.
_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"


class ConsumeStatus(enum.Enum):
    """What a listener answers (Java ``ConsumeConcurrentlyStatus``); ``None`` counts as success."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


#: ``listener(messages)``: an async function, or a plain one (run in a worker thread).
Listener = Callable[[list[MessageExt]], "Awaitable[ConsumeStatus | None] | ConsumeStatus | None"]


@dataclass(slots=True)
class _Queue:
    mq: MessageQueue
    pq: ProcessQueue
    next_offset: int
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    flow: FlowVerdict | None = None


@dataclass(frozen=True, slots=True)
class QueueStatistics:
    """One owned queue, as :meth:`PushConsumer.statistics` reports it."""

    queue: MessageQueue
    cached_count: int
    cached_bytes: int
    max_span: int
    next_pull_offset: int
    committed_offset: int
    paused_by_flow_control: str | None
    last_pull_age: float
    last_consume_age: float


class PushConsumer:
    """Consumes topics with a listener; the group shares the queues (Java ``DefaultMQPushConsumer``).

    Args:
        group: the consumer group.
        namesrv: ``"host:port;host:port"``; default ``ROCKETMQ_NAMESRV``.
        listener: called with a list of messages (at most ``consume_batch_max_size``).
        strategy: allocation strategy name (``"AVG"``, ``"AVG_BY_CIRCLE"``, ``"CONSISTENT_HASH"``)
            or an :class:`AllocateStrategy`.
        consume_from_where: where a queue without a committed offset starts.
        consume_timestamp: ``yyyyMMddHHmmss`` for CONSUME_FROM_TIMESTAMP (default: 30 min ago).
        consume_concurrency: messages (batches) being consumed at once (Java's 20 threads).
        max_reconsume_times: deliveries before the broker moves a message to ``%DLQ%group``.
        consume_timeout: seconds a listener call may take before it counts as a failure.
        flow_limits: per-queue (and topic) cache limits that pause pulling.
    """

    def __init__(
        self,
        group: str,
        *,
        namesrv: str | None = None,
        listener: Listener | None = None,
        strategy: str | AllocateStrategy = "AVG",
        message_model: MessageModel | str = MessageModel.CLUSTERING,
        consume_from_where: ConsumeFromWhere | str = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        consume_timestamp: str | None = None,
        consume_concurrency: int = CONSUME_CONCURRENCY,
        consume_batch_max_size: int = CONSUME_MESSAGE_BATCH_MAX_SIZE,
        pull_batch_size: int = PULL_BATCH_SIZE,
        max_reconsume_times: int = MAX_RECONSUME_TIMES,
        consume_timeout: float = CONSUME_TIMEOUT_MS / 1000,
        flow_limits: FlowLimits | None = None,
        rebalance_interval: float = REBALANCE_INTERVAL_MS / 1000,
        persist_interval: float = PERSIST_CONSUMER_OFFSET_INTERVAL_MS / 1000,
        config: ClientConfig | None = None,
        **client_options: Any,
    ) -> None:
        validate_group(group)
        message_model = MessageModel(message_model)
        if message_model is not MessageModel.CLUSTERING:
            raise ClientError("only the CLUSTERING message model is supported so far")
        self.group = group
        self.config = config or ClientConfig(**client_options)
        if namesrv is not None:
            self.config.namesrv = namesrv
        self.listener = listener
        self.strategy = get_strategy(strategy)
        self.message_model = message_model
        self.consume_from_where = ConsumeFromWhere(consume_from_where)
        self.consume_timestamp = consume_timestamp
        self.consume_concurrency = consume_concurrency
        self.consume_batch_max_size = max(1, consume_batch_max_size)
        self.pull_batch_size = pull_batch_size
        self.max_reconsume_times = max_reconsume_times
        self.consume_timeout = consume_timeout
        self.flow_limits = flow_limits or FlowLimits()
        self.flow_limits.validate()
        self.rebalance_interval = rebalance_interval
        self.persist_interval = persist_interval
        self._expressions: dict[str, tuple[str, ExpressionType]] = {}
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._filters: dict[str, MessageFilter] = {}
        self._queues: dict[MessageQueue, _Queue] = {}
        self._instance: ClientInstance | None = None
        self._offsets: RemoteOffsetStore | None = None
        self._stack: AsyncExitStack | None = None
        self._nursery: trio.Nursery | None = None
        self._rebalance_now = trio.Event()
        self._limits = self.flow_limits
        self._inner_producer: Any = None
        self._send: trio.MemorySendChannel[tuple[_Queue, list[MessageExt]]] | None = None
        self.consumed = 0
        self.failed = 0

    # --- configuration -------------------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str = "*", *, expression_type: str = "TAG") -> None:
        """Consume ``topic``: ``"*"``, tags ``"TagA || TagB"``, or an SQL92 expression."""
        validate_topic(topic)
        kind = ExpressionType(expression_type.upper())
        self._expressions[topic] = (expression, kind)
        self._set_subscription(topic, expression, kind)
        if self._instance is not None:
            self._instance.routes.use_topic(topic)
            self._instance.heartbeat_soon()
            self._rebalance_now.set()

    def _set_subscription(self, topic: str, expression: str, kind: ExpressionType) -> None:
        version = time.time_ns() // 1_000_000
        old = self._subscriptions.get(topic)
        if old is not None and version <= old.sub_version:
            # The broker keeps a registered subscription unless the new subVersion is greater.
            version = old.sub_version + 1
        sub = build_subscription_data(topic, expression, sub_version=version, expression_type=kind)
        self._subscriptions[topic] = sub
        self._filters[topic] = MessageFilter(sub)

    def register_listener(self, listener: Listener) -> None:
        self.listener = listener

    @property
    def client_id(self) -> str:
        return self.instance.client_id

    @property
    def instance(self) -> ClientInstance:
        if self._instance is None:
            raise StateError("the consumer is not started: use `async with PushConsumer(...) as consumer`")
        return self._instance

    @property
    def offsets(self) -> RemoteOffsetStore:
        if self._offsets is None:
            raise StateError("the consumer is not started")
        return self._offsets

    def owned_queues(self) -> list[MessageQueue]:
        """The queues this member currently pulls, sorted."""
        return sort_queues(self._queues)

    def _consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group_name=self.group,
            consume_type=ConsumeType.CONSUME_PASSIVELY,
            message_model=self.message_model,
            consume_from_where=self.consume_from_where,
            subscription_data_set=tuple(self._subscriptions.values()),
        )

    # --- lifecycle ---------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._instance is not None:
            raise StateError("this consumer is already started")
        if self.listener is None:
            raise ClientError("register a listener before starting the consumer")
        if not self._expressions:
            raise ClientError("subscribe to at least one topic before starting the consumer")
        # Clustering consumers also consume their group's retry topic.
        self._set_subscription(retry_topic(self.group), "*", ExpressionType.TAG)
        stack = AsyncExitStack()
        try:
            instance = await stack.enter_async_context(ClientInstance(self.config))
            self._instance = instance
            self._offsets = RemoteOffsetStore(instance.api, instance.routes, self.group)
            instance.register_handler(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._on_ids_changed)
            instance.add_consumer(self.group, self._consumer_data)
            from rocketmq_py.producer._producer import Producer

            inner = Producer(_INNER_PRODUCER_GROUP, namesrv=self.config.namesrv)
            inner._reserved = frozenset()  # sets RETRY_TOPIC, RECONSUME_TIME, ... on purpose
            self._inner_producer = await stack.enter_async_context(inner)
            for topic in self._subscriptions:
                instance.routes.use_topic(topic)
                try:
                    await instance.routes.update(topic)
                except RocketMQError as exc:  # the retry topic appears with the first heartbeat
                    log.debug("no route for %s yet: %s", topic, exc)
            await instance.heartbeat_all()  # register the subscriptions before any pull
            self._nursery = await stack.enter_async_context(open_service_nursery())
            send, receive = trio.open_memory_channel[tuple[_Queue, list[MessageExt]]](10_000)
            self._send = send
            for _ in range(self.consume_concurrency):
                self._nursery.start_soon(self._consume_worker, receive.clone())
            receive.close()
            self._nursery.start_soon(self._persist_loop)
            await self._nursery.start(self._rebalance_loop)
        except BaseException:
            self._instance = None
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        stack, self._stack = self._stack, None
        assert stack is not None
        try:
            for state in self._queues.values():
                state.pq.dropped = True
                state.scope.cancel()
            if self._nursery is not None:
                self._nursery.cancel_scope.cancel()
            with trio.move_on_after(self.config.request_timeout) as scope:
                scope.shield = True
                await self._persist_owned()
        finally:
            result = await stack.__aexit__(exc_type, exc, tb)
            self._instance = None
            self._queues.clear()
        return result

    async def aclose(self) -> None:
        if self._stack is not None:
            await self.__aexit__(None, None, None)

    async def _persist_owned(self) -> None:
        for mq in list(self._queues):
            try:
                await self.offsets.persist(mq)
            except RocketMQError as exc:
                log.warning("persisting the offset of %s on close failed: %s", mq, exc)

    async def _on_ids_changed(self, request: RemotingCommand) -> RemotingCommand | None:
        log.info("%s: the broker says the members of %s changed: rebalancing now", self.client_id, self.group)
        self._rebalance_now.set()
        return None

    # --- statistics --------------------------------------------------------------------------------

    def statistics(self) -> list[QueueStatistics]:
        """Per owned queue: cache, flow control, pull/consume times and the committed offset."""
        now = trio.current_time()
        stats = []
        for mq in sort_queues(self._queues):
            state = self._queues[mq]
            pq = state.pq
            stats.append(
                QueueStatistics(
                    queue=mq,
                    cached_count=pq.msg_count,
                    cached_bytes=pq.msg_size,
                    max_span=pq.max_span,
                    next_pull_offset=state.next_offset,
                    committed_offset=self._offsets.get(mq) if self._offsets else -1,
                    paused_by_flow_control=state.flow.reason.name if state.flow else None,
                    last_pull_age=now - pq.last_pull_time,
                    last_consume_age=now - pq.last_consume_time,
                )
            )
        return stats

    # --- rebalance ---------------------------------------------------------------------------------

    async def _rebalance_loop(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await self.rebalance()
        task_status.started()
        while True:
            with trio.move_on_after(self.rebalance_interval):
                await self._rebalance_now.wait()
            self._rebalance_now = trio.Event()
            await self.rebalance()

    async def rebalance(self) -> None:
        """Rebalance every subscribed topic now (errors are logged; the next round retries)."""
        for topic in list(self._subscriptions):
            try:
                await self._rebalance_topic(topic)
            except RocketMQError as exc:
                log.warning("%s: rebalance of %s failed: %s", self.group, topic, exc)
        self._limits = self.flow_limits.per_queue_from_topic(len(self._queues))

    async def _find_consumer_ids(self, topic: str) -> list[str]:
        routes = self.instance.routes
        route = routes.cached_route(topic)
        brokers = [b for b in (route.broker_datas if route else ()) if b.broker_addrs]
        if not brokers:
            return []
        broker = random.choice(brokers)
        address = broker.broker_addrs.get(0) or next(iter(broker.broker_addrs.values()))
        return await self.instance.api.get_consumer_list(address, self.group)

    async def _rebalance_topic(self, topic: str) -> None:
        routes = self.instance.routes
        try:
            mq_all = sort_queues(await routes.subscribe_queues(topic))
        except RocketMQError as exc:
            log.debug("%s: no route for %s yet: %s", self.group, topic, exc)
            return
        cid_all = sort_consumers(await self._find_consumer_ids(topic)) if mq_all else []
        if not mq_all or not cid_all:
            log.debug(
                "%s: %s has %d queues, %d consumers: nothing to allocate",
                self.group,
                topic,
                len(mq_all),
                len(cid_all),
            )
            return
        allocated = set(self.strategy.allocate(self.group, self.client_id, mq_all, cid_all))
        now = trio.current_time()
        changed = False
        for mq, state in list(self._queues.items()):
            if mq.topic != topic:
                continue
            if mq not in allocated:
                await self._drop(state)
                changed = True
            elif state.pq.is_pull_expired(now, PULL_MAX_IDLE_TIME_MS / 1000):
                log.warning(
                    "%s: pull of %s idle for %.0f s: dropping and rebuilding it",
                    self.group,
                    mq,
                    now - state.pq.last_pull_time,
                )
                await self._drop(state)
                changed = True
        added: list[_Queue] = []
        for mq in sort_queues(allocated - self._queues.keys()):
            try:
                offset = await self._start_offset(mq)
            except RocketMQError as exc:
                log.warning("%s: no start offset for %s yet: %s", self.group, mq, exc)
                continue
            added.append(_Queue(mq, ProcessQueue(clock=trio.current_time), offset))
        if added:
            changed = True
        if changed:
            log.info(
                "client rebalanced result changed. allocateMessageQueueStrategyName=%s, group=%s, topic=%s, "
                "clientId=%s, mqAllSize=%d, cidAllSize=%d, rebalanceResultSize=%d, rebalanceResultSet=%s",
                self.strategy.name,
                self.group,
                topic,
                self.client_id,
                len(mq_all),
                len(cid_all),
                len(allocated),
                sort_queues(allocated),
            )
            expression, kind = self._expressions.get(topic, ("*", ExpressionType.TAG))
            self._set_subscription(topic, expression, kind)
            await self.instance.heartbeat_all()  # the new subscription version before the new pulls
        for state in added:
            self._queues[state.mq] = state
            assert self._nursery is not None
            self._nursery.start_soon(self._pull_loop, state)

    async def _drop(self, state: _Queue) -> None:
        state.pq.dropped = True
        state.scope.cancel()
        self._queues.pop(state.mq, None)
        try:
            await self.offsets.persist(state.mq)
        except RocketMQError as exc:
            log.warning("persisting the offset of dropped %s failed: %s", state.mq, exc)
        self.offsets.remove(state.mq)

    async def _start_offset(self, mq: MessageQueue) -> int:
        try:
            stored = await self.offsets.read_from_broker(mq)
        except RocketMQError as exc:
            log.warning("%s: reading the offset of %s failed: %s", self.group, mq, exc)
            stored = -2
        decision = compute_pull_from_where(
            self.consume_from_where, mq.topic, stored, consume_timestamp=self.consume_timestamp
        )
        api = self.instance.api
        if decision.start_from is StartFrom.STORED:
            return decision.offset
        if decision.start_from is StartFrom.ZERO:
            return 0
        address = await self.instance.routes.require_master(mq.topic, mq.broker_name)
        if decision.start_from is StartFrom.MAX_OFFSET:
            return await api.get_max_offset(address, mq.topic, mq.queue_id, mq.broker_name)
        if decision.start_from is StartFrom.TIMESTAMP:
            return await api.search_offset(
                address, mq.topic, mq.queue_id, decision.timestamp_ms, mq.broker_name
            )
        raise StateError(f"{mq}: {decision.reason}")

    # --- pulling -----------------------------------------------------------------------------------

    async def _pull_loop(self, state: _Queue) -> None:
        mq, pq = state.mq, state.pq
        routes, api = self.instance.routes, self.instance.api
        broker_id = 0
        pq.last_pull_time = trio.current_time()
        with state.scope:
            while not pq.dropped:
                state.flow = flow_control(pq, self._limits, orderly=False)
                if state.flow is not None:
                    # Paused on purpose, not idle (Java stamps lastPullTimestamp before the check).
                    pq.last_pull_time = trio.current_time()
                    await trio.sleep(state.flow.delay_ms / 1000)
                    continue
                sub = self._subscriptions.get(mq.topic)
                found = routes.find_broker(mq.broker_name, broker_id)
                if sub is None or found is None:
                    await self._refresh_quietly(mq.topic)
                    await trio.sleep(PULL_TIME_DELAY_WHEN_EXCEPTION_MS / 1000)
                    continue
                commit_offset = self.offsets.get(mq)
                header = PullMessageRequestHeader(
                    consumer_group=self.group,
                    topic=mq.topic,
                    queue_id=mq.queue_id,
                    queue_offset=state.next_offset,
                    max_msg_nums=self.pull_batch_size,
                    sys_flag=pull_sys_flag(
                        commit_offset=commit_offset > 0 and found.broker_id == 0,
                        suspend=True,
                        subscription=False,
                        class_filter=False,
                    ),
                    commit_offset=max(commit_offset, 0),
                    suspend_timeout_millis=BROKER_SUSPEND_MAX_TIME_MS,
                    sub_version=sub.sub_version,
                    expression_type=sub.expression_type.value,
                    broker_name=mq.broker_name,
                )
                try:
                    reply = await api.pull_message(
                        found.address, header, timeout=CONSUMER_TIMEOUT_WHEN_SUSPEND_MS / 1000
                    )
                    ext = from_ext_fields(PullMessageResponseHeader, reply.ext_fields)
                    result = interpret_pull_response(
                        reply.code,
                        remark=reply.remark,
                        next_begin_offset=ext.next_begin_offset,
                        min_offset=ext.min_offset,
                        max_offset=ext.max_offset,
                        suggest_which_broker_id=ext.suggest_which_broker_id,
                        offset_delta=ext.offset_delta,
                    )
                    msgs: list[MessageExt] = []
                    if result.status is PullStatus.FOUND:
                        msgs = process_found_messages(
                            decode_messages(reply.body),
                            result,
                            msg_filter=self._filters.get(mq.topic),
                            queue_id=mq.queue_id,
                        )
                except RocketMQError as exc:
                    log.info("pull of %s from %s failed: %s", mq, found.address, exc)
                    await trio.sleep(pull_error_delay_ms(exc) / 1000)
                    continue
                pq.last_pull_time = trio.current_time()
                broker_id = result.suggest_which_broker_id
                action = next_pull_action(
                    result,
                    request_offset=state.next_offset,
                    found_count=len(msgs),
                    first_message_offset=msgs[0].queue_offset if msgs else None,
                    process_queue_empty=pq.msg_count == 0,
                )
                if action.dispatch:
                    fresh = pq.add_messages(msgs)
                    await self._dispatch(state, fresh)
                if action.correct_offset:
                    self.offsets.update(mq, action.next_offset)
                if action.drop_queue:
                    log.warning(
                        "%s: offset %d of %s is illegal (%s): dropping the queue",
                        self.group,
                        state.next_offset,
                        mq,
                        result,
                    )
                    pq.dropped = True
                    assert self._nursery is not None
                    self._nursery.start_soon(
                        self._fix_illegal_offset, state, action.next_offset, action.delay_ms
                    )
                    return
                state.next_offset = action.next_offset
                if action.delay_ms:
                    await trio.sleep(action.delay_ms / 1000)

    async def _refresh_quietly(self, topic: str) -> None:
        try:
            await self.instance.routes.update(topic)
        except RocketMQError as exc:
            log.debug("route refresh of %s failed: %s", topic, exc)

    async def _fix_illegal_offset(self, state: _Queue, next_offset: int, delay_ms: int) -> None:
        await trio.sleep(delay_ms / 1000)
        if self._queues.get(state.mq) is not state:
            return  # rebalanced away (and maybe back) meanwhile: the new owner's offset stands
        self.offsets.update(state.mq, next_offset, increase_only=False)
        try:
            await self.offsets.persist(state.mq)
        except RocketMQError as exc:
            log.warning("persisting the corrected offset of %s failed: %s", state.mq, exc)
        self._queues.pop(state.mq, None)
        self.offsets.remove(state.mq)
        self._rebalance_now.set()

    async def _dispatch(self, state: _Queue, msgs: Sequence[MessageExt]) -> None:
        assert self._send is not None
        size = self.consume_batch_max_size
        for start in range(0, len(msgs), size):
            await self._send.send((state, list(msgs[start : start + size])))

    # --- consuming ---------------------------------------------------------------------------------

    async def _consume_worker(
        self, receive: trio.MemoryReceiveChannel[tuple[_Queue, list[MessageExt]]]
    ) -> None:
        async with receive:
            async for state, msgs in receive:
                if not state.pq.dropped:
                    await self._consume(state, msgs)

    async def _call_listener(self, msgs: list[MessageExt]) -> ConsumeStatus:
        listener = self.listener
        assert listener is not None
        # An async def, or an object whose __call__ is one (trio refuses to run either in a thread).
        if inspect.iscoroutinefunction(listener) or inspect.iscoroutinefunction(
            getattr(listener, "__call__", None)  # noqa: B004 - the method itself is inspected
        ):
            pending = listener(msgs)
            assert inspect.isawaitable(pending)
            result: ConsumeStatus | None = await pending
        else:
            outcome = await trio.to_thread.run_sync(listener, msgs, abandon_on_cancel=True)
            result = await outcome if inspect.isawaitable(outcome) else outcome
        return ConsumeStatus.CONSUME_SUCCESS if result is None else ConsumeStatus(result)

    async def _consume(self, state: _Queue, msgs: list[MessageExt]) -> None:
        restore_retry_topic(msgs, self.group)
        set_consume_start_time(msgs, int(time.time() * 1000))
        status = ConsumeStatus.RECONSUME_LATER
        try:
            # A bare CancelScope: move_on_after's generator wrapper costs per message here.
            scope = trio.CancelScope(deadline=trio.current_time() + self.consume_timeout)
            with scope:
                status = await self._call_listener(msgs)
            if scope.cancelled_caught:
                log.warning(
                    "%s: listener took more than %g s on %d messages of %s",
                    self.group,
                    self.consume_timeout,
                    len(msgs),
                    state.mq,
                )
        except Exception:
            log.exception("%s: listener failed on %d messages of %s", self.group, len(msgs), state.mq)
        state.pq.last_consume_time = trio.current_time()
        if state.pq.dropped:
            return
        retry_later: list[MessageExt] = []
        if status is ConsumeStatus.CONSUME_SUCCESS:
            self.consumed += len(msgs)
        else:
            self.failed += len(msgs)
            for msg in msgs:
                if not await self._send_back(state, msg):
                    retry_later.append(msg)
        done = [m for m in msgs if m not in retry_later] if retry_later else msgs
        offset = state.pq.remove_messages(done)
        if offset >= 0 and not state.pq.dropped:
            self.offsets.update(state.mq, offset)
        if retry_later:
            assert self._nursery is not None
            self._nursery.start_soon(self._consume_later, state, retry_later)

    async def _consume_later(self, state: _Queue, msgs: list[MessageExt]) -> None:
        await trio.sleep(SEND_BACK_LOCAL_RETRY_DELAY_MS / 1000)
        if not state.pq.dropped:
            await self._dispatch(state, msgs)

    async def _send_back(self, state: _Queue, msg: MessageExt) -> bool:
        """Hand a failed message back: CONSUMER_SEND_MSG_BACK, else a re-send to the retry topic."""
        address = self.instance.routes.master_address(state.mq.broker_name) or msg.store_host
        try:
            await self.instance.api.consumer_send_msg_back(
                address,
                msg,
                self.group,
                delay_level=0,  # the broker picks 3 + reconsume times
                max_reconsume_times=self.max_reconsume_times,
                broker_name=state.mq.broker_name,
            )
            return True
        except RocketMQError as exc:
            log.warning(
                "send-back of %s to %s failed (%s): re-sending it to the retry topic",
                msg.msg_id,
                address,
                exc,
            )
        retry = Message(retry_topic(self.group), msg.body, flag=msg.flag, properties=dict(msg.properties))
        retry.properties.setdefault(PropertyKey.RETRY_TOPIC, msg.topic)
        retry.properties[PropertyKey.ORIGIN_MESSAGE_ID] = msg.properties.get(
            PropertyKey.ORIGIN_MESSAGE_ID, msg.msg_id
        )
        retry.properties[PropertyKey.RECONSUME_TIME] = str(msg.reconsume_times + 1)
        retry.properties[PropertyKey.MAX_RECONSUME_TIMES] = str(self.max_reconsume_times)
        retry.properties[PropertyKey.DELAY_TIME_LEVEL] = str(3 + msg.reconsume_times)
        try:
            await self._inner_producer.send(retry)
            return True
        except RocketMQError as exc:
            log.warning(
                "re-sending %s to %s failed: %s; consuming it again in 5 s", msg.msg_id, retry.topic, exc
            )
            return False

    async def _persist_loop(self) -> None:
        while True:
            await trio.sleep(self.persist_interval)
            await self.offsets.persist_all(self._queues.keys())
