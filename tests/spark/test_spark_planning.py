"""Batch planning with fake offset tables: ranges, allocation of queues to partitions, splitting."""

from __future__ import annotations

import logging
import pickle

import pytest

from rocketmq_py.consumer._allocate import allocate, sort_consumers, sort_queues
from rocketmq_py.protocol import MessageQueue
from spark_connector import DataLossError
from spark_connector._planning import (
    QueueRange,
    QueueState,
    RocketMQPartition,
    allocate_ranges,
    consumer_ids,
    plan_partitions,
    resolve_ranges,
    split_partitions,
)


def states(
    topic: str = "t", brokers: tuple[str, ...] = ("broker-a", "broker-b"), queues: int = 4
) -> list[QueueState]:
    """Queue q of broker b holds offsets [min, max) = [q, 10 * (q + 1))."""
    return [
        QueueState(MessageQueue(topic, b, q), f"{b}:10911", q, 10 * (q + 1))
        for b in brokers
        for q in range(queues)
    ]


def by_key(ranges: list[QueueRange]) -> dict[str, tuple[int, int]]:
    return {r.key: (r.start, r.end) for r in ranges}


def test_earliest_to_latest() -> None:
    ranges = resolve_ranges(states(), starting="earliest", ending="latest")
    assert by_key(ranges)["t/broker-a/0"] == (0, 10)
    assert by_key(ranges)["t/broker-b/3"] == (3, 40)
    assert [r.queue for r in ranges] == sorted(r.queue for r in ranges)
    assert all(r.address == f"{r.broker_name}:10911" for r in ranges)


def test_latest_start_gives_empty_ranges() -> None:
    assert all(r.count == 0 for r in resolve_ranges(states(), starting="latest", ending="latest"))


def test_json_offsets_and_defaults_for_unnamed_queues() -> None:
    ranges = resolve_ranges(
        states(),
        starting={"t": {"broker-a": {1: 5, 2: -2, 3: -1}}},
        ending={"t": {"broker-a": {1: 8, 2: 999}, "broker-b": {0: -1}}},
    )
    got = by_key(ranges)
    assert got["t/broker-a/1"] == (5, 8)
    assert got["t/broker-a/2"] == (2, 30)  # -2 = min; an end past max is clamped
    assert got["t/broker-a/3"] == (40, 40)  # -1 = latest
    assert got["t/broker-b/0"] == (0, 10)  # unnamed: from the minimum
    assert got["t/broker-b/2"] == (2, 30)


def test_timestamp_offsets_replace_the_spec() -> None:
    mq = MessageQueue("t", "broker-a", 1)
    ranges = resolve_ranges(
        states(), starting="earliest", ending="latest", starting_offsets={mq: 12}, ending_offsets={mq: 15}
    )
    assert by_key(ranges)["t/broker-a/1"] == (12, 15)
    assert by_key(ranges)["t/broker-a/2"] == (2, 30)


def test_start_after_end_is_empty() -> None:
    ranges = resolve_ranges(
        states(), starting={"t": {"broker-a": {0: 9}}}, ending={"t": {"broker-a": {0: 4}}}
    )
    assert by_key(ranges)["t/broker-a/0"] == (4, 4)


def test_start_below_minimum_fails_on_data_loss() -> None:
    with pytest.raises(DataLossError) as info:
        resolve_ranges(states(), starting={"t": {"broker-b": {2: 1}}}, ending="latest")
    assert info.value.queue == "t/broker-b/2"
    assert (info.value.requested, info.value.available) == (1, 2)
    assert "failOnDataLoss" in str(info.value)


def test_start_below_minimum_skips_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="spark_connector"):
        ranges = resolve_ranges(
            states(), starting={"t": {"broker-b": {2: 1}}}, ending="latest", fail_on_data_loss=False
        )
    assert by_key(ranges)["t/broker-b/2"] == (2, 30)
    assert "t/broker-b/2" in caplog.text
    assert "failOnDataLoss=false" in caplog.text


def test_consumer_ids_sort_like_indexes() -> None:
    ids = consumer_ids(12)
    assert ids[0] == "spark-partition-0000"
    assert sort_consumers(ids) == ids


@pytest.mark.parametrize("strategy", ["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"])
@pytest.mark.parametrize("partitions", [1, 3, 8, 11])
def test_each_partition_reads_what_the_strategy_allocates(strategy: str, partitions: int) -> None:
    ranges = resolve_ranges(states(), starting="earliest", ending="latest")
    allocation = allocate_ranges(ranges, partitions, strategy)
    cids = consumer_ids(partitions)
    assert [cid for cid, _ in allocation] == cids
    mq_all = sort_queues(r.queue for r in ranges)
    for cid, mine in allocation:
        assert [r.queue for r in mine] == sort_queues(allocate(strategy, "g", cid, mq_all, cids))
    every = [r.queue for _, mine in allocation for r in mine]
    assert sorted(every) == mq_all  # each queue exactly once


def test_averagely_blocks() -> None:
    ranges = resolve_ranges(states(), starting="earliest", ending="latest")
    parts = plan_partitions(ranges, num_partitions=3, strategy="AVG", max_records=None)
    assert [[(r.broker_name, r.queue_id) for r in p.ranges] for p in parts] == [
        [("broker-a", 0), ("broker-a", 1), ("broker-a", 2)],
        [("broker-a", 3), ("broker-b", 0), ("broker-b", 1)],
        [("broker-b", 2), ("broker-b", 3)],
    ]
    assert [p.consumer_id for p in parts] == consumer_ids(3)
    assert [p.index for p in parts] == [0, 1, 2]


def test_default_is_one_partition_per_queue() -> None:
    ranges = resolve_ranges(states(), starting="earliest", ending="latest")
    parts = plan_partitions(ranges, num_partitions=None, strategy="AVG", max_records=None)
    assert [len(p.ranges) for p in parts] == [1] * 8


def test_empty_queues_still_take_part_in_allocation() -> None:
    ranges = resolve_ranges(states(), starting={"t": {"broker-a": {0: -1}}}, ending="latest")
    parts = plan_partitions(ranges, num_partitions=8, strategy="AVG", max_records=None)
    assert len(parts) == 8
    assert parts[0].ranges == ()  # broker-a/0 is empty but was still allocated to partition 0
    assert parts[1].ranges[0].key == "t/broker-a/1"


@pytest.mark.parametrize("limit", [1, 7, 10, 25, 1000])
def test_split_covers_every_offset_once_and_respects_the_limit(limit: int) -> None:
    ranges = resolve_ranges(states(), starting="earliest", ending="latest")
    allocation = allocate_ranges(ranges, 3, "AVG")
    parts = split_partitions(allocation, limit)
    assert all(p.count <= limit for p in parts)
    assert all(p.ranges for p in parts)
    for cid, mine in allocation:
        own = [p for p in parts if p.consumer_id == cid]
        offsets = [(r.key, o) for p in own for r in p.ranges for o in range(r.start, r.end)]
        expected = [(r.key, o) for r in mine for o in range(r.start, r.end)]
        assert offsets == expected  # in order, no gap, no overlap, only this consumer's queues
    assert [p.index for p in parts] == list(range(len(parts)))


def test_split_exact_sizes() -> None:
    r = QueueRange("t", "broker-a", 0, 0, 25, "a:1")
    parts = split_partitions([("c0", [r])], 10)
    assert [[(x.start, x.end) for x in p.ranges] for p in parts] == [[(0, 10)], [(10, 20)], [(20, 25)]]
    two = [QueueRange("t", "broker-a", 0, 0, 6, "a:1"), QueueRange("t", "broker-a", 1, 0, 6, "a:1")]
    parts = split_partitions([("c0", two)], 10)
    assert [[(x.queue_id, x.start, x.end) for x in p.ranges] for p in parts] == [
        [(0, 0, 6), (1, 0, 4)],
        [(1, 4, 6)],
    ]


def test_consumer_with_nothing_keeps_one_empty_partition() -> None:
    parts = split_partitions([("c0", []), ("c1", [QueueRange("t", "b", 0, 0, 3)])], 2)
    assert [(p.consumer_id, p.count) for p in parts] == [("c0", 0), ("c1", 2), ("c1", 1)]


def test_partition_is_small_and_picklable() -> None:
    ranges = resolve_ranges(states(), starting="earliest", ending="latest")
    part = plan_partitions(ranges, num_partitions=2, strategy="AVG", max_records=None)[0]
    data = pickle.dumps(part)
    assert len(data) < 2000
    again = pickle.loads(data)
    assert isinstance(again, RocketMQPartition)
    assert again == part
    assert "t/broker-a/0[0,10)" in repr(part)
