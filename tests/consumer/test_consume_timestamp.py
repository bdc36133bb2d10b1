"""CONSUME_FROM_TIMESTAMP's start in one form: ``consume_timestamp_ms``, epoch ms like every timestamp
of the API (``seek_to_timestamp``, ``offset_for_timestamp``, ``MessageExt.store_timestamp``).

Java's ``yyyyMMddHHmmss`` local-time string (``consume_timestamp=``) still works for one release,
with a DeprecationWarning at the caller's line (issue 25 §3).
"""

from __future__ import annotations

from typing import Any

import pytest

from rocketmq_py import ConsumeStatus, LitePullConsumer, MessageExt, PushConsumer
from rocketmq_py.consumer._start_offset import (
    StartFrom,
    compute_pull_from_where,
    consume_timestamp_epoch_ms,
    parse_consume_timestamp,
)
from rocketmq_py.errors import InvalidOption
from rocketmq_py.protocol import ConsumeFromWhere

NAMESRV = "127.0.0.1:9876"
TEXT = "20240102030405"
EPOCH_MS = 1_704_164_645_123  # ms precision: the string form cannot say .123


async def _listener(msgs: list[MessageExt]) -> ConsumeStatus:
    return ConsumeStatus.CONSUME_SUCCESS


def push(**options: Any) -> PushConsumer:
    return PushConsumer("cg-ts", namesrv=NAMESRV, listener=_listener, **options)


def lite(**options: Any) -> LitePullConsumer:
    return LitePullConsumer("cg-ts", namesrv=NAMESRV, **options)


@pytest.mark.parametrize("make", [push, lite])
def test_the_epoch_ms_form_is_kept_exactly(make: Any) -> None:
    assert make(consume_timestamp_ms=EPOCH_MS).consume_timestamp_ms == EPOCH_MS
    assert make().consume_timestamp_ms is None  # the default: 30 minutes ago, when a queue starts


@pytest.mark.parametrize("make", [push, lite])
def test_the_java_string_still_works_and_warns_at_the_callers_line(make: Any) -> None:
    with pytest.warns(DeprecationWarning, match="use consume_timestamp_ms") as rec:
        consumer = make(consume_timestamp=TEXT)
    assert len(rec) == 1
    assert rec[0].filename == __file__
    assert consumer.consume_timestamp_ms == parse_consume_timestamp(TEXT)


@pytest.mark.parametrize("make", [push, lite])
def test_both_forms_at_once_is_an_invalid_option(make: Any) -> None:
    with pytest.raises(InvalidOption, match="not also the deprecated consume_timestamp"):
        make(consume_timestamp=TEXT, consume_timestamp_ms=EPOCH_MS)


def test_a_malformed_string_or_a_negative_time_is_an_invalid_option_at_construction() -> None:
    with (
        pytest.warns(DeprecationWarning, match="consume_timestamp_ms"),
        pytest.raises(InvalidOption, match="yyyyMMddHHmmss"),
    ):
        push(consume_timestamp="2024-01-02")
    with pytest.raises(InvalidOption, match="epoch milliseconds"):
        consume_timestamp_epoch_ms(None, -1)


def test_the_decision_starts_at_the_epoch_ms_given() -> None:
    decision = compute_pull_from_where(
        ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, "T", -1, consume_timestamp_ms=EPOCH_MS
    )
    assert decision.start_from is StartFrom.TIMESTAMP
    assert decision.timestamp_ms == EPOCH_MS
