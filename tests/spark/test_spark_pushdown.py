"""Filter pushdown: which predicates narrow the ranges and which Spark must still evaluate."""

from __future__ import annotations

import datetime as dt

from pyspark.sql.datasource import (
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
    StringStartsWith,
)

from spark_connector._planning import QueueRange
from spark_connector._pushdown import Pushdown, push_filters

RANGES = [QueueRange("t", b, q, 0, 100, "x:1") for b in ("broker-a", "broker-b") for q in range(3)]


def narrowed(p: Pushdown) -> dict[str, tuple[int, int]]:
    return {r.key: (r.start, r.end) for r in p.narrow(RANGES) if r.count}


def test_queue_selection_is_exact() -> None:
    filters = [EqualTo(("broker_name",), "broker-b"), In(("queue_id",), (0, 2))]
    p, remaining = push_filters(Pushdown(), filters)
    assert remaining == []
    assert narrowed(p) == {"t/broker-b/0": (0, 100), "t/broker-b/2": (0, 100)}
    assert len(p.narrow(RANGES)) == len(RANGES)  # excluded queues stay, empty


def test_offset_bounds_are_exact() -> None:
    filters = [
        GreaterThan(("queue_offset",), 9),
        LessThanOrEqual(("queue_offset",), 20),
        EqualTo(("queue_id",), 1),
    ]
    p, remaining = push_filters(Pushdown(), filters)
    assert remaining == []
    assert narrowed(p) == {"t/broker-a/1": (10, 21), "t/broker-b/1": (10, 21)}
    p2, _ = push_filters(
        Pushdown(), [GreaterThanOrEqual(("queue_offset",), 5), LessThan(("queue_offset",), 7)]
    )
    assert set(narrowed(p2).values()) == {(5, 7)}


def test_offset_equality_and_in() -> None:
    eq = EqualTo(("queue_offset",), 42)
    p, remaining = push_filters(Pushdown(), [eq])
    assert remaining == []
    assert set(narrowed(p).values()) == {(42, 43)}
    several = In(("queue_offset",), (3, 50, 200))
    p, remaining = push_filters(Pushdown(), [several])
    assert remaining == [several]  # the span 3..50 holds offsets Spark must still drop
    assert set(narrowed(p).values()) == {(3, 51)}


def test_contradictions_leave_nothing() -> None:
    p, _ = push_filters(Pushdown(), [EqualTo(("queue_id",), 1), EqualTo(("queue_id",), 2)])
    assert narrowed(p) == {}


def test_timestamps_narrow_but_stay_with_spark() -> None:
    t0 = dt.datetime(2026, 1, 1, 0, 0, 0, 500, tzinfo=dt.UTC)  # 0.5 ms past a whole ms
    t1 = dt.datetime(2026, 1, 1, 0, 0, 1)
    lo, hi = GreaterThanOrEqual(("store_timestamp",), t0), LessThan(("store_timestamp",), t1)
    p, remaining = push_filters(Pushdown(), [lo, hi])
    assert remaining == [lo, hi]
    ms0 = int(dt.datetime(2026, 1, 1, tzinfo=dt.UTC).timestamp() * 1000)
    assert (p.ts_lo, p.ts_hi) == (ms0 + 1, ms0 + 1000)
    p, _ = push_filters(
        Pushdown(), [GreaterThan(("store_timestamp",), t1), LessThanOrEqual(("store_timestamp",), t1)]
    )
    assert (p.ts_lo, p.ts_hi) == (ms0 + 1001, ms0 + 1001)


def test_other_filters_go_back_untouched() -> None:
    others = [
        IsNotNull(("queue_id",)),
        StringStartsWith(("topic",), "t"),
        EqualTo(("tags",), "A"),
        EqualTo(("queue_id",), "1"),
        EqualTo(("properties", "x"), "y"),
    ]
    p, remaining = push_filters(Pushdown(), others)
    assert remaining == others
    assert all(r is o for r, o in zip(remaining, others, strict=True))
    assert p == Pushdown()
