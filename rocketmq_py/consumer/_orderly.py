"""Orderly consumption (Java ``ConsumeMessageOrderlyService``, ``RebalanceImpl.lock``).

An orderly push consumer holds a broker lock on each queue it
consumes (LOCK_BATCH_MQ to the queue's master), renews every lock every 20 s (3 s after a round
that left one of its queues unlocked: a failover's new master has no lock yet), counts a lock valid
for 30 s after its last renewal on the client side, and consumes each queue with one task of its
own, in offset order, one call at a time (at most ``consume_concurrency`` calls over all queues).
The lock is checked right before each call, inside the consume slot: the wait for a slot may
outlast it. A listener that answers SUSPEND gets the same messages again after
``suspend_current_queue_time``; a message that reached ``max_reconsume_times`` is sent towards
``%DLQ%group`` (through the consumer's own client) and the queue moves on. A queue leaves only
once no call runs on it (see the handoff), and its lock is released (UNLOCK_BATCH_MQ) last.

The parts with no consumer state, tested alone: the lock calls grouped by broker and the
reconsume-times decision.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import trio

from rocketmq_py._client._api import RemotingApi
from rocketmq_py._client._route_service import RouteService
from rocketmq_py.consumer._consume_hooks import consume_with_hooks
from rocketmq_py.consumer._flow import (
    PULL_TIME_DELAY_WHEN_EXCEPTION_MS,
    REBALANCE_LOCK_INTERVAL_MS,
    REBALANCE_LOCK_MAX_LIVE_TIME_MS,
)
from rocketmq_py.consumer._listener import ConsumeOrderlyStatus
from rocketmq_py.consumer._push_settings import PushSettings
from rocketmq_py.consumer._queue_state import QueueState
from rocketmq_py.consumer._queue_table import QueueTable
from rocketmq_py.consumer._retry import retry_message
from rocketmq_py.consumer._runtime import PushRuntime
from rocketmq_py.errors import RocketMQError, TransportError
from rocketmq_py.protocol import MessageExt, MessageQueue

__all__ = [
    "OrderlyService",
    "ReconsumeDecision",
    "check_reconsume_times",
    "lock_queues",
    "unlock_queues",
]

log = logging.getLogger("rocketmq_py.consumer")


@dataclass(frozen=True, slots=True)
class ReconsumeDecision:
    """After a SUSPEND: which messages go to the DLQ, and whether the queue is suspended."""

    to_dlq: list[MessageExt]
    suspend: bool


def check_reconsume_times(msgs: Iterable[MessageExt], max_reconsume_times: int) -> ReconsumeDecision:
    """Java ``checkReconsumeTimes``: a message consumed ``max_reconsume_times`` times goes to the DLQ.

    Every other message is consumed again (its ``reconsume_times`` is raised by one here, as Java
    does in memory) and the queue is suspended. The caller sends the DLQ candidates; one whose
    send fails is consumed again as well (and suspends the queue).
    """
    to_dlq: list[MessageExt] = []
    suspend = False
    for msg in msgs:
        if msg.reconsume_times >= max_reconsume_times:
            to_dlq.append(msg)
        else:
            suspend = True
            msg.reconsume_times += 1
    return ReconsumeDecision(to_dlq, suspend)


def _by_broker(queues: Iterable[MessageQueue]) -> dict[str, list[MessageQueue]]:
    grouped: dict[str, list[MessageQueue]] = defaultdict(list)
    for mq in queues:
        grouped[mq.broker_name].append(mq)
    return grouped


async def lock_queues(
    api: RemotingApi, routes: RouteService, group: str, client_id: str, queues: Iterable[MessageQueue]
) -> set[MessageQueue]:
    """LOCK_BATCH_MQ ``queues``, one request per broker master; the queues now locked for us.

    A broker that cannot be asked locks nothing (logged); the queues it did not grant are
    simply not in the result.
    """
    locked: set[MessageQueue] = set()
    for broker_name, mqs in _by_broker(queues).items():
        try:
            address = await routes.require_master(mqs[0].topic, broker_name)
            granted = await api.lock_batch_mq(address, group, client_id, mqs)
        except RocketMQError as exc:
            log.warning("%s: locking %d queues on %s failed: %s", group, len(mqs), broker_name, exc)
            if isinstance(exc, TransportError):  # a dead master replaced under the same name?
                await routes.recheck(mqs[0].topic)
            continue
        locked.update(mq for mq in mqs if mq in granted)
    return locked


async def unlock_queues(
    api: RemotingApi, routes: RouteService, group: str, client_id: str, queues: Iterable[MessageQueue]
) -> None:
    """UNLOCK_BATCH_MQ ``queues`` synchronously, one request per broker master (errors logged)."""
    for broker_name, mqs in _by_broker(queues).items():
        try:
            address = await routes.require_master(mqs[0].topic, broker_name)
            await api.unlock_batch_mq(address, group, client_id, mqs)
        except RocketMQError as exc:
            log.warning("%s: unlocking %d queues on %s failed: %s", group, len(mqs), broker_name, exc)


class OrderlyService:
    """The lock renewal and the per-queue consume tasks of an orderly push consumer (a
    :class:`~rocketmq_py.consumer._runtime.ConsumeService`)."""

    def __init__(self, settings: PushSettings, runtime: PushRuntime, queues: QueueTable) -> None:
        self._settings = settings
        self._runtime = runtime
        self._queues = queues
        self._slots = trio.Semaphore(max(1, settings.consume_concurrency))
        # Lock and unlock requests go one at a time: a renewal sent before a handoff's unlock
        # could otherwise reach the broker after it and lock a released queue again.
        self._broker_locks = trio.Lock()

    @property
    def _locking(self) -> bool:
        # Broadcasting members consume every queue on their own: no broker locks.
        return not self._settings.broadcasting

    def start(self, nursery: trio.Nursery) -> None:
        """Start the lock renewal (every 20 s, Java ``lockAll``; 3 s after a round that left an
        owned queue unlocked)."""
        if self._locking:
            nursery.start_soon(self._lock_loop)

    def start_queue(self, nursery: trio.Nursery, state: QueueState) -> None:
        """Start the task consuming ``state``'s queue."""
        nursery.start_soon(self._queue_loop, state)

    def running_calls(self) -> list[tuple[MessageQueue, float]]:
        """The queue and start time (trio clock) of each listener call running now."""
        return [
            (mq, state.call_started) for mq, state in self._queues.items() if state.call_started is not None
        ]

    async def hand_over(self, state: QueueState, msgs: Sequence[MessageExt]) -> None:
        """Messages were cached for ``state``: its consume task takes them, in order."""
        if self._runtime.hooks:  # for the hooks' await time only
            state.arrived(msgs)
        state.poke()

    async def lock(self, queues: Iterable[MessageQueue]) -> set[MessageQueue]:
        """LOCK_BATCH_MQ ``queues``; the owned ones granted are stamped locked now."""
        async with self._broker_locks:
            return await self._lock(queues)

    async def _lock(self, queues: Iterable[MessageQueue]) -> set[MessageQueue]:
        runtime = self._runtime
        locked = await lock_queues(
            runtime.api, runtime.routes, self._settings.group, runtime.client_id, queues
        )
        now = trio.current_time()
        for mq in locked:
            state = self._queues.get(mq)
            if state is not None:
                state.pq.locked = True
                state.pq.last_lock_time = now
        return locked

    async def unlock(self, queues: Sequence[MessageQueue]) -> None:
        """UNLOCK_BATCH_MQ ``queues`` (nothing when broadcasting; failures are logged)."""
        if self._locking and queues:
            runtime = self._runtime
            async with self._broker_locks:
                await unlock_queues(
                    runtime.api, runtime.routes, self._settings.group, runtime.client_id, queues
                )

    async def release(self, queues: Sequence[MessageQueue]) -> None:
        """The end of a handoff: the queues' broker locks are released (:meth:`unlock`)."""
        await self.unlock(queues)

    async def _lock_loop(self) -> None:
        group = self._settings.group
        missing = False
        while True:
            # A round that left an owned queue unlocked (its master dead, or another member still
            # holding it) is tried again after Java's pull-retry delay rather than the full interval:
            # the queue pulls nothing meanwhile.
            await trio.sleep(
                (PULL_TIME_DELAY_WHEN_EXCEPTION_MS if missing else REBALANCE_LOCK_INTERVAL_MS) / 1000
            )
            async with self._broker_locks:
                # Revoked queues still held for a running listener call keep their lock too; a
                # released one is dropped before its unlock is sent, so it is never renewed.
                owned = [state for state in self._queues.values() if not state.pq.dropped]
                if not owned:
                    missing = False
                    continue
                locked = await self._lock([state.mq for state in owned])
            missing = any(state.mq not in locked for state in owned)
            for state in owned:
                if state.mq not in locked and state.pq.locked:
                    log.warning("%s: the broker did not renew the lock of %s", group, state.mq)
                    state.pq.locked = False
                elif state.mq in locked:
                    state.poke()

    async def _queue_loop(self, state: QueueState) -> None:
        """The one task consuming ``state``'s queue, in offset order, while it is locked."""
        pq = state.pq
        while not (pq.dropped or state.revoking):
            if state.suspended_until > trio.current_time():
                with trio.move_on_at(state.suspended_until):
                    await state.wake.wait()  # only a revoke wakes a suspended queue early
                continue
            if not pq.has_pending_messages():
                await state.wake.wait()
                continue
            async with self._slots:
                if pq.dropped or state.revoking:
                    break
                # Checked right before the call: the wait for a slot may have outlasted the lock.
                if await self._hold_lock(state):
                    msgs = pq.take_messages(self._settings.consume_batch_max_size)
                    if msgs:
                        state.begin()
                        state.call_started = trio.current_time()
                        try:
                            await self._consume(state, msgs)
                        finally:
                            state.call_started = None
                            state.end()
                    continue
            # Java tryLockLaterAndReconsume: the lock could not be had; look again later.
            with trio.move_on_after(PULL_TIME_DELAY_WHEN_EXCEPTION_MS / 1000):
                await state.wake.wait()

    async def _hold_lock(self, state: QueueState) -> bool:
        """Whether the queue's broker lock is ours now, locking it again if it lapsed."""
        pq = state.pq
        if not self._locking:
            return True
        if pq.locked and not pq.is_lock_expired(trio.current_time(), REBALANCE_LOCK_MAX_LIVE_TIME_MS / 1000):
            return True
        if state.mq in await self.lock([state.mq]):
            return True
        pq.locked = False
        return False

    async def _consume(self, state: QueueState, msgs: list[MessageExt]) -> None:
        settings, runtime = self._settings, self._runtime
        pq = state.pq
        started = trio.current_time()
        status = await consume_with_hooks(
            runtime.hooks,
            settings.listener,
            msgs,
            group=settings.group,
            namespace=settings.namespace,
            queue=state.mq,
            timeout=settings.consume_timeout,
            read=ConsumeOrderlyStatus.of,
            failed=ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT,
            success=ConsumeOrderlyStatus.SUCCESS,
            orderly=True,
            started=started,
            client_id=runtime.client_id,
            arrived=state.arrival_of(msgs[0].queue_offset) if runtime.hooks else None,
        )
        pq.last_consume_time = ended = trio.current_time()
        # Cut at consume_timeout (consume_call's deadline), or ended by itself.
        state.timed_out_at = ended if ended - started >= settings.consume_timeout else None
        ok = status is ConsumeOrderlyStatus.SUCCESS
        counters = runtime.counters
        counters.count_consume(state.mq.topic, len(msgs), ok, started)
        if pq.dropped:
            return
        if ok:
            counters.consumed += len(msgs)
            commit = True
        elif settings.broadcasting:
            counters.failed += len(msgs)
            log.warning("%s: broadcasting consumption of %s failed: dropped", settings.group, state.mq)
            commit = True
        else:
            counters.failed += len(msgs)
            decision = check_reconsume_times(msgs, settings.max_reconsume_times)
            again = [m for m in msgs if m not in decision.to_dlq]
            for msg in decision.to_dlq:
                if not await self._send_to_dlq(msg):
                    msg.reconsume_times += 1
                    again.append(msg)
            commit = not again
            if again:
                # Everything taken goes back (a DLQ'd message among them too: order is kept).
                pq.make_message_to_consume_again(msgs)
                state.suspended_until = trio.current_time() + settings.suspend_current_queue_time
        if commit:
            offset = pq.commit()
            if offset >= 0 and not pq.dropped:
                runtime.offsets.update(state.mq, offset, increase_only=False)

    async def _send_to_dlq(self, msg: MessageExt) -> bool:
        """Java ``sendMessageBack`` (orderly): re-send to the retry topic with the reconsume times
        reached, which the broker stores in ``%DLQ%group``."""
        settings = self._settings
        retry = retry_message(
            msg,
            settings.group,
            reconsume_times=msg.reconsume_times,
            max_reconsume_times=settings.max_reconsume_times,
            namespace=settings.namespace,
        )
        try:
            await self._runtime.inner_producer.send(retry)
            return True
        except RocketMQError as exc:
            log.warning("%s: sending %s to the DLQ failed: %s", settings.group, msg.msg_id, exc)
            return False
