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
commit is never sent after it. An orderly member waits for the answer of each periodic commit
too, and its pulls carry no commit offset: the broker runs pulls and commits on executors of many
threads each, so of two offsets sent in order the older may be stored last, and the next owner of
an orderly queue must start exactly after what this member consumed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Final

import trio

from rocketmq_py.consumer._allocate import sort_queues
from rocketmq_py.consumer._group_client import Allocation, start_offset
from rocketmq_py.consumer._listener import notify_rebalance_listener
from rocketmq_py.consumer._process_queue import ProcessQueue
from rocketmq_py.consumer._pull_loop import pull_loop
from rocketmq_py.consumer._push_settings import PushSettings
from rocketmq_py.consumer._queue_state import QueueState
from rocketmq_py.consumer._queue_table import QueueTable
from rocketmq_py.consumer._rebalance import plan_rebalance
from rocketmq_py.consumer._runtime import ConsumeService, PushRuntime
from rocketmq_py.errors import RocketMQError
from rocketmq_py.protocol import MessageQueue, unwrap_name

__all__ = ["START_OFFSET_CONCURRENCY", "Assignment"]

#: Start offsets of newly taken queues read at once (QUERY_CONSUMER_OFFSET and friends).
START_OFFSET_CONCURRENCY: Final = 16

log = logging.getLogger("rocketmq_py.consumer")


class Assignment:
    """A push consumer's owned queues as they change hands (see the module docstring).

    ``service`` consumes the queues taken (and locks and releases them, if it must).
    """

    def __init__(
        self, settings: PushSettings, runtime: PushRuntime, queues: QueueTable, service: ConsumeService
    ) -> None:
        self._settings = settings
        self._runtime = runtime
        self._queues = queues
        self._service = service

    @property
    def service(self) -> ConsumeService:
        """The service consuming the pulled queues (its running calls for the health check)."""
        return self._service

    # --- rebalance ---------------------------------------------------------------------------------

    async def apply(
        self, topic: str, allocation: Allocation, handoff_start: Callable[[int], float | None]
    ) -> None:
        """Take ``allocation`` of ``topic``: revoke, rebuild and start queues as planned.

        Nothing changes when the topic has no queues or the brokers list no member: a route or
        heartbeat not there yet must not revoke everything. ``handoff_start``: when new queues may
        read their committed offset (None: at once), given the number of members (asked first).
        """
        settings, runtime = self._settings, self._runtime
        if not allocation.mq_all or not allocation.cid_all:
            log.debug(
                "%s: %s has %d queues, %d consumers: nothing to allocate",
                settings.group,
                topic,
                len(allocation.mq_all),
                len(allocation.cid_all),
            )
            return
        after = handoff_start(len(allocation.cid_all))
        queues = self._queues
        plan = plan_rebalance(
            topic,
            dict(queues),
            allocation.allocated,
            now=trio.current_time(),
            max_idle=settings.pull_max_idle_time,
        )
        for mq in plan.rebuild:
            log.warning(
                "%s: pull of %s idle for %.0f s: dropping and rebuilding it",
                settings.group,
                mq,
                trio.current_time() - queues[mq].pq.last_pull_time,
            )
        await self.revoke([queues[mq] for mq in plan.revoke], notify=True)
        await self.revoke([queues[mq] for mq in plan.rebuild], notify=False)
        fresh = sort_queues(mq for mq in (*plan.start, *plan.rebuild) if mq not in queues)
        added = await self._take(topic, fresh, handoff_start=after)
        if not (plan.revoke or plan.rebuild or added):
            return
        log.info(
            "client rebalanced result changed. allocateMessageQueueStrategyName=%s, group=%s, topic=%s, "
            "clientId=%s, mqAllSize=%d, cidAllSize=%d, rebalanceResultSize=%d, rebalanceResultSet=%s",
            settings.strategy_name,
            settings.group,
            topic,
            runtime.client_id,
            len(allocation.mq_all),
            len(allocation.cid_all),
            len(allocation.allocated),
            sort_queues(allocation.allocated),
        )
        runtime.renew_subscription(topic)
        await runtime.instance.heartbeat_all()  # the new subscription version before the new pulls
        # A rebuilt queue (idle pull) stays this member's: the listener hears of neither half.
        announced = [state.mq for state in added if state.mq not in plan.rebuild]
        if announced or plan.revoke:
            runtime.instance.emit(
                "rebalanced",
                topic=unwrap_name(settings.namespace, topic),
                added=frozenset(settings.user_queues(announced)),
                removed=frozenset(settings.user_queues(plan.revoke)),
            )
        if announced:
            await notify_rebalance_listener(
                settings.rebalance_listener, "on_assigned", settings.user_queues(announced), settings.group
            )
        nursery = runtime.nursery
        for state in added:
            queues.add(state)
            nursery.start_soon(pull_loop, settings, runtime, queues, self._service, state)
            self._service.start_queue(nursery, state)

    async def _take(
        self, topic: str, fresh: list[MessageQueue], *, handoff_start: float | None
    ) -> list[QueueState]:
        """The states of the new queues this member could take now (locked, start offset found)."""
        settings = self._settings
        if not fresh:
            return []
        if settings.locks_queues:
            locked = await self._service.lock(fresh)
            if len(locked) < len(fresh):
                log.info(
                    "%s: %d of %d new queues of %s are still locked by another member: retrying in 1 s",
                    settings.group,
                    len(fresh) - len(locked),
                    len(fresh),
                    topic,
                )
                self._runtime.retry_rebalance()
            fresh = [mq for mq in fresh if mq in locked]
        elif handoff_start is not None:
            await trio.sleep_until(handoff_start)
        found = await self._start_offsets(fresh)
        added: list[QueueState] = []
        for mq in fresh:
            offset = found[mq]
            if isinstance(offset, RocketMQError):
                # Another round in 1 s, not at the next period (Java: a round whose working queues
                # differ from its allocation is not balanced, and RebalanceService waits minInterval).
                log.warning("%s: no start offset for %s yet, retrying in 1 s: %s", settings.group, mq, offset)
                self._runtime.retry_rebalance()
                await self._service.release([mq])
                continue
            pq = ProcessQueue(clock=trio.current_time)
            if settings.orderly:
                pq.locked = True  # lock() stamped the lock: it was granted just now
            added.append(QueueState(mq, pq, offset))
        return added

    async def _start_offsets(self, queues: Sequence[MessageQueue]) -> dict[MessageQueue, int | RocketMQError]:
        """Where each of ``queues`` starts (or why it cannot yet), read :data:`START_OFFSET_CONCURRENCY`
        at a time: a member taking a thousand queues does not wait for a thousand round trips in a row
        (Java reads them one after the other)."""
        settings, runtime = self._settings, self._runtime
        found: dict[MessageQueue, int | RocketMQError] = {}
        limiter = trio.CapacityLimiter(START_OFFSET_CONCURRENCY)

        async def read(mq: MessageQueue) -> None:
            async with limiter:
                try:
                    found[mq], _ = await start_offset(
                        runtime.instance,
                        runtime.offsets,
                        settings.group,
                        mq,
                        settings.consume_from_where,
                        settings.consume_timestamp_ms,
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
        settings = self._settings
        states = [state for state in states if not state.pq.dropped]
        if not states:
            return
        for state in states:
            state.revoking = True
            state.scope.cancel()  # no more pulls
            state.poke()  # an orderly consume task looks, and leaves
        with trio.move_on_after(settings.handoff_timeout):
            for state in states:
                await state.wait_quiet()
        late = [state for state in states if state.inflight]
        # An orderly queue is never unlocked while a listener call runs on it: it stays, revoking
        # and locked (the lock loop keeps renewing it), until the call returns.
        held = late if settings.locks_queues else []
        if late:
            log.warning(
                "%s: listener calls on %s still running after %g s: %s",
                settings.group,
                [state.mq for state in late],
                settings.handoff_timeout,
                "their queues stay locked until they return"
                if held
                else "the next owner consumes them again",
            )
        if notify:
            mqs = settings.user_queues(state.mq for state in states)
            await notify_rebalance_listener(settings.rebalance_listener, "on_revoked", mqs, settings.group)
        await self._release([state for state in states if state not in held])
        for state in held:
            self._runtime.nursery.start_soon(self._release_when_quiet, state)

    async def drop_topic(self, topic: str) -> None:
        """Hand off every owned queue of ``topic``: the group no longer pulls it (it pops it now, or
        no longer subscribes it). Their offsets are committed, so what reads them next goes on there."""
        states = self._queues.of_topic(topic)
        if states:
            log.info("%s: no longer pulling %s", self._settings.group, sort_queues(s.mq for s in states))
            await self.revoke(states, notify=True)

    async def _release(self, states: Sequence[QueueState]) -> None:
        """The end of a handoff: commit synchronously, unlock (orderly), forget."""
        for state in states:
            state.pq.dropped = True  # from here on, nothing moves the offsets
        for state in states:
            await self.persist(state)
        if not self._settings.commits_answered and not self._settings.broadcasting:
            for state in states:
                await self._persist_again_if_overtaken(state)
        await self._service.release([state.mq for state in states])
        if self._settings.orderly:
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
        for state in states:
            if self._queues.forget(state):
                self._runtime.offsets.remove(state.mq)

    async def reset(self, topic: str, offsets: Mapping[MessageQueue, int]) -> list[MessageQueue]:
        """Drop the owned queues of ``topic`` named in ``offsets`` and commit those offsets.

        Their pulls stop and their caches go (results of calls still running are not committed),
        the offsets are committed synchronously, locks released; a rebalance takes them again.
        Returns the queues reset.
        """
        runtime = self._runtime
        states = [s for s in self._queues.of_topic(topic) if s.mq in offsets and not s.revoking]
        for state in states:
            state.revoking = True
            state.pq.dropped = True
            state.scope.cancel()
            state.poke()
        for state in states:
            runtime.offsets.update(state.mq, offsets[state.mq], increase_only=False)
            await self.persist(state)
        await self._service.release([state.mq for state in states])
        self._forget(states)
        return [state.mq for state in states]

    async def close(self) -> None:
        """Hand every queue off as the consumer closes; what the handoff could not finish is dropped."""
        settings, queues = self._settings, self._queues
        # The graceful handoff of every queue, while the consume workers still run.
        with trio.move_on_after(settings.handoff_timeout + 2 * settings.request_timeout) as scope:
            scope.shield = True
            await self.revoke(list(queues.values()), notify=True)
        for state in queues.values():  # only if the handoff ran out of time
            state.pq.dropped = True
            state.scope.cancel()
        self._runtime.nursery.cancel_scope.cancel()
        with trio.move_on_after(settings.request_timeout) as scope:
            scope.shield = True
            for state in list(queues.values()):
                await self.persist(state)
            await self._service.release(list(queues))  # (orderly) locks kept for calls now cancelled

    # --- committing --------------------------------------------------------------------------------

    async def persist(self, state: QueueState) -> None:
        """Commit one queue's offset synchronously (logged on failure)."""
        offsets = self._runtime.offsets
        offset = offsets.get(state.mq)
        try:
            async with self._runtime.persist_lock:
                await offsets.persist(state.mq)
            if offset >= 0:
                state.persisted_offset = offset
        except RocketMQError as exc:
            log.warning("%s: committing the offset of %s failed: %s", self._settings.group, state.mq, exc)

    async def _persist_again_if_overtaken(self, state: QueueState) -> None:
        """Read a handed-off queue's offset back once; commit it again if the broker holds an older one.

        The member's pulls carry commit offsets (stored on the broker's pull executor) and its
        periodic commits are oneway (the consumer-manage executor): either, sent before the
        handoff's commit, may be stored after it (``ConsumerOffsetManager.commitOffset`` stores an
        older offset, logging ``[NOTIFYME]update consumer offset less than store``), and the next
        reader would start before where this member stopped. The read comes after the handoff's
        answered commit, so an older commit still queued then is likely stored by now.
        """
        offsets = self._runtime.offsets
        ours = offsets.get(state.mq)
        if ours < 0:
            return
        try:
            stored = await offsets.read_persisted(state.mq)
        except RocketMQError as exc:
            log.info("%s: reading back the offset of %s failed: %s", self._settings.group, state.mq, exc)
            return
        if stored < ours:
            log.info(
                "%s: the broker stored an older offset of %s (%d) after the handoff's commit (%d): committed again",
                self._settings.group,
                state.mq,
                stored,
                ours,
            )
            await self.persist(state)

    async def persist_loop(self) -> None:
        """Commit every owned queue's offset every ``persist_interval`` seconds (oneway).

        A dropped queue's offset is left to the path that dropped it (the handoff's commit, or the
        corrected offset after OFFSET_ILLEGAL, 10 s later): a periodic commit of the older offset in
        memory could be stored after it, since the broker runs offset requests on a pool of threads
        (Java's ``persistAll`` sends it; likely what made the stop's CI run of ``test_cli_group.py``
        consume nothing after ``mqadmin resetOffsetByTime``, as if the reset had been undone).
        """
        runtime = self._runtime
        while True:
            await trio.sleep(self._settings.persist_interval)
            states = list(self._queues.values())
            table = runtime.offsets.snapshot()
            async with runtime.persist_lock:  # never after (so never older than) a handoff's commit
                await runtime.offsets.persist_all(
                    [s.mq for s in states],
                    acknowledged=self._settings.commits_answered,
                    hold={s.mq for s in states if s.pq.dropped},
                )
            for state in states:
                offset = table.get(state.mq, -1)
                if offset >= 0 and not state.pq.dropped:
                    state.persisted_offset = offset
