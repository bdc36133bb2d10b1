"""Streaming offsets, with no I/O: the JSON Spark checkpoints and the admission-control arithmetic.

Admission control, as Spark's Kafka source does it: ``maxRecordsPerBatch`` (Kafka's
``maxOffsetsPerTrigger``) is split over the queues in proportion to their backlog
(:func:`backlog_shares`, :func:`limit_offsets`), and ``minOffsetsPerTrigger`` holds a micro-batch
back until enough records are new or ``maxTriggerDelay`` has passed (:func:`wait_for_more`).

An offset is a flat JSON object ``{"topic/broker/queueId": next_offset}`` (string keys: Spark
round-trips offsets through ``json``, which would turn integer keys into strings anyway). A
queue's value is the first offset the next micro-batch reads; a batch ``(start, end)`` reads
``[start[q], end[q])`` of every queue in ``end``. A queue in ``end`` but not in ``start`` appeared
after the previous batch (route change) and starts at its minimum.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

from rocketmq_py.errors import MalformedBody
from spark_connector._planning import QueueRange, queue_key

__all__ = [
    "Offsets",
    "backlog_shares",
    "limit_offsets",
    "offsets_to_ranges",
    "parse_queue_key",
    "total_rows",
    "wait_for_more",
]

#: ``{"topic/broker/queueId": offset}``.
Offsets: TypeAlias = dict[str, int]


def parse_queue_key(key: str) -> tuple[str, str, int]:
    """``"topic/broker/queueId"`` -> ``(topic, broker, queue_id)`` (a topic has no ``/``; a broker may).

    Raises:
        MalformedBody: the key does not have that shape (a damaged checkpoint).
    """
    topic, sep, rest = key.partition("/")
    broker, sep2, qid = rest.rpartition("/")
    if not (sep and sep2 and topic and broker and qid.isdigit()):
        raise MalformedBody(f"streaming offset key {key!r} is not 'topic/broker/queueId'")
    return topic, broker, int(qid)


def total_rows(start: Mapping[str, int], end: Mapping[str, int]) -> int:
    """Offsets between ``start`` and ``end`` over every queue of ``end`` (a missing start counts as ``end``)."""
    return sum(max(0, value - start.get(key, value)) for key, value in end.items())


def backlog_shares(backlogs: Mapping[str, int], budget: int) -> dict[str, int]:
    """How many of its ``backlogs[key]`` records each queue reads when only ``budget`` may be read.

    Everything when the backlog fits. Otherwise the budget is split in proportion to the backlogs,
    exactly (the shares add up to ``budget``) and deterministically (whatever the mapping's order):
    a queue whose proportional share is below one record gets one, so none starves behind large
    ones (Kafka's source rounds those up), the rest of the budget is split the same way over the
    other queues, and their fractions go by largest remainder, ties to the first key. With fewer
    records allowed than queues with a backlog, the largest backlogs get one each. A share is never
    above its backlog, and a larger backlog never gets less.
    """
    waiting = {key: n for key, n in backlogs.items() if n > 0}
    shares = dict.fromkeys(backlogs, 0)
    if sum(waiting.values()) <= budget:
        return {key: max(0, n) for key, n in backlogs.items()}
    if budget < len(waiting):
        for key in sorted(waiting, key=lambda k: (-waiting[k], k))[:budget]:
            shares[key] = 1
        return shares
    large = dict(waiting)
    rest = budget
    while True:  # each round moves at least one queue out of `large`, or ends
        total = sum(large.values())
        small = [key for key, n in large.items() if rest * n < total]
        if not small:
            break
        for key in small:
            shares[key] = 1
            del large[key]
        rest -= len(small)
    total = sum(large.values())
    remainders = []
    for key, n in large.items():
        whole, remainder = divmod(rest * n, total)
        shares[key] = whole
        remainders.append((-remainder, key))
    for _, key in sorted(remainders)[: budget - sum(shares.values())]:
        shares[key] += 1
    return shares


def limit_offsets(start: Mapping[str, int], latest: Mapping[str, int], max_rows: int) -> Offsets:
    """``latest`` cut back so that at most ``max_rows`` offsets lie between ``start`` and it.

    Every queue of ``latest`` must be in ``start``. The budget is shared by :func:`backlog_shares`,
    in proportion to each queue's backlog (``latest - start``). Queues never move backwards: a
    queue whose ``latest`` is below its start keeps its start.
    """
    begin = {key: start[key] for key in latest}
    shares = backlog_shares({key: latest[key] - begin[key] for key in latest}, max_rows)
    return {key: begin[key] + shares[key] for key in latest}


def wait_for_more(
    new_rows: int, *, min_rows: int, max_delay_ms: int, since_last_batch_ms: float | None
) -> bool:
    """Whether a micro-batch waits (``minOffsetsPerTrigger``): fewer than ``min_rows`` records are
    new and less than ``max_delay_ms`` passed since the last batch. The first batch of a query
    (``since_last_batch_ms`` is ``None``) never waits, as in Spark's Kafka source."""
    if since_last_batch_ms is None or since_last_batch_ms >= max_delay_ms:
        return False
    return new_rows < min_rows


def offsets_to_ranges(
    start: Mapping[str, int],
    end: Mapping[str, int],
    minimums: Mapping[str, int],
    addresses: Mapping[str, str],
) -> list[QueueRange]:
    """The ranges of batch ``(start, end)``, one per queue of ``end`` with something to read.

    Args:
        start, end: the batch's offsets.
        minimums: the minimum offset of queues in ``end`` but not in ``start``.
        addresses: ``"topic/broker"`` -> broker address ("" leaves it to the executor).
    """
    ranges = []
    for key in sorted(end):
        topic, broker, queue_id = parse_queue_key(key)
        begin = start[key] if key in start else minimums.get(key, 0)
        if end[key] > begin:
            address = addresses.get(f"{topic}/{broker}", "")
            ranges.append(QueueRange(topic, broker, queue_id, begin, end[key], address))
    return ranges


def key_of(r: QueueRange) -> str:
    return queue_key(r.topic, r.broker_name, r.queue_id)
