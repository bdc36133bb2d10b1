"""Producer value types: send status from response codes, send result, transaction states."""

from __future__ import annotations

import dataclasses

import pytest

from rocketmq_py.errors import broker_error_class
from rocketmq_py.producer._types import LocalTransactionState, SendResult, SendStatus
from rocketmq_py.protocol import MessageQueue
from rocketmq_py.protocol._message import SysFlag


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (0, SendStatus.SEND_OK),
        (10, SendStatus.FLUSH_DISK_TIMEOUT),
        (12, SendStatus.FLUSH_SLAVE_TIMEOUT),
        (11, SendStatus.SLAVE_NOT_AVAILABLE),
    ],
)
def test_status_from_response_code(code: int, status: SendStatus) -> None:
    assert SendStatus.from_response_code(code) is status
    # the same codes also name error classes, used when a status is not acceptable
    assert code == 0 or broker_error_class(code).response_code == code


@pytest.mark.parametrize("code", [1, 2, 13, 14, 17, 215, -1])
def test_error_codes_are_no_status(code: int) -> None:
    assert SendStatus.from_response_code(code) is None


def test_send_result_is_frozen_and_slotted() -> None:
    result = SendResult(
        status=SendStatus.SEND_OK,
        msg_id="7F000001000018B4AAC2",
        offset_msg_id="0A00000100002A9F0000000000000000",
        queue=MessageQueue("T", "broker-a", 1),
        queue_offset=42,
    )
    assert result.transaction_id is None
    assert result.region_id is None
    assert not hasattr(result, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.queue_offset = 1  # type: ignore[misc]


def test_local_transaction_state_wire_values() -> None:
    assert LocalTransactionState.UNKNOWN.value == SysFlag.TRANSACTION_NOT_TYPE == 0
    assert LocalTransactionState.COMMIT_MESSAGE.value == SysFlag.TRANSACTION_COMMIT_TYPE == 8
    assert LocalTransactionState.ROLLBACK_MESSAGE.value == SysFlag.TRANSACTION_ROLLBACK_TYPE == 12
