"""Push-consumer defaults and cache flow control (pure, protocol.md §8.1, §8.2)."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass
from typing import cast

import pytest

from rocketmq_py.consumer import _flow
from rocketmq_py.consumer._flow import (
    FlowLimits,
    FlowReason,
    FlowVerdict,
    flow_control,
)
from rocketmq_py.consumer._process_queue import ProcessQueue
from rocketmq_py.errors import ClientError, InvalidOption
from rocketmq_py.protocol import MessageExt, dlq_topic, retry_topic

MIB = 1024 * 1024


@dataclass
class CacheStub:
    """Just the three numbers flow control reads (a real queue would need 100 MiB of bodies)."""

    msg_count: int = 0
    msg_size: int = 0
    max_span: int = 0


def cache(count: int = 0, size: int = 0, span: int = 0) -> ProcessQueue:
    return cast(ProcessQueue, CacheStub(count, size, span))


def test_java_defaults() -> None:
    expected = {
        "PULL_THRESHOLD_FOR_QUEUE": 1000,
        "PULL_THRESHOLD_SIZE_FOR_QUEUE_MIB": 100,
        "PULL_THRESHOLD_FOR_TOPIC": -1,
        "PULL_THRESHOLD_SIZE_FOR_TOPIC_MIB": -1,
        "CONSUME_MAX_SPAN": 2000,
        "PULL_THRESHOLD_FOR_ALL": 10000,
        "PULL_BATCH_SIZE": 32,
        "PULL_BATCH_SIZE_IN_BYTES": 262144,
        "PULL_INTERVAL_MS": 0,
        "PULL_TIME_DELAY_WHEN_CACHE_FLOW_CONTROL_MS": 50,
        "PULL_TIME_DELAY_WHEN_BROKER_FLOW_CONTROL_MS": 20,
        "PULL_TIME_DELAY_WHEN_SUSPEND_MS": 1000,
        "PULL_TIME_DELAY_WHEN_EXCEPTION_MS": 3000,
        "OFFSET_ILLEGAL_FIX_DELAY_MS": 10000,
        "BROKER_SUSPEND_MAX_TIME_MS": 15000,
        "CONSUMER_TIMEOUT_WHEN_SUSPEND_MS": 30000,
        "PULL_MAX_IDLE_TIME_MS": 120000,
        "CONSUME_CONCURRENCY": 20,
        "CONSUME_MESSAGE_BATCH_MAX_SIZE": 1,
        "MAX_RECONSUME_TIMES": 16,
        "MAX_RECONSUME_TIMES_ORDERLY": 2147483647,
        "CONSUME_TIMEOUT_MS": 900000,
        "CLEAN_EXPIRED_MAX_MESSAGES": 16,
        "SEND_BACK_LOCAL_RETRY_DELAY_MS": 5000,
        "SUSPEND_CURRENT_QUEUE_TIME_MS": 1000,
        "MAX_TIME_CONSUME_CONTINUOUSLY_MS": 60000,
        "REBALANCE_INTERVAL_MS": 20000,
        "REBALANCE_MIN_INTERVAL_MS": 1000,
        "REBALANCE_LOCK_INTERVAL_MS": 20000,
        "REBALANCE_LOCK_MAX_LIVE_TIME_MS": 30000,
        "PERSIST_CONSUMER_OFFSET_INTERVAL_MS": 5000,
        "PERSIST_CONSUMER_OFFSET_FIRST_DELAY_MS": 10000,
        "HEARTBEAT_BROKER_INTERVAL_MS": 30000,
    }
    assert {name: getattr(_flow, name) for name in expected} == expected


def test_group_topics() -> None:
    assert retry_topic("g1") == "%RETRY%g1"
    assert dlq_topic("g1") == "%DLQ%g1"


def test_default_limits() -> None:
    limits = FlowLimits()
    assert (
        limits.pull_threshold_for_queue,
        limits.pull_threshold_size_for_queue_mib,
        limits.consume_max_span,
        limits.pull_threshold_for_topic,
        limits.pull_threshold_size_for_topic_mib,
        limits.pull_threshold_for_all,
    ) == (1000, 100, 2000, -1, -1, 10000)
    limits.validate()
    limits.validate(consumer="push")
    limits.validate(consumer="lite")


# --- consume_max_span, formerly consume_concurrently_max_span ------------------------------------


def test_consume_max_span_is_the_field() -> None:
    limits = FlowLimits(consume_max_span=7)
    assert limits.consume_max_span == 7
    assert [f.name for f in dataclasses.fields(FlowLimits)] == [
        "pull_threshold_for_queue",
        "pull_threshold_size_for_queue_mib",
        "consume_max_span",
        "pull_threshold_for_topic",
        "pull_threshold_size_for_topic_mib",
        "pull_threshold_for_all",
    ]
    assert "consume_max_span=7" in repr(limits)
    assert "concurrently" not in repr(limits)


def test_the_old_keyword_still_works_and_warns() -> None:
    with pytest.warns(DeprecationWarning, match="consume_concurrently_max_span.*use consume_max_span") as rec:
        limits = FlowLimits(consume_concurrently_max_span=7)
    assert rec[0].filename == __file__  # the caller's line, not ours
    assert limits == FlowLimits(consume_max_span=7)
    assert hash(limits) == hash(FlowLimits(consume_max_span=7))


def test_the_old_attribute_still_reads_and_warns() -> None:
    limits = FlowLimits(consume_max_span=7)
    with pytest.warns(DeprecationWarning, match="consume_concurrently_max_span.*use consume_max_span") as rec:
        assert limits.consume_concurrently_max_span == 7
    assert rec[0].filename == __file__


def test_replace_with_the_old_keyword_warns_and_sets_the_span() -> None:
    limits = FlowLimits(consume_max_span=7, pull_threshold_for_queue=3)
    with pytest.warns(DeprecationWarning, match="use consume_max_span") as rec:
        changed = dataclasses.replace(limits, consume_concurrently_max_span=9)
    assert rec[0].filename == __file__
    assert changed == FlowLimits(consume_max_span=9, pull_threshold_for_queue=3)


def test_limits_stay_a_frozen_keyword_only_value() -> None:
    limits = FlowLimits(pull_threshold_for_queue=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        limits.consume_max_span = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        FlowLimits(3)  # type: ignore[misc]
    assert dataclasses.replace(limits, consume_max_span=5) == FlowLimits(
        pull_threshold_for_queue=3, consume_max_span=5
    )
    assert pickle.loads(pickle.dumps(limits)) == limits
    assert {limits, FlowLimits(pull_threshold_for_queue=3)} == {limits}
    assert repr(limits).startswith("FlowLimits(pull_threshold_for_queue=3, ")


# --- which consumer enforces what ----------------------------------------------------------------


def test_a_push_consumer_refuses_the_lite_overall_cap() -> None:
    with pytest.raises(InvalidOption, match="pull_threshold_for_all is a LitePullConsumer limit"):
        FlowLimits(pull_threshold_for_all=5).validate(consumer="push")
    FlowLimits(pull_threshold_for_all=5).validate(consumer="lite")


@pytest.mark.parametrize(
    "topic_limit", [{"pull_threshold_for_topic": 5}, {"pull_threshold_size_for_topic_mib": 5}]
)
def test_a_lite_consumer_refuses_topic_level_limits(topic_limit: dict[str, int]) -> None:
    limits = FlowLimits(**topic_limit)
    with pytest.raises(InvalidOption, match="are PushConsumer limits"):
        limits.validate(consumer="lite")
    limits.validate(consumer="push")


# --- topic-level limits --------------------------------------------------------------------------


def test_topic_limits_off_leave_per_queue_limits_alone() -> None:
    limits = FlowLimits()
    assert limits.per_queue_from_topic(8) is limits


@pytest.mark.parametrize(
    ("topic_count", "topic_mib", "queues", "per_queue", "per_queue_mib"),
    [
        (1000, 100, 3, 333, 33),  # integer division
        (1000, 100, 4, 250, 25),
        (5, 2, 8, 1, 1),  # never below 1
        (6553500, 102400, 1, 6553500, 102400),  # may exceed the user-facing per-queue maximum
    ],
)
def test_topic_limits_split_over_the_queues_held(
    topic_count: int, topic_mib: int, queues: int, per_queue: int, per_queue_mib: int
) -> None:
    limits = FlowLimits(pull_threshold_for_topic=topic_count, pull_threshold_size_for_topic_mib=topic_mib)
    derived = limits.per_queue_from_topic(queues)
    assert (derived.pull_threshold_for_queue, derived.pull_threshold_size_for_queue_mib) == (
        per_queue,
        per_queue_mib,
    )
    assert derived.pull_threshold_for_topic == topic_count  # the topic limit stays for next time


def test_only_the_topic_limit_that_is_on_applies() -> None:
    derived = FlowLimits(pull_threshold_for_topic=100).per_queue_from_topic(4)
    assert (derived.pull_threshold_for_queue, derived.pull_threshold_size_for_queue_mib) == (25, 100)
    derived = FlowLimits(pull_threshold_size_for_topic_mib=100).per_queue_from_topic(4)
    assert (derived.pull_threshold_for_queue, derived.pull_threshold_size_for_queue_mib) == (1000, 25)


def test_no_queues_held_changes_nothing() -> None:
    limits = FlowLimits(pull_threshold_for_topic=100)
    assert limits.per_queue_from_topic(0) is limits


@pytest.mark.parametrize(
    "bad",
    [
        {"pull_threshold_for_queue": 0},
        {"pull_threshold_for_queue": 65536},
        {"pull_threshold_size_for_queue_mib": 0},
        {"pull_threshold_size_for_queue_mib": 1025},
        {"consume_max_span": 0},
        {"consume_max_span": 65536},
        {"pull_threshold_for_topic": 0},
        {"pull_threshold_for_topic": -2},
        {"pull_threshold_for_topic": 6553501},
        {"pull_threshold_size_for_topic_mib": 0},
        {"pull_threshold_size_for_topic_mib": 102401},
        {"pull_threshold_for_all": 0},
    ],
)
def test_validate_rejects_java_out_of_range_settings(bad: dict[str, int]) -> None:
    with pytest.raises(InvalidOption, match=next(iter(bad))) as info:
        FlowLimits(**bad).validate()
    assert isinstance(info.value, ClientError)  # what it raised before


def test_validate_accepts_the_bounds() -> None:
    FlowLimits(
        pull_threshold_for_queue=65535,
        pull_threshold_size_for_queue_mib=1,
        consume_max_span=1,
        pull_threshold_for_topic=6553500,
        pull_threshold_size_for_topic_mib=1,
        pull_threshold_for_all=1,
    ).validate()


# --- the verdict ---------------------------------------------------------------------------------


def test_under_every_limit_pulls() -> None:
    assert flow_control(cache(1000, 100 * MIB + MIB - 1, 2000), FlowLimits(), orderly=False) is None


def test_too_many_messages() -> None:
    verdict = flow_control(cache(count=1001), FlowLimits(), orderly=False)
    assert verdict == FlowVerdict(FlowReason.COUNT, 1001, 1000, 50)


def test_too_many_mib_counts_whole_mib_only() -> None:
    verdict = flow_control(cache(size=101 * MIB), FlowLimits(), orderly=True)
    assert verdict == FlowVerdict(FlowReason.SIZE, 101, 100)
    assert verdict.delay_ms == 50


def test_span_too_wide_only_when_concurrent() -> None:
    assert flow_control(cache(span=2001), FlowLimits(), orderly=False) == FlowVerdict(
        FlowReason.SPAN, 2001, 2000
    )
    assert flow_control(cache(span=2001), FlowLimits(), orderly=True) is None


def test_checks_run_in_java_order() -> None:
    verdict = flow_control(cache(2000, 200 * MIB, 5000), FlowLimits(), orderly=False)
    assert verdict is not None
    assert verdict.reason is FlowReason.COUNT
    verdict = flow_control(cache(0, 200 * MIB, 5000), FlowLimits(), orderly=False)
    assert verdict is not None
    assert verdict.reason is FlowReason.SIZE


def test_limits_derived_from_topic_apply() -> None:
    limits = FlowLimits(pull_threshold_for_topic=100).per_queue_from_topic(10)
    assert flow_control(cache(count=10), limits, orderly=False) is None
    assert flow_control(cache(count=11), limits, orderly=False) == FlowVerdict(FlowReason.COUNT, 11, 10)


def test_with_a_real_process_queue() -> None:
    pq = ProcessQueue()
    pq.put_messages([MessageExt("T", b"x", queue_offset=0), MessageExt("T", b"x", queue_offset=30)])
    limits = FlowLimits(pull_threshold_for_queue=1, consume_max_span=10)
    assert flow_control(pq, limits, orderly=True) == FlowVerdict(FlowReason.COUNT, 2, 1)
    limits = FlowLimits(consume_max_span=10)
    assert flow_control(pq, limits, orderly=False) == FlowVerdict(FlowReason.SPAN, 30, 10)
    pq.remove_messages([MessageExt("T", b"x", queue_offset=0)])
    assert flow_control(pq, limits, orderly=False) is None
