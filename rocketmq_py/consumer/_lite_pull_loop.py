"""The lite pull consumer's per-queue task: find where to start, then long-poll into the buffer.

The start offset is the group's committed one, else ``consume_from_where`` resolved against the
broker (a fresh position is committed at once with auto-commit, so a member taking the queue over
before the first auto-commit starts there too). Then each round waits, without asking the broker,
while the buffer is over a limit or the queue is paused, pulls once
(:func:`~rocketmq_py.consumer._pull_once.pull_once`) with the subscription in the request (so
``assign`` mode needs nothing registered), and appends what was found. An illegal offset is
corrected from the broker's answer, as Java's lite consumer does.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Final

import trio

from rocketmq_py._client._instance import ClientInstance
from rocketmq_py.consumer._filter import MessageFilter
from rocketmq_py.consumer._flow import PULL_TIME_DELAY_WHEN_EXCEPTION_MS
from rocketmq_py.consumer._group_client import start_offset
from rocketmq_py.consumer._lite_buffer import LiteBuffer, LiteQueue
from rocketmq_py.consumer._offset_store_api import OffsetStore
from rocketmq_py.consumer._pull_once import pull_once
from rocketmq_py.errors import RocketMQError
from rocketmq_py.protocol import ConsumeFromWhere, SubscriptionData, unwrap_name

__all__ = [
    "LITE_BROKER_SUSPEND_MAX_TIME_MS",
    "LITE_CONSUMER_TIMEOUT_WHEN_SUSPEND_MS",
    "LitePullParts",
    "queue_task",
]

log = logging.getLogger("rocketmq_py.consumer.lite")

#: How long the broker may hold a pull (Java lite ``brokerSuspendMaxTimeMillis`` = 20000).
LITE_BROKER_SUSPEND_MAX_TIME_MS: Final = 20000
#: RPC timeout of a held pull (Java lite ``consumerTimeoutMillisWhenSuspend`` = 30000).
LITE_CONSUMER_TIMEOUT_WHEN_SUSPEND_MS: Final = 30000


@dataclass(frozen=True, slots=True, kw_only=True)
class LitePullParts:
    """What the pull tasks of a started lite consumer work with (never the consumer itself).

    ``subscriptions`` and ``filters`` are the consumer's own tables, read at each pull, so a
    subscription changed later is the one the next pull carries.
    """

    instance: ClientInstance
    offsets: OffsetStore
    group: str
    namespace: str | None
    consume_from_where: ConsumeFromWhere
    consume_timestamp_ms: int | None
    auto_commit: bool
    pull_batch_size: int
    buffer: LiteBuffer
    subscriptions: Mapping[str, SubscriptionData]
    filters: Mapping[str, MessageFilter]
    #: Commit one queue's consumed offset, logging rather than raising a failure.
    commit_quietly: Callable[[LiteQueue], Awaitable[None]]


async def queue_task(consumer: LitePullParts, state: LiteQueue, start_after: float | None = None) -> None:
    """Find ``state``'s start offset (after ``start_after``, the handoff delay), then pull it."""
    with state.scope:
        if start_after is not None:
            await trio.sleep_until(start_after)  # the previous owner commits meanwhile
        while state.next_offset < 0:
            try:
                offset, stored = await start_offset(
                    consumer.instance,
                    consumer.offsets,
                    consumer.group,
                    state.mq,
                    consumer.consume_from_where,
                    consumer.consume_timestamp_ms,
                )
            except RocketMQError as exc:
                log.warning("%s: no start offset for %s yet: %s", consumer.group, state.mq, exc)
                await trio.sleep(PULL_TIME_DELAY_WHEN_EXCEPTION_MS / 1000)
                continue
            state.next_offset = state.consumed = offset
            if not stored and consumer.auto_commit:
                # Fix the group's position now, so a member taking the queue over before our
                # first auto-commit starts here, not at the (then later) end of the queue.
                await consumer.commit_quietly(state)
        await _pull_loop(consumer, state)


async def _pull_loop(consumer: LitePullParts, state: LiteQueue) -> None:
    mq, pq = state.mq, state.pq
    routes, api = consumer.instance.routes, consumer.instance.api
    broker_id = 0
    while not state.dropped:
        if consumer.buffer.blocked(state):
            await consumer.buffer.wait_room()
            continue
        pulled = await pull_once(
            api,
            routes,
            group=consumer.group,
            mq=mq,
            pq=pq,
            offset=state.next_offset,
            broker_id=broker_id,
            batch_size=consumer.pull_batch_size,
            subscriptions=consumer.subscriptions,
            filters=consumer.filters,
            suspend_ms=LITE_BROKER_SUSPEND_MAX_TIME_MS,
            timeout_ms=LITE_CONSUMER_TIMEOUT_WHEN_SUSPEND_MS,
            send_subscription=True,
            commit_from=None,
            log=log,
        )
        action, msgs = pulled.action, pulled.msgs
        if action is None:
            await trio.sleep(pulled.retry_delay_ms / 1000)
            continue
        if state.dropped:
            return  # a seek or revoke replaced this queue while the answer was on its way
        pq.last_pull_time = pq.last_answer_time = trio.current_time()
        broker_id = pulled.broker_id
        if action.dispatch:
            if consumer.namespace is not None:  # poll shows the topic without it (Java's resetTopic)
                for msg in msgs:
                    msg.topic = unwrap_name(consumer.namespace, msg.topic)
            consumer.buffer.append(state, msgs)
        if action.drop_queue:
            # Java's lite consumer carries on from the broker's nextBeginOffset.
            log.warning(
                "%s: offset %d of %s is illegal (%s)", consumer.group, state.next_offset, mq, pulled.result
            )
        if (action.correct_offset or action.drop_queue) and pq.msg_count == 0:
            state.consumed = action.next_offset  # nothing skipped is left unpolled
            state.moved = True
        state.next_offset = action.next_offset
