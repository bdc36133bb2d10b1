"""How far a consumer is behind, and where queues begin and end (issue 28 §2).

``PushConsumer.lag()`` / ``LitePullConsumer.lag()`` answer, per owned queue, what a broker's
``consumerProgress`` answers for the whole group (mqadmin; the broker's ``GET_CONSUME_STATS``), plus
what only the member knows: its offset in memory, ahead of the committed one between commits.
``LitePullConsumer.end_offsets()`` / ``beginning_offsets()`` are aiokafka's names for a queue's
GET_MAX_OFFSET / GET_MIN_OFFSET.

Every queue is asked at once (at most :data:`LAG_CONCURRENCY` in flight); a queue whose broker
cannot be asked makes the call raise that error (the first one), after the others finished.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final, TypeVar

import trio

from rocketmq_py._client._instance import ClientInstance
from rocketmq_py._client._timestamp import read_stamps
from rocketmq_py.consumer._offset_store_api import OffsetStore
from rocketmq_py.errors import RocketMQError
from rocketmq_py.protocol import MessageQueue

__all__ = ["LAG_CONCURRENCY", "QueueLag", "queue_ends", "queue_lags"]

#: Queues asked at once by one ``lag()`` / ``end_offsets()`` call.
LAG_CONCURRENCY: Final = 16

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class QueueLag:
    """How far one owned queue is behind, as it was when asked (a snapshot).

    Attributes:
        queue: the queue.
        max_offset: the offset after the queue's last message (the broker's GET_MAX_OFFSET).
        committed: the group's offset as stored (on the broker; in the local file when
            broadcasting); -1 when none is.
        consumed: the member's offset in memory, -1 until known: a lite pull consumer's next
            message after the last one ``poll`` returned; a push consumer's oldest message still
            being consumed (the offset its next commit stores).
        behind: messages from ``consumed`` (when unknown, ``committed``; when neither is known, the
            queue's first stored message) to ``max_offset``.
        oldest_age: seconds since the first of those messages was stored (the broker's store
            timestamp against this machine's clock); None when nothing is behind, or that message
            is no longer stored.
    """

    queue: MessageQueue
    max_offset: int
    committed: int
    consumed: int
    behind: int
    oldest_age: float | None


async def _each(
    queues: Iterable[MessageQueue], ask: Callable[[MessageQueue], Awaitable[_T]]
) -> dict[MessageQueue, _T]:
    """``ask`` of every queue, :data:`LAG_CONCURRENCY` at a time; the first failure is raised."""
    found: dict[MessageQueue, _T] = {}
    failed: list[RocketMQError] = []
    limiter = trio.CapacityLimiter(LAG_CONCURRENCY)

    async def one(mq: MessageQueue) -> None:
        async with limiter:
            try:
                found[mq] = await ask(mq)
            except RocketMQError as exc:
                failed.append(exc)

    async with trio.open_nursery() as nursery:
        for mq in queues:
            nursery.start_soon(one, mq)
    if failed:
        raise failed[0]
    return found


async def queue_ends(
    instance: ClientInstance, queues: Iterable[MessageQueue], *, end: bool
) -> dict[MessageQueue, int]:
    """Each queue's max offset (``end``) or min offset, from its master broker.

    Raises:
        RocketMQError: a queue's broker could not be found or asked.
    """
    routes, api = instance.routes, instance.api

    async def ask(mq: MessageQueue) -> int:
        address = await routes.require_master(mq.topic, mq.broker_name)
        read = api.get_max_offset if end else api.get_min_offset
        return await read(address, mq.topic, mq.queue_id, mq.broker_name)

    return await _each(queues, ask)


async def queue_lags(
    instance: ClientInstance, store: OffsetStore, consumed: Mapping[MessageQueue, int]
) -> list[QueueLag]:
    """The lag of each queue of ``consumed`` (queue -> the offset in memory, -1 if unknown).

    Raises:
        RocketMQError: a queue's broker (or the offset file) could not be asked.
    """
    routes, api = instance.routes, instance.api

    async def ask(mq: MessageQueue) -> QueueLag:
        address = await routes.require_master(mq.topic, mq.broker_name)
        max_offset = await api.get_max_offset(address, mq.topic, mq.queue_id, mq.broker_name)
        committed = await store.read_persisted(mq)
        position = consumed[mq] if consumed[mq] >= 0 else committed
        if position < 0:
            position = await api.get_min_offset(address, mq.topic, mq.queue_id, mq.broker_name)
        behind = max(max_offset - position, 0)
        age: float | None = None
        if behind:
            window = await read_stamps(api, address, mq, position, store.group, count=1)
            stamps = [stored_at for offset, stored_at in window.stamps if offset == position]
            if stamps:
                age = max(time.time() - stamps[0] / 1000, 0.0)
        return QueueLag(mq, max_offset, committed, consumed[mq], behind, age)

    found = await _each(consumed, ask)
    return [found[mq] for mq in consumed]
