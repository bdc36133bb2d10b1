"""Pull answers: status, the pull loop's next step, message post-processing (pure, §3.4, §8.2, §8.4)."""

from __future__ import annotations

import pytest

from rocketmq_py.consumer._filter import MessageFilter
from rocketmq_py.consumer._pull_result import (
    PullAction,
    PullResult,
    PullStatus,
    clear_commit_offset_flag,
    interpret_pull_response,
    next_pull_action,
    process_found_messages,
    pull_error_delay_ms,
    pull_status,
    pull_status_for,
    restore_retry_topic,
    set_consume_start_time,
)
from rocketmq_py.errors import (
    BrokerError,
    ConnectionFailed,
    FlowControl,
    RequestTimeout,
    SubscriptionNotExist,
    SubscriptionNotLatest,
    SystemBusy,
    broker_error_for,
)
from rocketmq_py.protocol import MessageExt, PullSysFlag, pull_sys_flag
from rocketmq_py.protocol._bodies import build_subscription_data

# --- sysFlag -------------------------------------------------------------------------------------


def test_flag_bits() -> None:
    assert (
        PullSysFlag.COMMIT_OFFSET,
        PullSysFlag.SUSPEND,
        PullSysFlag.SUBSCRIPTION,
        PullSysFlag.CLASS_FILTER,
        PullSysFlag.LITE_PULL,
    ) == (0x1, 0x2, 0x4, 0x8, 0x10)


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        ((False, False, False, False, False), 0),
        ((True, True, False, False, False), 3),  # push consumer with an in-memory offset
        ((False, True, False, False, False), 2),  # push consumer, first pull of a queue
        ((True, True, True, False, False), 7),  # postSubscriptionWhenPull
        ((False, False, False, True, False), 8),
        ((False, False, False, False, True), 16),
        ((True, True, True, True, True), 0x1F),
    ],
)
def test_build_sys_flag(args: tuple[bool, bool, bool, bool, bool], flag: int) -> None:
    assert pull_sys_flag(*args) == flag


def test_lite_pull_defaults_off() -> None:
    assert pull_sys_flag(True, True, False, False) == 3


def test_slave_pulls_clear_the_commit_bit() -> None:
    assert clear_commit_offset_flag(0x1F) == 0x1E
    assert clear_commit_offset_flag(2) == 2


# --- status --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (0, PullStatus.FOUND),
        (19, PullStatus.NO_NEW_MSG),
        (20, PullStatus.NO_MATCHED_MSG),
        (21, PullStatus.OFFSET_ILLEGAL),  # PULL_OFFSET_MOVED
    ],
)
def test_pull_codes(code: int, status: PullStatus) -> None:
    assert pull_status_for(code) is status
    assert pull_status(code) is status


@pytest.mark.parametrize(
    ("code", "error"),
    [
        (24, SubscriptionNotExist),
        (25, SubscriptionNotLatest),
        (215, FlowControl),
        (2, SystemBusy),
        (9999, BrokerError),
    ],
)
def test_other_codes_are_broker_errors(code: int, error: type[BrokerError]) -> None:
    assert pull_status_for(code) is None
    with pytest.raises(error) as info:
        pull_status(code, "why")
    assert type(info.value) is error
    assert (info.value.code, info.value.remark) == (code, "why")


def test_interpret_pull_response() -> None:
    result = interpret_pull_response(
        19, next_begin_offset=10, min_offset=0, max_offset=10, suggest_which_broker_id=1
    )
    assert result == PullResult(
        status=PullStatus.NO_NEW_MSG,
        next_begin_offset=10,
        min_offset=0,
        max_offset=10,
        suggest_which_broker_id=1,
        offset_delta=None,
    )
    with pytest.raises(SubscriptionNotLatest):
        interpret_pull_response(25, remark="old", next_begin_offset=0, min_offset=0, max_offset=0)


# --- next step -----------------------------------------------------------------------------------


def result(status: PullStatus, next_begin: int = 42) -> PullResult:
    return PullResult(status=status, next_begin_offset=next_begin, min_offset=0, max_offset=100)


def test_found_dispatches_and_pulls_again_at_once() -> None:
    action = next_pull_action(
        result(PullStatus.FOUND),
        request_offset=10,
        found_count=32,
        first_message_offset=10,
        process_queue_empty=True,
    )
    assert action == PullAction(next_offset=42, dispatch=True)
    assert action.pull_again


def test_found_waits_the_pull_interval() -> None:
    action = next_pull_action(
        result(PullStatus.FOUND),
        request_offset=10,
        found_count=1,
        process_queue_empty=False,
        pull_interval_ms=250,
    )
    assert action == PullAction(next_offset=42, dispatch=True, delay_ms=250)


def test_found_but_all_filtered_pulls_again_at_once_without_the_interval() -> None:
    action = next_pull_action(
        result(PullStatus.FOUND),
        request_offset=10,
        found_count=0,
        process_queue_empty=True,
        pull_interval_ms=250,
    )
    assert action == PullAction(next_offset=42)


@pytest.mark.parametrize(
    ("next_begin", "first", "went_back"), [(9, 10, True), (42, 9, True), (42, 10, False)]
)
def test_found_going_backwards_is_flagged(next_begin: int, first: int, went_back: bool) -> None:
    action = next_pull_action(
        result(PullStatus.FOUND, next_begin),
        request_offset=10,
        found_count=3,
        first_message_offset=first,
        process_queue_empty=False,
    )
    assert action.offset_went_back is went_back
    assert action.next_offset == next_begin


@pytest.mark.parametrize("status", [PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG])
def test_nothing_new_corrects_the_offset_only_when_nothing_is_cached(status: PullStatus) -> None:
    empty = next_pull_action(result(status), request_offset=42, process_queue_empty=True)
    assert empty == PullAction(next_offset=42, correct_offset=True)
    busy = next_pull_action(result(status), request_offset=42, process_queue_empty=False)
    assert busy == PullAction(next_offset=42)
    assert empty.pull_again
    assert busy.pull_again


def test_offset_illegal_drops_the_queue_and_fixes_the_offset_ten_seconds_later() -> None:
    action = next_pull_action(
        result(PullStatus.OFFSET_ILLEGAL, 7), request_offset=500, process_queue_empty=False
    )
    assert action == PullAction(next_offset=7, delay_ms=10000, drop_queue=True)
    assert not action.pull_again


@pytest.mark.parametrize(
    ("error", "delay"),
    [
        (broker_error_for(215, "flow"), 20),
        (broker_error_for(2, "busy"), 3000),
        (broker_error_for(25), 3000),
        (RequestTimeout("slow"), 3000),
        (ConnectionFailed("gone"), 3000),
        (ValueError("bug"), 3000),
    ],
)
def test_error_delays(error: BaseException, delay: int) -> None:
    assert pull_error_delay_ms(error) == delay


# --- messages ------------------------------------------------------------------------------------


def pulled(offset: int, tag: str | None = None, **properties: str) -> MessageExt:
    return MessageExt("T", b"b", tags=tag, queue_id=3, queue_offset=offset, properties=properties)


def test_found_messages_get_min_and_max_offset_properties() -> None:
    msgs = [pulled(5), pulled(6)]
    kept = process_found_messages(
        msgs, PullResult(status=PullStatus.FOUND, next_begin_offset=7, min_offset=2, max_offset=90)
    )
    assert kept == msgs
    assert kept is not msgs
    for msg in kept:
        assert (msg.properties["MIN_OFFSET"], msg.properties["MAX_OFFSET"]) == ("2", "90")
    assert [m.queue_offset for m in kept] == [5, 6]
    assert [m.queue_id for m in kept] == [3, 3]


def test_offset_delta_and_queue_id_for_static_topics() -> None:
    msgs = [pulled(5), pulled(6)]
    header = PullResult(
        status=PullStatus.FOUND, next_begin_offset=7, min_offset=0, max_offset=9, offset_delta=1000
    )
    kept = process_found_messages(msgs, header, queue_id=1)
    assert [(m.queue_id, m.queue_offset) for m in kept] == [(1, 1005), (1, 1006)]


def test_filter_runs_before_annotation() -> None:
    msgs = [pulled(1, "A"), pulled(2, "B"), pulled(3)]
    msg_filter = MessageFilter(build_subscription_data("T", "A", sub_version=1))
    kept = process_found_messages(msgs, result(PullStatus.FOUND), msg_filter=msg_filter)
    assert [m.queue_offset for m in kept] == [1]
    assert "MIN_OFFSET" not in msgs[1].properties  # dropped messages are left alone


def test_transaction_id_is_uniq_key_when_tran_msg_is_true() -> None:
    msgs = [
        pulled(1, UNIQ_KEY="K1", TRAN_MSG="true"),
        pulled(2, UNIQ_KEY="K2", TRAN_MSG="TRUE"),  # Boolean.parseBoolean ignores case
        pulled(3, UNIQ_KEY="K3"),
        pulled(4, UNIQ_KEY="K4", TRAN_MSG="false"),
    ]
    kept = process_found_messages(msgs, result(PullStatus.FOUND))
    assert [m.transaction_id for m in kept] == ["K1", "K2", None, None]


def test_retry_messages_get_their_original_topic_back() -> None:
    retried = MessageExt("%RETRY%g", b"", properties={"RETRY_TOPIC": "Orders"})
    other_group = MessageExt("%RETRY%other", b"", properties={"RETRY_TOPIC": "Orders"})
    no_property = MessageExt("%RETRY%g", b"")
    normal = MessageExt("Orders", b"", properties={"RETRY_TOPIC": "Elsewhere"})
    restore_retry_topic([retried, other_group, no_property, normal], "g")
    assert [m.topic for m in (retried, other_group, no_property, normal)] == [
        "Orders",
        "%RETRY%other",
        "%RETRY%g",
        "Orders",
    ]


def test_consume_start_time_is_stamped() -> None:
    msgs = [pulled(1), pulled(2)]
    set_consume_start_time(msgs, 1_700_000_000_123)
    assert [m.properties["CONSUME_START_TIME"] for m in msgs] == ["1700000000123"] * 2
