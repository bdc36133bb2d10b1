"""Streaming offsets: keys, JSON round trip, admission control arithmetic, batch ranges."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py.errors import MalformedBody
from spark_connector._offsets import (
    backlog_shares,
    limit_offsets,
    offsets_to_ranges,
    parse_queue_key,
    total_rows,
    wait_for_more,
)
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


def test_limit_follows_the_backlogs() -> None:
    """Kafka's maxOffsetsPerTrigger split: in proportion to each queue's backlog, none starved."""
    start = {"a": 0, "b": 0, "c": 0}
    latest = {"a": 100, "b": 2, "c": 100}
    end = limit_offsets(start, latest, 30)
    assert total_rows(start, end) == 30
    # One each, then 27 in proportion to 99, 1, 99: 13.4, 0.1, 13.4; the last one to "a" (ties: key order).
    assert end == {"a": 15, "b": 1, "c": 14}
    assert limit_offsets({"a": 0, "b": 0}, {"a": 900, "b": 100}, 100) == {"a": 90, "b": 10}


def test_fewer_records_than_queues_go_to_the_largest_backlogs() -> None:
    assert backlog_shares({"a": 5, "b": 9, "c": 9, "d": 1}, 2) == {"a": 0, "b": 1, "c": 1, "d": 0}


@pytest.mark.parametrize("max_rows", [1, 2, 3, 5, 12, 29])
def test_limit_properties(max_rows: int) -> None:
    start = {f"q{i}": i for i in range(5)}
    latest = {f"q{i}": i + 3 * i for i in range(5)}
    end = limit_offsets(start, latest, max_rows)
    assert total_rows(start, end) == min(max_rows, total_rows(start, latest))
    assert all(start[k] <= end[k] <= latest[k] for k in latest)
    assert end == limit_offsets(dict(reversed(start.items())), latest, max_rows)  # deterministic


backlogs = st.dictionaries(st.text("abcdef", min_size=1, max_size=3), st.integers(-5, 10_000), max_size=12)


@given(backlogs, st.integers(0, 20_000))
def test_backlog_shares(backlog: dict[str, int], budget: int) -> None:
    shares = backlog_shares(backlog, budget)
    waiting = {k: n for k, n in backlog.items() if n > 0}
    total = sum(waiting.values())
    assert set(shares) == set(backlog)
    assert sum(shares.values()) == min(budget, total)  # exact
    assert all(0 <= shares[k] <= max(0, n) for k, n in backlog.items())  # never past a backlog
    assert shares == backlog_shares(dict(reversed(backlog.items())), budget)  # order-free
    for k in waiting:  # a larger backlog never gets less
        assert all(shares[k] >= shares[j] for j in waiting if waiting[j] < waiting[k])
    if budget >= len(waiting):
        assert all(shares[k] >= 1 for k in waiting)  # none starves
    if total > budget and all(budget * n >= total for n in waiting.values()):
        for k, n in waiting.items():  # no share rounded up: proportional within one record
            assert abs(shares[k] - budget * n / total) < 1


@given(
    st.integers(0, 100),
    st.integers(1, 100),
    st.integers(0, 10_000),
    st.one_of(st.none(), st.floats(0, 20_000)),
)
def test_wait_for_more(new_rows: int, min_rows: int, delay: int, since: float | None) -> None:
    waits = wait_for_more(new_rows, min_rows=min_rows, max_delay_ms=delay, since_last_batch_ms=since)
    assert waits == (since is not None and since < delay and new_rows < min_rows)


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
