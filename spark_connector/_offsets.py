"""Streaming offsets, with no I/O: the JSON Spark checkpoints and the admission-control arithmetic.

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

__all__ = ["Offsets", "limit_offsets", "offsets_to_ranges", "parse_queue_key", "total_rows"]

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


def limit_offsets(start: Mapping[str, int], latest: Mapping[str, int], max_rows: int) -> Offsets:
    """``latest`` cut back so that at most ``max_rows`` offsets lie between ``start`` and it.

    Every queue of ``latest`` must be in ``start``. The budget is shared fairly and
    deterministically: in rounds over the queues in key order, each queue with data left gets an
    equal share of what is left of the budget (at least one), until the budget or the data runs out.
    Queues never move backwards: a queue whose ``latest`` is below its start keeps its start.
    """
    begin = {key: start[key] for key in latest}
    available = {key: max(0, latest[key] - begin[key]) for key in latest}
    if sum(available.values()) <= max_rows:
        return {key: max(begin[key], latest[key]) for key in latest}
    given = dict.fromkeys(latest, 0)
    budget = max_rows
    active = sorted(key for key, n in available.items() if n > 0)
    while budget > 0 and active:
        share = max(1, budget // len(active))
        for key in active:
            take = min(share, available[key] - given[key], budget)
            given[key] += take
            budget -= take
            if budget == 0:
                break
        active = [key for key in active if given[key] < available[key]]
    return {key: begin[key] + given[key] for key in latest}


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
