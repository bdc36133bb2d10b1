"""``minPartitions``: partitions cut by offset range until enough read something (pure, no broker)."""

from __future__ import annotations

import itertools
import math

from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py.protocol import MessageQueue
from spark_connector._planning import (
    QueueRange,
    QueueState,
    RocketMQPartition,
    plan_partitions,
    resolve_ranges,
    split_to_min,
)


def part(cid: str, *spans: tuple[int, int, int]) -> RocketMQPartition:
    """A partition of ``(queue_id, start, end)`` ranges of topic t on broker b."""
    return RocketMQPartition(0, cid, [QueueRange("t", "b", q, s, e, "b:1") for q, s, e in spans])


def shape(parts: list[RocketMQPartition]) -> list[tuple[str, list[tuple[int, int, int]]]]:
    return [(p.consumer_id, [(r.queue_id, r.start, r.end) for r in p.ranges]) for p in parts]


def test_a_big_queue_is_cut_into_equal_pieces() -> None:
    got = split_to_min([part("c0", (0, 0, 100))], 4)
    assert shape(got) == [
        ("c0", [(0, 0, 25)]),
        ("c0", [(0, 25, 50)]),
        ("c0", [(0, 50, 75)]),
        ("c0", [(0, 75, 100)]),
    ]
    assert [p.index for p in got] == [0, 1, 2, 3]


def test_the_largest_pieces_are_cut_first() -> None:
    got = split_to_min([part("c0", (0, 0, 10)), part("c1", (1, 0, 1))], 3)
    assert shape(got) == [("c0", [(0, 0, 5)]), ("c0", [(0, 5, 10)]), ("c1", [(1, 0, 1)])]


def test_a_partition_of_several_queues_is_cut_across_them() -> None:
    got = split_to_min([part("c0", (0, 0, 3), (1, 10, 13))], 2)
    assert shape(got) == [("c0", [(0, 0, 3)]), ("c0", [(1, 10, 13)])]
    got = split_to_min([part("c0", (0, 0, 4), (1, 10, 12))], 2)
    assert shape(got) == [("c0", [(0, 0, 3)]), ("c0", [(0, 3, 4), (1, 10, 12)])]


def test_enough_partitions_and_no_option_change_nothing() -> None:
    parts = [part("c0", (0, 0, 10)), part("c1", (1, 0, 10))]
    assert split_to_min(parts, None) == parts
    assert split_to_min(parts, 2) == parts


def test_empty_partitions_do_not_count() -> None:
    """As Kafka's source, which drops empty ranges before comparing with minPartitions."""
    got = split_to_min([part("c0"), part("c1", (1, 0, 6)), part("c2")], 3)
    assert [p.count for p in got] == [0, 2, 2, 2, 0]


def test_fewer_records_than_partitions_wanted() -> None:
    got = split_to_min([part("c0", (0, 0, 2)), part("c1", (1, 0, 1))], 10)
    assert [p.count for p in got] == [1, 1, 1]


def test_with_the_allocation_and_max_records_per_partition() -> None:
    """numPartitions picks the consumer ids, maxRecordsPerPartition caps each piece, minPartitions
    then cuts until enough read something: every piece keeps its consumer id's queues."""
    states = [QueueState(MessageQueue("t", "b", q), "b:1", 0, 100 if q == 0 else 10) for q in range(4)]
    ranges = resolve_ranges(states, starting="earliest", ending="latest")
    parts = plan_partitions(ranges, num_partitions=2, strategy="AVG", max_records=60, min_partitions=6)
    # AVG: consumer 0 reads queues 0 and 1 (110 records), consumer 1 queues 2 and 3 (20); 60 at
    # most makes partitions of 60, 50 and 20; three more cuts go to the 60 (twice) and the 50.
    assert [(p.consumer_id, [(r.queue_id, r.start, r.end) for r in p.ranges]) for p in parts] == [
        ("spark-partition-0000", [(0, 0, 20)]),
        ("spark-partition-0000", [(0, 20, 40)]),
        ("spark-partition-0000", [(0, 40, 60)]),
        ("spark-partition-0000", [(0, 60, 85)]),
        ("spark-partition-0000", [(0, 85, 100), (1, 0, 10)]),
        ("spark-partition-0001", [(2, 0, 10), (3, 0, 10)]),
    ]
    assert all(p.count <= 60 for p in parts)


spans = st.lists(st.integers(0, 9), min_size=0, max_size=3)
partitions = st.lists(spans, min_size=1, max_size=4)


def build(sizes: list[list[int]]) -> list[RocketMQPartition]:
    parts = []
    for i, queue_sizes in enumerate(sizes):
        ranges = [QueueRange("t", "b", 10 * i + q, 5, 5 + n, "b:1") for q, n in enumerate(queue_sizes) if n]
        parts.append(RocketMQPartition(i, f"c{i}", ranges))
    return parts


def offsets(parts: list[RocketMQPartition], cid: str) -> list[tuple[int, int]]:
    return [
        (r.queue_id, o)
        for p in parts
        if p.consumer_id == cid
        for r in p.ranges
        for o in range(r.start, r.end)
    ]


def best_largest_piece(counts: list[int], target: int) -> int:
    """The smallest possible largest piece, by trying every way to cut (small inputs only)."""
    reading = [c for c in counts if c > 0]
    if not reading:
        return 0
    wanted = max(len(reading), min(target, sum(reading)))
    best = max(reading)
    for pieces in itertools.product(*(range(1, c + 1) for c in reading)):
        if sum(pieces) == wanted:
            best = min(best, max(math.ceil(c / k) for c, k in zip(reading, pieces, strict=True)))
    return best


@given(partitions, st.integers(1, 12))
def test_split_to_min_properties(sizes: list[list[int]], min_partitions: int) -> None:
    parts = build(sizes)
    got = split_to_min(parts, min_partitions)
    counts = [p.count for p in parts]
    reading_before = sum(1 for c in counts if c > 0)
    reading_after = sum(1 for p in got if p.count > 0)
    if reading_before >= min_partitions:
        assert got == parts
        return
    assert reading_after == min(min_partitions, sum(counts))  # as many as asked, or one per record
    assert [p.index for p in got] == list(range(len(got)))
    for p in parts:
        assert offsets(got, p.consumer_id) == offsets(parts, p.consumer_id)  # in order, once each
        own = [q.count for q in got if q.consumer_id == p.consumer_id]
        assert max(own) - min(own) <= 1  # a partition's pieces are even
    assert max(p.count for p in got) == best_largest_piece(counts, min_partitions)
