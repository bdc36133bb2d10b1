"""Filter pushdown (pyspark >= 4.1 ``DataSourceReader.pushFilters``): predicates that narrow the ranges.

Spark hands the reader its filters once during planning. Predicates on four columns narrow the
plan before anything is pulled:

* ``broker_name`` and ``queue_id`` (``=``, ``IN``) drop whole queues;
* ``queue_offset`` (``=``, ``IN``, ``<``, ``<=``, ``>``, ``>=``) trims each range (an ``IN`` of
  several offsets trims to their span, so Spark still evaluates it);
* ``store_timestamp`` (``<``, ``<=``, ``>``, ``>=``, ``=``) becomes a timestamp window turned into
  offsets by SEARCH_OFFSET_BY_TIMESTAMP (corrected on brokers before 5.1.1, see ``_client/_timestamp``).

The first three are exact, so Spark need not evaluate them again. Timestamp search is
approximate (store times are not strictly ordered within a queue), so ``store_timestamp``
filters narrow the ranges and are still handed back to Spark. Everything else is handed back.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)

from spark_connector._planning import QueueRange

__all__ = ["Pushdown", "push_filters"]

_INT_COLUMNS = frozenset({"queue_id", "queue_offset"})


@dataclass(frozen=True, slots=True)
class Pushdown:
    """What the pushed filters allow (``None``: no constraint).

    Attributes:
        brokers: broker names allowed.
        queue_ids: queue ids allowed.
        offset_lo, offset_hi: queue offsets ``[lo, hi)``.
        offsets: exact queue offsets allowed (from ``=`` / ``IN``), intersected with the bounds.
        ts_lo, ts_hi: store timestamps ``[lo, hi)`` in epoch ms.
    """

    brokers: frozenset[str] | None = None
    queue_ids: frozenset[int] | None = None
    offset_lo: int | None = None
    offset_hi: int | None = None
    offsets: frozenset[int] | None = None
    ts_lo: int | None = None
    ts_hi: int | None = None

    def narrow(self, ranges: Sequence[QueueRange]) -> list[QueueRange]:
        """``ranges`` without excluded queues and trimmed to the offset bounds (empty ones kept)."""
        out = []
        for r in ranges:
            if (self.brokers is not None and r.broker_name not in self.brokers) or (
                self.queue_ids is not None and r.queue_id not in self.queue_ids
            ):
                out.append(replace(r, end=r.start))
                continue
            start, end = r.start, r.end
            if self.offset_lo is not None:
                start = max(start, self.offset_lo)
            if self.offset_hi is not None:
                end = min(end, self.offset_hi)
            if self.offsets is not None:
                inside = [o for o in self.offsets if start <= o < end]
                start, end = (min(inside), max(inside) + 1) if inside else (start, start)
            out.append(replace(r, start=start, end=max(start, end)))
        return out


def _intersect(old: frozenset[Any] | None, new: Iterable[Any]) -> frozenset[Any]:
    values = frozenset(new)
    return values if old is None else old & values


def _max(a: int | None, b: int) -> int:
    return b if a is None else max(a, b)


def _min(a: int | None, b: int) -> int:
    return b if a is None else min(a, b)


def _micros(value: Any) -> int | None:
    """A timestamp filter value as epoch microseconds (Spark passes ``datetime``)."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        delta = value - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        return int((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds)
    return None


def _ceil_ms(us: int) -> int:
    return -(-us // 1000)


def _absorb(p: Pushdown, f: Filter) -> tuple[Pushdown, bool] | None:
    """``p`` narrowed by ``f`` and whether Spark must still evaluate ``f``; ``None`` if ``f`` is not ours."""
    attribute: tuple[str, ...] = getattr(f, "attribute", ())
    if len(attribute) != 1:
        return None
    column = attribute[0]
    value: Any = getattr(f, "value", None)
    if column == "broker_name":
        if isinstance(f, EqualTo) and isinstance(value, str):
            return replace(p, brokers=_intersect(p.brokers, [value])), False
        if isinstance(f, In) and all(isinstance(v, str) for v in value):
            return replace(p, brokers=_intersect(p.brokers, value)), False
        return None
    if column in _INT_COLUMNS:
        values = value if isinstance(f, In) else (value,)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return None
        if column == "queue_id":
            if isinstance(f, EqualTo | In):
                return replace(p, queue_ids=_intersect(p.queue_ids, values)), False
            return None
        if isinstance(f, EqualTo | In):
            # A range covers min..max of several offsets: Spark must still drop those in between.
            return replace(p, offsets=_intersect(p.offsets, values)), len(set(values)) > 1
        if isinstance(f, GreaterThan):
            return replace(p, offset_lo=_max(p.offset_lo, value + 1)), False
        if isinstance(f, GreaterThanOrEqual):
            return replace(p, offset_lo=_max(p.offset_lo, value)), False
        if isinstance(f, LessThan):
            return replace(p, offset_hi=_min(p.offset_hi, value)), False
        if isinstance(f, LessThanOrEqual):
            return replace(p, offset_hi=_min(p.offset_hi, value + 1)), False
        return None
    if column == "store_timestamp":
        us = _micros(value)
        if us is None:
            return None
        # Store times are whole ms: ts > x means ms >= floor(x)+1; ts >= x means ms >= ceil(x).
        if isinstance(f, GreaterThan):
            return replace(p, ts_lo=_max(p.ts_lo, us // 1000 + 1)), True
        if isinstance(f, GreaterThanOrEqual):
            return replace(p, ts_lo=_max(p.ts_lo, _ceil_ms(us))), True
        if isinstance(f, LessThan):
            return replace(p, ts_hi=_min(p.ts_hi, _ceil_ms(us))), True
        if isinstance(f, LessThanOrEqual):
            return replace(p, ts_hi=_min(p.ts_hi, us // 1000 + 1)), True
        if isinstance(f, EqualTo):
            narrowed = replace(p, ts_lo=_max(p.ts_lo, _ceil_ms(us)))
            return replace(narrowed, ts_hi=_min(p.ts_hi, us // 1000 + 1)), True
    return None


def push_filters(pushdown: Pushdown, filters: Iterable[Filter]) -> tuple[Pushdown, list[Filter]]:
    """Fold ``filters`` into ``pushdown``; returns it and the filters Spark must still evaluate.

    The filters Spark gets back are the very objects it passed (it checks identity).
    """
    remaining = []
    for f in filters:
        absorbed = _absorb(pushdown, f)
        if absorbed is None:
            remaining.append(f)
            continue
        pushdown, keep = absorbed
        if keep:
            remaining.append(f)
    return pushdown, remaining
