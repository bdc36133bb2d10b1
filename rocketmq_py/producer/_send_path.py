"""The send loop of a producer: attempts, retries and the frame of each attempt, under one deadline.

:class:`SendPath` is the part of :class:`~rocketmq_py.producer._producer.Producer` that runs per
message, kept apart from the public methods and the lifecycle. A send is Java's
``sendDefaultImpl``: inside the send's deadline, up to ``1 + retry_times`` attempts pick a queue
with the latency fault strategy (avoiding the broker of the previous attempt), send, and record
the attempt's latency and outcome in the fault table; transport errors and retriable broker codes
retry, anything else is raised at once. A oneway send (:meth:`SendPath._send_oneway`) writes once
(to the queue given, else to one the fault strategy picks) within ``send_timeout``, and waits for
no answer.

The common attempt (a known master with a live connection, no RPC hooks) is the hot path: the
SEND_MESSAGE_V2 frame comes straight from the header cache (:class:`SendHeader`), the request's
own timeout bounds the attempt (no cancel scope of ours), the clock is read through the run's
clock object, and the result is built by slot descriptors. Everything else (a lookup, a connect,
RPC hooks, a delivery time that needs the broker's release, a reply to a request, which goes as
SEND_REPLY_MESSAGE_V2) goes through :meth:`SendPath._prepare`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from functools import partial
from typing import Any, Final

import trio

from rocketmq_py._client._capabilities import DELIVERY_TIME_KEYS, require_timer_support
from rocketmq_py._client._instance import ClientInstance
from rocketmq_py._client._route import TopicPublishInfo
from rocketmq_py.errors import (
    BrokerError,
    RequestTimeout,
    RocketMQError,
    RouteNotFound,
    StateError,
    TransportError,
)
from rocketmq_py.hooks import Hook
from rocketmq_py.producer._attempts import FailedAttempt, attempt_timeout, describe_attempts
from rocketmq_py.producer._fault import LatencyFaultTolerance, QueueSelector
from rocketmq_py.producer._selectors import SelectQueue
from rocketmq_py.producer._send_header import SendHeader, SendParts
from rocketmq_py.producer._send_hooks import oneway_with_hooks, send_context, send_with_hooks
from rocketmq_py.producer._statistics import ProducerCounters
from rocketmq_py.producer._types import SendResult, SendStatus
from rocketmq_py.protocol import (
    CompressionType,
    Message,
    MessageQueue,
    PropertyKey,
    SysFlag,
    UniqKeyGenerator,
    encode_properties,
    is_reply,
    is_retry_topic,
    maybe_compress,
)
from rocketmq_py.protocol._frozen import slot_builder

__all__ = ["ROUTE_RECHECK_INTERVAL", "SendPath"]

log = logging.getLogger("rocketmq_py.producer")

#: Seconds between two route lookups of a topic whose cached route offers no healthy broker (Java
#: has none: only the 30-s poll; see SendPath._recheck_route).
ROUTE_RECHECK_INTERVAL = 1.0
# How much later than its request's own timeout an attempt is cut (a slow route lookup or connect).
_CUT_GRACE = 0.005

#: Properties that take a single message off the hot path: a delivery time (the broker's release
#: matters) and ``MSG_TYPE`` (a reply to a request goes as SEND_REPLY_MESSAGE_V2).
_SLOW_PATH_KEYS: Final = DELIVERY_TIME_KEYS | {PropertyKey.MESSAGE_TYPE}

send_result: Final = slot_builder(SendResult)
_STATUS_BY_CODE: Final = {status.value: status for status in SendStatus}


class _DeadlinePassed(Exception):
    """Internal: the send's deadline passed (turned into RequestTimeout by ``_send``)."""


class SendPath:
    """What a producer does per send (see the module docstring); its settings are the producer's."""

    # Set by Producer.__init__ (settings) and when it starts (instance, uniq, clock).
    group: str
    namespace: str | None
    send_timeout: float
    attempt_timeout: float | None
    retry_times: int
    retry_another_broker_when_not_store_ok: bool
    compress_over: int
    compress_type: CompressionType
    compress_level: int
    _send_header: SendHeader
    _fault: LatencyFaultTolerance | None
    _selector: QueueSelector
    _uniq: UniqKeyGenerator | None
    _stats: ProducerCounters
    _route_rechecked: dict[str, float]
    _now: Callable[[], float]
    _hooks: list[Hook]

    @property
    def _client_instance(self) -> ClientInstance:
        raise NotImplementedError

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
        routes = self._client_instance.routes
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
        routes = self._client_instance.routes
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
        hooks = self._hooks
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
                if hooks:
                    result = await self._send_hooked(hooks, message, mq, batch, limit, attempt + 1)
                else:
                    result = await self._send_to(message, mq, batch=batch, timeout=limit)
            except TransportError as exc:
                self._record(mq.broker_name, started, isolation=True, reachable=True)
                # The route may name a dead address: in controller mode a slave took over under the
                # group's name from another address, and a send with a selector or to a queue makes
                # no other attempt that could notice; the route poll comes up to 30 s later.
                self._recheck_route(topic)
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
        brokers left, sick ones included. Likewise after a send failed at the transport: the address
        may be a dead master whose group a slave took over (controller mode). At most once every
        :data:`ROUTE_RECHECK_INTERVAL` seconds a topic; a send in progress uses the new route from
        its next attempt.
        """
        now = trio.current_time()
        if now < self._route_rechecked.get(topic, -math.inf) + ROUTE_RECHECK_INTERVAL:
            return
        self._route_rechecked[topic] = now
        self._client_instance.nursery.start_soon(self._refresh_route, topic)

    async def _refresh_route(self, topic: str) -> None:
        try:
            await self._client_instance.routes.update(topic)
        except RocketMQError as exc:  # the cached route stays (StateError: the client is closing)
            log.info("route recheck of %s failed: %s", topic, exc)

    def _record(self, broker: str, started: float, *, isolation: bool, reachable: bool) -> None:
        if self._fault is not None:
            latency_ms = (trio.current_time() - started) * 1000.0
            self._fault.update(broker, latency_ms, isolation, reachable)

    async def _send_hooked(
        self,
        hooks: list[Hook],
        message: Message,
        mq: MessageQueue,
        batch: bool,
        timeout: float,  # noqa: ASYNC109
        attempt: int,
    ) -> SendResult:
        """:meth:`_send_to` between the hooks' ``before_send`` and ``after_send`` (:mod:`._send_hooks`)."""
        if not batch:
            self._ensure_uniq_key(message)  # the hooks see the message's id
        ctx = send_context(
            self._client_instance,
            self.group,
            self.namespace,
            message,
            mq,
            batch=batch,
            oneway=False,
            attempt=attempt,
        )
        return await send_with_hooks(
            hooks, ctx, partial(self._send_to, message, mq, batch=batch, timeout=timeout)
        )

    async def _send_oneway(self, message: Message, queue: MessageQueue | None) -> None:
        """A oneway send of a checked message (wire names): no result, no retry, one ``send_timeout``."""
        with trio.move_on_after(self.send_timeout):
            info = await self._client_instance.routes.publish_info(message.topic)
            mq = queue or self._selector.select(info, None, self._fault)
            if self._hooks:
                await self._send_oneway_hooked(message, mq)
            else:
                address, fields, body = await self._prepare(message, mq, batch=False)
                await self._client_instance.api.send_message_oneway(
                    address, fields, body, reply=is_reply(message)
                )
            self._stats.sent += 1
            return
        # Our error, not trio.TooSlowError (which is outside the error tree).
        raise RequestTimeout(
            f"sending to {message.topic} (oneway) did not finish within {self.send_timeout:g} s"
        )

    async def _send_oneway_hooked(self, message: Message, mq: MessageQueue) -> None:
        self._ensure_uniq_key(message)
        ctx = send_context(
            self._client_instance, self.group, self.namespace, message, mq, batch=False, oneway=True
        )

        async def write() -> None:
            address, fields, body = await self._prepare(message, mq, batch=False)
            await self._client_instance.api.send_message_oneway(
                address, fields, body, reply=is_reply(message)
            )

        await oneway_with_hooks(self._hooks, ctx, write)

    async def _send_to(
        self,
        message: Message,
        mq: MessageQueue,
        *,
        batch: bool,
        timeout: float,  # noqa: ASYNC109
    ) -> SendResult:
        """One attempt, all of it (master address, connect, request) within ``timeout`` seconds."""
        instance = self._client_instance
        api = instance.api
        address = instance.routes.master_address(mq.broker_name)
        if (
            address is not None
            and api.pool.is_connected(address)
            and (batch or _SLOW_PATH_KEYS.isdisjoint(message.properties))
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
                    address,
                    ext_fields,
                    body,
                    batch=batch,
                    reply=not batch and is_reply(message),
                    timeout=max(0.0, ends - trio.current_time()),
                )
            if scope.cancelled_caught:
                where = f"connecting to {address}" if address else "looking up its address"
                raise RequestTimeout(f"{mq.broker_name}: {where} did not finish within {timeout:g} s")
        return send_result(
            _STATUS_BY_CODE.get(reply.code, SendStatus.SEND_OK),
            message.properties.get(PropertyKey.UNIQ_KEY, ""),
            reply.msg_id,
            mq if mq.queue_id == reply.queue_id else MessageQueue(mq.topic, mq.broker_name, reply.queue_id),
            reply.queue_offset,
            reply.transaction_id,
            reply.region_id,
            reply.recall_handle,
            reply.trace_on,
        )

    def _new_uniq_keys(self, count: int) -> list[str]:
        """``count`` new UNIQ_KEYs, made at once (a batch's, before any await)."""
        if self._uniq is None:
            raise StateError("the producer is not started: use `async with Producer(...) as producer`")
        return self._uniq.next_many(count)

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
        address = await self._client_instance.routes.require_master(mq.topic, mq.broker_name)
        if not batch and not DELIVERY_TIME_KEYS.isdisjoint(message.properties):
            # A 4.x broker would deliver at once.
            await require_timer_support(self._client_instance, address, mq.broker_name, message.properties)
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
