"""The lite pull consumer, Java ``DefaultLitePullConsumer`` with an aiokafka-like API, on trio.

``async with LitePullConsumer(group, namesrv=...) as consumer`` runs, under one nursery:

- the **rebalance loop** (``subscribe`` mode): at start, every ``rebalance_interval`` seconds and
  on NOTIFY_CONSUMER_IDS_CHANGED, each subscribed topic's readable queues are allocated among the
  group's client ids by the strategy (BROADCASTING: every queue); :mod:`._lite_assign` revokes
  and starts queues. ``assign`` mode instead pulls exactly the queues given, with no rebalance;
- one **pull task** per assigned queue (:mod:`._lite_pull_loop`): from the committed offset, else
  ``consume_from_where``, into the buffer, waiting while the queue is paused or the buffer is over
  a limit of its :class:`~rocketmq_py.consumer._flow.FlowLimits` (checked in :mod:`._lite_options`);
- the **auto-commit loop** (``auto_commit=True``, :mod:`._lite_offsets`): every
  ``auto_commit_interval`` seconds it commits, per queue, the offset after the last message
  :meth:`LitePullConsumer.poll` returned;
- the **queue watcher** (:mod:`._queue_watch`): queue-change listeners.

The answers to the broker's requests live in :mod:`._lite_info`; pause, seek and commit (public
methods) in the base class :class:`~rocketmq_py.consumer._lite_positions.LitePositions`; what the
consumer shares with the push consumer (allocation, start offsets, pull answers, offset stores) in
:mod:`._member` and :mod:`._group_client`. The buffer (:mod:`._lite_buffer`) is a queue of pulled
batches in arrival order: :meth:`~LitePullConsumer.poll` returns the first batch of a queue that
is not paused (as Java's ``poll``), :meth:`~LitePullConsumer.getmany` up to ``max_records``
messages by queue (as aiokafka's). A seek or a revoke discards that queue's buffered messages.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from os import PathLike
from typing import Any, ClassVar, Final, Self

import trio

from rocketmq_py._client._config import ClientConfig
from rocketmq_py._deprecation import warn_deprecated
from rocketmq_py._health import Health, not_running
from rocketmq_py.consumer._allocate import AllocateStrategy, sort_queues
from rocketmq_py.consumer._consume_hooks import report_polled
from rocketmq_py.consumer._flow import PERSIST_CONSUMER_OFFSET_INTERVAL_MS, REBALANCE_INTERVAL_MS, FlowLimits
from rocketmq_py.consumer._health import QueueReading, consumer_health
from rocketmq_py.consumer._lite_assign import LiteQueues, assign_expressions
from rocketmq_py.consumer._lite_buffer import LiteBuffer, LiteQueue
from rocketmq_py.consumer._lite_info import lite_properties, lite_running_info, reset_lite_offsets
from rocketmq_py.consumer._lite_offsets import LiteCommits
from rocketmq_py.consumer._lite_options import lite_options
from rocketmq_py.consumer._lite_poll import wait_take
from rocketmq_py.consumer._lite_positions import LitePositions
from rocketmq_py.consumer._lite_pull_loop import LitePullParts
from rocketmq_py.consumer._member import GroupMember
from rocketmq_py.consumer._queue_watch import (
    TOPIC_METADATA_CHECK_INTERVAL_MS,
    QueueChangeListener,
    QueueWatcher,
)
from rocketmq_py.errors import InvalidOption, StateError
from rocketmq_py.hooks import Hook, hook_list
from rocketmq_py.producer._validation import validate_topic
from rocketmq_py.protocol import (
    ConsumeFromWhere,
    ConsumerRunningInfo,
    ConsumeType,
    ExpressionType,
    MessageExt,
    MessageModel,
    MessageQueue,
    SubscriptionData,
    unwrap_queue,
    wrap_name,
)

__all__ = ["LitePullConsumer"]

#: Messages asked for per pull (Java ``DefaultLitePullConsumer.pullBatchSize`` = 10).
LITE_PULL_BATCH_SIZE: Final = 10
#: Default ``poll`` / ``getmany`` wait (Java ``pollTimeoutMillis`` = 5000).
POLL_TIMEOUT_MS: Final = 5000
#: Auto-commit period (Java ``autoCommitIntervalMillis`` = 5000, the same as the offset persister).
AUTO_COMMIT_INTERVAL_MS: Final = PERSIST_CONSUMER_OFFSET_INTERVAL_MS


class LitePullConsumer(GroupMember, LitePositions):
    """Pulls topics on demand: ``poll`` / ``getmany`` / ``async for`` (Java ``DefaultLitePullConsumer``).

    Args:
        group: the consumer group (offsets are committed for it in both modes).
        namesrv: ``"host:port;host:port"``; default ``ROCKETMQ_NAMESRV``.
        namespace: consume in this namespace (Java ``setNamespace``): topics and the group are
            ``<namespace>%<name>`` on the wire; messages, queues and offsets are given and shown
            with plain names; default ``config.namespace``. ``group`` then holds the wrapped name.
        strategy: allocation strategy name or object (``subscribe`` mode, CLUSTERING).
        message_model: CLUSTERING (the group shares the queues, offsets on the brokers) or
            BROADCASTING (every queue, offsets in a local file under ``offsets_dir``).
        consume_from_where: where a queue without a committed offset starts.
        consume_timestamp_ms: epoch ms CONSUME_FROM_TIMESTAMP starts at (default: 30 min ago).
        consume_timestamp: deprecated: the same as Java's ``yyyyMMddHHmmss`` in local time.
        auto_commit: commit the consumed offsets every ``auto_commit_interval`` seconds, on a
            revoke and on close; when off, only :meth:`commit` commits.
        pull_batch_size: messages per pull, so at most per ``poll``.
        flow_limits: the buffer limits above which pulling waits (default ``FlowLimits()``), as
            for :class:`~rocketmq_py.PushConsumer`: ``pull_threshold_for_all`` buffered messages
            of all queues together, and for each queue ``pull_threshold_for_queue`` messages,
            ``pull_threshold_size_for_queue_mib`` body MiB and ``consume_max_span`` offsets. The
            topic-level limits (``pull_threshold_for_topic``,
            ``pull_threshold_size_for_topic_mib``) are the push consumer's: set, they are refused.
        pull_threshold_for_all: deprecated: ``flow_limits=FlowLimits(pull_threshold_for_all=...)``.
        pull_threshold_for_queue: deprecated: the field of ``flow_limits``.
        pull_threshold_size_for_queue_mib: deprecated: the field of ``flow_limits``.
        consume_max_span: deprecated: the field of ``flow_limits``.
        offsets_dir: BROADCASTING: the local offset store's directory.
        handoff_delay: ``subscribe`` mode with other members: seconds after a rebalance began
            before a newly assigned queue reads its committed offset (0: at once, as Java).
        topic_metadata_check_interval: seconds between checks of the queues of the topics
            given to :meth:`register_queue_change_listener` (Java
            ``topicMetadataCheckIntervalMillis``, 30 s).
        hooks: called around every consumption (:class:`~rocketmq_py.hooks.Hook`, Java's
            ``ConsumeMessageHook``), e.g. :class:`rocketmq_py.otel.OpenTelemetryHook`.
        enable_trace: write trace records of every consumption to the trace topic, as Java's
            ``enableMsgTrace`` (``mqadmin queryMsgTraceById`` shows them), batched in the background.
        trace_topic: where trace records go (default ``RMQ_SYS_TRACE_TOPIC``).

    Raises:
        InvalidOption: an option out of range, a topic-level limit in ``flow_limits``, or
            ``flow_limits`` together with one of the deprecated limit keywords.
    """

    _consume_type: ClassVar[ConsumeType] = ConsumeType.CONSUME_ACTIVELY
    #: No listener: CONSUME_MESSAGE_DIRECTLY is answered SYSTEM_ERROR.
    _consumes_directly: ClassVar[bool] = False

    def __init__(
        self,
        group: str,
        *,
        namesrv: str | None = None,
        namespace: str | None = None,
        strategy: str | AllocateStrategy = "AVG",
        message_model: MessageModel | str = MessageModel.CLUSTERING,
        consume_from_where: ConsumeFromWhere | str = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        consume_timestamp_ms: int | None = None,
        consume_timestamp: str | None = None,
        auto_commit: bool = True,
        auto_commit_interval: float = AUTO_COMMIT_INTERVAL_MS / 1000,
        pull_batch_size: int = LITE_PULL_BATCH_SIZE,
        flow_limits: FlowLimits | None = None,
        pull_threshold_for_all: int | None = None,
        pull_threshold_for_queue: int | None = None,
        pull_threshold_size_for_queue_mib: int | None = None,
        consume_max_span: int | None = None,
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
        limits = lite_options(
            pull_batch_size=pull_batch_size,
            flow_limits=flow_limits,
            old={
                "pull_threshold_for_all": pull_threshold_for_all,
                "pull_threshold_for_queue": pull_threshold_for_queue,
                "pull_threshold_size_for_queue_mib": pull_threshold_size_for_queue_mib,
                "consume_max_span": consume_max_span,
            },
            topic_metadata_check_interval=topic_metadata_check_interval,
        )
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
        self.auto_commit = auto_commit
        self.auto_commit_interval = auto_commit_interval
        self.pull_batch_size = pull_batch_size
        self.flow_limits = limits
        self._buffer = LiteBuffer(limits, limits.pull_threshold_for_all)
        self._mode: str | None = None  # "subscribe" or "assign"
        self._assigned: list[MessageQueue] = []  # assign mode: the queues asked for
        self._queues: dict[MessageQueue, LiteQueue] = {}
        self._pending: deque[MessageExt] = deque()  # async for: taken from the buffer, not yet yielded
        self.topic_metadata_check_interval = topic_metadata_check_interval
        self._watcher = QueueWatcher(group, topic_metadata_check_interval)

    @property
    def pull_threshold_for_all(self) -> int:
        """Deprecated: ``flow_limits.pull_threshold_for_all``."""
        warn_deprecated(
            "LitePullConsumer.pull_threshold_for_all is deprecated; use flow_limits.pull_threshold_for_all"
        )
        return self.flow_limits.pull_threshold_for_all

    # --- configuration -----------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str = "*", *, expression_type: str = "TAG") -> None:
        """Consume ``topic`` with the group (rebalanced): ``"*"``, ``"TagA || TagB"`` or SQL92.

        Raises:
            StateError: :meth:`assign` was called (the two modes exclude each other).
        """
        if self._mode == "assign":
            raise StateError("subscribe and assign are mutually exclusive: this consumer uses assign")
        self._mode = "subscribe"
        self._subscribe(topic, expression, expression_type)

    def assign(
        self, queues: Iterable[MessageQueue], expression: str | None = None, *, expression_type: str = "TAG"
    ) -> None:
        """Pull exactly ``queues`` (no rebalance); replaces the previous assignment.

        A queue left out is released as a revoked one (auto-commit: its offset is committed).

        The filter comes with the queues, as with ``subscribe(topic, expression)``, rather than
        from a per-topic setter allowed only before start (Java ``setSubExpressionForAssign``):
        one call says what to pull and how to filter it, and leaving ``expression`` out keeps
        each topic's filter, so a re-assignment (e.g. from a queue-change listener) cannot drop
        it by accident. The pulls carry it (the broker filters), tags are re-checked here. A new
        expression applies from the first message not yet polled: the topic's buffered messages
        are dropped and its queues pulled again from their consumed offsets.

        Args:
            queues: the queues to pull.
            expression: ``"*"``, ``"TagA || TagB"`` or SQL92, for every topic among ``queues``;
                ``None``: each topic keeps its expression (at first ``"*"``).
            expression_type: ``"TAG"`` or ``"SQL92"`` (the broker needs ``enablePropertyFilter``).

        Raises:
            StateError: :meth:`subscribe` was called (the two modes exclude each other).
            ValueError: an unknown ``expression_type``.
        """
        if self._mode == "subscribe":
            raise StateError("subscribe and assign are mutually exclusive: this consumer uses subscribe")
        wanted = sort_queues({self._wire_queue(mq) for mq in queues})
        kind = ExpressionType(expression_type.upper())
        changed = assign_expressions(
            wanted, expression, kind, self._expressions, self._subscriptions, self._set_subscription
        )
        self._mode = "assign"
        self._assigned = wanted
        if self._nursery is not None:
            self._lite_queues().reassign(wanted, changed)

    def assignment(self) -> frozenset[MessageQueue]:
        """The queues this consumer pulls now (after the last rebalance, or as assigned)."""
        return frozenset(self._user_queues(self._queues))

    def register_queue_change_listener(self, topic: str, listener: QueueChangeListener) -> None:
        """Call ``listener(topic, queues)`` with ``topic``'s readable queues now and when they change.

        Java ``registerTopicMessageQueueChangeListener``; ``queues`` is a frozenset. The first
        call comes before the ``async with`` block runs (at once if registered while running),
        then one whenever a fresh route, read every ``topic_metadata_check_interval`` seconds,
        shows another set. A plain function runs in the consumer's task and may call its methods
        (``consumer.assign(queues)``); an ``async def`` is awaited. Exceptions are logged and
        ignored. One listener per topic: registering another replaces it.

        Raises:
            ClientError: an invalid topic name.
            TypeError: ``listener`` is not callable.
        """
        self._watcher.register(topic, listener)

    def _registered_subscriptions(self) -> tuple[SubscriptionData, ...]:
        # Assigned queues are pulled with the expression in the request: nothing to register.
        return tuple(self._subscriptions.values()) if self._mode == "subscribe" else ()

    # --- lifecycle ---------------------------------------------------------------------------

    async def _start(self, nursery: trio.Nursery) -> None:
        if self.auto_commit:
            nursery.start_soon(self._commits().auto_commit_loop, lambda: self.auto_commit_interval)
        await nursery.start(self._watcher.run, self._client_instance.routes)

    def _started(self) -> None:
        if self._mode == "assign":
            self._lite_queues().apply_assignment(self._assigned)

    async def _leave(self) -> None:
        await self._lite_queues().leave(self.config.request_timeout)

    def _closed(self) -> None:
        self._queues.clear()
        self._pending.clear()
        self._buffer.close()  # wakes pollers: they find the consumer closed

    # --- polling -----------------------------------------------------------------------------

    async def poll(self, timeout: float = POLL_TIMEOUT_MS / 1000) -> list[MessageExt]:  # noqa: ASYNC109
        """The next batch of one queue (at most ``pull_batch_size`` messages), in offset order.

        Waits up to ``timeout`` seconds for messages; returns ``[]`` when none came. Messages of
        paused queues stay buffered. The consumed offset of the queue moves past the batch.

        Raises:
            StateError: the consumer is not running.
        """
        taken = await wait_take(self._buffer, self._running, None, one_batch=True, timeout=timeout)
        if taken and self._hooks:
            report_polled(self._hooks, self.group, taken, self.namespace, self.client_id)
        return next(iter(taken.values()), [])

    async def getmany(
        self,
        max_records: int | None = None,
        timeout: float = POLL_TIMEOUT_MS / 1000,  # noqa: ASYNC109
    ) -> dict[MessageQueue, list[MessageExt]]:
        """Everything buffered (at most ``max_records`` messages), by queue, as aiokafka's ``getmany``.

        Waits up to ``timeout`` seconds for the first message, then takes what is buffered without
        waiting more; each queue's list is in offset order. ``{}`` when nothing came.

        Raises:
            StateError: the consumer is not running.
            InvalidOption: ``max_records`` < 1 (a :class:`~rocketmq_py.errors.ClientError`).
        """
        if max_records is not None and max_records < 1:
            raise InvalidOption(f"max_records must be at least 1, got {max_records}")
        taken = await wait_take(self._buffer, self._running, max_records, one_batch=False, timeout=timeout)
        if taken and self.namespace is not None:
            taken = {unwrap_queue(self.namespace, mq): msgs for mq, msgs in taken.items()}
        if taken and self._hooks:
            report_polled(self._hooks, self.group, taken, self.namespace, self.client_id)
        return taken

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> MessageExt:
        """The next message, one at a time; ends when the consumer is closed."""
        while not self._pending:
            if self._nursery is None:
                raise StopAsyncIteration
            taken = self._buffer.take(1, one_batch=True)
            if taken:
                if self._hooks:
                    report_polled(self._hooks, self.group, taken, self.namespace, self.client_id)
                self._pending.extend(next(iter(taken.values())))
            else:
                await self._buffer.wait_arrival()
        return self._pending.popleft()

    # --- queues and readings -----------------------------------------------------------------

    async def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        """The readable queues of ``topic`` from its route, sorted (for :meth:`assign`)."""
        validate_topic(topic)
        topic = wrap_name(self.namespace, topic)
        routes = self._client_instance.routes
        routes.use_topic(topic)
        return self._user_queues(sort_queues(await routes.subscribe_queues(topic)))

    def health(self) -> Health:
        """Readiness, from what the consumer knows (no request is sent): started, a NameServer
        answering, a master accepting heartbeats; its assigned queues with the age of their last
        pull answer (:class:`~rocketmq_py.Health`; a consumer that is not polled pulls nothing, so
        the age alone fails nothing)."""
        if self._instance is None:
            return not_running()
        return consumer_health(
            self._client_instance,
            trio.current_time(),
            [QueueReading(mq, queue.pq.last_answer_time) for mq, queue in self._queues.items()],
            idle_limit=None,
            namespace=self.namespace,
        )

    def _consumed_offsets(self) -> dict[MessageQueue, int]:
        return {mq: self._queues[mq].consumed for mq in sort_queues(self._queues)}

    # --- parts (built at each use, from the consumer's settings as they are then) ---------------

    def _commits(self) -> LiteCommits:
        """What commits the assigned queues' offsets (the consumer is started: it has a store)."""
        return LiteCommits(
            store=self._offset_store, group=self.group, auto_commit=self.auto_commit, queues=self._queues
        )

    def _pull_parts(self) -> LitePullParts:
        """What a queue's pull task works with; its quiet commit reads ``auto_commit`` as it commits."""
        return LitePullParts(
            instance=self._client_instance,
            offsets=self._offset_store,
            group=self.group,
            namespace=self.namespace,
            consume_from_where=self.consume_from_where,
            consume_timestamp_ms=self.consume_timestamp_ms,
            auto_commit=self.auto_commit,
            pull_batch_size=self.pull_batch_size,
            buffer=self._buffer,
            subscriptions=self._subscriptions,
            filters=self._filters,
            commit_quietly=lambda state: self._commits().commit(state, quiet=True),
        )

    def _lite_queues(self) -> LiteQueues:
        """What starts, seeks and releases the assigned queues (StateError: not running)."""
        return LiteQueues(nursery=self._running(), parts=self._pull_parts(), commits=self._commits())

    # --- what GroupMember asks: rebalance, GET_CONSUMER_RUNNING_INFO, RESET_CONSUMER_CLIENT_OFFSET ---

    def _rebalances(self) -> bool:
        return self._mode == "subscribe"

    async def _rebalance_topic(self, topic: str) -> None:
        allocation = await self._allocate(topic)
        if allocation is not None:
            await self._lite_queues().rebalance_topic(
                topic, allocation, self.broadcasting, self._rounds.handoff_start, self.strategy.name
            )

    def _running_info(self) -> ConsumerRunningInfo:
        """What GET_CONSUMER_RUNNING_INFO answers (:func:`~._lite_info.lite_running_info`)."""
        properties = lite_properties(
            self._member_properties(),
            mode=self._mode,
            auto_commit=self.auto_commit,
            auto_commit_interval=self.auto_commit_interval,
            pull_batch_size=self.pull_batch_size,
            limits=self.flow_limits,
            poll_timeout_ms=POLL_TIMEOUT_MS,
            topic_metadata_check_interval=self.topic_metadata_check_interval,
        )
        return lite_running_info(properties, self._queues, self._offset_store, self._subscriptions.values())

    async def _reset_wire_offsets(self, topic: str, offsets: Mapping[MessageQueue, int]) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET: seek and commit (:func:`~._lite_info.reset_lite_offsets`)."""
        await reset_lite_offsets(self.group, self._queues, self.seek, self._offset_store, topic, offsets)
