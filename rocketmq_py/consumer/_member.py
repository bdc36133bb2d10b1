"""What the push and the lite pull consumer share as members of a consumer group.

:class:`GroupMember` is the base of both: settings, subscriptions, the client instance and offset
store they run on, the lifecycle and the rebalance loop. A subclass says what its services are
(``_open``, ``_start``, ``_leave``) and how it takes a topic's allocation (``_rebalance_topic``).
The deprecated public names both have (``instance``, ``offsets``, ``running_info``, ...) are in
its base :class:`~rocketmq_py.consumer._member_deprecated.DeprecatedMemberNames`.

Lifecycle of ``async with consumer``::

    enter: client instance (connections, routes, heartbeats)
           -> offset store (brokers, or a local file when broadcasting)
           -> answers to the broker's requests (rebalance now, running info, reset offset, ...)
           -> the group's subscriptions on every broker (heartbeat), before any allocation
           -> _open (resources around the services)  -> service nursery -> _start (services)
           -> the rebalance loop: first round done before the block runs
    leave: _leave (hand the queues off, cancel the services)
           -> unregister from the brokers, close the connections (the client instance)

The rebalance loop (:class:`~rocketmq_py.consumer._rebalance_rounds.RebalanceRounds`) runs a round
at start, every ``rebalance_interval`` seconds, at once when a broker sends
NOTIFY_CONSUMER_IDS_CHANGED, and one second after a round that failed or could not take all its
queues.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from contextlib import AsyncExitStack
from dataclasses import replace
from os import PathLike
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Self

import trio

from rocketmq_py._client._config import ClientConfig
from rocketmq_py._client._instance import ClientInstance
from rocketmq_py._transport._nursery import open_service_nursery
from rocketmq_py.consumer._allocate import AllocateStrategy, get_strategy
from rocketmq_py.consumer._broker_requests import CommandCallbacks, install_command_handlers
from rocketmq_py.consumer._filter import MessageFilter
from rocketmq_py.consumer._group_client import (
    Allocation,
    allocate_topic,
    java_strategy_class,
    next_subscription,
    open_offset_store,
    refresh_quietly,
)
from rocketmq_py.consumer._lag import QueueLag, queue_lags
from rocketmq_py.consumer._member_deprecated import DeprecatedMemberNames
from rocketmq_py.consumer._offset_store_api import OffsetStore
from rocketmq_py.consumer._rebalance_rounds import RebalanceRounds
from rocketmq_py.consumer._route_gain import RouteGainWatch
from rocketmq_py.consumer._start_offset import consume_timestamp_epoch_ms, format_consume_timestamp
from rocketmq_py.errors import ClientError, StateError
from rocketmq_py.hooks import ClientEvent, Hook, call_hooks, hook_list
from rocketmq_py.producer._validation import validate_group, validate_topic
from rocketmq_py.protocol import (
    PROP_ALLOCATE_STRATEGY,
    PROP_CONSUME_TYPE,
    PROP_CONSUMER_START_TIMESTAMP,
    PROP_NAMESERVER_ADDR,
    ConsumeFromWhere,
    ConsumeMessageDirectlyResult,
    ConsumerData,
    ConsumerRunningInfo,
    ConsumeType,
    ExpressionType,
    MessageExt,
    MessageModel,
    MessageQueue,
    SubscriptionData,
    unwrap_queue,
    wrap_name,
    wrap_queue,
)

if TYPE_CHECKING:
    from rocketmq_py._tracing._trace_hook import TraceHook

__all__ = ["GroupMember"]

log = logging.getLogger("rocketmq_py.consumer")


class GroupMember(DeprecatedMemberNames):
    """A member of a consumer group: the part push and lite pull consumers have in common.

    Args:
        group: the consumer group.
        namesrv: ``"host:port;host:port"``; default ``ROCKETMQ_NAMESRV``.
        namespace: the namespace topics and the group are wrapped in on the wire; default
            ``config.namespace``.
        strategy: allocation strategy name or object.
        message_model: CLUSTERING (the group shares the queues) or BROADCASTING (every queue).
        consume_from_where: where a queue without a committed offset starts.
        consume_timestamp_ms: epoch ms CONSUME_FROM_TIMESTAMP starts at (default: 30 min ago).
        consume_timestamp: deprecated: the same as Java's ``yyyyMMddHHmmss`` in local time.
        rebalance_interval: seconds between rebalance rounds.
        handoff_delay: seconds after a round began before a newly assigned queue reads its
            committed offset, when the group has other members (they commit meanwhile).
        offsets_dir: (broadcasting) directory of the local offset files.
        config: client settings; keyword arguments not listed are passed to :class:`ClientConfig`.
    """

    #: How the broker lists the member (Java ``ConsumeType``).
    _consume_type: ClassVar[ConsumeType]
    #: Whether CONSUME_MESSAGE_DIRECTLY is answered (a listener exists).
    _consumes_directly: ClassVar[bool] = True

    def __init__(
        self,
        group: str,
        *,
        namesrv: str | None,
        namespace: str | None,
        strategy: str | AllocateStrategy,
        message_model: MessageModel | str,
        consume_from_where: ConsumeFromWhere | str,
        consume_timestamp: str | None,
        consume_timestamp_ms: int | None,
        rebalance_interval: float,
        handoff_delay: float,
        offsets_dir: str | PathLike[str] | None,
        config: ClientConfig | None,
        client_options: dict[str, Any],
    ) -> None:
        validate_group(group)
        self.config = config or ClientConfig(**client_options)
        if namesrv is not None:
            self.config.namesrv = namesrv
        if namespace is not None:
            self.config.namespace = namespace
        #: The namespace topics and the group are wrapped in (``None``: none).
        self.namespace = self.config.checked_namespace()
        #: The group as the brokers know it (``<namespace>%<group>`` in a namespace, as Java's
        #: ``getConsumerGroup`` after ``start``).
        self.group = wrap_name(self.namespace, group)
        self.strategy = get_strategy(strategy)
        self.message_model = MessageModel(message_model)
        self.consume_from_where = ConsumeFromWhere(consume_from_where)
        #: Where CONSUME_FROM_TIMESTAMP starts (epoch ms); ``None``: 30 minutes ago.
        self.consume_timestamp_ms = consume_timestamp_epoch_ms(consume_timestamp, consume_timestamp_ms)
        self.rebalance_interval = rebalance_interval
        self.handoff_delay = handoff_delay
        self.offsets_dir = offsets_dir
        self._expressions: dict[str, tuple[str, ExpressionType]] = {}
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._filters: dict[str, MessageFilter] = {}
        self._instance: ClientInstance | None = None
        self._offsets: OffsetStore | None = None
        self._stack: AsyncExitStack | None = None
        self._nursery: trio.Nursery | None = None
        self._rounds = RebalanceRounds(
            self.group,
            interval=rebalance_interval,
            handoff_delay=handoff_delay,
            broadcasting=self.broadcasting,
            topics=lambda: self._subscriptions,
            rebalance_topic=self._rebalance_topic,
            after_round=self._after_rebalance,
            enabled=self._rebalances,
        )
        self._started_ms = 0
        self._started_at = 0.0
        #: Called around each consumption (set by the subclass from its ``hooks`` argument).
        self._hooks: list[Hook] = []
        self._trace: TraceHook | None = None

    def _enable_trace(self, trace_topic: str | None) -> None:
        """Record every consumption to the trace topic (``enable_trace=True``; after ``_hooks`` is set)."""
        # Imported here: the producer and tracing load only for a consumer that traces.
        from rocketmq_py._tracing._trace_hook import new_trace_hook
        from rocketmq_py.producer._producer import Producer

        self._trace = new_trace_hook(
            self.group, self.config, self.namespace, trace_topic, open_sender=Producer
        )
        self._hooks.append(self._trace)

    def register_hook(self, hook: Hook) -> None:
        """Call ``hook`` around every consumption from now on, after the hooks given before.

        Raises:
            TypeError: ``hook`` is not a :class:`~rocketmq_py.hooks.Hook`.
        """
        self._hooks = [*self._hooks, *hook_list([hook], self)]

    # --- state -----------------------------------------------------------------------------------

    @property
    def broadcasting(self) -> bool:
        """Every member consumes every queue (BROADCASTING)."""
        return self.message_model is MessageModel.BROADCASTING

    @property
    def client_id(self) -> str:
        """``ip@instance``: how the brokers know this member."""
        return self._client_instance.client_id

    @property
    def _client_instance(self) -> ClientInstance:
        """The running client instance (connections, routes, heartbeats).

        Raises:
            StateError: the consumer is not started.
        """
        if self._instance is None:
            raise StateError(
                f"the consumer is not started: use `async with {type(self).__name__}(...) as consumer`"
            )
        return self._instance

    @property
    def _offset_store(self) -> OffsetStore:
        """The group's offset store (the brokers', or a local file when broadcasting).

        Raises:
            StateError: the consumer is not started.
        """
        if self._offsets is None:
            raise StateError("the consumer is not started")
        return self._offsets

    def _wire_queue(self, mq: MessageQueue) -> MessageQueue:
        """A queue the user named, as the brokers know it (wrapped in the namespace)."""
        return wrap_queue(self.namespace, mq)

    def _user_queues(self, queues: Iterable[MessageQueue]) -> list[MessageQueue]:
        """Queues as the user knows them (the namespace taken off), in the given order."""
        namespace = self.namespace
        return list(queues) if namespace is None else [unwrap_queue(namespace, mq) for mq in queues]

    def _running(self) -> trio.Nursery:
        if self._nursery is None or self._instance is None:
            raise StateError(
                f"the consumer is not running: use `async with {type(self).__name__}(...) as consumer`"
            )
        return self._nursery

    async def lag(self) -> list[QueueLag]:
        """How far each owned queue is behind, in queue order (:class:`QueueLag`): the broker's
        max offset, the committed offset, the offset in memory, the messages behind and how long
        ago the oldest of them was stored. Per queue: GET_MAX_OFFSET, the committed offset and,
        when behind, a one-message pull (nothing is committed). Queues a push consumer pops (POP
        consumption) are not owned: see ``pop_statistics()``.

        Raises:
            StateError: the consumer is not running.
            RocketMQError: a queue's broker could not be asked.
        """
        self._running()
        lags = await queue_lags(self._client_instance, self._offset_store, self._consumed_offsets())
        named = self._user_queues(lag.queue for lag in lags)
        return [replace(lag, queue=mq) for lag, mq in zip(lags, named, strict=True)]

    def _consumed_offsets(self) -> dict[MessageQueue, int]:
        """Each owned queue (as the brokers know it), in queue order -> its offset in memory (-1: unknown)."""
        raise NotImplementedError

    # --- subscriptions -----------------------------------------------------------------------------

    def _subscribe(self, topic: str, expression: str, expression_type: str) -> None:
        """Record a subscription; a running member registers it and rebalances at once."""
        validate_topic(topic)
        topic = wrap_name(self.namespace, topic)
        kind = ExpressionType(expression_type.upper())
        self._expressions[topic] = (expression, kind)
        self._set_subscription(topic, expression, kind)
        if self._instance is not None:
            self._instance.routes.use_topic(topic)
            self._instance.heartbeat_soon()
            self._rounds.request()

    def _set_subscription(self, topic: str, expression: str, kind: ExpressionType) -> None:
        sub = next_subscription(self._subscriptions.get(topic), topic, expression, kind)
        self._subscriptions[topic] = sub
        self._filters[topic] = MessageFilter(sub)

    def _drop_subscription(self, topic: str) -> None:
        """Stop subscribing ``topic`` (the next heartbeat no longer registers it)."""
        self._subscriptions.pop(topic, None)
        self._filters.pop(topic, None)

    def _renew_subscription(self, topic: str) -> None:
        """A newer version of ``topic``'s subscription (after a change of its queues, as Java)."""
        expression, kind = self._expressions.get(topic, ("*", ExpressionType.TAG))
        self._set_subscription(topic, expression, kind)

    def _registered_subscriptions(self) -> tuple[SubscriptionData, ...]:
        """The subscriptions the heartbeat registers with the brokers."""
        return tuple(self._subscriptions.values())

    def _consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group_name=self.group,
            consume_type=self._consume_type,
            message_model=self.message_model,
            consume_from_where=self.consume_from_where,
            subscription_data_set=self._registered_subscriptions(),
        )

    # --- lifecycle -----------------------------------------------------------------------------------

    def _check_startable(self) -> None:
        """Raise what keeps this member from starting (a subclass's settings)."""

    async def _open(self, stack: AsyncExitStack, instance: ClientInstance) -> None:
        """Resources the services use, entered on ``stack`` before the service nursery."""

    async def _start(self, nursery: trio.Nursery) -> None:
        """Start the services (the rebalance loop starts right after)."""

    def _started(self) -> None:
        """The first rebalance round is done (no I/O)."""

    async def _leave(self) -> None:
        """Hand the queues off and cancel the services (the instance is still open)."""

    def _closed(self) -> None:
        """Everything is closed: forget the queues (no I/O)."""

    async def __aenter__(self) -> Self:
        if self._instance is not None:
            raise StateError("this consumer is already started")
        self._check_startable()
        stack = AsyncExitStack()
        try:
            instance = await self._join(stack)
            if self._trace is not None:  # left after the services: their last records are flushed
                await stack.enter_async_context(self._trace.dispatcher.running())
            await self._open(stack, instance)
            self._nursery = await stack.enter_async_context(open_service_nursery())
            await self._start(self._nursery)
            await self._nursery.start(self._rounds.run)
            self._started()
        except BaseException:
            self._instance = None
            self._nursery = None
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
        if stack is None:
            return None  # closed already (aclose inside the block)
        try:
            await self._leave()
        finally:
            result = await stack.__aexit__(exc_type, exc, tb)
            self._instance = None
            self._nursery = None
            self._closed()
        return result

    async def aclose(self) -> None:
        """Close the consumer (as leaving ``async with`` does); nothing if it is not running."""
        if self._stack is not None:
            await self.__aexit__(None, None, None)

    def _on_event(self, event: ClientEvent) -> None:
        if self._hooks:
            call_hooks(self._hooks, "on_event", event)

    async def _join(self, stack: AsyncExitStack) -> ClientInstance:
        """Start the client instance and register this member with the group's brokers."""
        instance = ClientInstance(self.config)
        instance.on_event = self._on_event
        await stack.enter_async_context(instance)
        self._instance = instance
        self._started_ms = int(time.time() * 1000)
        self._started_at = trio.current_time()
        self._offsets = await open_offset_store(
            instance, self.group, broadcasting=self.broadcasting, directory=self.offsets_dir
        )
        callbacks = CommandCallbacks(
            self.group,
            self._request_rebalance,
            self._running_info,
            self._reset_offsets,
            self._consume_directly,
        )
        install_command_handlers(instance, callbacks, consume_directly=self._consumes_directly)
        instance.add_consumer(self.group, self._consumer_data)
        instance.routes.add_listener(RouteGainWatch(lambda: self._subscriptions, self._on_route_gain))
        for topic in self._subscriptions:
            instance.routes.use_topic(topic)
            await refresh_quietly(instance.routes, topic)  # a retry topic appears with the heartbeat
        await instance.heartbeat_all()  # subscriptions registered before any allocation or pull
        return instance

    def _request_rebalance(self) -> None:
        log.info("%s: the broker says the members of %s changed: rebalancing now", self.client_id, self.group)
        self._rounds.request()

    def _on_route_gain(self, topic: str, brokers: frozenset[str]) -> None:
        log.info(
            "%s: the route of %s now names %s: rebalancing now",
            self.client_id,
            topic,
            ", ".join(sorted(brokers)),
        )
        self._rounds.request()

    def _running_info(self) -> ConsumerRunningInfo:
        """What GET_CONSUMER_RUNNING_INFO answers (``mqadmin consumerStatus`` / ``consumerProgress``)."""
        raise NotImplementedError

    async def _reset_offsets(self, topic: str, offsets: Mapping[MessageQueue, int]) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET: move the owned queues of ``topic`` named in ``offsets``."""
        if self.namespace is not None:  # the broker's names stay as they are (wrapping is idempotent)
            topic = wrap_name(self.namespace, topic)
            offsets = {self._wire_queue(mq): offset for mq, offset in offsets.items()}
        await self._reset_wire_offsets(topic, offsets)

    async def _reset_wire_offsets(self, topic: str, offsets: Mapping[MessageQueue, int]) -> None:
        """:meth:`_reset_offsets`, the topic and queues named as the brokers know them."""
        raise NotImplementedError

    async def _consume_directly(
        self, msg: MessageExt, broker_name: str | None
    ) -> ConsumeMessageDirectlyResult:
        raise ClientError(f"the consumer of {self.group} has no listener to consume directly")

    # --- rebalance ---------------------------------------------------------------------------------

    def _rebalances(self) -> bool:
        """Whether rounds allocate queues (a lite consumer given its queues does not)."""
        return True

    async def _rebalance(self) -> None:
        """Rebalance every subscribed topic now (errors are logged; another round follows in 1 s)."""
        await self._rounds.round()

    async def _allocate(self, topic: str) -> Allocation | None:
        """``topic``'s queues, the group's members and this member's share (None: no route yet)."""
        return await allocate_topic(
            self._client_instance, self.group, topic, self.strategy, broadcasting=self.broadcasting
        )

    async def _rebalance_topic(self, topic: str) -> None:
        raise NotImplementedError

    def _after_rebalance(self) -> None:
        """A round over every topic is done (no I/O)."""

    # --- running info ------------------------------------------------------------------------------

    def _member_properties(self) -> dict[str, str]:
        """The running-info properties every member reports (Java ``DefaultMQPushConsumer`` names)."""
        return {
            PROP_NAMESERVER_ADDR: ";".join(self._client_instance.namesrv_addrs),
            PROP_CONSUME_TYPE: self._consume_type.value,
            PROP_CONSUMER_START_TIMESTAMP: str(self._started_ms),
            PROP_ALLOCATE_STRATEGY: java_strategy_class(self.strategy),
            "allocateMessageQueueStrategyName": self.strategy.name,
            "consumerGroup": self.group,
            "messageModel": self.message_model.value,
            "consumeFromWhere": self.consume_from_where.value,
            "consumeTimestamp": format_consume_timestamp(self.consume_timestamp_ms)
            if self.consume_timestamp_ms is not None
            else "",
            "instanceName": self.config.instance_name or "",
            "clientIP": self.config.client_ip or "",
            "unitMode": "false",
        }
