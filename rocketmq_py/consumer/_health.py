"""What a consumer's :meth:`health` adds to its client's: its owned queues and stuck listener calls
(see :mod:`rocketmq_py._health`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from rocketmq_py._client._instance import ClientInstance
from rocketmq_py._health import Health, QueueHealth, client_health
from rocketmq_py.consumer._allocate import sort_queues
from rocketmq_py.protocol import MessageQueue, unwrap_queue

__all__ = ["QueueReading", "consumer_health"]


class QueueReading(NamedTuple):
    """One owned queue as its consumer knows it (trio clock times)."""

    queue: MessageQueue
    #: The last pull (or pop) a broker answered; when the queue was taken, before the first.
    answered_at: float
    #: The pull is paused by flow control.
    paused: bool = False
    #: The last listener call on its messages was cut at ``consume_timeout`` then; else ``None``.
    timed_out_at: float | None = None


def consumer_health(
    instance: ClientInstance,
    now: float,
    readings: Iterable[QueueReading],
    *,
    running_calls: Iterable[tuple[MessageQueue, float]] = (),
    consume_timeout: float | None = None,
    idle_limit: float | None,
    namespace: str | None = None,
) -> Health:
    """``instance``'s health with the owned queues read, and the listener calls running now
    (queue, start time), at trio time ``now``."""
    stalled: dict[MessageQueue, float] = {}
    if consume_timeout is not None:
        for mq, started in running_calls:
            over = now - started - consume_timeout
            if over > 0:
                stalled[mq] = max(over, stalled.get(mq, 0.0))
    by_queue = {r.queue: r for r in readings}
    queues = [
        QueueHealth(
            queue=mq if namespace is None else unwrap_queue(namespace, mq),
            last_answer_age=now - reading.answered_at,
            paused=reading.paused,
            stalled_for=stalled.get(mq),
            timed_out_ago=None if reading.timed_out_at is None else now - reading.timed_out_at,
        )
        for mq in sort_queues(by_queue)
        for reading in (by_queue[mq],)
    ]
    return client_health(instance, now, queues=queues, idle_limit=idle_limit, consume_timeout=consume_timeout)
