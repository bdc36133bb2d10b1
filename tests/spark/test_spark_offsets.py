"""Streaming offsets: keys, JSON round trip, admission control arithmetic, batch ranges."""

from __future__ import annotations

import json

import pytest

from rocketmq_py.errors import MalformedBody
from spark_connector._offsets import limit_offsets, offsets_to_ranges, parse_queue_key, total_rows
from spark_connector._planning import queue_key


def test_keys_round_trip() -> None:
    assert queue_key("t", "broker-a", 3) == "t/broker-a/3"
    assert parse_queue_key("t/broker-a/3") == ("t", "broker-a", 3)
    assert parse_queue_key("t/room/broker/12") == ("t", "room/broker", 12)


@pytest.mark.parametrize("bad", ["t", "t/b", "t/b/x", "/b/1", "t//1"])
def test_bad_keys(bad: str) -> None:
    with pytest.raises(MalformedBody):
        parse_queue_key(bad)


def test_offsets_survive_json() -> None:
    offsets = {queue_key("t", "broker-a", q): q * 10 for q in range(4)}
    assert json.loads(json.dumps(offsets)) == offsets


def test_limit_not_needed() -> None:
    start = {"a": 0, "b": 5}
    latest = {"a": 3, "b": 6}
    assert limit_offsets(start, latest, 10) == latest


def test_limit_shares_fairly_and_exactly() -> None:
    start = {"a": 0, "b": 0, "c": 0}
    latest = {"a": 100, "b": 2, "c": 100}
    end = limit_offsets(start, latest, 30)
    assert total_rows(start, end) == 30
    assert end == {"a": 14, "b": 2, "c": 14}


@pytest.mark.parametrize("max_rows", [1, 2, 3, 5, 12, 29])
def test_limit_properties(max_rows: int) -> None:
    start = {f"q{i}": i for i in range(5)}
    latest = {f"q{i}": i + 3 * i for i in range(5)}
    end = limit_offsets(start, latest, max_rows)
    assert total_rows(start, end) == min(max_rows, total_rows(start, latest))
    assert all(start[k] <= end[k] <= latest[k] for k in latest)
    assert end == limit_offsets(dict(reversed(start.items())), latest, max_rows)  # deterministic


def test_repeated_limits_reach_latest() -> None:
    start = {"a": 0, "b": 0}
    latest = {"a": 10, "b": 3}
    seen = 0
    while start != latest:
        end = limit_offsets(start, latest, 4)
        assert 0 < total_rows(start, end) <= 4
        seen += total_rows(start, end)
        start = end
    assert seen == 13


def test_queues_never_move_backwards() -> None:
    assert limit_offsets({"a": 5, "b": 0}, {"a": 3, "b": 10}, 4) == {"a": 5, "b": 4}


def test_ranges_of_a_batch() -> None:
    start = {"t/broker-a/0": 3, "t/broker-a/1": 7}
    end = {"t/broker-a/0": 9, "t/broker-a/1": 7, "t/broker-b/0": 4}
    ranges = offsets_to_ranges(start, end, {"t/broker-b/0": 1}, {"t/broker-a": "a:1"})
    assert [(r.key, r.start, r.end, r.address) for r in ranges] == [
        ("t/broker-a/0", 3, 9, "a:1"),
        ("t/broker-b/0", 1, 4, ""),  # a new queue starts at its minimum; address left to the executor
    ]
