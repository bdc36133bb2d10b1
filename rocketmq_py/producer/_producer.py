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
attempt, as in Java, so a retry never reorders a sharding key.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Final, Self

import trio

from rocketmq_py._client._capabilities import DELIVERY_TIME_KEYS, require_timer_support
from rocketmq_py._client._config import ClientConfig
from rocketmq_py._client._instance import ClientInstance
from rocketmq_py._client._route import DEFAULT_TOPIC_QUEUE_NUMS, TopicPublishInfo
from rocketmq_py.errors import (
    BrokerError,
    MessageTooLarge,
    RequestTimeout,
    RocketMQError,
    RouteNotFound,
    StateError,
    TransportError,
)
from rocketmq_py.producer._attempts import FailedAttempt, attempt_timeout, describe_attempts
from rocketmq_py.producer._fault import FaultConfig, QueueSelector
from rocketmq_py.producer._selectors import SelectQueue
from rocketmq_py.producer._send_header import SendHeader, SendParts
from rocketmq_py.producer._types import SendResult, SendStatus
from rocketmq_py.producer._validation import (
    DEFAULT_PRODUCER_GROUP,
    MAX_MESSAGE_SIZE,
    RESERVED_PROPERTY_KEYS,
    validate_message,
    validate_producer_group,
)
from rocketmq_py.protocol import (
    CompressionType,
    Message,
    MessageQueue,
    PropertyKey,
    SysFlag,
    UniqKeyGenerator,
    encode_batch,
    encode_properties,
    is_retry_topic,
    maybe_compress,
    validate_batch,
)
from rocketmq_py.protocol._compression import COMPRESS_OVER_BYTES, DEFAULT_COMPRESS_LEVEL
from rocketmq_py.protocol._frozen import slot_builder

__all__ = ["Producer", "ProducerStatistics"]

log = logging.getLogger("rocketmq_py.producer")

_send_result: Final = slot_builder(SendResult)
_STATUS_BY_CODE: Final = {status.value: status for status in SendStatus}


class _DeadlinePassed(Exception):
    """Internal: the send's deadline passed (turned into RequestTimeout by ``_send``)."""


#: Java ``DefaultMQProducer.sendMsgTimeout``: the whole send, retries and route lookup included.
DEFAULT_SEND_TIMEOUT = 3.0
#: Java ``retryTimesWhenSendFailed``: a failed synchronous send is tried this many more times.
DEFAULT_RETRY_TIMES = 2
#: Seconds between two route lookups of a topic whose cached route offers no healthy broker (Java
#: has none: only the 30-s poll; see Producer._recheck_route).
ROUTE_RECHECK_INTERVAL = 1.0
#: An attempt slower than this is abandoned and retried on another broker. Java's equivalent
#: (``sendMsgMaxTimeoutPerRequest``) is off, so one hung broker eats the whole send budget; ours
#: leaves room for the retries. An abandoned attempt may still be stored (at-least-once).
#: Measured with benchmarks/chaos.py (200 msg/s, 64 in flight, a broker SIGSTOPped 10 s): 1 s failed
#: 0 of 2,002 sends made during the pause, with 64 duplicates; None failed 37 of 502, with 172. Raise
#: it where a healthy round trip can approach 1 s, or abandoned attempts become duplicates.
DEFAULT_ATTEMPT_TIMEOUT = 1.0
# How much later than its request's own timeout an attempt is cut (a slow route lookup or connect).
_CUT_GRACE = 0.005


@dataclass(slots=True)
class ProducerStatistics:
    """Counters of one producer (see :meth:`Producer.statistics`)."""

    sent: int = 0
    failed: int = 0
    attempts: int = 0
    retries: int = 0
    fault: dict[str, Any] = field(default_factory=dict)


class Producer:
    """Sends messages to RocketMQ topics (Java ``DefaultMQProducer``), on trio.

    Args:
        group: the producer group (shown by admin tools; needed for transactions).
        namesrv: ``"host:port;host:port"``; default ``ROCKETMQ_NAMESRV``.
        send_timeout: seconds for a whole send: route lookup plus every attempt.
        attempt_timeout: seconds one attempt may take before it is abandoned and retried on
            another broker (``None``: an attempt may use the whole remaining budget, as Java).
        retry_times: extra attempts of a synchronous send after a retriable failure.
        retry_another_broker_when_not_store_ok: retry (on another broker) when the broker stored
            the message but answered a flush/slave warning instead of SEND_OK.
        max_message_size: largest body accepted (4 MiB, as Java).
        compress_over: bodies of at least this many bytes are compressed (not in batches).
        compress_type, compress_level: how (zlib level 5, as Java).
        fault: latency fault tolerance settings; on by default (Java ships it off).
        auto_create_topic: send to unknown topics through the ``TBW102`` route (the broker creates them).
        config: client settings (timeouts, ACL, TLS, instance name, ...); keyword arguments not
            listed here are passed to :class:`ClientConfig`.
    """

    def __init__(
        self,
        group: str = DEFAULT_PRODUCER_GROUP,
        *,
        namesrv: str | None = None,
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
        config: ClientConfig | None = None,
        **client_options: Any,
    ) -> None:
        validate_producer_group(group)
        self.group = group
        self.config = config or ClientConfig(**client_options)
        if namesrv is not None:
            self.config.namesrv = namesrv
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
        self._send_header = SendHeader(group, default_topic_queue_nums)
        self.fault_config = fault or FaultConfig()
        # Trio's clock, not time.monotonic: latencies and benches then follow the run's clock
        # (a MockClock in tests), and the table is only read inside the run.
        self._fault = self.fault_config.build(trio.current_time)
        self._selector = QueueSelector()
        self._instance: ClientInstance | None = None
        self._uniq: UniqKeyGenerator | None = None
        self._stats = ProducerStatistics()
        self._reserved = RESERVED_PROPERTY_KEYS
        #: False when the producer runs on another client's instance (see :meth:`_attach`).
        self._owns_instance = True
        self._route_rechecked: dict[str, float] = {}
        # trio.current_time, minus two calls: the run's clock, read per send (set once started).
        self._now: Callable[[], float] = trio.current_time

    # --- lifecycle -------------------------------------------------------------------------------------

    @property
    def client_id(self) -> str:
        return self.instance.client_id

    @property
    def instance(self) -> ClientInstance:
        if self._instance is None:
            raise StateError("the producer is not started: use `async with Producer(...) as producer`")
        return self._instance

    async def __aenter__(self) -> Self:
        if self._instance is not None:
            raise StateError("this producer is already started")
        instance = ClientInstance(self.config)
        await instance.__aenter__()
        try:
            instance.routes.auto_create = self.auto_create_topic
            instance.routes.default_topic_queue_nums = self.default_topic_queue_nums
            instance.add_producer_group(self.group)
            self._uniq = UniqKeyGenerator(ip=self.config.client_ip)
            self._now = trio.lowlevel.current_clock().current_time
            self._started(instance)
        except BaseException as exc:
            await instance.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        self._instance = instance
        return self

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
        instance, self._instance = self.instance, None
        return await instance.__aexit__(exc_type, exc, tb)

    async def aclose(self) -> None:
        """Close the producer (same as leaving ``async with``)."""
        if self._instance is not None:
            await self.__aexit__(None, None, None)

    def statistics(self) -> ProducerStatistics:
        """Counters and the fault table (broker -> latency, availability)."""
        stats = self._stats
        stats.fault = {name: item for name, item in self._fault.snapshot().items()} if self._fault else {}
        return stats

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
        validate_message(message, self.max_message_size, reserved=self._reserved)
        return await self._send(
            message, batch=False, selector=selector, arg=arg, queue=queue, timeout=timeout
        )

    async def send_oneway(self, message: Message, *, queue: MessageQueue | None = None) -> None:
        """Send without waiting for the broker (no result, no retry; lost if the broker is down)."""
        validate_message(message, self.max_message_size, reserved=self._reserved)
        with trio.move_on_after(self.send_timeout):
            info = await self.instance.routes.publish_info(message.topic)
            mq = queue or self._selector.select(info, None, self._fault)
            address, fields, body = await self._prepare(message, mq, batch=False)
            await self.instance.api.send_message_oneway(address, fields, body)
            self._stats.sent += 1
            return
        # Our error, not trio.TooSlowError (which is outside the error tree).
        raise RequestTimeout(
            f"sending to {message.topic} (oneway) did not finish within {self.send_timeout:g} s"
        )

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
        validate_batch(messages)
        max_size, reserved = self.max_message_size, self._reserved
        validate_message(messages[0], max_size, reserved=reserved)  # the topic, once: it is theirs all
        for message in messages:
            body = message.body
            if not body or len(body) > max_size or message.properties:
                validate_message(message, max_size, reserved=reserved)
        wrapper = Message(messages[0].topic, b"")
        wrapper.properties[PropertyKey.WAIT_STORE_MSG_OK] = messages[0].properties.get(
            PropertyKey.WAIT_STORE_MSG_OK, "true"
        )
        inner_ids = self._batch_uniq_keys(messages)
        # No UNIQ_KEY on the batch itself: the broker appends the batch's properties to every stored
        # entry and the last UNIQ_KEY wins on decode, so consumers would see one id for the whole
        # batch (the Java client did this until apache/rocketmq#9416).
        wrapper.body = encode_batch(messages)
        if len(wrapper.body) > self.max_message_size:
            raise MessageTooLarge(len(wrapper.body), self.max_message_size)
        result = await self._send(wrapper, batch=True, selector=None, arg=None, queue=queue, timeout=timeout)
        return SendResult(
            status=result.status,
            msg_id=",".join(inner_ids),
            offset_msg_id=result.offset_msg_id,
            queue=result.queue,
            queue_offset=result.queue_offset,
            transaction_id=result.transaction_id,
            region_id=result.region_id,
        )

    # --- the send loop -------------------------------------------------------------------------------

    async def _send(
        self,
        message: Message,
        *,
        batch: bool,
        selector: SelectQueue | None,
        arg: Any,
        queue: MessageQueue | None,
        timeout: float | None,  # noqa: ASYNC109
    ) -> SendResult:
        budget = self.send_timeout if timeout is None else timeout
        now = self._now()
        deadline = now + budget
        failed: list[FailedAttempt] = []
        try:
            result = await self._attempts(message, batch, selector, arg, queue, failed, now, deadline)
        except _DeadlinePassed:
            self._stats.failed += 1
            timeout_error = RequestTimeout(
                f"sending to {message.topic} did not finish within {budget:g} s; {describe_attempts(failed)}"
            )
            raise timeout_error from (failed[-1].error if failed else None)
        except RocketMQError as exc:
            self._stats.failed += 1
            if len(failed) > 1:  # the error is the last attempt's; the note names them all
                exc.add_note(f"sending to {message.topic} failed: {describe_attempts(failed)}")
            raise
        except BaseException:
            self._stats.failed += 1
            raise
        self._stats.sent += 1
        return result

    async def _publish_info(self, topic: str, deadline: float) -> TopicPublishInfo:
        routes = self.instance.routes
        info = routes.cached_publish_info(topic)
        if info is not None:
            return info
        with trio.move_on_at(deadline):
            return await routes.publish_info(topic)
        raise _DeadlinePassed

    async def _attempts(
        self,
        message: Message,
        batch: bool,
        selector: SelectQueue | None,
        arg: Any,
        queue: MessageQueue | None,
        failed: list[FailedAttempt],
        now: float,
        deadline: float,
    ) -> SendResult:
        """Java's retry loop: each attempt within :func:`attempt_timeout` of the deadline.

        ``now`` is the clock when the send began (the first attempt's start).
        """
        routes = self.instance.routes
        topic = message.topic
        info = routes.cached_publish_info(topic) or await self._publish_info(topic, deadline)
        single = selector is not None or queue is not None
        attempts = 1 if single else 1 + max(0, self.retry_times)
        last_broker: str | None = None
        # A result the broker stored with a flush/slave warning while we try for SEND_OK elsewhere
        # (retry_another_broker_when_not_store_ok): returned if no later attempt does better, as
        # Java's sendDefaultImpl returns its last sendResult rather than a later failure.
        stored: SendResult | None = None
        timed_out = False
        fault = self._fault
        started = now
        for attempt in range(attempts):
            if queue is not None:
                mq = queue
            elif selector is not None:
                mq = selector(info.queues, message, arg)
            else:
                if attempt:
                    info = routes.cached_publish_info(topic) or info  # a recheck may have landed
                mq = self._selector.select(info, last_broker, fault, reset_index=attempt > 0)
                if mq.broker_name == last_broker or (
                    fault is not None and not fault.is_available(mq.broker_name)
                ):
                    self._recheck_route(topic)
            last_broker = mq.broker_name
            if attempt:
                started = trio.current_time()
            remaining = deadline - started
            if remaining <= 0:
                timed_out = True
                break
            stats = self._stats
            stats.attempts += 1
            if attempt:
                stats.retries += 1
            limit = attempt_timeout(
                None if single else self.attempt_timeout, remaining, last=attempt + 1 == attempts
            )
            try:
                result = await self._send_to(message, mq, batch=batch, timeout=limit)
            except TransportError as exc:
                self._record(mq.broker_name, started, isolation=True, reachable=True)
                log.info("send to %s failed (attempt %d/%d): %s", mq, attempt + 1, attempts, exc)
                failed.append(FailedAttempt(attempt + 1, mq.broker_name, exc))
                if trio.current_time() >= deadline:
                    timed_out = True
                    break
                continue
            except BrokerError as exc:
                self._record(mq.broker_name, started, isolation=True, reachable=False)
                failed.append(FailedAttempt(attempt + 1, mq.broker_name, exc))
                if exc.refresh_route:
                    routes.invalidate(topic)
                if not exc.retriable:
                    if stored is not None:
                        return stored
                    raise
                log.info("send to %s refused (attempt %d/%d): %s", mq, attempt + 1, attempts, exc)
                if exc.refresh_route:
                    info = await self._refreshed(topic, info, deadline)
                continue
            if fault is not None:
                fault.update(mq.broker_name, (self._now() - started) * 1000.0, False, True)
            if (
                result.status is not SendStatus.SEND_OK
                and self.retry_another_broker_when_not_store_ok
                and attempt + 1 < attempts
            ):
                stored = result
                continue
            return result
        if stored is not None:
            return stored
        if timed_out:
            raise _DeadlinePassed
        if failed:
            raise failed[-1].error
        raise RouteNotFound(topic, routes.namesrv_addrs, "no attempt could be made")

    async def _refreshed(self, topic: str, info: TopicPublishInfo, deadline: float) -> TopicPublishInfo:
        try:
            return await self._publish_info(topic, deadline)
        except (RocketMQError, _DeadlinePassed):
            return info  # the next attempt sees the deadline

    def _available(self, broker: str) -> bool:
        return self._fault is None or self._fault.is_available(broker)

    def _recheck_route(self, topic: str) -> None:
        """Fetch ``topic``'s route again in the background: the cached one offers no healthy broker.

        A broker that went down and came back (the NameServer dropped it from the route meanwhile)
        would otherwise stay unknown until the next route poll (30 s), while every send goes to the
        brokers left, sick ones included. At most once every :data:`ROUTE_RECHECK_INTERVAL` seconds
        a topic; a send in progress uses the new route from its next attempt.
        """
        now = trio.current_time()
        if now < self._route_rechecked.get(topic, -math.inf) + ROUTE_RECHECK_INTERVAL:
            return
        self._route_rechecked[topic] = now
        self.instance.nursery.start_soon(self._refresh_route, topic)

    async def _refresh_route(self, topic: str) -> None:
        try:
            await self.instance.routes.update(topic)
        except RocketMQError as exc:  # the cached route stays (StateError: the client is closing)
            log.info("route recheck of %s failed: %s", topic, exc)

    def _record(self, broker: str, started: float, *, isolation: bool, reachable: bool) -> None:
        if self._fault is not None:
            latency_ms = (trio.current_time() - started) * 1000.0
            self._fault.update(broker, latency_ms, isolation, reachable)

    async def _send_to(
        self,
        message: Message,
        mq: MessageQueue,
        *,
        batch: bool,
        timeout: float,  # noqa: ASYNC109
    ) -> SendResult:
        """One attempt, all of it (master address, connect, request) within ``timeout`` seconds."""
        instance = self.instance
        api = instance.api
        address = instance.routes.master_address(mq.broker_name)
        if (
            address is not None
            and api.pool.is_connected(address)
            and (batch or DELIVERY_TIME_KEYS.isdisjoint(message.properties))
        ):
            # The common case: nothing to look up or connect, so the request's own timeout is
            # the whole attempt (no scope of our own: this runs per message).
            parts, body = self._parts(message, mq, batch=batch)
            if api.pool.has_hooks():
                fields = self._send_header.fields(mq, parts, batch=batch)
                reply = await api.send_message(address, fields, body, batch=batch, timeout=timeout)
            else:  # the binary frame straight from the header cache: the cheapest to build
                header = self._send_header
                reply = await api.send_message_frame(
                    address,
                    header.batch_frame if batch else header.single_frame,
                    (mq, parts, body),
                    batch=batch,
                    timeout=timeout,
                )
        else:
            ends = trio.current_time() + timeout
            address = None
            # The request times out at ``ends`` by itself (its RequestTimeout names the call, and
            # the transport may close a connection whose call timed out, as Java's
            # clientCloseSocketIfTimeout); this scope, a moment later, cuts a slow lookup or connect.
            scope = trio.CancelScope(deadline=ends + _CUT_GRACE)
            with scope:
                address, ext_fields, body = await self._prepare(message, mq, batch=batch)
                reply = await api.send_message(
                    address, ext_fields, body, batch=batch, timeout=max(0.0, ends - trio.current_time())
                )
            if scope.cancelled_caught:
                where = f"connecting to {address}" if address else "looking up its address"
                raise RequestTimeout(f"{mq.broker_name}: {where} did not finish within {timeout:g} s")
        return _send_result(
            _STATUS_BY_CODE.get(reply.code, SendStatus.SEND_OK),
            message.properties.get(PropertyKey.UNIQ_KEY, ""),
            reply.msg_id,
            mq if mq.queue_id == reply.queue_id else MessageQueue(mq.topic, mq.broker_name, reply.queue_id),
            reply.queue_offset,
            reply.transaction_id,
            reply.region_id,
        )

    def _batch_uniq_keys(self, messages: Sequence[Message]) -> list[str]:
        """Every message's UNIQ_KEY, made (at once) for those without one; before any await."""
        if self._uniq is None:
            raise StateError("the producer is not started: use `async with Producer(...) as producer`")
        uniq_key = PropertyKey.UNIQ_KEY
        keys = [message.properties.get(uniq_key) or "" for message in messages]
        missing = keys.count("")
        if missing == len(keys):  # the usual batch: none has one yet
            keys = self._uniq.next_many(missing)
            for message, key in zip(messages, keys, strict=True):
                message.properties[uniq_key] = key
        elif missing:
            fresh = iter(self._uniq.next_many(missing))
            for index, message in enumerate(messages):
                if not keys[index]:
                    keys[index] = message.properties[uniq_key] = next(fresh)
        return keys

    def _ensure_uniq_key(self, message: Message) -> str:
        key = message.properties.get(PropertyKey.UNIQ_KEY)
        if not key:
            if self._uniq is None:  # send_batch sets ids before its first await
                raise StateError("the producer is not started: use `async with Producer(...) as producer`")
            key = self._uniq.next()
            message.properties[PropertyKey.UNIQ_KEY] = key
        return key

    async def _prepare(
        self, message: Message, mq: MessageQueue, *, batch: bool
    ) -> tuple[str, dict[str, str], bytes]:
        """The broker address, the V2 send header fields and the body of one attempt.

        The header fields are built directly (no typed-header round trip: this runs per message);
        ``tests/producer`` checks them against :func:`send_header_fields` of the typed header.
        """
        address = await self.instance.routes.require_master(mq.topic, mq.broker_name)
        if not batch and not DELIVERY_TIME_KEYS.isdisjoint(message.properties):
            # A 4.x broker would deliver at once.
            await require_timer_support(self.instance, address, mq.broker_name, message.properties)
        parts, body = self._parts(message, mq, batch=batch)
        return address, self._send_header.fields(mq, parts, batch=batch), body

    def _parts(self, message: Message, mq: MessageQueue, *, batch: bool) -> tuple[SendParts, bytes]:
        """The varying V2 send header values and the body of one attempt (see :meth:`_prepare`)."""
        properties = message.properties
        if not batch:
            self._ensure_uniq_key(message)
        sys_flag = 0
        body = message.body
        if not batch and len(body) >= self.compress_over:
            body, sys_flag = maybe_compress(
                body, threshold=self.compress_over, kind=self.compress_type, level=self.compress_level
            )
        if properties.get(PropertyKey.TRANSACTION_PREPARED) == "true":
            sys_flag |= SysFlag.TRANSACTION_PREPARED_TYPE
        reconsume_times = "0"
        max_reconsume_times = None
        if is_retry_topic(mq.topic):
            properties = dict(properties)
            reconsume_times = properties.pop(PropertyKey.RECONSUME_TIME, "") or "0"
            max_reconsume_times = properties.pop(PropertyKey.MAX_RECONSUME_TIMES, None)
        parts = SendParts(
            sys_flag, message.flag, reconsume_times, max_reconsume_times, encode_properties(properties)
        )
        return parts, body
