"""Where a newly assigned queue starts: Java computePullFromWhere (pure, protocol.md §8.5)."""

from __future__ import annotations

from datetime import UTC, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py.consumer._start_offset import (
    CONSUME_TIMESTAMP_FORMAT,
    DEFAULT_CONSUME_TIMESTAMP_AGO_MS,
    OFFSET_NOT_FOUND,
    OFFSET_READ_FAILED,
    StartFrom,
    StartOffsetDecision,
    compute_pull_from_where,
    default_consume_timestamp,
    format_consume_timestamp,
    parse_consume_timestamp,
)
from rocketmq_py.errors import ClientError
from rocketmq_py.protocol._bodies import ConsumeFromWhere as CFW

LAST_LIKE = [
    CFW.CONSUME_FROM_LAST_OFFSET,
    CFW.CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST,
    CFW.CONSUME_FROM_MIN_OFFSET,
    CFW.CONSUME_FROM_MAX_OFFSET,
]
TS = "20240102030405"
TS_MS = 1704164645000  # 2024-01-02T03:04:05Z


# --- the table -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", list(CFW))
@pytest.mark.parametrize("topic", ["T", "%RETRY%g"])
@pytest.mark.parametrize("stored", [0, 1, 12345])
def test_a_stored_offset_always_wins(mode: CFW, topic: str, stored: int) -> None:
    decision = compute_pull_from_where(mode, topic, stored, consume_timestamp="junk")
    assert decision == StartOffsetDecision(StartFrom.STORED, offset=stored)
    assert not decision.needs_broker


@pytest.mark.parametrize("mode", list(CFW))
@pytest.mark.parametrize("stored", [OFFSET_READ_FAILED, -3, -(2**63)])
def test_a_failed_read_is_an_error(mode: CFW, stored: int) -> None:
    decision = compute_pull_from_where(mode, "T", stored)
    assert decision.start_from is StartFrom.ERROR
    assert "offset store" in decision.reason
    assert not decision.needs_broker


@pytest.mark.parametrize("mode", LAST_LIKE)
def test_last_and_deprecated_modes_ask_max_offset(mode: CFW) -> None:
    decision = compute_pull_from_where(mode, "T", OFFSET_NOT_FOUND)
    assert decision == StartOffsetDecision(StartFrom.MAX_OFFSET)
    assert decision.needs_broker


@pytest.mark.parametrize("mode", LAST_LIKE)
def test_last_mode_retry_topic_starts_at_zero(mode: CFW) -> None:
    assert compute_pull_from_where(mode, "%RETRY%g", -1) == StartOffsetDecision(StartFrom.ZERO, offset=0)


@pytest.mark.parametrize("topic", ["T", "%RETRY%g"])
def test_first_mode_starts_at_zero(topic: str) -> None:
    assert compute_pull_from_where(CFW.CONSUME_FROM_FIRST_OFFSET, topic, -1) == StartOffsetDecision(
        StartFrom.ZERO, offset=0
    )


def test_timestamp_mode_searches_by_the_consume_timestamp() -> None:
    decision = compute_pull_from_where(CFW.CONSUME_FROM_TIMESTAMP, "T", -1, consume_timestamp=TS, tz=UTC)
    assert decision == StartOffsetDecision(StartFrom.TIMESTAMP, timestamp_ms=TS_MS)
    assert decision.needs_broker


def test_timestamp_mode_retry_topic_asks_max_offset() -> None:
    decision = compute_pull_from_where(CFW.CONSUME_FROM_TIMESTAMP, "%RETRY%g", -1, consume_timestamp="junk")
    assert decision == StartOffsetDecision(StartFrom.MAX_OFFSET)


def test_timestamp_mode_defaults_to_thirty_minutes_ago() -> None:
    now = TS_MS + DEFAULT_CONSUME_TIMESTAMP_AGO_MS + 999  # the default is truncated to seconds
    decision = compute_pull_from_where(CFW.CONSUME_FROM_TIMESTAMP, "T", -1, now_ms=now, tz=UTC)
    assert decision == StartOffsetDecision(StartFrom.TIMESTAMP, timestamp_ms=TS_MS)


def test_timestamp_mode_rejects_a_malformed_timestamp() -> None:
    with pytest.raises(ClientError, match="yyyyMMddHHmmss"):
        compute_pull_from_where(CFW.CONSUME_FROM_TIMESTAMP, "T", -1, consume_timestamp="2024-01-02")


def test_plain_string_mode_names_work() -> None:
    decision = compute_pull_from_where(CFW("CONSUME_FROM_FIRST_OFFSET"), "T", -1)
    assert decision.start_from is StartFrom.ZERO


# --- consumeTimestamp text -----------------------------------------------------------------------


def test_parse_in_a_fixed_zone() -> None:
    assert parse_consume_timestamp(TS, UTC) == TS_MS
    assert parse_consume_timestamp(TS, timezone(timedelta(hours=8))) == TS_MS - 8 * 3600 * 1000


def test_format_in_a_fixed_zone() -> None:
    assert format_consume_timestamp(TS_MS + 999, UTC) == TS
    assert format_consume_timestamp(TS_MS, timezone(timedelta(hours=8))) == "20240102110405"
    assert CONSUME_TIMESTAMP_FORMAT == "%Y%m%d%H%M%S"


def test_default_is_thirty_minutes_before_now() -> None:
    assert default_consume_timestamp(TS_MS + 30 * 60 * 1000, UTC) == TS
    assert len(default_consume_timestamp()) == 14  # wall clock, local time


def test_local_time_round_trip() -> None:
    when = 1700000000000  # not near any DST change
    assert parse_consume_timestamp(format_consume_timestamp(when)) == when


@pytest.mark.parametrize(
    "text",
    [
        "",
        "2024010203040",  # 13 digits
        "202401020304050",  # 15 digits
        "20241302030405",  # month 13 (Java's lenient parser would roll it over)
        "20240230030405",  # 30 February
        "20240102250405",  # hour 25
        "2024-01-02 03:04",
        "".join(chr(0xFF10 + int(c)) for c in "20240102030405"),  # full-width digits
    ],
)
def test_parse_rejects_malformed_text(text: str) -> None:
    with pytest.raises(ClientError):
        parse_consume_timestamp(text, UTC)


@given(st.integers(0, 4_000_000_000_000))
def test_utc_round_trip_truncates_to_seconds(epoch_ms: int) -> None:
    assert parse_consume_timestamp(format_consume_timestamp(epoch_ms, UTC), UTC) == epoch_ms // 1000 * 1000
