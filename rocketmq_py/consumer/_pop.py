"""POP consumption for the push consumer (Java ``ConsumeMessagePopConcurrentlyService``).

With ``client_rebalance=False`` a CLUSTERING, concurrent push consumer lets the broker assign
the queues: each rebalance round asks a broker of the topic (QUERY_ASSIGNMENT) for this client's
queues. When the group reads the topic in POP mode (``mqadmin setConsumeMode -m POP``), each
assigned queue gets a **pop loop**: POP_MESSAGE long polls (15 s) for up to ``pop_batch_nums``
messages, which the broker hides from the whole group for ``pop_invisible_time``. Several
members may pop the same queue at once (the broker's ``popShareQueueNum``), so a group can have
more members than queues. The messages are consumed by at most ``consume_concurrency`` listener
calls at once (batches of ``consume_batch_max_size``), then:

- success: the messages are acknowledged: BATCH_ACK_MESSAGE to 5.1.3+ brokers, the acks of
  listener calls that finish while one is on the wire coalesced into the next, else ACK_MESSAGE
  per message (:mod:`rocketmq_py.consumer._pop_acks`);
- failure (RECONSUME_LATER, an exception, ``consume_timeout``): each message becomes visible
  again after the delay of its reconsume count (CHANGE_MESSAGE_INVISIBLETIME; Java's
  ``popDelayLevel``: 10 s, 30 s, 1 min, 2 min, ..., 2 h), and comes back as a copy with reconsume
  times + 1;
- a message that failed ``max_reconsume_times + 1`` times (or is popped with more reconsume times
  than that: no listener call then) goes to the group's dead-letter topic ``%DLQ%<group>``
  (CONSUMER_SEND_MSG_BACK with delay level -1, as the 5.x proxy forwards a POP message there) and
  is acknowledged; if the broker refuses, it reappears after its invisible time and is tried
  again. So a poison message reaches the listener as often as under PULL and ends where PULL's
  would. (Java's remoting POP client acknowledges it instead, dropping it.)

A batch whose invisible time ran out before it got a listener slot is not consumed (the broker
has handed its copies out again), and the result of a call that outlived it is ignored (Java
``ConsumeMessagePopConcurrentlyService.ConsumeRequest``: ``isPopTimeout``). The deadline is the
checkpoint's ``popTime + invisibleTime``, read on the client's clock when the pop arrives.

A listener call goes through ``consume_call`` as an orderly one does: the consume hooks (trace,
OpenTelemetry) run around it, and the listener sees plain topics in a namespace (acks wrap them
again). Running info lists the popped queues in ``mqPopTable``.

Nothing is committed: the broker tracks what was acknowledged. A member that hangs or dies
does not pin anything: what it popped reappears for the others after the invisible time. A
queue stops being popped when an assignment no longer lists it (acks of its calls still go out).
Messages the subscription's tags do not accept are acknowledged without a listener call.

A topic the group reads in PULL mode (the assignment says so) is consumed by client rebalance
and pull, as the default; so are the group's retry topics (``%RETRY%group``, and the POP retry topic
``%RETRY%group_topic``, which the consumer subscribes while the group pulls the topic: the broker
revives there what was popped and never acknowledged, also after a switch back to PULL).
Switching the group's mode of a topic (``mqadmin setConsumeMode``) takes effect at the next
rebalance, as in Java's ``RebalanceImpl.updateMessageQueueAssignment``: a switch to POP hands off
the pulled queues of the topic (committing their offsets, where popping goes on) and unsubscribes
the POP retry topic (POP_MESSAGE serves it); a switch to PULL stops the pops and subscribes it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

import trio

from rocketmq_py._client._route import MASTER_ID
from rocketmq_py.consumer._concurrent import SEND_BACK_TIMEOUT
from rocketmq_py.consumer._consume_hooks import consume_with_hooks
from rocketmq_py.consumer._flow import (
    BROKER_SUSPEND_MAX_TIME_MS,
    CONSUMER_TIMEOUT_WHEN_SUSPEND_MS,
    PULL_TIME_DELAY_WHEN_EXCEPTION_MS,
)
from rocketmq_py.consumer._group_client import refresh_quietly
from rocketmq_py.consumer._listener import ConsumeStatus, Listener, concurrent_status
from rocketmq_py.consumer._pop_acks import ACK_TIMEOUT, PopAcker, checkpoint_of
from rocketmq_py.consumer._pop_assignment import AssignmentQuery
from rocketmq_py.consumer._pop_rules import (
    POP_FLOW_CONTROL_DELAY_MS,
    POP_THRESHOLD_FOR_QUEUE,
    failure_delay_s,
    init_mode,
    pop_deadline,
)
from rocketmq_py.consumer._pull_result import pull_error_delay_ms
from rocketmq_py.consumer._push_settings import PushSettings
from rocketmq_py.consumer._runtime import PushRuntime
from rocketmq_py.consumer._statistics import PopQueueStatistics
from rocketmq_py.errors import RocketMQError
from rocketmq_py.protocol import (
    ChangeInvisibleTimeRequestHeader,
    MessageExt,
    MessageQueue,
    PopCheckpoint,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    PopProcessQueueInfo,
    RequestCode,
    ResponseCode,
    decode_messages,
    from_ext_fields,
    pop_checkpoints,
    wrap_name,
)

__all__ = ["PopService"]

log = logging.getLogger("rocketmq_py.consumer")

_POP_OK: Final = (
    ResponseCode.SUCCESS,
    ResponseCode.POLLING_FULL,
    ResponseCode.POLLING_TIMEOUT,
    ResponseCode.PULL_NOT_FOUND,
)


@dataclass(eq=False)
class PopQueue:
    """One queue this member pops: its loop's scope and counters."""

    mq: MessageQueue
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    #: Messages popped and not yet acknowledged or re-timed.
    waiting_ack: int = 0
    #: The trio clock at the last POP_MESSAGE (at first: when the queue was assigned, as Java).
    last_pop_time: float = field(default_factory=trio.current_time)
    popped: int = 0
    #: When the last listener call on its messages was cut at ``consume_timeout``; ``None`` once a
    #: later call ended by itself.
    timed_out_at: float | None = None


class PopService:
    """The pop loops of a push consumer and the listener calls on what they pop."""

    def __init__(self, settings: PushSettings, runtime: PushRuntime) -> None:
        self._settings = settings
        self._runtime = runtime
        self.queues: dict[MessageQueue, PopQueue] = {}
        self._limiter = trio.CapacityLimiter(max(1, settings.consume_concurrency))
        self._nursery: trio.Nursery | None = None
        self._pull_topics: set[str] = set()  # topics whose assignment said PULL (logged once)
        self._calls = 0  # batches handed over and not settled (acked or re-timed) yet
        #: The listener calls running now: id of their batch -> (queue, start time, trio clock).
        self._running: dict[int, tuple[MessageQueue, float]] = {}
        self._no_calls = trio.Event()
        self._acker: PopAcker | None = None
        self._assignments = AssignmentQuery(settings, runtime)
        # Set by close() and when run() ends: a rebalance round still finishing then starts no pop
        # (its nursery may be closed already: the round's answer can arrive as the consumer stops).
        self._stopping = False

    def running_calls(self) -> list[tuple[MessageQueue, float]]:
        """The queue and start time (trio clock) of each listener call running now."""
        return list(self._running.values())

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Host the pop loops and listener calls until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._acker = PopAcker(self._runtime.instance, self._settings.group, self._wire_topic, nursery)
            task_status.started()
            try:
                await trio.sleep_forever()
            finally:
                self._stopping = True

    async def close(self, grace: float) -> None:
        """Stop popping; let running listener calls finish (and ack) for at most ``grace`` seconds."""
        self._stopping = True
        for queue in self.queues.values():
            queue.scope.cancel()
        self.queues.clear()
        if self._calls:
            with trio.move_on_after(grace):
                await self._no_calls.wait()

    # --- assignment ----------------------------------------------------------------------------

    async def query_assignment(self, topic: str) -> tuple[set[MessageQueue], set[MessageQueue]] | None:
        """This client's queues of ``topic`` from a broker: those it pops, those it pulls
        (:class:`~rocketmq_py.consumer._pop_assignment.AssignmentQuery`; behind a Proxy, the
        topic is pulled). ``None`` while the topic has no route.
        """
        route = self._runtime.routes.cached_route(topic)
        brokers = [
            (b.broker_name, b.broker_addrs.get(MASTER_ID) or next(iter(b.broker_addrs.values())))
            for b in (route.broker_datas if route else ())
            if b.broker_addrs
        ]
        if not brokers:
            await refresh_quietly(self._runtime.routes, topic)
            return None
        return await self._assignments.query(topic, brokers)

    def apply_assignment(self, topic: str, queues: set[MessageQueue], pulled: set[MessageQueue]) -> None:
        """Pop exactly ``queues`` of ``topic`` (those the broker assigns in POP mode); ``pulled``, the
        ones it assigns in PULL mode, only tell the log that the group pulls the topic."""
        if pulled and topic not in self._pull_topics:
            self._pull_topics.add(topic)
            log.info("%s: the group reads %s in PULL mode: client rebalance", self._settings.group, topic)
        elif queues:
            self._pull_topics.discard(topic)
        self._drop(topic, queues)
        nursery = self._nursery
        assert nursery is not None, "the pop service runs before any rebalance"
        if self._stopping:
            return
        for mq in sorted(queues - self.queues.keys()):
            queue = self.queues[mq] = PopQueue(mq)
            nursery.start_soon(self._pop_loop, queue)
            log.info("%s: popping %s", self._settings.group, mq)

    def running_info(self, *, now: float, wall_ms: float) -> dict[MessageQueue, PopProcessQueueInfo]:
        """The popped queues' lines of running info (``mqPopTable``), Java ``fillPopProcessQueueInfo``.

        ``now``: the trio clock now; ``wall_ms``: epoch ms now (the pop times are converted).
        """
        return {
            mq: PopProcessQueueInfo(
                wait_ack_count=queue.waiting_ack,
                dropped=queue.scope.cancel_called,
                last_pop_timestamp=int(wall_ms - (now - queue.last_pop_time) * 1000),
            )
            for mq, queue in self.queues.items()
        }

    def statistics(self) -> list[PopQueueStatistics]:
        """Per popped queue, in queue order: unacknowledged and popped counts, last pop time."""
        now = trio.current_time()
        wall_ms = time.time() * 1000
        return [
            PopQueueStatistics(
                queue=mq,
                waiting_ack=queue.waiting_ack,
                popped=queue.popped,
                last_pop_age=now - queue.last_pop_time,
                last_pop_timestamp=int(wall_ms - (now - queue.last_pop_time) * 1000),
            )
            for mq, queue in sorted(self.queues.items())
        ]

    def _drop(self, topic: str, keep: set[MessageQueue]) -> None:
        for mq in [mq for mq in self.queues if mq.topic == topic and mq not in keep]:
            self.queues.pop(mq).scope.cancel()
            log.info("%s: no longer popping %s", self._settings.group, mq)

    # --- popping -------------------------------------------------------------------------------

    async def _pop_loop(self, queue: PopQueue) -> None:
        settings, runtime = self._settings, self._runtime
        mq = queue.mq
        routes, api = runtime.routes, runtime.api
        invisible_ms = int(settings.pop_invisible_time * 1000)  # checked by the consumer: 5 s to 300 s
        with queue.scope:
            while True:
                queue.last_pop_time = trio.current_time()
                if queue.waiting_ack > POP_THRESHOLD_FOR_QUEUE:
                    await trio.sleep(POP_FLOW_CONTROL_DELAY_MS / 1000)
                    continue
                sub = runtime.subscriptions.get(mq.topic)
                address = routes.master_address(mq.broker_name)
                if sub is None or address is None:
                    await refresh_quietly(routes, mq.topic)
                    await trio.sleep(PULL_TIME_DELAY_WHEN_EXCEPTION_MS / 1000)
                    continue
                header = PopMessageRequestHeader(
                    consumer_group=settings.group,
                    topic=mq.topic,
                    queue_id=mq.queue_id,
                    max_msg_nums=settings.pop_batch_nums,
                    invisible_time=invisible_ms,
                    poll_time=BROKER_SUSPEND_MAX_TIME_MS,
                    born_time=int(time.time() * 1000),
                    init_mode=init_mode(settings.consume_from_where),
                    exp_type=sub.expression_type.value,
                    exp=sub.sub_string,
                    order=False,
                    broker_name=mq.broker_name,
                )
                started = trio.current_time()
                try:
                    reply = await api.call(
                        address,
                        RequestCode.POP_MESSAGE,
                        header,
                        timeout=CONSUMER_TIMEOUT_WHEN_SUSPEND_MS / 1000,
                        ok=_POP_OK,
                    )
                    msgs = self._read_reply(mq, reply.code, reply.ext_fields, reply.body)
                except (RocketMQError, ValueError) as exc:
                    log.info("pop of %s from %s failed: %s", mq, address, exc)
                    delay = pull_error_delay_ms(exc) if isinstance(exc, RocketMQError) else None
                    await trio.sleep((delay or PULL_TIME_DELAY_WHEN_EXCEPTION_MS) / 1000)
                    continue
                if reply.code == ResponseCode.POLLING_FULL:
                    await trio.sleep(PULL_TIME_DELAY_WHEN_EXCEPTION_MS / 1000)
                    continue
                runtime.counters.count_pull(mq.topic, found=len(msgs), started=started)
                if msgs:
                    queue.popped += len(msgs)
                    self._hand_over(queue, msgs)

    def _read_reply(
        self, mq: MessageQueue, code: int, fields: Mapping[str, str], body: bytes
    ) -> list[MessageExt]:
        if code != ResponseCode.SUCCESS:
            return []
        header = from_ext_fields(PopMessageResponseHeader, fields)
        msgs = decode_messages(body, broker_name=mq.broker_name)
        pop_checkpoints(msgs, header, mq.broker_name)
        for msg in msgs:
            msg.topic = mq.topic  # a POP retry topic's messages too, as Java
        return msgs

    def _hand_over(self, queue: PopQueue, msgs: list[MessageExt]) -> None:
        settings = self._settings
        arrived = trio.current_time()
        deadline = pop_deadline(msgs, now=arrived, wall_ms=time.time() * 1000)
        msg_filter = self._runtime.filters.get(queue.mq.topic)
        accepted = msg_filter.filter_messages(msgs) if msg_filter is not None else msgs
        nursery = self._nursery
        assert nursery is not None
        queue.waiting_ack += len(msgs)
        if len(accepted) != len(msgs):
            kept = {id(m) for m in accepted}
            nursery.start_soon(self._ack_all, queue, [m for m in msgs if id(m) not in kept])
        tired = [m for m in accepted if m.reconsume_times > settings.max_reconsume_times]
        if tired:
            log.warning(
                "%s: %d messages popped with more than %d reconsume times: to the dead-letter queue",
                settings.group,
                len(tired),
                settings.max_reconsume_times,
            )
            nursery.start_soon(self._dead_letter, queue, tired)
            accepted = [m for m in accepted if m.reconsume_times <= settings.max_reconsume_times]
        size = settings.consume_batch_max_size
        for at in range(0, len(accepted), size):
            nursery.start_soon(self._consume, queue, accepted[at : at + size], deadline, arrived)

    # --- consuming -----------------------------------------------------------------------------

    async def _consume(
        self, queue: PopQueue, msgs: list[MessageExt], deadline: float, arrived: float
    ) -> None:
        listener = self._settings.listener
        if self._calls == 0:
            self._no_calls = trio.Event()
        self._calls += 1
        try:
            await self._consume_now(queue, msgs, listener, deadline, arrived)
        finally:
            self._calls -= 1
            if self._calls == 0:
                self._no_calls.set()

    async def _consume_now(
        self, queue: PopQueue, msgs: list[MessageExt], listener: Listener, deadline: float, arrived: float
    ) -> None:
        settings, runtime = self._settings, self._runtime
        async with self._limiter:
            started = trio.current_time()
            if started >= deadline:
                log.info(
                    "%s: %d messages of %s waited past their invisible time: not consumed (the broker "
                    "hands them out again)",
                    settings.group,
                    len(msgs),
                    queue.mq,
                )
                queue.waiting_ack -= len(msgs)
                return
            self._running[id(msgs)] = (queue.mq, started)
            try:
                status = await consume_with_hooks(
                    runtime.hooks,
                    listener,
                    msgs,
                    group=settings.group,
                    namespace=settings.namespace,
                    queue=queue.mq,
                    timeout=settings.consume_timeout,
                    read=concurrent_status,
                    failed=ConsumeStatus.RECONSUME_LATER,
                    success=ConsumeStatus.CONSUME_SUCCESS,
                    orderly=False,
                    started=started,
                    client_id=runtime.client_id,
                    arrived=arrived,
                )
            finally:
                del self._running[id(msgs)]
            ended = trio.current_time()
            queue.timed_out_at = ended if ended - started >= settings.consume_timeout else None
            if trio.current_time() >= deadline:
                log.warning(
                    "%s: a listener call on %d messages of %s outlived their invisible time: its "
                    "result is ignored (the broker hands them out again)",
                    settings.group,
                    len(msgs),
                    queue.mq,
                )
                queue.waiting_ack -= len(msgs)
                return
            ok = status is ConsumeStatus.CONSUME_SUCCESS
            runtime.counters.count_consume(queue.mq.topic, len(msgs), ok, started)
            if ok:
                runtime.counters.consumed += len(msgs)
                await self._ack_all(queue, msgs)
            else:
                runtime.counters.failed += len(msgs)
                await self._retry_later(queue, msgs)

    async def _ack_all(self, queue: PopQueue, msgs: Sequence[MessageExt]) -> None:
        assert self._acker is not None
        await self._acker.ack(msgs)
        queue.waiting_ack -= len(msgs)

    async def _retry_later(self, queue: PopQueue, msgs: Sequence[MessageExt]) -> None:
        settings = self._settings
        spent = [m for m in msgs if m.reconsume_times >= settings.max_reconsume_times]
        for msg in msgs:
            if msg.reconsume_times < settings.max_reconsume_times:
                await self._change_invisible_time(msg, failure_delay_s(msg.reconsume_times) * 1000)
                queue.waiting_ack -= 1
        if spent:
            log.warning(
                "%s: %d messages failed %d times: to the dead-letter queue",
                settings.group,
                len(spent),
                settings.max_reconsume_times + 1,
            )
            await self._dead_letter(queue, spent)

    async def _dead_letter(self, queue: PopQueue, msgs: Sequence[MessageExt]) -> None:
        """Send each of ``msgs`` to the group's DLQ and acknowledge it; one the broker did not take
        is left to reappear after its invisible time (and tried again then)."""
        settings, instance = self._settings, self._runtime.instance
        sent: list[MessageExt] = []
        for msg in msgs:
            found = checkpoint_of(msg)
            if found is None:
                continue
            ck = found[1]
            topic = self._wire_topic(msg)
            try:
                address = await instance.routes.require_master(topic, ck.broker_name)
                await instance.api.consumer_send_msg_back(
                    address,
                    msg,
                    settings.group,
                    delay_level=-1,  # the dead-letter queue at once
                    max_reconsume_times=settings.max_reconsume_times,
                    broker_name=ck.broker_name,
                    origin_topic=ck.stored_topic(topic, settings.group),
                    timeout=SEND_BACK_TIMEOUT,
                )
                sent.append(msg)
            except RocketMQError as exc:
                log.warning(
                    "%s: %s could not go to the dead-letter queue: %s", settings.group, msg.msg_id, exc
                )
        queue.waiting_ack -= len(msgs) - len(sent)
        if sent:
            await self._ack_all(queue, sent)

    def _wire_topic(self, msg: MessageExt) -> str:
        """``msg``'s topic as the brokers know it (the listener call took the namespace off)."""
        return wrap_name(self._settings.namespace, msg.topic)

    async def _change_invisible_time(self, msg: MessageExt, invisible_ms: int) -> None:
        found = checkpoint_of(msg)
        if found is None:
            return
        text, ck = found
        header = ChangeInvisibleTimeRequestHeader(
            consumer_group=self._settings.group,
            topic=ck.stored_topic(self._wire_topic(msg), self._settings.group),
            queue_id=ck.queue_id,
            extra_info=text,
            offset=ck.queue_offset,
            invisible_time=invisible_ms,
            broker_name=ck.broker_name,
        )
        await self._send(msg, ck, RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header)

    async def _send(
        self,
        msg: MessageExt,
        ck: PopCheckpoint,
        code: int,
        header: ChangeInvisibleTimeRequestHeader,
    ) -> None:
        instance = self._runtime.instance
        try:
            address = await instance.routes.require_master(self._wire_topic(msg), ck.broker_name)
            await instance.api.call(address, code, header, timeout=ACK_TIMEOUT)
        except RocketMQError as exc:
            log.warning("%s: %s of %s failed: %s", self._settings.group, RequestCode(code).name, msg, exc)
