"""A push consumer's pull loop: one long-polling task per owned queue (Java ``pullMessage``).

Each round: stamp the queue (any attempt counts, so that only a lost loop looks idle), let flow
control pause it (cache over its limits; an orderly queue not locked), pull once
(:func:`~rocketmq_py.consumer._pull_once.pull_once`: the broker it suggested last, else the
master, else a slave; the group's registered subscription; the broker holds the request up to
15 s when nothing is there), and act on the answer as
:func:`~rocketmq_py.consumer._pull_result.next_pull_action` decided: cache and hand over what was
found, correct the offset, or drop the queue when its offset is illegal (its corrected offset is
committed a moment later and the queue is allocated again). A pull refused because the broker lost
the group's subscription (it, or a Proxy in front of it, restarted) brings a heartbeat at once.
"""

from __future__ import annotations

import logging

import trio

from rocketmq_py._client._route import MASTER_ID
from rocketmq_py.consumer._flow import (
    BROKER_SUSPEND_MAX_TIME_MS,
    CONSUMER_TIMEOUT_WHEN_SUSPEND_MS,
    PULL_TIME_DELAY_WHEN_EXCEPTION_MS,
    flow_control,
)
from rocketmq_py.consumer._pull_once import pull_once
from rocketmq_py.consumer._push_settings import PushSettings
from rocketmq_py.consumer._queue_state import QueueState
from rocketmq_py.consumer._queue_table import QueueTable
from rocketmq_py.consumer._runtime import ConsumeService, PushRuntime
from rocketmq_py.errors import RocketMQError

__all__ = ["pull_loop"]

log = logging.getLogger("rocketmq_py.consumer")


async def pull_loop(
    settings: PushSettings,
    runtime: PushRuntime,
    queues: QueueTable,
    service: ConsumeService,
    state: QueueState,
) -> None:
    """Pull ``state``'s queue until it is dropped or its scope is cancelled; ``service`` consumes
    what is pulled."""
    mq, pq = state.mq, state.pq
    routes, api = runtime.routes, runtime.api
    broker_id = MASTER_ID
    with state.scope:
        while not pq.dropped:
            # Every attempt counts as a pull, whatever comes of it (Java stamps lastPullTimestamp
            # first thing in pullMessage): only a lost loop goes idle.
            pq.last_pull_time = trio.current_time()
            state.flow = flow_control(pq, queues.limits, orderly=settings.orderly)
            if state.flow is not None:
                await trio.sleep(state.flow.delay_ms / 1000)
                continue
            if settings.locks_queues and not pq.locked:
                # Java pulls an orderly queue only while it is locked; the renewal may lock it again.
                await trio.sleep(PULL_TIME_DELAY_WHEN_EXCEPTION_MS / 1000)
                continue
            pulled = await pull_once(
                api,
                routes,
                group=settings.group,
                mq=mq,
                pq=pq,
                offset=state.next_offset,
                broker_id=broker_id,
                batch_size=settings.pull_batch_size,
                subscriptions=runtime.subscriptions,
                filters=runtime.filters,
                suspend_ms=BROKER_SUSPEND_MAX_TIME_MS,
                timeout_ms=CONSUMER_TIMEOUT_WHEN_SUSPEND_MS,
                send_subscription=False,
                # An orderly member, or one the brokers assign, commits only with answered requests
                # (Assignment.persist_loop): the broker may store a pull's commit after a handoff's
                # (pull and offset requests run on different executors), and the next owner (or
                # the pops) would consume messages again.
                commit_from=None if settings.broadcasting or settings.commits_answered else runtime.offsets,
                log=log,
            )
            broker_id = pulled.broker_id
            action, msgs = pulled.action, pulled.msgs
            if pulled.result is not None:
                state.max_offset = pulled.result.max_offset
                pq.last_answer_time = trio.current_time()
            if action is None:
                if pulled.registration_lost:  # register again now, not at the next heartbeat (30 s)
                    runtime.instance.heartbeat_soon()
                await trio.sleep(pulled.retry_delay_ms / 1000)
                continue
            fresh = pq.add_messages(msgs) if action.dispatch else []
            runtime.counters.count_pull(mq.topic, found=len(fresh), started=pulled.started)
            if fresh:
                await service.hand_over(state, fresh)
            if action.correct_offset:
                runtime.offsets.update(mq, action.next_offset)
            if action.drop_queue:
                log.warning(
                    "%s: offset %d of %s is illegal (%s): dropping the queue",
                    settings.group,
                    state.next_offset,
                    mq,
                    pulled.result,
                )
                pq.dropped = True
                runtime.nursery.start_soon(
                    fix_illegal_offset, runtime, queues, state, action.next_offset, action.delay_ms
                )
                return
            state.next_offset = action.next_offset
            if action.delay_ms:
                await trio.sleep(action.delay_ms / 1000)


async def fix_illegal_offset(
    runtime: PushRuntime, queues: QueueTable, state: QueueState, next_offset: int, delay_ms: int
) -> None:
    """After an OFFSET_ILLEGAL answer: commit the broker's corrected offset, forget the queue, rebalance.

    Java waits 10 s first (``executeTaskLater``), so that messages still being consumed finish.
    """
    await trio.sleep(delay_ms / 1000)
    if queues.get(state.mq) is not state:
        return  # rebalanced away (and maybe back) meanwhile: the new owner's offset stands
    offsets = runtime.offsets
    offsets.update(state.mq, next_offset, increase_only=False)
    try:
        # Under the persist lock: the periodic commit cannot write an older offset after this one.
        async with runtime.persist_lock:
            await offsets.persist(state.mq)
    except RocketMQError as exc:
        log.warning("persisting the corrected offset of %s failed: %s", state.mq, exc)
    queues.discard(state.mq)
    offsets.remove(state.mq)
    runtime.request_rebalance()
