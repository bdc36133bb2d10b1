"""Positioning by time gives the same offset on every broker release (``_client/_timestamp.py``).

A 4.x broker (modelled by ``FakeBroker(version=V4_9_7)``, whose search answers the *nearest*
message as 4.9.7's ``ConsumeQueue.getOffsetInQueueByTime`` does) is corrected by the stored
timestamps; a 5.x broker's answer is taken as it is, with no extra request. The push consumer's
CONSUME_FROM_TIMESTAMP, the lite consumer's ``seek_to_timestamp`` and Spark's timestamp options
all go through it.
"""

from __future__ import annotations

import bisect
from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py._client._api import RemotingApi
from rocketmq_py._client._timestamp import READ_BATCH, TimestampSearch, Window, offset_for_timestamp
from rocketmq_py._transport import ConnectionPool
from rocketmq_py.consumer._lite_pull import LitePullConsumer
from rocketmq_py.consumer._push import PushConsumer
from rocketmq_py.consumer._start_offset import parse_consume_timestamp
from rocketmq_py.protocol import Message, MessageExt, MessageQueue, RequestCode
from rocketmq_py.protocol._codes import DEFAULT_VERSION
from rocketmq_py.protocol._versions import (
    V4_9_7,
    V5_0_0,
    V5_3_3,
    V5_5_0,
    release_name,
    release_ordinal,
    supports_boundary_search,
    supports_timer_messages,
)
from rocketmq_py.testing._fake_broker import FakeBroker
from rocketmq_py.testing._fake_messages import nearest_by_time

TOPIC = "TsTopic"
MQ = MessageQueue(TOPIC, "broker-a", 0)

# --- versions --------------------------------------------------------------------------------------


def test_release_ordinals_match_javas_enum() -> None:
    # MQVersion.Version of apache/rocketmq 5.3.3: V4_9_7 is entry 407, V5_3_3 479 (our DEFAULT_VERSION).
    assert (V4_9_7, V5_0_0, V5_3_3, V5_5_0) == (407, 413, 479, 513)
    assert V5_3_3 == DEFAULT_VERSION
    assert release_ordinal("4.0.0") == 213
    assert release_ordinal("5.9.9") == 611


@pytest.mark.parametrize("text", ["3.9.9", "6.0.0", "4.10.0", "5.3", "x"])
def test_release_ordinal_refuses_what_is_not_a_4x_or_5x_release(text: str) -> None:
    with pytest.raises(ValueError, match="not a RocketMQ release"):
        release_ordinal(text)


@given(st.integers(min_value=212, max_value=611))
def test_release_names_round_trip(ordinal: int) -> None:
    name = release_name(ordinal)
    assert name is not None
    assert release_ordinal(name.removesuffix("-SNAPSHOT")) == ordinal + name.endswith("-SNAPSHOT")


def test_release_name_outside_the_regular_range_is_none() -> None:
    assert release_name(211) is None
    assert release_name(612) is None  # HIGHER_VERSION
    assert release_name(407) == "4.9.7"
    assert release_name(406) == "4.9.7-SNAPSHOT"


def test_what_each_release_supports() -> None:
    assert not supports_timer_messages(V4_9_7)
    assert supports_timer_messages(V5_0_0)
    assert not supports_boundary_search(V5_0_0)  # 5.0.x and 5.1.0 still answer the nearest
    assert supports_boundary_search(release_ordinal("5.1.1"))
    assert supports_boundary_search(612)  # a newer server


# --- the 4.x answer, as the fake models it ----------------------------------------------------------


@pytest.mark.parametrize(
    ("stamps", "target", "expected"),
    [
        ([], 5, 0),  # empty queue
        ([10, 20, 30], 5, 0),  # all newer: the first
        ([10, 20, 30], 35, 2),  # all older: the LAST message, not the max offset
        ([10, 20, 30], 13, 0),  # nearer the earlier one: one before the answer we want
        ([10, 20, 30], 17, 1),  # nearer the later one
        ([10, 20, 30], 15, 0),  # a tie goes to the earlier one
        ([10, 20, 20, 20, 30], 20, 2),  # any of the equal ones (the bisection's first hit)
    ],
)
def test_fake_4x_search_answers_the_nearest_message(stamps: list[int], target: int, expected: int) -> None:
    assert nearest_by_time(stamps, target) == expected


# --- the pure correction ----------------------------------------------------------------------------


def run_search(stamps: list[int], target: int, hint: int, first: int = 0) -> TimestampSearch:
    """Drive a search over a queue holding ``stamps`` at offsets ``first``, ``first + 1``, ..."""
    search = TimestampSearch(target, hint)
    end = first + len(stamps)
    while (offset := search.next_read()) is not None:
        start = max(offset, first)
        window = [(o, stamps[o - first]) for o in range(start, min(offset + READ_BATCH, end))]
        search.feed(Window(window if offset >= first else [], first, end))
    return search


sorted_stamps = st.lists(st.integers(min_value=0, max_value=50), max_size=300).map(sorted)


@given(sorted_stamps, st.integers(min_value=-1, max_value=52), st.data())
def test_any_hint_is_corrected_to_the_first_message_at_or_after(
    stamps: list[int], target: int, data: st.DataObject
) -> None:
    hint = data.draw(st.integers(min_value=0, max_value=len(stamps) + 5))
    first = data.draw(st.integers(min_value=0, max_value=3))
    search = run_search(stamps, target, hint + first, first)
    assert search.result == first + bisect.bisect_left(stamps, target)
    assert search.reads <= 12


@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=300, unique=True).map(sorted), st.data())
def test_a_4x_answer_over_distinct_times_costs_one_read(stamps: list[int], data: st.DataObject) -> None:
    target = data.draw(st.integers(min_value=-1, max_value=10_001))
    search = run_search(stamps, target, nearest_by_time(stamps, target))
    assert search.result == bisect.bisect_left(stamps, target)
    assert search.reads == 1


def test_a_4x_answer_inside_a_run_of_equal_times_moves_back_to_the_runs_start() -> None:
    stamps = [1] * 10 + [5] * 200 + [9] * 10
    hint = nearest_by_time(stamps, 5)
    assert hint > 10  # the bisection hit the middle of the run
    search = run_search(stamps, 5, hint)
    assert search.result == 10


def test_timestamps_out_of_order_still_give_an_offset_of_the_queue() -> None:
    search = run_search([1, 9, 3, 9, 2], 5, 2)
    assert 0 <= search.result <= 5


# --- against a fake broker ----------------------------------------------------------------------------


@pytest.fixture
async def api() -> AsyncIterator[RemotingApi]:
    async with ConnectionPool() as pool:
        yield RemotingApi(pool, timeout=3)


def fill(fb: FakeBroker, stamps: list[int]) -> None:
    for n, ts in enumerate(stamps):
        fb.put_messages(0, [Message(TOPIC, f"m{n}".encode())], store_timestamp=ts)


STAMPS = [1_000, 2_000, 3_000, 3_000, 4_000, 9_000]
#: target -> the first offset stored at or after it (the max offset, 6, past the last message).
EXPECTED = {0: 0, 1_000: 0, 1_001: 1, 2_400: 2, 3_000: 2, 3_001: 4, 5_000: 5, 9_000: 5, 9_001: 6}


@pytest.mark.parametrize("version", [V4_9_7, V5_3_3])
async def test_offset_for_timestamp_is_the_same_on_4x_and_5x(api: RemotingApi, version: int) -> None:
    async with FakeBroker(version=version) as fb:
        fb.add_topic(TOPIC, queues=1)
        fill(fb, STAMPS)
        found = {t: await offset_for_timestamp(api, fb.address, MQ, t, group="g") for t in EXPECTED}
        assert found == EXPECTED
        pulls = fb.requests(RequestCode.PULL_MESSAGE)
        if version == V5_3_3:
            assert pulls == []  # the broker's answer is exact: no extra request
        else:
            assert len(pulls) == len(EXPECTED)  # one correcting read each
            assert {p.ext_fields["consumerGroup"] for p in pulls} == {"g"}
            assert {p.ext_fields["commitOffset"] for p in pulls} == {"0"}
        searches = fb.requests(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP)
        assert {s.ext_fields["boundaryType"] for s in searches} == {"lower"}


async def test_an_empty_4x_queue_answers_offset_0(api: RemotingApi) -> None:
    async with FakeBroker(version=V4_9_7) as fb:
        fb.add_topic(TOPIC, queues=1)
        assert await offset_for_timestamp(api, fb.address, MQ, 5, group="g") == 0


# --- the call sites, on a 4.x broker whose answer is one message early ----------------------------------
# 2 messages long before the time, then one 1 s before it, then two 10 s after it: 4.9.7 answers
# offset 2 (nearer than offset 3); the first message at or after the time is offset 3.

SINCE_TEXT = "20240102030405"
SINCE = parse_consume_timestamp(SINCE_TEXT)
BEFORE_AND_AFTER = [SINCE - 60_000, SINCE - 60_000, SINCE - 1_000, SINCE + 10_000, SINCE + 11_000]


@pytest.fixture
async def broker_4x() -> AsyncIterator[FakeBroker]:
    async with FakeBroker(version=V4_9_7) as fb:
        fb.add_topic(TOPIC, queues=1)
        fill(fb, BEFORE_AND_AFTER)
        yield fb


async def test_lite_seek_to_timestamp_on_4x(
    broker_4x: FakeBroker, autojump_clock: trio.testing.MockClock
) -> None:
    async with LitePullConsumer(
        "lite-ts", namesrv=broker_4x.address, consume_from_where="CONSUME_FROM_LAST_OFFSET"
    ) as consumer:
        consumer.assign([MQ])
        assert await consumer.offset_for_timestamp(MQ, SINCE) == 3
        assert await consumer.offset_for_timestamp(MQ, SINCE + 60_000) == 5  # past the last: the end
        await consumer.seek_to_timestamp(MQ, SINCE)
        got: list[MessageExt] = []
        with trio.fail_after(30):
            while len(got) < 2:
                got.extend(await consumer.poll(timeout=1))
    assert [m.queue_offset for m in got] == [3, 4]


async def test_push_consume_from_timestamp_on_4x(
    broker_4x: FakeBroker, autojump_clock: trio.testing.MockClock
) -> None:
    got: list[MessageExt] = []
    two = trio.Event()
    # A broker whose first messages left memory: QUERY_CONSUMER_OFFSET finds no offset for the new
    # group, so the timestamp decides (a young broker answers 0: ConsumerManageProcessor).
    broker_4x.first_in_memory = False

    async def listener(msgs: list[MessageExt]) -> None:
        got.extend(msgs)
        if len(got) >= 2:
            two.set()

    consumer = PushConsumer(
        "push-ts",
        namesrv=broker_4x.address,
        listener=listener,
        consume_from_where="CONSUME_FROM_TIMESTAMP",
        consume_timestamp_ms=SINCE,
    )
    consumer.subscribe(TOPIC)
    async with consumer:
        with trio.fail_after(60):
            await two.wait()
        await trio.sleep(2)  # (trio's mock clock) nothing else is delivered
    assert [m.queue_offset for m in got] == [3, 4]


async def test_spark_timestamp_offsets_on_4x(
    broker_4x: FakeBroker, api: RemotingApi, spark_extra: None
) -> None:
    # The spark extra (spark_connector imports pyspark): imported here so that the rest runs without it.
    from spark_connector._metadata import search_offsets
    from spark_connector._planning import QueueState
    from spark_connector._read import READER_GROUP

    states = [QueueState(MQ, broker_4x.address, 0, len(BEFORE_AND_AFTER))]
    assert await search_offsets(api, states, SINCE, group=READER_GROUP) == {MQ: 3}
    assert await search_offsets(api, states, SINCE + 60_000, group=READER_GROUP) == {MQ: 5}
