"""The push consumer: concurrent or orderly, clustering or broadcasting (Java ``DefaultMQPushConsumer``).

``async with PushConsumer(group, namesrv=...) as consumer`` runs, under one nursery:

- the **rebalance loop**: at start, every ``rebalance_interval`` seconds and whenever a broker sends
  NOTIFY_CONSUMER_IDS_CHANGED. Per subscribed topic: the readable queues from the route, the
  group's client ids from a broker, both sorted, allocated by the strategy; queues no longer ours
  (or whose pull has been idle for 120 s) are revoked (see the handoff below), new ones
  get a start offset (ConsumeFromWhere) and a pull loop. On any change the topic's subscription
  version moves and a heartbeat goes out before the new pulls;
- one **pull loop** per owned queue: long polling (the broker holds the pull 15 s), flow control
  from the ProcessQueue counters, FOUND messages cached and handed to the consume workers;
- ``consume_concurrency`` **consume workers** calling the listener; a failure (RECONSUME_LATER,
  an exception, or ``consume_timeout``) sends the message back to the broker (retry topic, next
  delay level), or re-sends it to ``%RETRY%group`` if that fails, or consumes it again in 5 s;
- the **offset persister**: every ``persist_interval`` seconds, and on drop and close.

**Graceful handoff.** A queue that leaves (the rebalance gives it to another member, or the
consumer closes) is *revoked*, not just dropped: its pull stops at once; messages cached but not
yet handed to the listener are discarded (the next owner pulls them again from the committed
offset); the listener calls already running on it may finish, for at most ``handoff_timeout``
seconds (default 5; calls still running then are abandoned to the next owner, which consumes
them again); then ``rebalance_listener.on_revoked(queues)`` runs, the queue's offset is committed
*synchronously* (UPDATE_CONSUMER_OFFSET with a reply, not the periodic oneway), an orderly
queue's broker lock is released (UNLOCK_BATCH_MQ), and only then is the queue forgotten.
Duplicates also come from the *new* owner reading the committed offset before the old owner
wrote it (both rebalance on the same NOTIFY_CONSUMER_IDS_CHANGED). So a clustering consumer
reads the start offset of a queue it gets while the group has other members only
``handoff_delay`` seconds (default 1) after the assignment, time for the previous owner to have
committed it. Orderly consumers need no delay: the previous owner unlocks only after its commit,
and the new owner reads the offset only once it holds the lock. (Java commits a dropped queue's
offset at once, discarding the results of calls still running on it, an orderly queue after
waiting at most 1 s for its consume lock; and the new owner starts at once.)

**Orderly consumption** (``orderly=True``, Java ``MessageListenerOrderly``): the listener answers
:class:`ConsumeOrderlyStatus`; see :mod:`._orderly`. **Broadcasting**
(``message_model="BROADCASTING"``): every member consumes every queue, failed messages are
dropped with a warning (Java does the same), offsets live in a local JSON file per client id and
group (give a stable ``instance_name=`` to resume from it after a restart).
"""

from __future__ import annotations

import enum
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol, Self

import trio

from rocketmq_py._client._config import ClientConfig
from rocketmq_py._client._instance import ClientInstance
from rocketmq_py._transport._nursery import open_service_nursery
from rocketmq_py.consumer._allocate import (
    AllocateStrategy,
    get_strategy,
    sort_queues,
)
from rocketmq_py.consumer._commands import install_command_handlers
from rocketmq_py.consumer._filter import MessageFilter
from rocketmq_py.consumer._flow import (
    BROKER_SUSPEND_MAX_TIME_MS,
    CONSUME_CONCURRENCY,
    CONSUME_MESSAGE_BATCH_MAX_SIZE,
    CONSUME_TIMEOUT_MS,
    CONSUMER_TIMEOUT_WHEN_SUSPEND_MS,
    MAX_RECONSUME_TIMES,
    MAX_RECONSUME_TIMES_ORDERLY,
    PERSIST_CONSUMER_OFFSET_INTERVAL_MS,
    PULL_BATCH_SIZE,
    PULL_MAX_IDLE_TIME_MS,
    PULL_TIME_DELAY_WHEN_EXCEPTION_MS,
    REBALANCE_INTERVAL_MS,
    REBALANCE_LOCK_INTERVAL_MS,
    REBALANCE_LOCK_MAX_LIVE_TIME_MS,
    REBALANCE_MIN_INTERVAL_MS,
    SEND_BACK_LOCAL_RETRY_DELAY_MS,
    SUSPEND_CURRENT_QUEUE_TIME_MS,
    FlowLimits,
    FlowVerdict,
    flow_control,
)
from rocketmq_py.consumer._group_client import (
    allocate_topic,
    java_strategy_class,
    next_subscription,
    open_offset_store,
    process_queue_info,
    read_pull_reply,
    refresh_quietly,
    start_offset,
)
from rocketmq_py.consumer._inner_producer import inner_producer
from rocketmq_py.consumer._offset_store_api import OffsetStore
from rocketmq_py.consumer._orderly import (
    ConsumeOrderlyStatus,
    check_reconsume_times,
    lock_queues,
    unlock_queues,
)
from rocketmq_py.consumer._process_queue import ProcessQueue
from rocketmq_py.consumer._pull_result import (
    next_pull_action,
    pull_error_delay_ms,
    pull_sys_flag,
    restore_retry_topic,
    set_consume_start_time,
)
from rocketmq_py.consumer._retry import retry_message
from rocketmq_py.errors import ClientError, RocketMQError, StateError
from rocketmq_py.producer._producer import Producer
from rocketmq_py.producer._validation import validate_group, validate_topic
from rocketmq_py.protocol import (
    PROP_ALLOCATE_STRATEGY,
    PROP_CONSUME_ORDERLY,
    PROP_CONSUME_TYPE,
    PROP_CONSUMER_START_TIMESTAMP,
    PROP_NAMESERVER_ADDR,
    PROP_THREADPOOL_CORE_SIZE,
    ConsumeFromWhere,
    ConsumeMessageDirectlyResult,
    ConsumeRateStatus,
    ConsumerData,
    ConsumeResult,
    ConsumerRunningInfo,
    ConsumeType,
    ExpressionType,
    MessageExt,
    MessageModel,
    MessageQueue,
    PullMessageRequestHeader,
    RemotingCommand,
    RequestCode,
    SubscriptionData,
    retry_topic,
)

__all__ = [
    "ConsumeOrderlyStatus",
    "ConsumeStatus",
    "Listener",
    "PushConsumer",
    "QueueStatistics",
    "RebalanceListener",
]

log = logging.getLogger("rocketmq_py.consumer")

#: Seconds to wait for CONSUMER_SEND_MSG_BACK (Java: 5000 ms) before re-sending to the retry topic.
SEND_BACK_TIMEOUT = 5.0


class ConsumeStatus(enum.Enum):
    """What a listener answers (Java ``ConsumeConcurrentlyStatus``); ``None`` counts as success."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


_Status = ConsumeStatus | ConsumeOrderlyStatus | None
#: ``listener(messages)``: an async function, or a plain one (run in a worker thread). It answers
#: a :class:`ConsumeStatus` (concurrent) or :class:`ConsumeOrderlyStatus` (orderly); ``None`` is success.
Listener = Callable[[list[MessageExt]], "Awaitable[_Status] | _Status"]


class RebalanceListener(Protocol):
    """Told about queues changing hands (like Kafka's ``ConsumerRebalanceListener``).

    Either method may be a plain or an ``async`` function; an exception is logged and ignored.
    ``on_revoked`` runs once the revoked queues' pulls stopped and their running listener calls
    finished (or ``handoff_timeout`` passed), *before* their offsets are committed and their
    locks released: it may flush or commit what the listener did. ``on_assigned`` runs when
    new queues were allocated, before their first pull.
    """

    def on_revoked(self, queues: list[MessageQueue]) -> Awaitable[None] | None: ...

    def on_assigned(self, queues: list[MessageQueue]) -> Awaitable[None] | None: ...


@dataclass(slots=True)
class _Queue:
    mq: MessageQueue
    pq: ProcessQueue
    next_offset: int
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    flow: FlowVerdict | None = None
    #: Leaving: no new listener call starts; running ones may finish (graceful handoff).
    revoking: bool = False
    #: Listener calls running on this queue's messages.
    inflight: int = 0
    quiet: trio.Event = field(default_factory=trio.Event)
    #: (orderly) messages arrived / state changed: the queue's consume task looks again.
    wake: trio.Event = field(default_factory=trio.Event)
    suspended_until: float = 0.0
    #: The pull loop waits for the consume workers to take its messages (it is alive, not idle).
    handing_off: bool = False
    #: The offset last committed (to the broker or the local file) by this consumer, -1 none.
    persisted_offset: int = -1

    def begin(self) -> None:
        self.inflight += 1

    def end(self) -> None:
        self.inflight -= 1
        if self.inflight == 0:
            self.quiet.set()
            self.quiet = trio.Event()

    def poke(self) -> None:
        self.wake.set()
        self.wake = trio.Event()


@dataclass(slots=True)
class _TopicStats:
    """Counters behind the per-topic rates of :meth:`PushConsumer.running_info`."""

    pulled: int = 0
    pull_count: int = 0
    pull_rt: float = 0.0
    ok: int = 0
    failed: int = 0
    consume_calls: int = 0
    consume_rt: float = 0.0


@dataclass(frozen=True, slots=True)
class QueueStatistics:
    """One owned queue, as :meth:`PushConsumer.statistics` reports it."""

    queue: MessageQueue
    cached_count: int
    cached_bytes: int
    max_span: int
    next_pull_offset: int
    #: The offset to commit, as held in memory (committed to the broker every ``persist_interval``).
    committed_offset: int
    #: The flow-control limit that pauses the pull (``COUNT``, ``SIZE``, ``SPAN``), or None.
    paused_by_flow_control: str | None
    last_pull_age: float
    last_consume_age: float
    #: Why the pull is paused, with the numbers, e.g. ``"count 1001 > 1000"``.
    paused_detail: str | None = None
    #: (orderly) the broker lock is held and not expired client side.
    locked: bool = False
    #: (orderly) seconds since the last successful lock or renewal.
    lock_age: float | None = None
    #: (orderly) paused after a SUSPEND_CURRENT_QUEUE_A_MOMENT.
    suspended: bool = False
    #: Being handed off (revoked, waiting for running listener calls).
    revoking: bool = False
    #: Listener calls running on the queue's messages.
    consuming: int = 0
    #: Wall-clock epoch ms of the last pull and the last consumption.
    last_pull_timestamp: int = 0
    last_consume_timestamp: int = 0
    #: The offset last written to the broker (or, broadcasting, the local file) by us; -1 none yet.
    persisted_offset: int = -1


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
        max_reconsume_times: deliveries before a message goes to ``%DLQ%group`` (default 16;
            orderly: unlimited, as Java).
        consume_timeout: seconds a listener call may take before it counts as a failure.
        flow_limits: per-queue (and topic) cache limits that pause pulling.
        orderly: consume each queue in offset order under a broker lock (Java
            ``MessageListenerOrderly``); the batch size stays ``consume_batch_max_size`` (1).
        suspend_current_queue_time: (orderly) seconds a queue pauses after a SUSPEND answer.
        rebalance_listener: told about revoked and assigned queues, see :class:`RebalanceListener`.
        handoff_timeout: seconds a revoked queue waits for its running listener calls.
        handoff_delay: seconds a newly assigned queue waits before its committed offset is read,
            when the group has other members (see the module docstring); 0 turns it off.
        pull_max_idle_time: a queue whose pull loop has not tried a pull for this many seconds
            (a lost pull loop) is dropped and rebuilt by the next rebalance (Java's
            ``rocketmq.client.pull.pullMaxIdleTime``, 120 s). Every pull attempt counts, failed
            or not, and so does waiting for busy listeners to take the pulled messages.
        offsets_dir: (broadcasting) directory of the local offset files (default
            ``ROCKETMQ_PY_OFFSETS_DIR`` or ``~/.rocketmq_offsets``).
        instance_name, client_ip, ...: :class:`ClientConfig` options. A broadcasting consumer
            finds its offset file by client id: give it a stable ``instance_name``.
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
        config: ClientConfig | None = None,
        **client_options: Any,
    ) -> None:
        validate_group(group)
        message_model = MessageModel(message_model)
        self.orderly = orderly
        self.suspend_current_queue_time = suspend_current_queue_time
        self.rebalance_listener = rebalance_listener
        self.handoff_timeout = handoff_timeout
        self.handoff_delay = handoff_delay
        self.pull_max_idle_time = pull_max_idle_time
        self.offsets_dir = offsets_dir
        if max_reconsume_times is None:
            max_reconsume_times = MAX_RECONSUME_TIMES_ORDERLY if orderly else MAX_RECONSUME_TIMES
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
        self._offsets: OffsetStore | None = None
        self._stack: AsyncExitStack | None = None
        self._nursery: trio.Nursery | None = None
        self._rebalance_now = trio.Event()
        self._limits = self.flow_limits
        self._inner_producer: Producer | None = None
        self._send: trio.MemorySendChannel[tuple[_Queue, list[MessageExt]]] | None = None
        self.consumed = 0
        self.failed = 0
        self._persist_lock = trio.Lock()
        self._orderly_slots = trio.Semaphore(max(1, consume_concurrency))
        self._rebalance_retry = False
        self._round_started = 0.0
        self._started_ms = 0
        self._started_at = 0.0
        self._topic_stats: dict[str, _TopicStats] = {}

    @property
    def broadcasting(self) -> bool:
        return self.message_model is MessageModel.BROADCASTING

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
        sub = next_subscription(self._subscriptions.get(topic), topic, expression, kind)
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
    def offsets(self) -> OffsetStore:
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
        if not self.broadcasting:
            # Clustering consumers also consume their group's retry topic.
            self._set_subscription(retry_topic(self.group), "*", ExpressionType.TAG)
        stack = AsyncExitStack()
        try:
            instance = await stack.enter_async_context(ClientInstance(self.config))
            self._instance = instance
            self._started_ms = int(time.time() * 1000)
            self._started_at = trio.current_time()
            self._offsets = await self._open_offset_store(instance)
            instance.register_handler(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._on_ids_changed)
            self._install_command_handlers(instance)
            instance.add_consumer(self.group, self._consumer_data)
            self._inner_producer = stack.enter_context(inner_producer(instance))
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
            if self.orderly and not self.broadcasting:
                self._nursery.start_soon(self._lock_loop)
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
            # The graceful handoff of every queue, while the consume workers still run.
            with trio.move_on_after(self.handoff_timeout + 2 * self.config.request_timeout) as scope:
                scope.shield = True
                await self._revoke(list(self._queues.values()), notify=True)
            for state in self._queues.values():  # only if the handoff ran out of time
                state.pq.dropped = True
                state.scope.cancel()
            if self._nursery is not None:
                self._nursery.cancel_scope.cancel()
            with trio.move_on_after(self.config.request_timeout) as scope:
                scope.shield = True
                await self._persist_owned()
                await self._unlock_owned()
        finally:
            result = await stack.__aexit__(exc_type, exc, tb)
            self._instance = None
            self._queues.clear()
        return result

    async def aclose(self) -> None:
        if self._stack is not None:
            await self.__aexit__(None, None, None)

    async def _open_offset_store(self, instance: ClientInstance) -> OffsetStore:
        return await open_offset_store(
            instance, self.group, broadcasting=self.broadcasting, directory=self.offsets_dir
        )

    def _install_command_handlers(self, instance: ClientInstance) -> None:
        install_command_handlers(instance, self)

    async def _persist_owned(self) -> None:
        for state in list(self._queues.values()):
            await self._persist_one(state)

    async def _unlock_owned(self) -> None:
        """(Orderly, closing) release the locks the handoff kept for calls now cancelled."""
        if self.orderly and not self.broadcasting and self._queues:
            await unlock_queues(
                self.instance.api, self.instance.routes, self.group, self.client_id, list(self._queues)
            )

    async def _persist_one(self, state: _Queue) -> None:
        """Commit one queue's offset synchronously (logged on failure)."""
        offset = self.offsets.get(state.mq)
        try:
            async with self._persist_lock:
                await self.offsets.persist(state.mq)
            if offset >= 0:
                state.persisted_offset = offset
        except RocketMQError as exc:
            log.warning("%s: committing the offset of %s failed: %s", self.group, state.mq, exc)

    async def _on_ids_changed(self, request: RemotingCommand) -> RemotingCommand | None:
        log.info("%s: the broker says the members of %s changed: rebalancing now", self.client_id, self.group)
        self._rebalance_now.set()
        return None

    # --- statistics --------------------------------------------------------------------------------

    def statistics(self) -> list[QueueStatistics]:
        """Per owned queue: cache, flow control, lock, pull/consume times and the committed offset."""
        now = trio.current_time()
        wall_ms = time.time() * 1000
        lock_live = REBALANCE_LOCK_MAX_LIVE_TIME_MS / 1000
        stats = []
        for mq in sort_queues(self._queues):
            state = self._queues[mq]
            pq = state.pq
            flow = state.flow
            stats.append(
                QueueStatistics(
                    queue=mq,
                    cached_count=pq.msg_count,
                    cached_bytes=pq.msg_size,
                    max_span=pq.max_span,
                    next_pull_offset=state.next_offset,
                    committed_offset=self._offsets.get(mq) if self._offsets else -1,
                    paused_by_flow_control=flow.reason.name if flow else None,
                    last_pull_age=now - pq.last_pull_time,
                    last_consume_age=now - pq.last_consume_time,
                    paused_detail=f"{flow.reason.value} {flow.value} > {flow.limit}" if flow else None,
                    locked=pq.locked and not pq.is_lock_expired(now, lock_live),
                    lock_age=now - pq.last_lock_time if self.orderly else None,
                    suspended=state.suspended_until > now,
                    revoking=state.revoking,
                    consuming=state.inflight,
                    last_pull_timestamp=int(wall_ms - (now - pq.last_pull_time) * 1000),
                    last_consume_timestamp=int(wall_ms - (now - pq.last_consume_time) * 1000),
                    persisted_offset=state.persisted_offset,
                )
            )
        return stats

    # --- rebalance ---------------------------------------------------------------------------------

    async def _rebalance_loop(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await self.rebalance()
        task_status.started()
        while True:
            # A queue we were given but could not lock yet (orderly) is asked for again soon.
            interval = REBALANCE_MIN_INTERVAL_MS / 1000 if self._rebalance_retry else self.rebalance_interval
            with trio.move_on_after(min(interval, self.rebalance_interval)):
                await self._rebalance_now.wait()
            self._rebalance_now = trio.Event()
            await self.rebalance()

    async def rebalance(self) -> None:
        """Rebalance every subscribed topic now (errors are logged; the next round retries)."""
        self._rebalance_retry = False
        self._round_started = trio.current_time()
        for topic in list(self._subscriptions):
            try:
                await self._rebalance_topic(topic)
            except RocketMQError as exc:
                log.warning("%s: rebalance of %s failed: %s", self.group, topic, exc)
        self._limits = self.flow_limits.per_queue_from_topic(len(self._queues))

    async def _rebalance_topic(self, topic: str) -> None:
        routes = self.instance.routes
        allocation = await allocate_topic(
            self.instance, self.group, topic, self.strategy, broadcasting=self.broadcasting
        )
        if allocation is None:
            return
        mq_all, cid_all, allocated = allocation.mq_all, allocation.cid_all, allocation.allocated
        if not mq_all or not cid_all:
            log.debug(
                "%s: %s has %d queues, %d consumers: nothing to allocate",
                self.group,
                topic,
                len(mq_all),
                len(cid_all),
            )
            return
        now = trio.current_time()
        revoked: list[_Queue] = []
        rebuilt: list[_Queue] = []
        for mq, state in list(self._queues.items()):
            if mq.topic != topic or state.revoking:
                continue
            if mq not in allocated:
                revoked.append(state)
            elif not state.handing_off and state.pq.is_pull_expired(now, self.pull_max_idle_time):
                log.warning(
                    "%s: pull of %s idle for %.0f s: dropping and rebuilding it",
                    self.group,
                    mq,
                    now - state.pq.last_pull_time,
                )
                rebuilt.append(state)
        await self._revoke(revoked, notify=True)
        await self._revoke(rebuilt, notify=False)
        changed = bool(revoked or rebuilt)
        fresh = sort_queues(allocated - self._queues.keys())
        if fresh and self.orderly and not self.broadcasting:
            locked = await self._lock(fresh)
            if len(locked) < len(fresh):
                log.info(
                    "%s: %d of %d new queues of %s are still locked by another member: retrying in 1 s",
                    self.group,
                    len(fresh) - len(locked),
                    len(fresh),
                    topic,
                )
                self._rebalance_retry = True
            fresh = [mq for mq in fresh if mq in locked]
        elif fresh and len(cid_all) > 1 and self.handoff_delay > 0:
            # The previous owners rebalance on the same notification: let them commit first
            # (one delay per rebalance round, not per topic).
            await trio.sleep_until(self._round_started + self.handoff_delay)
        added: list[_Queue] = []
        for mq in fresh:
            try:
                offset, _ = await start_offset(
                    self.instance,
                    self.offsets,
                    self.group,
                    mq,
                    self.consume_from_where,
                    self.consume_timestamp,
                )
            except RocketMQError as exc:
                log.warning("%s: no start offset for %s yet: %s", self.group, mq, exc)
                if self.orderly:
                    await unlock_queues(self.instance.api, routes, self.group, self.client_id, [mq])
                continue
            pq = ProcessQueue(clock=trio.current_time)
            if self.orderly:
                pq.locked = True  # _lock stamped the lock: it was granted just now
            added.append(_Queue(mq, pq, offset))
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
        # A rebuilt queue (idle pull) stays this member's: the listener hears of neither half.
        announced = [state.mq for state in added if state.mq not in {s.mq for s in rebuilt}]
        if announced and self.rebalance_listener is not None:
            await self._notify_listener("on_assigned", announced)
        for state in added:
            self._queues[state.mq] = state
            assert self._nursery is not None
            self._nursery.start_soon(self._pull_loop, state)
            if self.orderly:
                self._nursery.start_soon(self._orderly_loop, state)

    async def _notify_listener(self, method: str, queues: list[MessageQueue]) -> None:
        callback = getattr(self.rebalance_listener, method, None)
        if callback is None:
            return
        try:
            result = callback(queues)
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("%s: rebalance listener %s(%s) failed", self.group, method, queues)

    async def _revoke(self, states: list[_Queue], *, notify: bool) -> None:
        """The graceful handoff of ``states`` (see the module docstring), all at once."""
        states = [state for state in states if not state.pq.dropped]
        if not states:
            return
        for state in states:
            state.revoking = True
            state.scope.cancel()  # no more pulls
            state.poke()  # an orderly consume task looks, and leaves
        with trio.move_on_after(self.handoff_timeout):
            for state in states:
                while state.inflight:
                    await state.quiet.wait()
        late = [state for state in states if state.inflight]
        # An orderly queue is never unlocked while a listener call runs on it (Java
        # tryRemoveOrderMessageQueue): another member would consume behind it, out of order. It
        # stays, revoking and locked (the lock loop renews it), until the call returns.
        held = late if self.orderly and not self.broadcasting else []
        if late:
            log.warning(
                "%s: listener calls on %s still running after %g s: %s",
                self.group,
                [state.mq for state in late],
                self.handoff_timeout,
                "their queues stay locked until they return"
                if held
                else "the next owner consumes them again",
            )
        if notify and self.rebalance_listener is not None:
            await self._notify_listener("on_revoked", [state.mq for state in states])
        done = [state for state in states if state not in held]
        await self._release(done)
        for state in held:
            assert self._nursery is not None
            self._nursery.start_soon(self._release_when_quiet, state)

    async def _release(self, states: list[_Queue]) -> None:
        """The end of a handoff: commit synchronously, unlock (orderly), forget."""
        for state in states:
            state.pq.dropped = True  # from here on, nothing moves the offsets
        for state in states:
            await self._persist_one(state)
        if self.orderly and not self.broadcasting and states:
            await unlock_queues(
                self.instance.api, self.instance.routes, self.group, self.client_id, [s.mq for s in states]
            )
            for state in states:
                state.pq.locked = False
        for state in states:
            if self._queues.get(state.mq) is state:
                del self._queues[state.mq]
                self.offsets.remove(state.mq)

    async def _release_when_quiet(self, state: _Queue) -> None:
        """(Orderly) hand a revoked queue off once the listener call still running on it returns.

        The call's result counts (the queue is still ours and locked), so the commit includes it.
        """
        while state.inflight:
            await state.quiet.wait()
        if not state.pq.dropped:
            await self._release([state])

    async def _lock(self, queues: Iterable[MessageQueue]) -> set[MessageQueue]:
        locked = await lock_queues(
            self.instance.api, self.instance.routes, self.group, self.client_id, queues
        )
        now = trio.current_time()
        for mq in locked:
            state = self._queues.get(mq)
            if state is not None:
                state.pq.locked = True
                state.pq.last_lock_time = now
        return locked

    async def _lock_loop(self) -> None:
        """(Orderly) renew the lock of every owned queue every 20 s (Java ``lockAll``)."""
        while True:
            await trio.sleep(REBALANCE_LOCK_INTERVAL_MS / 1000)
            # Revoked queues still held for a running listener call keep their lock too.
            owned = [state for state in self._queues.values() if not state.pq.dropped]
            if not owned:
                continue
            locked = await self._lock(state.mq for state in owned)
            for state in owned:
                if state.mq not in locked and state.pq.locked:
                    log.warning("%s: the broker did not renew the lock of %s", self.group, state.mq)
                    state.pq.locked = False
                elif state.mq in locked:
                    state.poke()

    # --- pulling -----------------------------------------------------------------------------------

    async def _pull_loop(self, state: _Queue) -> None:
        mq, pq = state.mq, state.pq
        routes, api = self.instance.routes, self.instance.api
        broker_id = 0
        with state.scope:
            while not pq.dropped:
                # Every attempt counts as a pull, whatever comes of it (Java stamps
                # lastPullTimestamp first thing in pullMessage): only a lost loop goes idle.
                pq.last_pull_time = trio.current_time()
                state.flow = flow_control(pq, self._limits, orderly=self.orderly)
                if state.flow is not None:
                    await trio.sleep(state.flow.delay_ms / 1000)
                    continue
                if self.orderly and not self.broadcasting and not pq.locked:
                    # Java pulls an orderly queue only while it is locked; the renewal may lock it again.
                    await trio.sleep(PULL_TIME_DELAY_WHEN_EXCEPTION_MS / 1000)
                    continue
                sub = self._subscriptions.get(mq.topic)
                found = routes.find_broker(mq.broker_name, broker_id)
                if sub is None or found is None:
                    await refresh_quietly(routes, mq.topic)
                    await trio.sleep(PULL_TIME_DELAY_WHEN_EXCEPTION_MS / 1000)
                    continue
                # Java asks the broker to commit on the pull in CLUSTERING only, and never a slave.
                commit_offset = -1 if self.broadcasting else self.offsets.get(mq)
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
                    started = trio.current_time()
                    reply = await api.pull_message(
                        found.address, header, timeout=CONSUMER_TIMEOUT_WHEN_SUSPEND_MS / 1000
                    )
                    stats = self._stats(mq.topic)
                    stats.pull_count += 1
                    stats.pull_rt += trio.current_time() - started
                    result, msgs = read_pull_reply(
                        reply, msg_filter=self._filters.get(mq.topic), queue_id=mq.queue_id
                    )
                except RocketMQError as exc:
                    log.info("pull of %s from %s failed: %s", mq, found.address, exc)
                    await trio.sleep(pull_error_delay_ms(exc) / 1000)
                    continue
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
                    self._stats(mq.topic).pulled += len(fresh)
                    if self.orderly:
                        state.poke()  # the queue's own consume task takes them in order
                    else:
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
        state.handing_off = True  # busy workers are no reason to drop the queue as idle
        try:
            for start in range(0, len(msgs), size):
                await self._send.send((state, list(msgs[start : start + size])))
        finally:
            state.handing_off = False
            state.pq.last_pull_time = trio.current_time()

    # --- consuming ---------------------------------------------------------------------------------

    async def _consume_worker(
        self, receive: trio.MemoryReceiveChannel[tuple[_Queue, list[MessageExt]]]
    ) -> None:
        async with receive:
            async for state, msgs in receive:
                if state.pq.dropped or state.revoking:
                    continue  # cached, never handed over: the next owner pulls it again
                state.begin()
                try:
                    await self._consume(state, msgs)
                finally:
                    state.end()

    async def _invoke_listener(self, msgs: list[MessageExt]) -> object:
        listener = self.listener
        assert listener is not None
        # An async def, or an object whose __call__ is one (trio refuses to run either in a thread).
        if inspect.iscoroutinefunction(listener) or inspect.iscoroutinefunction(
            getattr(listener, "__call__", None)  # noqa: B004 - the method itself is inspected
        ):
            pending = listener(msgs)
            assert inspect.isawaitable(pending)
            return await pending
        outcome = await trio.to_thread.run_sync(listener, msgs, abandon_on_cancel=True)
        return await outcome if inspect.isawaitable(outcome) else outcome

    async def _call_listener(self, msgs: list[MessageExt]) -> ConsumeStatus:
        result = await self._invoke_listener(msgs)
        if result is None or result is ConsumeOrderlyStatus.SUCCESS:
            return ConsumeStatus.CONSUME_SUCCESS
        if result is ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT:
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus(result)

    async def _consume(self, state: _Queue, msgs: list[MessageExt]) -> None:
        restore_retry_topic(msgs, self.group)
        set_consume_start_time(msgs, int(time.time() * 1000))
        status = ConsumeStatus.RECONSUME_LATER
        started = trio.current_time()
        try:
            # A bare CancelScope: move_on_after's generator wrapper costs per message here.
            scope = trio.CancelScope(deadline=started + self.consume_timeout)
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
        self._count_consume(state.mq.topic, len(msgs), status is ConsumeStatus.CONSUME_SUCCESS, started)
        if state.pq.dropped:
            return
        retry_later: list[MessageExt] = []
        if status is ConsumeStatus.CONSUME_SUCCESS:
            self.consumed += len(msgs)
        elif self.broadcasting:
            self.failed += len(msgs)
            log.warning(
                "%s: broadcasting consumption of %d messages of %s failed: dropped (%s)",
                self.group,
                len(msgs),
                state.mq,
                [m.msg_id for m in msgs],
            )
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
        for msg in msgs:  # as Java: a local retry counts as a delivery
            msg.reconsume_times += 1
        await trio.sleep(SEND_BACK_LOCAL_RETRY_DELAY_MS / 1000)
        if not state.pq.dropped and not state.revoking:
            await self._dispatch(state, msgs)

    async def _send_back(self, state: _Queue, msg: MessageExt) -> bool:
        """Hand a failed message back: CONSUMER_SEND_MSG_BACK, else a re-send to the retry topic.

        As Java's ``sendMessageBack``, any send-back failure is followed by the re-send, a timeout
        included, although the broker may then have stored the message after all: two copies come
        back (at-least-once). Not re-sending would lose the message whenever the broker did not get
        it (its offset is committed), and consuming it again locally would duplicate it just the
        same. ``False`` (the re-send failed too): the caller consumes it again locally.
        """
        address = self.instance.routes.master_address(state.mq.broker_name) or msg.store_host
        try:
            await self.instance.api.consumer_send_msg_back(
                address,
                msg,
                self.group,
                delay_level=0,  # the broker picks 3 + reconsume times
                max_reconsume_times=self.max_reconsume_times,
                broker_name=state.mq.broker_name,
                timeout=SEND_BACK_TIMEOUT,
            )
            return True
        except RocketMQError as exc:
            log.warning(
                "send-back of %s to %s failed (%s): re-sending it to the retry topic",
                msg.msg_id,
                address,
                exc,
            )
        retry = retry_message(
            msg,
            self.group,
            reconsume_times=msg.reconsume_times + 1,
            max_reconsume_times=self.max_reconsume_times,
        )
        try:
            assert self._inner_producer is not None
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
            states = list(self._queues.values())
            table = self.offsets.snapshot()
            async with self._persist_lock:  # never after (so never older than) a handoff's commit
                await self.offsets.persist_all([s.mq for s in states])
            for state in states:
                offset = table.get(state.mq, -1)
                if offset >= 0 and not state.pq.dropped:
                    state.persisted_offset = offset

    # --- orderly consumption -------------------------------------------------------------------------

    async def _orderly_loop(self, state: _Queue) -> None:
        """(Orderly) the one task consuming ``state``'s queue, in offset order, while it is locked."""
        pq = state.pq
        while not (pq.dropped or state.revoking):
            if state.suspended_until > trio.current_time():
                with trio.move_on_at(state.suspended_until):
                    await state.wake.wait()  # only a revoke wakes a suspended queue early
                continue
            if not pq.has_pending_messages():
                await state.wake.wait()
                continue
            async with self._orderly_slots:
                if pq.dropped or state.revoking:
                    break
                # Checked right before the call: the wait for a slot may have outlasted the lock.
                if await self._hold_lock(state):
                    msgs = pq.take_messages(self.consume_batch_max_size)
                    if msgs:
                        state.begin()
                        try:
                            await self._consume_orderly(state, msgs)
                        finally:
                            state.end()
                    continue
            # Java tryLockLaterAndReconsume: the lock could not be had; look again later.
            with trio.move_on_after(PULL_TIME_DELAY_WHEN_EXCEPTION_MS / 1000):
                await state.wake.wait()

    async def _hold_lock(self, state: _Queue) -> bool:
        """(Orderly) whether the queue's broker lock is ours now, locking it again if it lapsed."""
        pq = state.pq
        if self.broadcasting:
            return True
        if pq.locked and not pq.is_lock_expired(trio.current_time(), REBALANCE_LOCK_MAX_LIVE_TIME_MS / 1000):
            return True
        if state.mq in await self._lock([state.mq]):
            return True
        pq.locked = False
        return False

    async def _consume_orderly(self, state: _Queue, msgs: list[MessageExt]) -> None:
        pq = state.pq
        restore_retry_topic(msgs, self.group)
        set_consume_start_time(msgs, int(time.time() * 1000))
        status = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        started = trio.current_time()
        try:
            scope = trio.CancelScope(deadline=started + self.consume_timeout)
            with scope:
                status = ConsumeOrderlyStatus.of(await self._invoke_listener(msgs))
            if scope.cancelled_caught:
                log.warning(
                    "%s: orderly listener took more than %g s on %s",
                    self.group,
                    self.consume_timeout,
                    state.mq,
                )
        except Exception:
            log.exception("%s: orderly listener failed on %d messages of %s", self.group, len(msgs), state.mq)
        pq.last_consume_time = trio.current_time()
        self._count_consume(state.mq.topic, len(msgs), status is ConsumeOrderlyStatus.SUCCESS, started)
        if pq.dropped:
            return
        if status is ConsumeOrderlyStatus.SUCCESS:
            self.consumed += len(msgs)
            commit = True
        elif self.broadcasting:
            self.failed += len(msgs)
            log.warning("%s: broadcasting consumption of %s failed: dropped", self.group, state.mq)
            commit = True
        else:
            self.failed += len(msgs)
            decision = check_reconsume_times(msgs, self.max_reconsume_times)
            again = [m for m in msgs if m not in decision.to_dlq]
            for msg in decision.to_dlq:
                if not await self._send_to_dlq(msg):
                    msg.reconsume_times += 1
                    again.append(msg)
            commit = not again
            if again:
                # Everything taken goes back (a DLQ'd message among them too: order is kept).
                pq.make_message_to_consume_again(msgs)
                state.suspended_until = trio.current_time() + self.suspend_current_queue_time
        if commit:
            offset = pq.commit()
            if offset >= 0 and not pq.dropped:
                self.offsets.update(state.mq, offset, increase_only=False)

    async def _send_to_dlq(self, msg: MessageExt) -> bool:
        """(Orderly) Java ``sendMessageBack``: re-send to the retry topic with the reconsume times
        reached, which the broker stores in ``%DLQ%group``."""
        retry = retry_message(
            msg, self.group, reconsume_times=msg.reconsume_times, max_reconsume_times=self.max_reconsume_times
        )
        try:
            assert self._inner_producer is not None
            await self._inner_producer.send(retry)
            return True
        except RocketMQError as exc:
            log.warning("%s: sending %s to the DLQ failed: %s", self.group, msg.msg_id, exc)
            return False

    # --- answering the broker (GET_CONSUMER_RUNNING_INFO, RESET_CONSUMER_CLIENT_OFFSET, ...) ----------

    def _stats(self, topic: str) -> _TopicStats:
        stats = self._topic_stats.get(topic)
        if stats is None:
            stats = self._topic_stats[topic] = _TopicStats()
        return stats

    def _count_consume(self, topic: str, count: int, ok: bool, started: float) -> None:
        stats = self._stats(topic)
        stats.consume_calls += 1
        stats.consume_rt += trio.current_time() - started
        if ok:
            stats.ok += count
        else:
            stats.failed += count

    def _properties(self) -> dict[str, str]:
        strategy = java_strategy_class(self.strategy)
        limits = self.flow_limits
        return {
            PROP_NAMESERVER_ADDR: ";".join(self.instance.namesrv_addrs),
            PROP_CONSUME_TYPE: ConsumeType.CONSUME_PASSIVELY.value,
            PROP_CONSUME_ORDERLY: "true" if self.orderly else "false",
            PROP_THREADPOOL_CORE_SIZE: str(self.consume_concurrency),
            PROP_CONSUMER_START_TIMESTAMP: str(self._started_ms),
            PROP_ALLOCATE_STRATEGY: strategy,
            "allocateMessageQueueStrategyName": self.strategy.name,
            "consumerGroup": self.group,
            "messageModel": self.message_model.value,
            "consumeFromWhere": self.consume_from_where.value,
            "consumeTimestamp": self.consume_timestamp or "",
            "consumeThreadMin": str(self.consume_concurrency),
            "consumeThreadMax": str(self.consume_concurrency),
            "consumeMessageBatchMaxSize": str(self.consume_batch_max_size),
            "pullBatchSize": str(self.pull_batch_size),
            "pullThresholdForQueue": str(limits.pull_threshold_for_queue),
            "pullThresholdSizeForQueue": str(limits.pull_threshold_size_for_queue_mib),
            "pullThresholdForTopic": str(limits.pull_threshold_for_topic),
            "pullThresholdSizeForTopic": str(limits.pull_threshold_size_for_topic_mib),
            "consumeConcurrentlyMaxSpan": str(limits.consume_concurrently_max_span),
            "maxReconsumeTimes": str(self.max_reconsume_times),
            "consumeTimeout": str(int(self.consume_timeout / 60)),  # Java: minutes
            "suspendCurrentQueueTimeMillis": str(int(self.suspend_current_queue_time * 1000)),
            "persistConsumerOffsetInterval": str(int(self.persist_interval * 1000)),
            "instanceName": self.config.instance_name or "",
            "clientIP": self.config.client_ip or "",
            "unitMode": "false",
        }

    def running_info(self) -> ConsumerRunningInfo:
        """What GET_CONSUMER_RUNNING_INFO answers (``mqadmin consumerStatus`` / ``consumerProgress``)."""
        now = trio.current_time()
        wall_ms = time.time() * 1000
        mq_table = {
            mq: process_queue_info(state.pq, self.offsets.get(mq), now=now, wall_ms=wall_ms)
            for mq, state in self._queues.items()
        }
        uptime = max(now - self._started_at, 1e-3)
        status_table = {}
        for topic in self._subscriptions:
            stats = self._stats(topic)
            status_table[topic] = ConsumeRateStatus(
                pull_rt=stats.pull_rt * 1000 / stats.pull_count if stats.pull_count else 0.0,
                pull_tps=stats.pulled / uptime,
                consume_rt=stats.consume_rt * 1000 / stats.consume_calls if stats.consume_calls else 0.0,
                consume_ok_tps=stats.ok / uptime,
                consume_failed_tps=stats.failed / uptime,
                consume_failed_msgs=stats.failed,
            )
        return ConsumerRunningInfo(
            properties=self._properties(),
            subscription_set=tuple(self._subscriptions.values()),
            mq_table=mq_table,
            status_table=status_table,
        )

    async def reset_offsets(self, topic: str, offsets: Mapping[MessageQueue, int]) -> None:
        """Restart the owned queues of ``topic`` named in ``offsets`` from those offsets.

        Java ``resetOffset`` (RESET_CONSUMER_CLIENT_OFFSET, e.g. ``mqadmin resetOffsetByTime``):
        their pulls stop and their caches are dropped (results of listener calls still running
        are not committed), the new offsets are written to the offset store and committed
        synchronously to the broker (or the local file), locks are released, and a rebalance
        starts the queues again from the new offsets. Queues we do not own are left alone (their
        owners get the same request).
        """
        states = [
            state
            for mq, state in self._queues.items()
            if mq.topic == topic and mq in offsets and not state.revoking
        ]
        for state in states:
            state.revoking = True
            state.pq.dropped = True
            state.scope.cancel()
            state.poke()
        for state in states:
            self.offsets.update(state.mq, offsets[state.mq], increase_only=False)
            await self._persist_one(state)
        if self.orderly and not self.broadcasting and states:
            await unlock_queues(
                self.instance.api, self.instance.routes, self.group, self.client_id, [s.mq for s in states]
            )
        for state in states:
            if self._queues.get(state.mq) is state:
                del self._queues[state.mq]
                self.offsets.remove(state.mq)
        log.info("%s: offsets of %d queues of %s reset: %s", self.group, len(states), topic, offsets)
        self._rebalance_now.set()

    async def consume_directly(
        self, msg: MessageExt, broker_name: str | None
    ) -> ConsumeMessageDirectlyResult:
        """CONSUME_MESSAGE_DIRECTLY: call the listener once with ``[msg]`` (no retry, no send-back).

        A ``None`` answer counts as success here as everywhere in this client (Java would say
        CR_RETURN_NULL).
        """
        msgs = [msg]
        restore_retry_topic(msgs, self.group)
        set_consume_start_time(msgs, int(time.time() * 1000))
        started = time.monotonic()
        try:
            raw = await self._invoke_listener(msgs)
            if self.orderly:
                ok = ConsumeOrderlyStatus.of(raw) is ConsumeOrderlyStatus.SUCCESS
            else:
                ok = (
                    raw is None
                    or raw is ConsumeOrderlyStatus.SUCCESS
                    or ConsumeStatus(raw) is ConsumeStatus.CONSUME_SUCCESS
                )
            result = ConsumeResult.CR_SUCCESS if ok else ConsumeResult.CR_LATER
            if raw is None:  # the name of the status None stands for, as Java names the status
                success = ConsumeOrderlyStatus.SUCCESS if self.orderly else ConsumeStatus.CONSUME_SUCCESS
                remark = success.value
            else:
                remark = getattr(raw, "value", None) or str(raw)
        except Exception as exc:
            log.warning("%s: direct consumption of %s failed: %r", self.group, msg.msg_id, exc)
            result, remark = ConsumeResult.CR_THROW_EXCEPTION, f"{type(exc).__name__}: {exc}"
        spent = int((time.monotonic() - started) * 1000)
        return ConsumeMessageDirectlyResult(
            order=self.orderly,
            auto_commit=True,
            consume_result=result,
            remark=remark,
            spent_time_mills=spent,
        )
