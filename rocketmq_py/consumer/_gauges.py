"""What a push consumer's gauges read (:class:`rocketmq_py.otel.OpenTelemetryMetrics`): per topic,
its local cache and how far behind the broker it is.

The figures come from the consumer's own state, no request: the cache of every owned queue, the
offset the next pull asks for, the offset held for the next commit, and the queue's max offset as
the last pull answer gave it (every answer carries it, "no new message" included).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from rocketmq_py.consumer._offset_store_api import OffsetStore
from rocketmq_py.consumer._queue_state import QueueState
from rocketmq_py.protocol import MessageQueue

__all__ = ["TopicGauges", "topic_gauges"]


@dataclass(frozen=True, slots=True)
class TopicGauges:
    """One topic's figures, summed over the queues of it the consumer owns (the broker-side lag
    metrics' meanings, seen from the client).

    Attributes:
        topic: the topic (a retry topic ``%RETRY%<group>`` is a topic of its own).
        cached_messages: messages pulled and not consumed yet (orderly: not committed yet).
        cached_bytes: their body bytes.
        ready_messages: messages stored past the offset the next pull asks for, as of each
            queue's last pull answer (``rocketmq_consumer_ready_messages``).
        inflight_messages: messages pulled and not committed yet: the next pull offset minus the
            offset held for the next commit (``rocketmq_consumer_inflight_messages``).
        lag_latency_ms: milliseconds since the oldest message pulled and not consumed was stored,
            over the topic's queues; 0 when none is cached (``rocketmq_consumer_lag_latency``).
    """

    topic: str
    cached_messages: int
    cached_bytes: int
    ready_messages: int
    inflight_messages: int
    lag_latency_ms: float


def topic_gauges(
    queues: Mapping[MessageQueue, QueueState], offsets: OffsetStore | None, *, now_ms: float | None = None
) -> list[TopicGauges]:
    """The figures of each topic ``queues`` has a queue of, in topic order."""
    wall_ms = time.time() * 1000 if now_ms is None else now_ms
    sums: dict[str, list[float]] = {}
    for mq, state in queues.items():
        pq = state.pq
        row = sums.setdefault(mq.topic, [0, 0, 0, 0, 0.0])
        row[0] += pq.msg_count
        row[1] += pq.msg_size
        next_offset = state.next_offset
        if state.max_offset >= 0 and next_offset >= 0:
            row[2] += max(0, state.max_offset - next_offset)
        committed = offsets.get(mq) if offsets is not None else -1
        if committed >= 0 and next_offset >= committed:
            row[3] += next_offset - committed
        oldest = pq.oldest_store_timestamp()
        if oldest is not None:
            row[4] = max(row[4], wall_ms - oldest)
    return [
        TopicGauges(topic, int(c), int(b), int(r), int(i), max(0.0, lag))
        for topic, (c, b, r, i, lag) in sorted(sums.items())
    ]
