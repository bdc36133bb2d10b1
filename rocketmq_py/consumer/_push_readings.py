"""What a push consumer reads of itself, no request sent: its health, its metrics' gauges, and
its statistics with the queues named as the user names them (the namespace taken off).

The figures themselves are computed by :mod:`._health`, :mod:`._gauges` and :mod:`._statistics`;
this module gathers the consumer's parts into them: the queues it pulls, the ones it pops (POP
consumption) and the listener calls running on either.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TypeVar

import trio

from rocketmq_py._client._instance import ClientInstance
from rocketmq_py._health import Health
from rocketmq_py.consumer._gauges import TopicGauges, topic_gauges
from rocketmq_py.consumer._health import QueueReading, consumer_health
from rocketmq_py.consumer._offset_store_api import OffsetStore
from rocketmq_py.consumer._pop import PopService
from rocketmq_py.consumer._queue_state import QueueState
from rocketmq_py.consumer._runtime import ConsumeService
from rocketmq_py.consumer._statistics import PopQueueStatistics, QueueStatistics
from rocketmq_py.protocol import MessageQueue, unwrap_name, unwrap_queue

__all__ = ["gauge_reader", "push_health", "user_statistics"]

_Stats = TypeVar("_Stats", QueueStatistics, PopQueueStatistics)


def user_statistics(namespace: str | None, stats: list[_Stats]) -> list[_Stats]:
    """``stats`` with each queue as the user names it (``namespace`` taken off)."""
    if namespace is None:
        return stats
    return [replace(s, queue=unwrap_queue(namespace, s.queue)) for s in stats]


def push_health(
    instance: ClientInstance,
    queues: Mapping[MessageQueue, QueueState],
    service: ConsumeService,
    pop: PopService | None,
    *,
    consume_timeout: float,
    idle_limit: float,
    namespace: str | None,
) -> Health:
    """The health of a started push consumer: its pulled ``queues`` and the listener calls running
    in ``service``, and with POP consumption the popped queues and calls of ``pop``."""
    calls = service.running_calls()
    if pop is not None:
        calls += pop.running_calls()
    readings = [
        QueueReading(mq, state.pq.last_answer_time, state.flow is not None, state.timed_out_at)
        for mq, state in queues.items()
    ]
    if pop is not None:
        readings += [QueueReading(mq, q.last_pop_time, False, q.timed_out_at) for mq, q in pop.queues.items()]
    return consumer_health(
        instance,
        trio.current_time(),
        readings,
        running_calls=calls,
        consume_timeout=consume_timeout,
        idle_limit=idle_limit,
        namespace=namespace,
    )


def gauge_reader(
    queues: Mapping[MessageQueue, QueueState], offsets: OffsetStore, namespace: str | None
) -> Callable[[], list[TopicGauges]]:
    """What reads the metrics' gauges of ``queues``, per topic (to be called in the run's trio thread)."""

    def read() -> list[TopicGauges]:
        gauges = topic_gauges(queues, offsets)
        if namespace is None:
            return gauges
        return [replace(g, topic=unwrap_name(namespace, g.topic)) for g in gauges]

    return read
