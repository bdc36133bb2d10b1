"""The queues a push consumer owns: how they are taken, handed off, and their offsets committed.

**Taking a queue** (a rebalance plan's ``start``): an orderly member locks it first (queues another
member still holds are asked for again in 1 s); otherwise, with other members in the group, the
start offset is read only ``handoff_delay`` seconds after the round began, time for the previous
owner to have committed it. Then the start offset (the committed one, else ``consume_from_where``),
a newer subscription version registered by heartbeat, ``on_assigned``, and the pull loop.

**Graceful handoff** (``revoke``): the queue's pull stops at once; messages cached but not yet
handed to the listener are discarded (the next owner pulls them again from the committed offset);
listener calls already running may finish, for at most ``handoff_timeout`` seconds; then
``on_revoked``, the synchronous commit of the offset (UPDATE_CONSUMER_OFFSET with a reply), the
broker lock's release (orderly) and the queue is forgotten. Calls still running after the timeout
are abandoned to the next owner, except on an orderly queue: that one stays locked until they
return, or the next owner would consume behind them, out of order (Java
``tryRemoveOrderMessageQueue``). A rebuilt queue (its pull loop was lost) goes and comes back in
one round, and the rebalance listener hears of neither.

**Committing**: every ``persist_interval`` seconds the offsets of every owned queue go to the brokers
(oneway) or the local file; a handoff commits synchronously, under the same lock, so a periodic
commit never writes an older offset after it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

import trio

from rocketmq_py.consumer._allocate import sort_queues
from rocketmq_py.consumer._group_client import Allocation, start_offset
from rocketmq_py.consumer._listener import notify_rebalance_listener
from rocketmq_py.consumer._process_queue import ProcessQueue
from rocketmq_py.consumer._pull_loop import pull_loop
from rocketmq_py.consumer._queue_state import QueueState
from rocketmq_py.consumer._rebalance import plan_rebalance
from rocketmq_py.errors import RocketMQError
from rocketmq_py.protocol import MessageQueue

if TYPE_CHECKING:
    from rocketmq_py.consumer._push import PushConsumer

__all__ = ["START_OFFSET_CONCURRENCY", "Assignment"]

#: Start offsets of newly taken queues read at once (QUERY_CONSUMER_OFFSET and friends).
START_OFFSET_CONCURRENCY: Final = 16

log = logging.getLogger("rocketmq_py.consumer")


class Assignment:
    """A push consumer's owned queues as they change hands (see the module docstring)."""

    def __init__(self, consumer: PushConsumer) -> None:
        self._consumer = consumer
        self._persist_lock = trio.Lock()

    # --- rebalance ---------------------------------------------------------------------------------

    async def apply(self, topic: str, allocation: Allocation) -> None:
        """Take ``allocation`` of ``topic``: revoke, rebuild and start queues as planned."""
        consumer = self._consumer
        queues = consumer._queues
        plan = plan_rebalance(
            topic,
            {mq: state for mq, state in queues.items()},
            allocation.allocated,
            now=trio.current_time(),
            max_idle=consumer.pull_max_idle_time,
        )
        for mq in plan.rebuild:
            log.warning(
                "%s: pull of %s idle for %.0f s: dropping and rebuilding it",
                consumer.group,
                mq,
                trio.current_time() - queues[mq].pq.last_pull_time,
            )
        await self.revoke([queues[mq] for mq in plan.revoke], notify=True)
        await self.revoke([queues[mq] for mq in plan.rebuild], notify=False)
        fresh = sort_queues(mq for mq in (*plan.start, *plan.rebuild) if mq not in queues)
        added = await self._take(topic, fresh, members=len(allocation.cid_all))
        if not (plan.revoke or plan.rebuild or added):
            return
        log.info(
            "client rebalanced result changed. allocateMessageQueueStrategyName=%s, group=%s, topic=%s, "
            "clientId=%s, mqAllSize=%d, cidAllSize=%d, rebalanceResultSize=%d, rebalanceResultSet=%s",
            consumer.strategy.name,
            consumer.group,
            topic,
            consumer.client_id,
            len(allocation.mq_all),
            len(allocation.cid_all),
            len(allocation.allocated),
            sort_queues(allocation.allocated),
        )
        consumer._renew_subscription(topic)
        await consumer.instance.heartbeat_all()  # the new subscription version before the new pulls
        # A rebuilt queue (idle pull) stays this member's: the listener hears of neither half.
        announced = [state.mq for state in added if state.mq not in plan.rebuild]
        if announced:
            await notify_rebalance_listener(
                consumer.rebalance_listener, "on_assigned", consumer._user_queues(announced), consumer.group
            )
        nursery = consumer._running()
        for state in added:
            queues[state.mq] = state
            nursery.start_soon(pull_loop, consumer, state)
            if consumer._orderly is not None:
                consumer._orderly.start_queue(nursery, state)

    async def _take(self, topic: str, fresh: list[MessageQueue], *, members: int) -> list[QueueState]:
        """The states of the new queues this member could take now (locked, start offset found)."""
        consumer = self._consumer
        orderly = consumer._orderly
        if not fresh:
            return []
        if orderly is not None and not consumer.broadcasting:
            locked = await orderly.lock(fresh)
            if len(locked) < len(fresh):
                log.info(
                    "%s: %d of %d new queues of %s are still locked by another member: retrying in 1 s",
                    consumer.group,
                    len(fresh) - len(locked),
                    len(fresh),
                    topic,
                )
                consumer._rebalance_retry = True
            fresh = [mq for mq in fresh if mq in locked]
        else:
            handoff_start = consumer._handoff_start(members)
            if handoff_start is not None:
                await trio.sleep_until(handoff_start)
        found = await self._start_offsets(fresh)
        added: list[QueueState] = []
        for mq in fresh:
            offset = found[mq]
            if isinstance(offset, RocketMQError):
                log.warning("%s: no start offset for %s yet: %s", consumer.group, mq, offset)
                if orderly is not None:
                    await orderly.unlock([mq])
                continue
            pq = ProcessQueue(clock=trio.current_time)
            if orderly is not None:
                pq.locked = True  # lock() stamped the lock: it was granted just now
            added.append(QueueState(mq, pq, offset))
        return added

    async def _start_offsets(self, queues: Sequence[MessageQueue]) -> dict[MessageQueue, int | RocketMQError]:
        """Where each of ``queues`` starts (or why it cannot yet), read :data:`START_OFFSET_CONCURRENCY`
        at a time: a member taking a thousand queues does not wait for a thousand round trips in a row
        (Java reads them one after the other)."""
        consumer = self._consumer
        found: dict[MessageQueue, int | RocketMQError] = {}
        limiter = trio.CapacityLimiter(START_OFFSET_CONCURRENCY)

        async def read(mq: MessageQueue) -> None:
            async with limiter:
                try:
                    found[mq], _ = await start_offset(
                        consumer.instance,
                        consumer.offsets,
                        consumer.group,
                        mq,
                        consumer.consume_from_where,
                        consumer.consume_timestamp,
                    )
                except RocketMQError as exc:
                    found[mq] = exc

        async with trio.open_nursery() as nursery:
            for mq in queues:
                nursery.start_soon(read, mq)
        return found

    # --- handoff -----------------------------------------------------------------------------------

    async def revoke(self, states: Sequence[QueueState], *, notify: bool) -> None:
        """The graceful handoff of ``states``, all at once."""
        consumer = self._consumer
        states = [state for state in states if not state.pq.dropped]
        if not states:
            return
        for state in states:
            state.revoking = True
            state.scope.cancel()  # no more pulls
            state.poke()  # an orderly consume task looks, and leaves
        with trio.move_on_after(consumer.handoff_timeout):
            for state in states:
                await state.wait_quiet()
        late = [state for state in states if state.inflight]
        # An orderly queue is never unlocked while a listener call runs on it: it stays, revoking
        # and locked (the lock loop keeps renewing it), until the call returns.
        held = late if consumer._orderly is not None and not consumer.broadcasting else []
        if late:
            log.warning(
                "%s: listener calls on %s still running after %g s: %s",
                consumer.group,
                [state.mq for state in late],
                consumer.handoff_timeout,
                "their queues stay locked until they return"
                if held
                else "the next owner consumes them again",
            )
        if notify:
            mqs = consumer._user_queues(state.mq for state in states)
            await notify_rebalance_listener(consumer.rebalance_listener, "on_revoked", mqs, consumer.group)
        await self._release([state for state in states if state not in held])
        for state in held:
            consumer._running().start_soon(self._release_when_quiet, state)

    async def drop_topic(self, topic: str) -> None:
        """Hand off every owned queue of ``topic``: the group no longer pulls it (it pops it now, or
        no longer subscribes it). Their offsets are committed, so what reads them next goes on there."""
        states = [state for mq, state in self._consumer._queues.items() if mq.topic == topic]
        if states:
            log.info("%s: no longer pulling %s", self._consumer.group, sort_queues(s.mq for s in states))
            await self.revoke(states, notify=True)

    async def _release(self, states: Sequence[QueueState]) -> None:
        """The end of a handoff: commit synchronously, unlock (orderly), forget."""
        consumer = self._consumer
        for state in states:
            state.pq.dropped = True  # from here on, nothing moves the offsets
        for state in states:
            await self.persist(state)
        if consumer._orderly is not None:
            await consumer._orderly.unlock([state.mq for state in states])
            for state in states:
                state.pq.locked = False
        self._forget(states)

    async def _release_when_quiet(self, state: QueueState) -> None:
        """(Orderly) hand a revoked queue off once the listener call still running on it returns.

        The call's result counts (the queue is still ours and locked), so the commit includes it.
        """
        await state.wait_quiet()
        if not state.pq.dropped:
            await self._release([state])

    def _forget(self, states: Sequence[QueueState]) -> None:
        consumer = self._consumer
        for state in states:
            if consumer._queues.get(state.mq) is state:
                del consumer._queues[state.mq]
                consumer.offsets.remove(state.mq)

    async def reset(self, topic: str, offsets: Mapping[MessageQueue, int]) -> list[MessageQueue]:
        """Drop the owned queues of ``topic`` named in ``offsets`` and commit those offsets.

        Their pulls stop and their caches go (results of calls still running are not committed),
        the offsets are committed synchronously, locks released; a rebalance takes them again.
        Returns the queues reset.
        """
        consumer = self._consumer
        states = [
            s for mq, s in consumer._queues.items() if mq.topic == topic and mq in offsets and not s.revoking
        ]
        for state in states:
            state.revoking = True
            state.pq.dropped = True
            state.scope.cancel()
            state.poke()
        for state in states:
            consumer.offsets.update(state.mq, offsets[state.mq], increase_only=False)
            await self.persist(state)
        if consumer._orderly is not None:
            await consumer._orderly.unlock([state.mq for state in states])
        self._forget(states)
        return [state.mq for state in states]

    async def close(self) -> None:
        """Hand every queue off as the consumer closes; what the handoff could not finish is dropped."""
        consumer = self._consumer
        # The graceful handoff of every queue, while the consume workers still run.
        with trio.move_on_after(consumer.handoff_timeout + 2 * consumer.config.request_timeout) as scope:
            scope.shield = True
            await self.revoke(list(consumer._queues.values()), notify=True)
        for state in consumer._queues.values():  # only if the handoff ran out of time
            state.pq.dropped = True
            state.scope.cancel()
        consumer._running().cancel_scope.cancel()
        with trio.move_on_after(consumer.config.request_timeout) as scope:
            scope.shield = True
            for state in list(consumer._queues.values()):
                await self.persist(state)
            if consumer._orderly is not None:  # locks kept for calls now cancelled
                await consumer._orderly.unlock(list(consumer._queues))

    # --- committing --------------------------------------------------------------------------------

    async def persist(self, state: QueueState) -> None:
        """Commit one queue's offset synchronously (logged on failure)."""
        consumer = self._consumer
        offset = consumer.offsets.get(state.mq)
        try:
            async with self._persist_lock:
                await consumer.offsets.persist(state.mq)
            if offset >= 0:
                state.persisted_offset = offset
        except RocketMQError as exc:
            log.warning("%s: committing the offset of %s failed: %s", consumer.group, state.mq, exc)

    async def persist_locked(self, mq: MessageQueue) -> None:
        """Commit ``mq``'s offset synchronously under the persist lock (errors raised)."""
        async with self._persist_lock:
            await self._consumer.offsets.persist(mq)

    async def persist_loop(self) -> None:
        """Commit every owned queue's offset every ``persist_interval`` seconds (oneway)."""
        consumer = self._consumer
        while True:
            await trio.sleep(consumer.persist_interval)
            states = list(consumer._queues.values())
            table = consumer.offsets.snapshot()
            async with self._persist_lock:  # never after (so never older than) a handoff's commit
                await consumer.offsets.persist_all([s.mq for s in states])
            for state in states:
                offset = table.get(state.mq, -1)
                if offset >= 0 and not state.pq.dropped:
                    state.persisted_offset = offset
