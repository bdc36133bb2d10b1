"""Concurrent consumption (Java ``ConsumeMessageConcurrentlyService``): workers, outcomes, send-back.

The pull loops put what they pulled on one work queue, a pull at a time, cut into batches of at
most ``consume_batch_max_size`` messages of one queue (Java's ``ConsumeRequest``); that costs no
task switch, and the cache limits of flow control bound the queue. ``consume_concurrency`` worker
tasks take batches and call the listener on each under ``consume_timeout``. A worker that takes a
batch and sees more waiting wakes another idle worker, so a slow (awaiting) listener gets as many
calls at once as there are workers, while a fast one is served by few workers without a task
switch per message. Then, per batch:

- success: the messages leave the queue's cache; the offset to commit becomes the smallest
  offset still in flight (``ProcessQueue.remove_messages``);
- failure (RECONSUME_LATER, an exception or the timeout), CLUSTERING: each message goes back to
  the broker (CONSUMER_SEND_MSG_BACK: the retry topic, next delay level); if that fails, a copy is
  sent to ``%RETRY%group`` through the consumer's own client; if that fails too, the message is
  consumed again locally 5 s later (counted as a redelivery, as Java);
- failure, BROADCASTING: the messages are dropped with a warning (Java does the same).

A batch of a queue being handed off (revoked) is not started: the next owner pulls it again.

Deadlines: a worker runs its calls inside one cancel scope and moves its deadline forward only
when a call could otherwise get less than ``consume_timeout``, by ``consume_timeout`` plus
:data:`DEADLINE_SLACK` (at most a tenth of the timeout). A call thus gets between
``consume_timeout`` and that much more, and a scope costs its setup once per many calls rather
than per message. A call cut by the deadline ends the scope; the worker starts a new one.
"""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Iterable, Sequence
from typing import Final

import trio

from rocketmq_py.consumer._consume_hooks import consume_context, end_consume
from rocketmq_py.consumer._flow import SEND_BACK_LOCAL_RETRY_DELAY_MS
from rocketmq_py.consumer._listener import (
    ConsumeStatus,
    Listener,
    concurrent_status,
    invoke_listener,
    is_async_listener,
)
from rocketmq_py.consumer._pull_result import restore_retry_topic, set_consume_start_time
from rocketmq_py.consumer._push_settings import PushSettings
from rocketmq_py.consumer._queue_state import QueueState
from rocketmq_py.consumer._retry import retry_message
from rocketmq_py.consumer._runtime import PushRuntime
from rocketmq_py.errors import RocketMQError
from rocketmq_py.hooks import Hook
from rocketmq_py.protocol import MessageExt, MessageQueue, wrap_name
from rocketmq_py.protocol._names import RETRY_GROUP_TOPIC_PREFIX

__all__ = ["CHECKPOINT_EVERY", "DEADLINE_SLACK", "SEND_BACK_TIMEOUT", "ConcurrentService"]

log = logging.getLogger("rocketmq_py.consumer")

#: Seconds to wait for CONSUMER_SEND_MSG_BACK (Java: 5000 ms) before re-sending to the retry topic.
SEND_BACK_TIMEOUT: Final = 5.0
#: Seconds a listener call may run past ``consume_timeout`` (capped at a tenth of it): the price of
#: one cancel scope for many calls (see the module docstring).
DEADLINE_SLACK: Final = 1.0
#: A worker whose listener calls never block yields to the other tasks after this many calls.
CHECKPOINT_EVERY: Final = 32

#: A queue's messages for one listener call, and when they were handed over (trio clock).
_Batch = tuple[QueueState, list[MessageExt], float]
_SUCCESS = ConsumeStatus.CONSUME_SUCCESS.value
_LATER = ConsumeStatus.RECONSUME_LATER.value


class ConcurrentService:
    """The workers consuming a push consumer's messages concurrently (a :class:`ConsumeService`)."""

    def __init__(self, settings: PushSettings, runtime: PushRuntime) -> None:
        self._settings = settings
        self._runtime = runtime
        self._work: collections.deque[_Batch] = collections.deque()
        self._idle = trio.lowlevel.ParkingLot()
        self._parked = 0  # workers in _idle not picked yet (len(_idle) is a method call)
        # The listener last called and whether it is async (inspected when it changes).
        self._listener: object = None
        self._listener_async = False
        #: Per worker: the queue and start time (trio clock) of the listener call it runs, if any.
        self._calls: list[tuple[QueueState, float] | None] = [None] * settings.consume_concurrency

    def start(self, nursery: trio.Nursery) -> None:
        """Start the ``consume_concurrency`` workers in ``nursery``."""
        for slot in range(self._settings.consume_concurrency):
            nursery.start_soon(self._worker, slot)

    def start_queue(self, nursery: trio.Nursery, state: QueueState) -> None:
        """Nothing: the shared workers consume every queue."""

    async def lock(self, queues: Iterable[MessageQueue]) -> set[MessageQueue]:
        """All of ``queues``: concurrent consumption takes no broker lock."""
        return set(queues)

    async def release(self, queues: Sequence[MessageQueue]) -> None:
        """Nothing holds a concurrently consumed queue once it is committed."""

    @property
    def waiting(self) -> int:
        """Batches queued for the workers and not started yet."""
        return len(self._work)

    async def hand_over(self, state: QueueState, msgs: Sequence[MessageExt]) -> None:
        """Queue ``msgs`` (just cached by ``state``'s pull loop) for the workers, batch by batch.

        Never blocks (the queue's cache limits bound the work queue); awaitable like the orderly
        service's.
        """
        size = self._settings.consume_batch_max_size
        arrived = trio.current_time()
        if size == 1:
            self._work.extend([(state, [msg], arrived) for msg in msgs])
        else:
            self._work.extend(
                [(state, list(msgs[at : at + size]), arrived) for at in range(0, len(msgs), size)]
            )
        if self._parked:
            self._wake_one()  # that worker wakes another one if it leaves work behind

    def running_calls(self) -> list[tuple[MessageQueue, float]]:
        """The queue and start time (trio clock) of each listener call running now."""
        return [(state.mq, started) for state, started in filter(None, self._calls)]

    async def _worker(self, slot: int) -> None:
        settings = self._settings
        work = self._work
        running_at = self._calls
        now = trio.lowlevel.current_clock().current_time
        timeout = settings.consume_timeout
        slack = min(DEADLINE_SLACK, timeout / 10)
        # The batch whose listener call runs, with its start time: still counted in its queue's
        # in-flight calls when a cancellation ends the scope.
        running: tuple[QueueState, list[MessageExt], float] | None = None
        try:
            while True:
                failed: tuple[QueueState, list[MessageExt], float] | None = None
                deadline = now() + timeout + slack
                with trio.CancelScope(deadline=deadline) as scope:
                    calls = 0
                    while True:
                        if not work:
                            calls = 0
                            await self._park()
                            continue
                        state, msgs, arrived = work.popleft()
                        if work and self._parked:
                            self._wake_one()
                        if state.pq.dropped or state.revoking:
                            continue  # cached, never handed over: the next owner pulls it again
                        started = now()
                        if deadline < started + timeout:
                            deadline = scope.deadline = started + timeout + slack
                        state.begin()
                        running = (state, msgs, started)
                        running_at[slot] = (state, started)
                        ok = await self._call(state, msgs, arrived)
                        running_at[slot] = None
                        running = None
                        state.timed_out_at = None  # the call ended by itself
                        if not ok:
                            failed = (state, msgs, started)
                            break  # handed back outside the scope: that may take a while
                        try:
                            self._settle(state, msgs, started, now(), ok=True)
                        finally:
                            state.end()
                        calls += 1
                        if calls >= CHECKPOINT_EVERY:
                            calls = 0
                            await trio.lowlevel.checkpoint()
                if scope.cancelled_caught and running is not None:
                    state, msgs, started = failed = running
                    running = None
                    running_at[slot] = None
                    state.timed_out_at = now()
                    log.warning(
                        "%s: listener took more than %g s on %d messages of %s",
                        settings.group,
                        timeout,
                        len(msgs),
                        state.mq,
                    )
                if failed is not None:
                    state, msgs, started = failed
                    try:
                        await self._hand_back(state, msgs, started)
                    finally:
                        state.end()
        finally:
            running_at[slot] = None
            if running is not None:  # cancelled from outside (the consumer stops) mid-call
                running[0].end()

    async def _park(self) -> None:
        """Wait until :meth:`_wake_one` picks this worker (``_parked`` counts the waiting ones)."""
        self._parked += 1
        try:
            await self._idle.park()
        except BaseException:
            self._parked -= 1  # cancelled while parked: nobody picked it
            raise

    def _wake_one(self) -> None:
        self._parked -= 1
        self._idle.unpark()

    async def _call(self, state: QueueState, msgs: list[MessageExt], arrived: float) -> bool:
        """The listener on ``msgs``; whether it succeeded (an exception is logged: a failure)."""
        settings = self._settings
        namespace = settings.namespace
        # A batch is of one queue, one topic.
        if namespace is not None or msgs[0].topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            restore_retry_topic(msgs, settings.group, namespace)
        set_consume_start_time(msgs, time.time_ns() // 1_000_000)
        listener = settings.listener
        if listener is not self._listener:
            self._listener, self._listener_async = listener, is_async_listener(listener)
        hooks = self._runtime.hooks
        if hooks:
            return await self._call_hooked(hooks, state, msgs, listener, arrived)
        try:
            if self._listener_async:
                result = await listener(msgs)  # type: ignore[misc]  # an awaitable, as checked
            else:
                result = await invoke_listener(listener, msgs)
            return result is None or concurrent_status(result) is ConsumeStatus.CONSUME_SUCCESS
        except Exception:
            log.exception("%s: listener failed on %d messages of %s", settings.group, len(msgs), state.mq)
            return False

    async def _call_hooked(
        self,
        hooks: list[Hook],
        state: QueueState,
        msgs: list[MessageExt],
        listener: Listener,
        arrived: float,
    ) -> bool:
        """:meth:`_call` between the hooks' ``before_consume`` and ``after_consume``."""
        settings = self._settings
        ctx = consume_context(
            hooks,
            settings.group,
            msgs,
            state.mq,
            orderly=False,
            namespace=settings.namespace,
            client_id=self._runtime.client_id,
            arrived=arrived,
        )
        started = trio.current_time()
        try:
            if self._listener_async:
                result = await listener(msgs)  # type: ignore[misc]  # an awaitable, as checked
            else:
                result = await invoke_listener(listener, msgs)
            ok = result is None or concurrent_status(result) is ConsumeStatus.CONSUME_SUCCESS
        except Exception as exc:
            log.exception("%s: listener failed on %d messages of %s", settings.group, len(msgs), state.mq)
            end_consume(hooks, ctx, started, ok=False, status=_LATER, return_type="EXCEPTION", exception=exc)
            return False
        except BaseException as exc:  # cut by consume_timeout (or the consumer stops)
            end_consume(hooks, ctx, started, ok=False, status=_LATER, return_type="TIME_OUT", exception=exc)
            raise
        if ok:
            end_consume(hooks, ctx, started, ok=True, status=_SUCCESS, return_type="SUCCESS")
        else:
            end_consume(hooks, ctx, started, ok=False, status=_LATER, return_type="FAILED")
        return ok

    def _settle(
        self,
        state: QueueState,
        done: list[MessageExt],
        started: float,
        ended: float,
        *,
        ok: bool,
        count: int = 0,
    ) -> None:
        """Count a call on ``count`` messages (default ``len(done)``) that ran from ``started`` to
        ``ended``; those ``done`` (all unless some wait to be consumed again here) leave the
        cache and the offset to commit moves on."""
        runtime = self._runtime
        count = count or len(done)
        pq = state.pq
        counters = runtime.counters
        counters.count_consume(state.mq.topic, count, ok, started, ended)
        if pq.dropped:
            pq.last_consume_time = ended
            return
        if ok:
            counters.consumed += count
        else:
            counters.failed += count
        offset = pq.remove_messages(done, now=ended)
        if offset >= 0 and not pq.dropped:
            runtime.offsets.update(state.mq, offset)

    async def _hand_back(self, state: QueueState, msgs: list[MessageExt], started: float) -> None:
        """A failed call: the messages go back to the broker (clustering) or are dropped
        (broadcasting); those that cannot go back are consumed again here, later."""
        retry_later: list[MessageExt] = []
        if self._settings.broadcasting:
            log.warning(
                "%s: broadcasting consumption of %d messages of %s failed: dropped (%s)",
                self._settings.group,
                len(msgs),
                state.mq,
                [m.msg_id for m in msgs],
            )
        elif not state.pq.dropped:
            for msg in msgs:
                if not await self._send_back(state, msg):
                    retry_later.append(msg)
        done = [m for m in msgs if m not in retry_later] if retry_later else msgs
        self._settle(state, done, started, trio.current_time(), ok=False, count=len(msgs))
        if retry_later:
            self._runtime.nursery.start_soon(self._consume_later, state, retry_later)

    async def _consume_later(self, state: QueueState, msgs: list[MessageExt]) -> None:
        for msg in msgs:  # as Java: a local retry counts as a delivery
            msg.reconsume_times += 1
        await trio.sleep(SEND_BACK_LOCAL_RETRY_DELAY_MS / 1000)
        if not state.pq.dropped and not state.revoking:
            await self.hand_over(state, msgs)

    async def _send_back(self, state: QueueState, msg: MessageExt) -> bool:
        """Hand a failed message back: CONSUMER_SEND_MSG_BACK, else a re-send to the retry topic.

        As Java's ``sendMessageBack``, any send-back failure is followed by the re-send, a timeout
        included, although the broker may then have stored the message after all: two copies come
        back (at-least-once). Not re-sending would lose the message whenever the broker did not get
        it (its offset is committed), and consuming it again locally would duplicate it just the
        same. ``False`` (the re-send failed too): the caller consumes it again locally.
        """
        settings, runtime = self._settings, self._runtime
        address = runtime.routes.master_address(state.mq.broker_name) or msg.store_host
        try:
            await runtime.api.consumer_send_msg_back(
                address,
                msg,
                settings.group,
                delay_level=0,  # the broker picks 3 + reconsume times
                max_reconsume_times=settings.max_reconsume_times,
                broker_name=state.mq.broker_name,
                origin_topic=wrap_name(settings.namespace, msg.topic),
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
            settings.group,
            reconsume_times=msg.reconsume_times + 1,
            max_reconsume_times=settings.max_reconsume_times,
            namespace=settings.namespace,
        )
        try:
            await runtime.inner_producer.send(retry)
            return True
        except RocketMQError as exc:
            log.warning(
                "re-sending %s to %s failed: %s; consuming it again in 5 s", msg.msg_id, retry.topic, exc
            )
            return False
