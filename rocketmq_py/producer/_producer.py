"""The producer: validate, route, select a queue, send, retry, all under one deadline.

``async with Producer("group", namesrv="host:port") as producer`` starts a client instance
(connection pool, route refresh, heartbeat with the producer group) and leaves it unregistered and
closed at the end of the block.

A synchronous send is Java's ``sendDefaultImpl``: the message is validated before any I/O; then,
inside one trio deadline that covers the route lookup and every attempt (``send_timeout``, Java's
``sendMsgTimeout``), up to ``1 + retry_times`` attempts pick a queue with the latency fault
strategy (avoiding the broker of the previous attempt), send, and record the attempt's latency and
outcome in the fault table. Transport errors and retriable broker codes retry; anything else is
raised at once. Sends with a queue selector (ordered messages) or to an explicit queue make one
attempt, as in Java, so a retry never reorders a sharding key. The per-message part (attempts,
frames, results, oneway writes) is the base class :class:`~rocketmq_py.producer._send_path.SendPath`;
the counters ``statistics()`` snapshots are in :mod:`._statistics`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any, Self

import trio

from rocketmq_py._client._config import ClientConfig
from rocketmq_py._client._instance import ClientInstance
from rocketmq_py._client._route import DEFAULT_TOPIC_QUEUE_NUMS
from rocketmq_py._deprecation import warn_deprecated
from rocketmq_py._health import Health, client_health, not_running
from rocketmq_py._tracing._trace_hook import TraceHook, new_trace_hook
from rocketmq_py.errors import InvalidOption, StateError
from rocketmq_py.hooks import ClientEvent, Hook, call_hooks, hook_list
from rocketmq_py.producer._fault import FaultConfig, QueueSelector
from rocketmq_py.producer._message_prep import (
    REQUEST_PROPERTY_KEYS,
    batch_request,
    batch_result,
    reserved_for,
)
from rocketmq_py.producer._namespace import user_result, wire_message, wire_queue, wire_selector
from rocketmq_py.producer._recall import recall_message
from rocketmq_py.producer._request import send_request
from rocketmq_py.producer._selectors import SelectQueue
from rocketmq_py.producer._send_header import SendHeader
from rocketmq_py.producer._send_path import SendPath
from rocketmq_py.producer._statistics import ProducerCounters, ProducerStatistics
from rocketmq_py.producer._types import SendResult
from rocketmq_py.producer._validation import (
    DEFAULT_PRODUCER_GROUP,
    MAX_MESSAGE_SIZE,
    RESERVED_PROPERTY_KEYS,
    validate_message,
    validate_producer_group,
    validate_topic,
)
from rocketmq_py.protocol import (
    CompressionType,
    Message,
    MessageExt,
    MessageQueue,
    UniqKeyGenerator,
    unwrap_queue,
    wrap_name,
)
from rocketmq_py.protocol._compression import COMPRESS_OVER_BYTES, DEFAULT_COMPRESS_LEVEL

__all__ = ["Producer", "ProducerStatistics"]


#: Java ``DefaultMQProducer.sendMsgTimeout``: the whole send, retries and route lookup included.
DEFAULT_SEND_TIMEOUT = 3.0
#: Java ``retryTimesWhenSendFailed``: a failed synchronous send is tried this many more times.
DEFAULT_RETRY_TIMES = 2
#: An attempt slower than this is abandoned and retried on another broker. Java's equivalent
#: (``sendMsgMaxTimeoutPerRequest``) is off, so one hung broker eats the whole send budget; ours
#: leaves room for the retries. An abandoned attempt may still be stored (at-least-once).
#: Measured with benchmarks/chaos.py (200 msg/s, 64 in flight, a broker SIGSTOPped 10 s): 1 s failed
#: 0 of 2,002 sends made during the pause, with 64 duplicates; None failed 37 of 502, with 172. Raise
#: it where a healthy round trip can approach 1 s, or abandoned attempts become duplicates.
DEFAULT_ATTEMPT_TIMEOUT = 1.0


class Producer(SendPath):
    """Sends messages to RocketMQ topics (Java ``DefaultMQProducer``), on trio.

    Args:
        group: the producer group (shown by admin tools; needed for transactions).
        namesrv: ``"host:port;host:port"``; default ``ROCKETMQ_NAMESRV``.
        namespace: send in this namespace (Java ``setNamespace``): topics and the group are
            ``<namespace>%<name>`` on the wire, results and selectors see plain names; default
            ``config.namespace``. ``group`` then holds the wrapped name, as Java's
            ``getProducerGroup`` after ``start``.
        send_timeout: seconds for a whole send: route lookup plus every attempt.
        attempt_timeout: seconds one attempt may take before it is abandoned and retried on
            another broker (``None``: an attempt may use the whole remaining budget, as Java).
        retry_times: extra attempts of a synchronous send after a retriable failure.
        retry_another_broker_when_not_store_ok: retry (on another broker) when the broker stored
            the message but answered a flush/slave warning instead of SEND_OK.
        max_message_size: largest body accepted (4 MiB, as Java).
        compress_over: bodies of at least this many bytes are compressed (not in batches).
        compress_type: how (zlib, as Java).
        compress_level: the compression level (5, as Java).
        fault: latency fault tolerance settings; on by default (Java ships it off).
        auto_create_topic: send to unknown topics through the ``TBW102`` route (the broker creates them).
        hooks: called around every send attempt (:class:`~rocketmq_py.hooks.Hook`, Java's
            ``SendMessageHook``), e.g. :class:`rocketmq_py.otel.OpenTelemetryHook`.
        enable_trace: write a trace record of every send to the trace topic, as Java's
            ``enableMsgTrace`` (``mqadmin queryMsgTraceById`` shows them), batched in the background.
        trace_topic: where trace records go (default ``RMQ_SYS_TRACE_TOPIC``).
        config: client settings (timeouts, ACL, TLS, instance name, ...); keyword arguments not
            listed here are passed to :class:`ClientConfig`.
    """

    def __init__(
        self,
        group: str = DEFAULT_PRODUCER_GROUP,
        *,
        namesrv: str | None = None,
        namespace: str | None = None,
        send_timeout: float = DEFAULT_SEND_TIMEOUT,
        attempt_timeout: float | None = DEFAULT_ATTEMPT_TIMEOUT,
        retry_times: int = DEFAULT_RETRY_TIMES,
        retry_another_broker_when_not_store_ok: bool = False,
        max_message_size: int = MAX_MESSAGE_SIZE,
        compress_over: int = COMPRESS_OVER_BYTES,
        compress_type: CompressionType = CompressionType.ZLIB,
        compress_level: int = DEFAULT_COMPRESS_LEVEL,
        fault: FaultConfig | None = None,
        auto_create_topic: bool = True,
        default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS,
        hooks: Iterable[Hook] = (),
        enable_trace: bool = False,
        trace_topic: str | None = None,
        config: ClientConfig | None = None,
        **client_options: Any,
    ) -> None:
        validate_producer_group(group)
        self.config = config or ClientConfig(**client_options)
        if namesrv is not None:
            self.config.namesrv = namesrv
        if namespace is not None:
            self.config.namespace = namespace
        #: The namespace topics and the group are wrapped in (``None``: none).
        self.namespace = self.config.checked_namespace()
        self.group = wrap_name(self.namespace, group)
        self.send_timeout = send_timeout
        self.attempt_timeout = attempt_timeout
        self.retry_times = retry_times
        self.retry_another_broker_when_not_store_ok = retry_another_broker_when_not_store_ok
        self.max_message_size = max_message_size
        self.compress_over = compress_over
        self.compress_type = compress_type
        self.compress_level = compress_level
        self.auto_create_topic = auto_create_topic
        self.default_topic_queue_nums = default_topic_queue_nums
        self._send_header = SendHeader(self.group, default_topic_queue_nums)
        self.fault_config = fault or FaultConfig()
        # Trio's clock, not time.monotonic: latencies and benches then follow the run's clock
        # (a MockClock in tests), and the table is only read inside the run.
        self._fault = self.fault_config.build(trio.current_time)
        self._selector = QueueSelector()
        self._instance: ClientInstance | None = None
        self._uniq: UniqKeyGenerator | None = None
        self._stats = ProducerCounters()
        self._reserved = RESERVED_PROPERTY_KEYS
        #: False when the producer runs on another client's instance (see :meth:`_attach`).
        self._owns_instance = True
        self._route_rechecked: dict[str, float] = {}
        # trio.current_time, minus two calls: the run's clock, read per send (set once started).
        self._now: Callable[[], float] = trio.current_time
        self._hooks = hook_list(hooks, self)
        self._trace: TraceHook | None = None
        self._trace_running: AbstractAsyncContextManager[None] | None = None
        if enable_trace:  # the trace dispatcher sends with a Producer of its own
            self._trace = new_trace_hook(
                self.group, self.config, self.namespace, trace_topic, open_sender=Producer
            )
            self._hooks.append(self._trace)

    def register_hook(self, hook: Hook) -> None:
        """Call ``hook`` around every send attempt from now on, after the hooks given before.

        Raises:
            TypeError: ``hook`` is not a :class:`~rocketmq_py.hooks.Hook`.
        """
        self._hooks = [*self._hooks, *hook_list([hook], self)]

    # --- lifecycle -------------------------------------------------------------------------------------

    @property
    def client_id(self) -> str:
        """``ip@instance``, as brokers see this client (raises StateError before it is started)."""
        return self._client_instance.client_id

    @property
    def _client_instance(self) -> ClientInstance:
        """The client instance this producer runs on (connections, routes, heartbeats).

        Raises:
            StateError: the producer is not started.
        """
        if self._instance is None:
            raise StateError("the producer is not started: use `async with Producer(...) as producer`")
        return self._instance

    @property
    def instance(self) -> Any:
        """Deprecated: the client instance is internal (its type is not part of the API).

        Use :attr:`client_id` for how the brokers know this producer and :meth:`statistics` for
        its counters.

        Raises:
            StateError: the producer is not started.
        """
        name = type(self).__name__
        warn_deprecated(
            f"{name}.instance is deprecated: the client instance is internal (use {name}.client_id "
            f"for the client id, {name}.statistics() for the counters)"
        )
        return self._client_instance

    async def __aenter__(self) -> Self:
        if self._instance is not None:
            raise StateError("this producer is already started")
        instance = ClientInstance(self.config)
        instance.on_event = self._on_event
        await instance.__aenter__()
        try:
            instance.routes.auto_create = self.auto_create_topic
            instance.routes.default_topic_queue_nums = self.default_topic_queue_nums
            instance.add_producer_group(self.group)
            self._uniq = UniqKeyGenerator(ip=self.config.client_ip)
            self._now = trio.lowlevel.current_clock().current_time
            self._started(instance)
            if self._trace is not None:
                running = self._trace.dispatcher.running()
                await running.__aenter__()
                self._trace_running = running
        except BaseException as exc:
            await instance.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        self._instance = instance
        return self

    def _on_event(self, event: ClientEvent) -> None:
        if self._hooks:
            call_hooks(self._hooks, "on_event", event)

    def _started(self, instance: ClientInstance) -> None:
        """Hook for subclasses (transaction producer) to register broker handlers."""

    def _attach(self, instance: ClientInstance) -> None:
        """Send through ``instance``, which another client owns and closes (Java's inner producer).

        The producer then uses that client's connections, RPC hooks (ACL), TLS, timeouts and
        heartbeats (its group is added to them), as Java's ``MQClientInstance`` does with its
        ``CLIENT_INNER_PRODUCER``: a consumer re-sends through it and never opens a second client.
        :meth:`_detach` ends the use; the instance stays open.

        Raises:
            StateError: the producer is already started.
        """
        if self._instance is not None:
            raise StateError("this producer is already started")
        instance.add_producer_group(self.group)
        self._uniq = UniqKeyGenerator(ip=instance.config.client_ip)
        self._now = trio.lowlevel.current_clock().current_time
        self._started(instance)
        self._instance = instance
        self._owns_instance = False

    def _detach(self) -> None:
        """Stop using an instance given to :meth:`_attach` (no I/O: its owner unregisters it)."""
        if self._instance is not None and not self._owns_instance:
            self._instance.remove_producer_group(self.group)
            self._instance = None
            self._owns_instance = True

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        if not self._owns_instance:
            self._detach()
            return None
        instance, self._instance = self._client_instance, None
        running, self._trace_running = self._trace_running, None
        try:
            if running is not None:  # the last trace records are flushed while the instance is up
                await running.__aexit__(None, None, None)
        finally:
            result = await instance.__aexit__(exc_type, exc, tb)
        return result

    async def aclose(self) -> None:
        """Close the producer (same as leaving ``async with``)."""
        if self._instance is not None:
            await self.__aexit__(None, None, None)

    def health(self) -> Health:
        """Readiness, from what the producer knows (no request is sent): started, a NameServer
        answering route requests, a master broker accepting heartbeats; its fault isolations are
        warnings (:class:`~rocketmq_py.Health`)."""
        if self._instance is None:
            return not_running()
        now = trio.current_time()
        isolated = {}
        if self._fault is not None:
            isolated = {
                b: i.available_at - now for b, i in self._fault.snapshot().items() if i.available_at > now
            }
        return client_health(self._instance, now, isolated=isolated)

    def statistics(self) -> ProducerStatistics:
        """A snapshot of the counters and the fault table (broker -> latency, availability).

        Returns:
            A new frozen :class:`ProducerStatistics`, which later sends do not change.
        """
        return self._stats.snapshot(self._fault)

    async def fetch_publish_queues(self, topic: str) -> list[MessageQueue]:
        """The writable queues of ``topic``, those sends choose from (Java
        ``fetchPublishMessageQueues``): from the cached route, read from a NameServer when there
        is none yet (a topic the NameServer does not know gets the queues auto-creation would give
        it, as sends do).

        Raises:
            InvalidTopic: a bad topic name (nothing sent).
            StateError: the producer is not started.
            RouteNotFound, TransportError: no route could be read.
        """
        validate_topic(topic)
        info = await self._client_instance.routes.publish_info(wrap_name(self.namespace, topic))
        return [unwrap_queue(self.namespace, queue) for queue in info.queues]

    # --- sending ---------------------------------------------------------------------------------------

    async def send(
        self,
        message: Message,
        *,
        selector: SelectQueue | None = None,
        arg: Any = None,
        queue: MessageQueue | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the send deadline, Java's sendMsgTimeout
    ) -> SendResult:
        """Send one message and wait for the broker to store it.

        Args:
            message: the message (a UNIQ_KEY is added when it has none).
            selector: choose the queue yourself (``selector(queues, message, arg)``), e.g.
                :func:`select_by_hash` for ordered messages; one attempt, no retry.
            arg: passed to ``selector``.
            queue: send to this queue; one attempt.
            timeout: seconds for the whole send (default ``send_timeout``).

        Returns:
            The broker's answer: status, message ids, queue and queue offset.

        Raises:
            InvalidMessage: the message fails validation (nothing was sent).
            RouteNotFound: the topic has no route and cannot be auto-created.
            BrokerError: the broker refused the message (non-retriable code, or retries exhausted).
            RequestTimeout: the deadline passed.
            TransportError: every attempt failed to reach a broker.
        """
        validate_message(message, self.max_message_size, reserved=reserved_for(self._reserved, message))
        namespace = self.namespace
        if namespace is None:
            return await self._send(
                message, batch=False, selector=selector, arg=arg, queue=queue, timeout=timeout
            )
        result = await self._send(
            wire_message(namespace, message),
            batch=False,
            selector=wire_selector(namespace, selector, message),
            arg=arg,
            queue=wire_queue(namespace, queue),
            timeout=timeout,
        )
        return user_result(namespace, result)

    async def request(
        self,
        message: Message,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - the whole request's deadline, as Java's
        selector: SelectQueue | None = None,
        arg: Any = None,
        queue: MessageQueue | None = None,
    ) -> MessageExt:
        """Send a request and wait for its reply (Java ``DefaultMQProducer.request``).

        A responder consumes the request and sends :func:`~rocketmq_py.create_reply` of it with
        any producer; the broker pushes that reply to this client. The message gets the
        properties ``CORRELATION_ID``, ``REPLY_TO_CLIENT`` and ``TTL`` (replaced when the
        message was a request before, so it may be asked again).

        Args:
            message: the request (any topic a responder consumes).
            timeout: seconds for the whole call, send and reply (default ``send_timeout``).
            selector: choose the queue yourself (as in :meth:`send`); one attempt.
            arg: passed to ``selector``.
            queue: send to this queue; one attempt.

        Returns:
            The reply message (its topic is ``<cluster>_REPLY_TOPIC``).

        Raises:
            InvalidMessage: the message fails validation (nothing was sent).
            InvalidOption: ``timeout`` is not positive.
            RequestReplyTimeout: no reply within ``timeout`` (its ``sent`` tells whether the
                request was stored); a later reply is dropped.
            BrokerError, RouteNotFound, TransportError: the request could not be sent.
        """
        if timeout is not None and not timeout > 0:
            raise InvalidOption(f"a request's timeout must be positive, not {timeout!r}")
        # The request's own properties are (re)set by send_request: a message may be asked again.
        validate_message(message, self.max_message_size, reserved=self._reserved - REQUEST_PROPERTY_KEYS)
        namespace = self.namespace
        if namespace is not None:
            selector = wire_selector(namespace, selector, message)
            message, queue = wire_message(namespace, message), wire_queue(namespace, queue)

        async def send(request: Message, remaining: float) -> object:
            return await self._send(
                request, batch=False, selector=selector, arg=arg, queue=queue, timeout=remaining
            )

        return await send_request(
            self._client_instance, message, send, timeout=self.send_timeout if timeout is None else timeout
        )

    async def send_oneway(self, message: Message, *, queue: MessageQueue | None = None) -> None:
        """Send without waiting for the broker (no result, no retry; lost if the broker is down)."""
        validate_message(message, self.max_message_size, reserved=reserved_for(self._reserved, message))
        if self.namespace is not None:
            message, queue = wire_message(self.namespace, message), wire_queue(self.namespace, queue)
        await self._send_oneway(message, queue)

    async def send_batch(
        self,
        messages: Sequence[Message],
        *,
        queue: MessageQueue | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> SendResult:
        """Send messages of one topic as one batch (stored together; one result).

        Raises:
            InvalidMessage: empty batch, mixed topics, delay or retry topics, or the batch's
                encoded size over ``max_message_size``.
        """
        wrapper, inner_ids = batch_request(
            messages, self.namespace, self.max_message_size, self._reserved, self._new_uniq_keys
        )
        if self.namespace is not None:
            queue = wire_queue(self.namespace, queue)
        result = await self._send(wrapper, batch=True, selector=None, arg=None, queue=queue, timeout=timeout)
        return batch_result(result, inner_ids, self.namespace)

    async def recall(
        self,
        topic: str,
        recall_handle: str,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - the call's deadline, Java's sendMsgTimeout
    ) -> str:
        """Take back a message with a delivery time before it is delivered (RocketMQ 5.3.2+).

        Java ``DefaultMQProducer.recallMessage``. The broker must have ``recallMessageEnable=true``.

        Args:
            topic: the message's topic.
            recall_handle: ``SendResult.recall_handle`` of its send.
            timeout: seconds for the whole call (default ``send_timeout``).

        Returns:
            The recalled message's id (its ``UNIQ_KEY``).

        Raises:
            InvalidTopic, InvalidRecallHandle: a bad topic or handle (nothing sent).
            RecallNotSupported: the broker is older than 5.3.2 (nothing sent).
            RequestTimeout: no answer in time.
            BrokerError: the broker refused: ``NoPermission`` (recall disabled on it),
                ``IllegalOperation`` (the delivery time has passed, or a handle it did not issue).
        """
        if self.namespace is not None:  # the handle names the topic as the broker stored it
            topic = wrap_name(self.namespace, topic)
        return await recall_message(
            self._client_instance,
            self.group,
            topic,
            recall_handle,
            timeout=self.send_timeout if timeout is None else timeout,
        )
