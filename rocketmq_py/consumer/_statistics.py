"""A push consumer's figures: per-queue statistics and the per-topic rates admin tools read.

:func:`queue_statistics` is what :meth:`PushConsumer.statistics` returns, and
:class:`PopQueueStatistics` what :meth:`PushConsumer.pop_statistics` returns; :class:`ConsumeCounters`
counts pulls and listener calls per topic, turned by :func:`rate_table` into the ``statusTable`` of
GET_CONSUMER_RUNNING_INFO (``mqadmin consumerStatus``: pull and consume TPS and RT).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import trio

from rocketmq_py.consumer._allocate import sort_queues
from rocketmq_py.consumer._flow import REBALANCE_LOCK_MAX_LIVE_TIME_MS
from rocketmq_py.consumer._offset_store_api import OffsetStore
from rocketmq_py.consumer._queue_state import QueueState
from rocketmq_py.protocol import ConsumeRateStatus, MessageQueue

__all__ = [
    "ConsumeCounters",
    "PopQueueStatistics",
    "QueueStatistics",
    "TopicCounters",
    "queue_statistics",
    "rate_table",
]


@dataclass(frozen=True, slots=True)
class QueueStatistics:
    """One owned queue, as :meth:`PushConsumer.statistics` reports it."""

    queue: MessageQueue
    cached_count: int
    cached_bytes: int
    max_span: int
    next_pull_offset: int
    #: The offset to commit, as held in memory (committed to the broker every ``persist_interval``).
    committed_offset: int
    #: The flow-control limit that pauses the pull (``COUNT``, ``SIZE``, ``SPAN``), or None.
    paused_by_flow_control: str | None
    last_pull_age: float
    last_consume_age: float
    #: Why the pull is paused, with the numbers, e.g. ``"count 1001 > 1000"``.
    paused_detail: str | None = None
    #: (orderly) the broker lock is held and not expired client side.
    locked: bool = False
    #: (orderly) seconds since the last successful lock or renewal.
    lock_age: float | None = None
    #: (orderly) paused after a SUSPEND_CURRENT_QUEUE_A_MOMENT.
    suspended: bool = False
    #: Being handed off (revoked, waiting for running listener calls).
    revoking: bool = False
    #: Listener calls running on the queue's messages.
    consuming: int = 0
    #: Wall-clock epoch ms of the last pull and the last consumption.
    last_pull_timestamp: int = 0
    last_consume_timestamp: int = 0
    #: The offset last written to the broker (or, broadcasting, the local file) by us; -1 none yet.
    persisted_offset: int = -1


@dataclass(frozen=True, slots=True)
class PopQueueStatistics:
    """One queue this member pops (POP consumption), as :meth:`PushConsumer.pop_statistics` reports it.

    The broker keeps the offsets of a popped queue, so there is no cache, span or committed offset
    here: what is popped goes to the listener and is acknowledged (or re-timed) message by message.
    """

    queue: MessageQueue
    #: Messages popped and not yet acknowledged or re-timed (Java ``waitAckCount``).
    waiting_ack: int
    #: Messages popped from the queue since this member was given it.
    popped: int
    #: Seconds since the last POP_MESSAGE (at first: since the queue was given to this member).
    last_pop_age: float
    #: Wall-clock epoch ms of that POP_MESSAGE (Java ``lastPopTimestamp``).
    last_pop_timestamp: int


def queue_statistics(
    queues: Mapping[MessageQueue, QueueState], offsets: OffsetStore | None, *, orderly: bool
) -> list[QueueStatistics]:
    """Per owned queue, in queue order: cache, flow control, lock, times, committed offset."""
    now = trio.current_time()
    wall_ms = time.time() * 1000
    lock_live = REBALANCE_LOCK_MAX_LIVE_TIME_MS / 1000
    stats = []
    for mq in sort_queues(queues):
        state = queues[mq]
        pq = state.pq
        flow = state.flow
        stats.append(
            QueueStatistics(
                queue=mq,
                cached_count=pq.msg_count,
                cached_bytes=pq.msg_size,
                max_span=pq.max_span,
                next_pull_offset=state.next_offset,
                committed_offset=offsets.get(mq) if offsets else -1,
                paused_by_flow_control=flow.reason.name if flow else None,
                last_pull_age=now - pq.last_pull_time,
                last_consume_age=now - pq.last_consume_time,
                paused_detail=f"{flow.reason.value} {flow.value} > {flow.limit}" if flow else None,
                locked=pq.locked and not pq.is_lock_expired(now, lock_live),
                lock_age=now - pq.last_lock_time if orderly else None,
                suspended=state.suspended_until > now,
                revoking=state.revoking,
                consuming=state.inflight,
                last_pull_timestamp=int(wall_ms - (now - pq.last_pull_time) * 1000),
                last_consume_timestamp=int(wall_ms - (now - pq.last_consume_time) * 1000),
                persisted_offset=state.persisted_offset,
            )
        )
    return stats


@dataclass(slots=True)
class TopicCounters:
    """Counters behind one topic's rates in running info."""

    pulled: int = 0
    pull_count: int = 0
    pull_rt: float = 0.0
    ok: int = 0
    failed: int = 0
    consume_calls: int = 0
    consume_rt: float = 0.0


class ConsumeCounters:
    """Per-topic pull and consume counters of one consumer, plus its totals."""

    def __init__(self) -> None:
        self._topics: dict[str, TopicCounters] = {}
        #: Messages consumed / failed on queues still owned when their call ended, over all topics.
        self.consumed = 0
        self.failed = 0

    def topic(self, topic: str) -> TopicCounters:
        """The counters of ``topic`` (created on first use)."""
        counters = self._topics.get(topic)
        if counters is None:
            counters = self._topics[topic] = TopicCounters()
        return counters

    def count_pull(self, topic: str, *, found: int, started: float) -> None:
        """One pull answered (``found`` new messages cached), issued at clock time ``started``."""
        counters = self.topic(topic)
        counters.pull_count += 1
        counters.pull_rt += trio.current_time() - started
        counters.pulled += found

    def count_consume(
        self, topic: str, count: int, ok: bool, started: float, ended: float | None = None
    ) -> None:
        """One listener call on ``count`` messages, begun at clock time ``started`` (ended now,
        or at ``ended``)."""
        counters = self._topics.get(topic) or self.topic(topic)
        counters.consume_calls += 1
        counters.consume_rt += (trio.current_time() if ended is None else ended) - started
        if ok:
            counters.ok += count
        else:
            counters.failed += count


def rate_table(
    counters: ConsumeCounters, topics: Iterable[str], uptime: float
) -> dict[str, ConsumeRateStatus]:
    """Running info's ``statusTable``: per topic, pull/consume RT (ms) and TPS since the start."""
    uptime = max(uptime, 1e-3)
    table = {}
    for topic in topics:
        c = counters.topic(topic)
        table[topic] = ConsumeRateStatus(
            pull_rt=c.pull_rt * 1000 / c.pull_count if c.pull_count else 0.0,
            pull_tps=c.pulled / uptime,
            consume_rt=c.consume_rt * 1000 / c.consume_calls if c.consume_calls else 0.0,
            consume_ok_tps=c.ok / uptime,
            consume_failed_tps=c.failed / uptime,
            consume_failed_msgs=c.failed,
        )
    return table
