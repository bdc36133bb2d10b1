"""The decisions of POP consumption, as plain functions and constants (no I/O): where a new group
starts, how long a failed message stays hidden, when a popped batch has expired; with Java's
values (``DefaultMQPushConsumer`` and ``ConsumeMessagePopConcurrentlyService``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from rocketmq_py.consumer._pop_acks import checkpoint_of
from rocketmq_py.protocol import ConsumeFromWhere, ConsumeInitMode, MessageExt

__all__ = [
    "MAX_POP_INVISIBLE_TIME_MS",
    "MIN_POP_INVISIBLE_TIME_MS",
    "POP_BATCH_NUMS",
    "POP_DELAY_LEVELS_S",
    "POP_FLOW_CONTROL_DELAY_MS",
    "POP_INVISIBLE_TIME_MS",
    "POP_THRESHOLD_FOR_QUEUE",
    "QUERY_ASSIGNMENT_TIMEOUT",
    "failure_delay_s",
    "init_mode",
    "pop_deadline",
]

#: How long a popped message stays hidden, ms (Java ``popInvisibleTime``, 60000; 5 s to 300 s).
POP_INVISIBLE_TIME_MS: Final = 60_000
MIN_POP_INVISIBLE_TIME_MS: Final = 5_000
MAX_POP_INVISIBLE_TIME_MS: Final = 300_000
#: Messages per POP_MESSAGE (Java ``popBatchNums``, 32, also the most allowed).
POP_BATCH_NUMS: Final = 32
#: Popped messages of one queue not yet acknowledged before popping pauses (Java
#: ``popThresholdForQueue``, 96).
POP_THRESHOLD_FOR_QUEUE: Final = 96
#: Pause of a queue over that threshold, ms (Java ``PULL_TIME_DELAY_MILLS_WHEN_CACHE_FLOW_CONTROL``).
POP_FLOW_CONTROL_DELAY_MS: Final = 50
#: Seconds a failed message stays hidden, by reconsume count (Java ``popDelayLevel``).
POP_DELAY_LEVELS_S: Final = (10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)
#: Seconds for QUERY_ASSIGNMENT (Java ``QUERY_ASSIGNMENT_TIMEOUT``, 3000 ms).
QUERY_ASSIGNMENT_TIMEOUT: Final = 3.0


def init_mode(consume_from_where: ConsumeFromWhere) -> ConsumeInitMode:
    """POP_MESSAGE's ``initMode`` for a group new to a queue: MIN (its first message) for
    CONSUME_FROM_FIRST_OFFSET, else MAX (its end), as Java's ``RebalancePushImpl.getConsumeInitMode``."""
    if consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
        return ConsumeInitMode.MIN
    return ConsumeInitMode.MAX


def failure_delay_s(reconsume_times: int) -> int:
    """Seconds a message whose listener call failed stays hidden: the level of its reconsume count,
    capped at the last (Java ``changePopInvisibleTime`` with delay level 0)."""
    return POP_DELAY_LEVELS_S[min(reconsume_times, len(POP_DELAY_LEVELS_S) - 1)]


def pop_deadline(msgs: Sequence[MessageExt], *, now: float, wall_ms: float) -> float:
    """The trio time at which ``msgs`` (one pop's) become visible again: their checkpoint's
    ``popTime + invisibleTime`` (broker's epoch ms) on the clock that reads ``now`` when the wall
    clock reads ``wall_ms``. No checkpoint: already past (Java ``isPopTimeout``)."""
    found = checkpoint_of(msgs[0]) if msgs else None
    if found is None or found[1].pop_time <= 0 or found[1].invisible_time <= 0:
        return float("-inf")
    ck = found[1]
    return now + (ck.pop_time + ck.invisible_time - wall_ms) / 1000
