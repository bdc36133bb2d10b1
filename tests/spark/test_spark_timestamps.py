"""The times a read asks of each queue and ``startingOffsetsByTimestampStrategy``: pure, no broker."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py.protocol import MessageQueue
from spark_connector import NoOffsetForTimestampError
from spark_connector._planning import QueueState
from spark_connector._timestamps import check_matched, narrowed_times, queue_times, unmatched


def state(broker: str, queue_id: int, low: int = 0, high: int = 10) -> QueueState:
    return QueueState(MessageQueue("t", broker, queue_id), f"{broker}:1", low, high)


STATES = [state("a", 0), state("a", 1), state("b", 0, 5, 5)]
A0, A1, B0 = (s.queue for s in STATES)


def test_a_global_time_asks_every_queue() -> None:
    assert queue_times(STATES, every=7, by_queue={"t": {"a": {0: 1}}}) == {A0: 7, A1: 7, B0: 7}


def test_per_queue_times_ask_only_the_queues_they_name() -> None:
    spec = {"t": {"a": {1: 3}, "zz": {0: 4}}, "other": {"a": {0: 5}}}
    assert queue_times(STATES, every=None, by_queue=spec) == {A1: 3}
    assert queue_times(STATES, every=None, by_queue=None) == {}


def test_a_pushed_time_only_narrows() -> None:
    times = {A0: 5, A1: 20}
    assert narrowed_times(times, STATES, 10, keep="later") == {A0: 10, A1: 20, B0: 10}
    assert narrowed_times(times, STATES, 10, keep="earlier") == {A0: 5, A1: 10, B0: 10}
    assert narrowed_times(times, STATES, None, keep="later") == times


@given(
    st.dictionaries(st.sampled_from([A0, A1, B0]), st.integers(0, 100)),
    st.one_of(st.none(), st.integers(0, 100)),
)
def test_narrowing_never_widens(times: dict[MessageQueue, int], bound: int | None) -> None:
    later = narrowed_times(times, STATES, bound, keep="later")
    earlier = narrowed_times(times, STATES, bound, keep="earlier")
    for q, ts in times.items():
        assert later[q] >= ts
        assert earlier[q] <= ts
    if bound is not None:
        assert set(later) == set(earlier) == {A0, A1, B0}


def test_an_answer_at_the_max_offset_matches_nothing() -> None:
    found = {A0: 3, A1: 10, B0: 5}  # A1: after its last message; B0: empty
    assert [s.queue for s in unmatched(STATES, found)] == [A1, B0]


def test_the_error_strategy_names_every_queue_without_a_match() -> None:
    with pytest.raises(NoOffsetForTimestampError) as info:
        check_matched(
            STATES,
            {A0: 1, A1: 2, B0: 3},
            {A0: 3, A1: 10, B0: 5},
            strategy="error",
            option="startingOffsetsByTimestamp",
        )
    error = info.value
    assert error.option == "startingOffsetsByTimestamp"
    assert error.queues == ["t/a/1", "t/b/0"]
    assert error.timestamps == {"t/a/1": 2, "t/b/0": 3}
    assert "startingOffsetsByTimestampStrategy=latest" in str(error)


def test_the_latest_strategy_and_queues_without_a_time_pass() -> None:
    found = {A0: 3, A1: 10, B0: 5}
    check_matched(STATES, {A0: 1, A1: 2, B0: 3}, found, strategy="latest", option="startingTimestamp")
    check_matched(STATES, {A0: 1}, found, strategy="error", option="startingTimestamp")  # A1, B0 not asked
