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

**POP consumption** (``client_rebalance=False``, Java ``setClientRebalance(false)``, with the group
in POP mode on the broker): the broker assigns the queues and hides popped messages until they
are acknowledged; see :mod:`._pop`. Concurrent CLUSTERING only: orderly or broadcasting
consumers rebalance on the client whatever ``client_rebalance`` says (logged once).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from contextlib import AsyncExitStack
from dataclasses import fields
from typing import Any, ClassVar

import trio

from rocketmq_py._client._config import ClientConfig
from rocketmq_py._client._instance import ClientInstance
from rocketmq_py._deprecation import warn_deprecated
from rocketmq_py._health import Health, not_running
from rocketmq_py.consumer._allocate import AllocateStrategy, sort_queues
from rocketmq_py.consumer._assignment import Assignment
from rocketmq_py.consumer._concurrent import SEND_BACK_TIMEOUT, ConcurrentService
from rocketmq_py.consumer._flow import (
    CONSUME_CONCURRENCY,
    CONSUME_MESSAGE_BATCH_MAX_SIZE,
    CONSUME_TIMEOUT_MS,
    MAX_RECONSUME_TIMES,
    MAX_RECONSUME_TIMES_ORDERLY,
    PERSIST_CONSUMER_OFFSET_INTERVAL_MS,
    PULL_BATCH_SIZE,
    PULL_MAX_IDLE_TIME_MS,
    REBALANCE_INTERVAL_MS,
    SUSPEND_CURRENT_QUEUE_TIME_MS,
    FlowLimits,
)
from rocketmq_py.consumer._gauges import TopicGauges
from rocketmq_py.consumer._inner_producer import inner_producer
from rocketmq_py.consumer._listener import (
    ConsumeOrderlyStatus,
    ConsumeStatus,
    Listener,
    RebalanceListener,
    consume_directly,
)
from rocketmq_py.consumer._member import GroupMember
from rocketmq_py.consumer._member_deprecated import handler_message
from rocketmq_py.consumer._orderly import OrderlyService
from rocketmq_py.consumer._pop import PopService
from rocketmq_py.consumer._pop_rules import POP_BATCH_NUMS, POP_INVISIBLE_TIME_MS
from rocketmq_py.consumer._push_info import push_running_info, reset_push_offsets
from rocketmq_py.consumer._push_pop import PopStep, pops_topics
from rocketmq_py.consumer._push_readings import gauge_reader, push_health, user_statistics
from rocketmq_py.consumer._push_settings import PushSettings, check_pop_options
from rocketmq_py.consumer._queue_table import QueueTable
from rocketmq_py.consumer._runtime import ConsumeService, PushRuntime
from rocketmq_py.consumer._statistics import (
    ConsumeCounters,
    PopQueueStatistics,
    QueueStatistics,
    queue_statistics,
)
from rocketmq_py.errors import ClientError
from rocketmq_py.hooks import Hook, hook_list
from rocketmq_py.producer._producer import Producer
from rocketmq_py.protocol import (
    ConsumeFromWhere,
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    ConsumeType,
    ExpressionType,
    MessageExt,
    MessageModel,
    MessageQueue,
    is_retry_topic,
    retry_topic,
)

__all__ = [
    "SEND_BACK_TIMEOUT",
    "ConsumeOrderlyStatus",
    "ConsumeStatus",
    "Listener",
    "PopQueueStatistics",
    "PushConsumer",
    "QueueStatistics",
    "RebalanceListener",
]


class PushConsumer(GroupMember):
    """Consumes topics with a listener; the group shares the queues (Java ``DefaultMQPushConsumer``).

    Args:
        group: the consumer group.
        namesrv: ``"host:port;host:port"``; default ``ROCKETMQ_NAMESRV``.
        namespace: consume in this namespace (Java ``setNamespace``): topics and the group are
            ``<namespace>%<name>`` on the wire (retry topic ``%RETRY%<namespace>%<group>``);
            the listener, statistics and queues show plain names; default ``config.namespace``.
            ``group`` then holds the wrapped name.
        listener: called with a list of messages (at most ``consume_batch_max_size``).
        strategy: allocation strategy name (``"AVG"``, ``"AVG_BY_CIRCLE"``, ``"CONSISTENT_HASH"``)
            or an :class:`AllocateStrategy`.
        consume_from_where: where a queue without a committed offset starts.
        consume_timestamp_ms: epoch ms CONSUME_FROM_TIMESTAMP starts at (default: 30 min ago).
        consume_timestamp: deprecated: the same as Java's ``yyyyMMddHHmmss`` in local time.
        consume_concurrency: messages (batches) being consumed at once (Java's 20 threads).
        max_reconsume_times: deliveries before a message goes to ``%DLQ%group`` (default 16;
            orderly: unlimited, as Java).
        consume_timeout: seconds a listener call may take before it counts as a failure.
        flow_limits: per-queue (and topic) cache limits that pause pulling; its
            ``pull_threshold_for_all`` is the lite pull consumer's and is refused here.
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
        client_rebalance: False: the broker assigns the queues (QUERY_ASSIGNMENT) and a topic
            the group reads in POP mode is popped (see :mod:`rocketmq_py.consumer._pop`).
            Concurrent CLUSTERING consumers only; others rebalance on the client.
        pop_invisible_time: (POP) seconds a popped message stays hidden from the group (5 to
            300; Java's ``popInvisibleTime``, 60).
        pop_batch_nums: (POP) messages per POP_MESSAGE (1 to 32; Java's ``popBatchNums``, 32).
        config: client settings (timeouts, ACL, TLS, instance name, ...).
        hooks: called around every consumption (:class:`~rocketmq_py.hooks.Hook`, Java's
            ``ConsumeMessageHook``), e.g. :class:`rocketmq_py.otel.OpenTelemetryHook`.
        enable_trace: write trace records of every consumption to the trace topic, as Java's
            ``enableMsgTrace`` (``mqadmin queryMsgTraceById`` shows them), batched in the background.
        trace_topic: where trace records go (default ``RMQ_SYS_TRACE_TOPIC``).
        **client_options: :class:`ClientConfig` options (``instance_name``, ``client_ip``, ...),
            when ``config`` is not given. A broadcasting consumer finds its offset file by client
            id: give it a stable ``instance_name``.
    """

    _consume_type: ClassVar[ConsumeType] = ConsumeType.CONSUME_PASSIVELY

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
        consume_timestamp_ms: int | None = None,
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
            group,
            namesrv=namesrv,
            namespace=namespace,
            strategy=strategy,
            message_model=message_model,
            consume_from_where=consume_from_where,
            consume_timestamp=consume_timestamp,
            consume_timestamp_ms=consume_timestamp_ms,
            rebalance_interval=rebalance_interval,
            handoff_delay=handoff_delay,
            offsets_dir=offsets_dir,
            config=config,
            client_options=client_options,
        )
        self._hooks = hook_list(hooks, self)
        if enable_trace:
            self._enable_trace(trace_topic)
        self.listener = listener
        self.orderly = orderly
        self.suspend_current_queue_time = suspend_current_queue_time
        self.rebalance_listener = rebalance_listener
        self.handoff_timeout = handoff_timeout
        self.pull_max_idle_time = pull_max_idle_time
        if max_reconsume_times is None:
            max_reconsume_times = MAX_RECONSUME_TIMES_ORDERLY if orderly else MAX_RECONSUME_TIMES
        self.max_reconsume_times = max_reconsume_times
        self.consume_concurrency = consume_concurrency
        self.consume_batch_max_size = max(1, consume_batch_max_size)
        self.pull_batch_size = pull_batch_size
        self.consume_timeout = consume_timeout
        self.flow_limits = flow_limits or FlowLimits()
        self.flow_limits.validate(consumer="push")
        self.persist_interval = persist_interval
        #: The owned (pulled) queues; kept after a close (statistics), cleared then.
        self._queues = QueueTable(self.flow_limits)
        #: Outlive the runs: ``consumed`` and ``failed`` count over the consumer's life.
        self._counters = ConsumeCounters()
        check_pop_options(pop_invisible_time, pop_batch_nums)
        self.client_rebalance = client_rebalance
        self.pop_invisible_time = pop_invisible_time
        self.pop_batch_nums = pop_batch_nums
        #: Whether the topics the group reads in POP mode are popped (decided once, here).
        self._pops = pops_topics(
            group, client_rebalance=client_rebalance, orderly=orderly, broadcasting=self.broadcasting
        )
        self._inner_producer: Producer | None = None
        # The parts of a run, built at start and dropped at the close (the POP service stays, for
        # its statistics and acks to be looked at after the block).
        self._runtime: PushRuntime | None = None
        self._assignment: Assignment | None = None
        self._pop: PopService | None = None

    # --- configuration -------------------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str = "*", *, expression_type: str = "TAG") -> None:
        """Consume ``topic``: ``"*"``, tags ``"TagA || TagB"``, or an SQL92 expression."""
        self._subscribe(topic, expression, expression_type)

    def register_listener(self, listener: Listener) -> None:
        """Set the listener (before the consumer starts)."""
        self.listener = listener

    def register_hook(self, hook: Hook) -> None:
        """Call ``hook`` around every consumption from now on, after the hooks given before.

        Raises:
            TypeError: ``hook`` is not a :class:`~rocketmq_py.hooks.Hook`.
        """
        super().register_hook(hook)
        if self._runtime is not None:  # a running consumer's services read the runtime's list
            self._runtime.hooks = self._hooks

    @property
    def consumed(self) -> int:
        """Messages consumed successfully so far."""
        return self._counters.consumed

    @property
    def failed(self) -> int:
        """Messages whose listener call failed so far (each delivery counted)."""
        return self._counters.failed

    def assignment(self) -> frozenset[MessageQueue]:
        """The queues this member consumes now: those it pulls and those it pops (POP consumption).

        A new set at each call, as ``LitePullConsumer.assignment()``; ``sorted()`` orders it.
        """
        if self._pop is not None:
            return frozenset(self._user_queues([*self._queues, *self._pop.queues]))
        return frozenset(self._user_queues(self._queues))

    def owned_queues(self) -> list[MessageQueue]:
        """Deprecated: ``sorted(consumer.assignment())``. The queues this member pulls (or pops), sorted."""
        warn_deprecated("PushConsumer.owned_queues() is deprecated: use sorted(PushConsumer.assignment())")
        return self._owned_queues()

    def _owned_queues(self) -> list[MessageQueue]:
        return sort_queues(self.assignment())

    def statistics(self) -> list[QueueStatistics]:
        """Per owned queue: cache, flow control, lock, pull/consume times and the committed offset.

        Queues the group pops (POP consumption) are in :meth:`pop_statistics` instead.
        """
        return user_statistics(
            self.namespace, queue_statistics(self._queues, self._offsets, orderly=self.orderly)
        )

    def health(self) -> Health:
        """Readiness, from what the member knows (no request is sent): started, a NameServer
        answering, a master accepting heartbeats, no listener call stuck past
        ``consume_timeout``, pull answers on its queues (:class:`~rocketmq_py.Health`)."""
        runtime, assignment = self._runtime, self._assignment
        if runtime is None or assignment is None:
            return not_running()
        return push_health(
            runtime.instance,
            self._queues,
            assignment.service,
            self._pop,
            consume_timeout=self.consume_timeout,
            idle_limit=self.pull_max_idle_time,
            namespace=self.namespace,
        )

    def _gauge_reader(self) -> tuple[trio.lowlevel.TrioToken, Callable[[], list[TopicGauges]]] | None:
        """While started: the run's trio token, and what reads the metrics' gauges, per topic (to be
        called in that trio thread; :class:`rocketmq_py.otel.OpenTelemetryMetrics`)."""
        runtime = self._runtime
        if runtime is None:
            return None
        return runtime.token, gauge_reader(self._queues, runtime.offsets, self.namespace)

    def _consumed_offsets(self) -> dict[MessageQueue, int]:
        store = self._offset_store
        return {mq: store.get(mq) for mq in sort_queues(self._queues)}

    def pop_statistics(self) -> list[PopQueueStatistics]:
        """Per queue this member pops (POP consumption; empty otherwise): unacknowledged and popped
        counts and the last pop time, in queue order."""
        return user_statistics(self.namespace, [] if self._pop is None else self._pop.statistics())

    # --- lifecycle (see GroupMember) -----------------------------------------------------------------

    def _check_startable(self) -> None:
        if self.listener is None:
            raise ClientError("register a listener before starting the consumer")
        if not self._expressions:
            raise ClientError("subscribe to at least one topic before starting the consumer")
        if not self.broadcasting:
            # Clustering consumers also consume their group's retry topic.
            self._set_subscription(retry_topic(self.group), "*", ExpressionType.TAG)

    async def _open(self, stack: AsyncExitStack, instance: ClientInstance) -> None:
        self._inner_producer = stack.enter_context(inner_producer(instance))

    def _settings(self) -> PushSettings:
        """The options as they are now, frozen for the run that starts (checked startable)."""
        # Every setting but two is the public attribute of the same name.
        names = [f.name for f in fields(PushSettings) if f.name not in ("strategy_name", "request_timeout")]
        return PushSettings(
            **{name: getattr(self, name) for name in names},
            strategy_name=self.strategy.name,
            request_timeout=self.config.request_timeout,
        )

    async def _start(self, nursery: trio.Nursery) -> None:
        assert self._inner_producer is not None  # opened by _open
        settings = self._settings()
        runtime = self._runtime = PushRuntime(
            instance=self._client_instance,
            offsets=self._offset_store,
            nursery=nursery,
            inner_producer=self._inner_producer,
            hooks=self._hooks,
            counters=self._counters,
            subscriptions=self._subscriptions,
            filters=self._filters,
            request_rebalance=self._rounds.request,
            retry_rebalance=self._rounds.retry_soon,
            renew_subscription=self._renew_subscription,
        )
        self._queues.limits = self.flow_limits
        service: ConsumeService
        if settings.orderly:
            service = OrderlyService(settings, runtime, self._queues)
        else:
            service = ConcurrentService(settings, runtime)
        service.start(nursery)
        self._assignment = Assignment(settings, runtime, self._queues, service)
        nursery.start_soon(self._assignment.persist_loop)
        self._pop = PopService(settings, runtime) if self._pops else None
        if self._pop is not None:
            await nursery.start(self._pop.run)

    async def _leave(self) -> None:
        if self._pop is not None:
            await self._pop.close(self.handoff_timeout)
        if self._assignment is not None:
            await self._assignment.close()

    def _closed(self) -> None:
        self._queues.clear()
        self._runtime = None
        self._assignment = None
        self._inner_producer = None

    # --- rebalance -----------------------------------------------------------------------------------

    async def _rebalance_topic(self, topic: str) -> None:
        # Rounds run in the rebalance loop, which starts after _start: the assignment exists.
        assert self._assignment is not None
        if self._pop is not None and not is_retry_topic(topic) and not await self._pop_step().run(topic):
            return
        allocation = await self._allocate(topic)
        if allocation is not None:
            await self._assignment.apply(topic, allocation, self._rounds.handoff_start)

    def _pop_step(self) -> PopStep:
        """The POP step of a round (a member that pops, while started)."""
        assert self._runtime is not None
        assert self._pop is not None
        assert self._assignment is not None
        return PopStep(
            group=self.group,
            runtime=self._runtime,
            pop=self._pop,
            assignment=self._assignment,
            subscribe=lambda topic: self._set_subscription(topic, "*", ExpressionType.TAG),
            unsubscribe=self._drop_subscription,
        )

    def _after_rebalance(self) -> None:
        self._queues.limits = self.flow_limits.per_queue_from_topic(len(self._queues))

    # --- answering the broker (GET_CONSUMER_RUNNING_INFO, RESET_CONSUMER_CLIENT_OFFSET, ...) ----------

    def _properties(self) -> dict[str, str]:
        return {**self._member_properties(), **self._settings().properties()}

    def _running_info(self) -> ConsumerRunningInfo:
        """What GET_CONSUMER_RUNNING_INFO answers (:func:`~._push_info.push_running_info`)."""
        # Read while the answer is built, after the clock (an unstarted consumer raises from them).
        return push_running_info(
            self._queues,
            lambda mq: self._offset_store.get(mq),
            self._properties,
            self._subscriptions,
            self._counters,
            self._started_at,
            self._pop,
        )

    async def _reset_wire_offsets(self, topic: str, offsets: Mapping[MessageQueue, int]) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET (:func:`~._push_info.reset_push_offsets`), then a rebalance."""
        await reset_push_offsets(self.group, self._assignment, topic, offsets)
        self._rounds.request()

    async def consume_directly(
        self, msg: MessageExt, broker_name: str | None
    ) -> ConsumeMessageDirectlyResult:
        """Deprecated: CONSUME_MESSAGE_DIRECTLY calls the listener once with ``[msg]`` (the broker's
        request calls it: ``mqadmin queryMsgById -d``)."""
        warn_deprecated(handler_message("PushConsumer", "consume_directly", "CONSUME_MESSAGE_DIRECTLY"))
        return await self._consume_directly(msg, broker_name)

    async def _consume_directly(
        self, msg: MessageExt, broker_name: str | None
    ) -> ConsumeMessageDirectlyResult:
        """CONSUME_MESSAGE_DIRECTLY: call the listener once with ``[msg]`` (no retry, no send-back)."""
        if self.listener is None:
            raise ClientError(f"the consumer of {self.group} has no listener")
        return await consume_directly(
            self.listener, msg, group=self.group, orderly=self.orderly, namespace=self.namespace
        )
