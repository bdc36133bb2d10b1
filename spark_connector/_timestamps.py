"""The times a read asks of each queue, and what a starting time no message matches does: pure.

The driver asks each queue's broker for the offset of the first message stored at or after a time
(:func:`~spark_connector._metadata.search_queue_offsets`); these functions decide which time each
queue is asked (:func:`queue_times`, :func:`narrowed_times`) and what an answer at the queue's max
offset (no such message) means (:func:`check_matched`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from rocketmq_py.protocol import MessageQueue
from spark_connector._errors import NoOffsetForTimestampError
from spark_connector._offset_spec import TimestampSpec, TimestampStrategy
from spark_connector._planning import QueueState, queue_key

__all__ = ["check_matched", "narrowed_times", "queue_times", "starting_option", "unmatched"]


def queue_times(
    states: Iterable[QueueState], *, every: int | None, by_queue: TimestampSpec | None
) -> dict[MessageQueue, int]:
    """The time asked of each queue: ``every`` for all, else those ``by_queue`` names (others: none)."""
    times: dict[MessageQueue, int] = {}
    for state in states:
        q = state.queue
        ts = every if every is not None else _lookup(by_queue, q)
        if ts is not None:
            times[q] = ts
    return times


def _lookup(spec: TimestampSpec | None, q: MessageQueue) -> int | None:
    return None if spec is None else spec.get(q.topic, {}).get(q.broker_name, {}).get(q.queue_id)


def narrowed_times(
    times: Mapping[MessageQueue, int],
    states: Iterable[QueueState],
    bound: int | None,
    *,
    keep: Literal["later", "earlier"],
) -> dict[MessageQueue, int]:
    """``times`` with a pushed-down time ``bound`` applied to every queue of ``states``.

    A pushed filter only narrows a read: a start moves to the later of the two times, an end to
    the earlier; a queue the options give no time gets ``bound``.
    """
    if bound is None:
        return dict(times)
    pick = max if keep == "later" else min
    narrowed = dict(times)
    for state in states:
        q = state.queue
        narrowed[q] = pick(times[q], bound) if q in times else bound
    return narrowed


def starting_option(every: int | None) -> str:
    """The option that gave the starting times: ``startingTimestamp`` when ``every`` is its value,
    else ``startingOffsetsByTimestamp`` (it names the option in :class:`NoOffsetForTimestampError`)."""
    return "startingTimestamp" if every is not None else "startingOffsetsByTimestamp"


def unmatched(states: Iterable[QueueState], found: Mapping[MessageQueue, int]) -> list[QueueState]:
    """The queues of ``found`` whose answer is their max offset: no message at or after the time."""
    return [
        s
        for s in sorted(states, key=lambda s: s.queue)
        if s.queue in found and found[s.queue] >= s.max_offset
    ]


def check_matched(
    states: Iterable[QueueState],
    times: Mapping[MessageQueue, int],
    found: Mapping[MessageQueue, int],
    *,
    strategy: TimestampStrategy,
    option: str,
) -> None:
    """Apply ``startingOffsetsByTimestampStrategy`` to the starting times the options gave.

    ``found`` holds each queue's answer (its max offset when no message was stored at or after
    the time). With ``latest`` that max offset is where the queue starts, so nothing changes;
    with ``error`` such a queue fails the read. Only the queues of ``times`` are checked: a queue
    whose answer is for another time (a later pushed filter) may match nothing because the filter
    wants nothing of it.

    Raises:
        NoOffsetForTimestampError: with ``error``, naming every queue without a match.
    """
    if strategy == "latest":
        return
    missing = {
        queue_key(s.queue.topic, s.queue.broker_name, s.queue.queue_id): times[s.queue]
        for s in unmatched((s for s in states if s.queue in times), found)
    }
    if missing:
        raise NoOffsetForTimestampError(option, missing)
