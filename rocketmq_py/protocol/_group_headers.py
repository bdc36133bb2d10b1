"""Typed custom headers of consumer group membership, and of the broker's requests to a consumer.

Heartbeat, send-back of a failed message, the group's member list, unregistering, the orderly
queue locks, and what a broker asks a consumer (NOTIFY_CONSUMER_IDS_CHANGED,
RESET_CONSUMER_CLIENT_OFFSET, GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY). Each class is
one Java ``CommandCustomHeader``, built as those of :mod:`._headers` (frozen, slotted,
keyword-only; ``REQUEST_CODE``; wire keys and ``extra`` as :mod:`._ext_fields` says).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from rocketmq_py.protocol._codes import RequestCode
from rocketmq_py.protocol._ext_fields import Int32, Int64, extra_field, prepare_headers, wire_key

__all__ = [
    "ConsumeMessageDirectlyResultRequestHeader",
    "ConsumerSendMsgBackRequestHeader",
    "GetConsumerListByGroupRequestHeader",
    "GetConsumerRunningInfoRequestHeader",
    "HeartbeatRequestHeader",
    "LockBatchMqRequestHeader",
    "NotifyConsumerIdsChangedRequestHeader",
    "ResetOffsetRequestHeader",
    "UnlockBatchMqRequestHeader",
    "UnregisterClientRequestHeader",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatRequestHeader:
    """HEART_BEAT: no fields of its own (the body is HeartbeatData)."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.HEART_BEAT

    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerSendMsgBackRequestHeader:
    """CONSUMER_SEND_MSG_BACK: hand a failed message back for a delayed retry.

    ``offset`` is the message's commit-log (physical) offset; ``delay_level`` 0 lets the broker
    pick ``3 + reconsumeTimes``.
    """

    REQUEST_CODE: ClassVar[int | None] = RequestCode.CONSUMER_SEND_MSG_BACK

    offset: Int64
    group: str
    delay_level: Int32
    origin_msg_id: str | None = None
    origin_topic: str | None = None
    unit_mode: bool = False
    max_reconsume_times: Int32 | None = None
    broker_name: str | None = field(default=None, metadata=wire_key("bname"))
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumerListByGroupRequestHeader:
    """GET_CONSUMER_LIST_BY_GROUP; the reply body is ConsumerListBody."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.GET_CONSUMER_LIST_BY_GROUP

    consumer_group: str
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterClientRequestHeader:
    """UNREGISTER_CLIENT: sent to every broker on shutdown."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.UNREGISTER_CLIENT

    client_id: str = field(metadata=wire_key("clientID"))
    producer_group: str | None = None
    consumer_group: str | None = None
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class NotifyConsumerIdsChangedRequestHeader:
    """NOTIFY_CONSUMER_IDS_CHANGED (broker -> client, oneway): rebalance now."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.NOTIFY_CONSUMER_IDS_CHANGED

    consumer_group: str
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class LockBatchMqRequestHeader:
    """LOCK_BATCH_MQ: no fields (the body is LockBatchRequestBody)."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.LOCK_BATCH_MQ

    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class UnlockBatchMqRequestHeader:
    """UNLOCK_BATCH_MQ: no fields (the body is UnlockBatchRequestBody)."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.UNLOCK_BATCH_MQ

    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class ResetOffsetRequestHeader:
    """RESET_CONSUMER_CLIENT_OFFSET (broker -> client, oneway); body is ResetOffsetBody."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.RESET_CONSUMER_CLIENT_OFFSET

    topic: str
    group: str
    timestamp: Int64
    is_force: bool
    queue_id: Int32 = -1
    offset: Int64 | None = None
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumerRunningInfoRequestHeader:
    """GET_CONSUMER_RUNNING_INFO (broker -> client, needs a reply)."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.GET_CONSUMER_RUNNING_INFO

    consumer_group: str
    client_id: str
    jstack_enable: bool = False
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumeMessageDirectlyResultRequestHeader:
    """CONSUME_MESSAGE_DIRECTLY (broker -> client, needs a reply); body is one stored message."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.CONSUME_MESSAGE_DIRECTLY

    consumer_group: str
    client_id: str | None = None
    msg_id: str | None = None
    broker_name: str | None = None  # the real Java field "brokerName", not the inherited "bname"
    topic: str | None = None
    topic_sys_flag: Int32 | None = None
    group_sys_flag: Int32 | None = None
    extra: Mapping[str, str] = extra_field()


# Build every plan at import: a malformed class fails here, and no first call pays for reflection.
prepare_headers(
    HeartbeatRequestHeader,
    ConsumerSendMsgBackRequestHeader,
    GetConsumerListByGroupRequestHeader,
    UnregisterClientRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    LockBatchMqRequestHeader,
    UnlockBatchMqRequestHeader,
    ResetOffsetRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    ConsumeMessageDirectlyResultRequestHeader,
)
