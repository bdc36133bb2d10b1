"""What the push consumer answers the broker's requests with.

GET_CONSUMER_RUNNING_INFO (``mqadmin consumerStatus`` / ``consumerProgress``): the properties (the
member's and the push settings'), the subscriptions, one line per pulled queue, the consume rates
per topic and one line per popped queue (POP consumption). RESET_CONSUMER_CLIENT_OFFSET: the owned
queues named restart from the new offsets (:meth:`~rocketmq_py.consumer._assignment.Assignment.reset`).
CONSUME_MESSAGE_DIRECTLY calls the listener (:func:`~rocketmq_py.consumer._listener.consume_directly`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

import trio

from rocketmq_py.consumer._assignment import Assignment
from rocketmq_py.consumer._group_client import process_queue_info
from rocketmq_py.consumer._pop import PopService
from rocketmq_py.consumer._queue_state import QueueState
from rocketmq_py.consumer._statistics import ConsumeCounters, rate_table
from rocketmq_py.protocol import ConsumerRunningInfo, MessageQueue, SubscriptionData

__all__ = ["push_running_info", "reset_push_offsets"]

log = logging.getLogger("rocketmq_py.consumer")


def push_running_info(
    queues: Mapping[MessageQueue, QueueState],
    committed: Callable[[MessageQueue], int],
    properties: Callable[[], dict[str, str]],
    subscriptions: Mapping[str, SubscriptionData],
    counters: ConsumeCounters,
    started_at: float,
    pop: PopService | None,
) -> ConsumerRunningInfo:
    """GET_CONSUMER_RUNNING_INFO's answer (``mqadmin consumerStatus`` / ``consumerProgress``).

    Args:
        queues: the pulled queues (as the brokers name them) and their states.
        committed: a queue's offset in the offset store; with ``properties``, read while the
            answer is built, after the clock (a consumer that is not started raises from them).
        properties: the running info's properties.
        subscriptions: the member's subscriptions, by wire topic.
        counters: the consume counters, for the rates since ``started_at`` (trio clock).
        pop: the POP service, when the member pops.
    """
    now = trio.current_time()
    wall_ms = time.time() * 1000
    mq_table = {
        mq: process_queue_info(state.pq, committed(mq), now=now, wall_ms=wall_ms)
        for mq, state in queues.items()
    }
    return ConsumerRunningInfo(
        properties=properties(),
        subscription_set=tuple(subscriptions.values()),
        mq_table=mq_table,
        status_table=rate_table(counters, subscriptions, now - started_at),
        mq_pop_table=pop.running_info(now=now, wall_ms=wall_ms) if pop is not None else {},
    )


async def reset_push_offsets(
    group: str, assignment: Assignment | None, topic: str, offsets: Mapping[MessageQueue, int]
) -> None:
    """Restart the owned queues of ``topic`` named in ``offsets`` (wire names) from those offsets.

    Java ``resetOffset`` (RESET_CONSUMER_CLIENT_OFFSET, e.g. ``mqadmin resetOffsetByTime``):
    their pulls stop and their caches are dropped (results of listener calls still running
    are not committed), the new offsets are written to the offset store and committed
    synchronously to the broker (or the local file), locks are released, and a rebalance (the
    caller's) starts the queues again from the new offsets. Queues we do not own are left alone
    (their owners get the same request).
    """
    # Not started: no queue is owned, none is reset (as the broker's request to a closed member).
    reset = [] if assignment is None else await assignment.reset(topic, offsets)
    log.info("%s: offsets of %d queues of %s reset: %s", group, len(reset), topic, offsets)
