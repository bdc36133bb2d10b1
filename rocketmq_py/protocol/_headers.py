"""Typed custom headers of the data path: send, pull and consumer offsets.

Each class is one Java ``CommandCustomHeader``: a frozen, slotted, keyword-only dataclass whose
fields are the ``extFields`` entries of its request or response, with ``REQUEST_CODE`` the
request code that carries it (``None`` on response headers). How fields map to the string map
on the wire (types, wire keys, required fields, unknown keys kept in ``extra``) is
:mod:`._ext_fields`, which also provides the generic :func:`to_ext_fields` /
:func:`from_ext_fields`. Group membership headers (heartbeat, send-back, locks, the broker's
requests to a consumer) are in :mod:`._group_headers`; transaction, name server, admin and query
headers in :mod:`._admin_headers`.

The 5.x request headers inherit optional ``RpcRequestHeader`` fields (``ns``, ``nsd``, ``bname``,
``oway``, ``lo``); only ``bname`` (broker name, field ``broker_name``) is modelled, on the headers
where the Java client sets it. The others land in ``extra`` if a peer sends them.

SEND_MESSAGE has two header forms carrying the same content: :class:`SendMessageRequestHeader`
with the Java field names, and :class:`SendMessageRequestHeaderV2` with one-letter keys (what the
Java producer sends); :func:`send_header_to_v2` / :func:`send_header_from_v2` convert.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from rocketmq_py.protocol._codes import RequestCode
from rocketmq_py.protocol._ext_fields import (
    Int32,
    Int64,
    extra_field,
    header_keys,
    prepare_headers,
    wire_key,
)

__all__ = [
    "GetMaxOffsetRequestHeader",
    "GetMaxOffsetResponseHeader",
    "GetMinOffsetRequestHeader",
    "GetMinOffsetResponseHeader",
    "PullMessageRequestHeader",
    "PullMessageResponseHeader",
    "QueryConsumerOffsetRequestHeader",
    "QueryConsumerOffsetResponseHeader",
    "SearchOffsetRequestHeader",
    "SearchOffsetResponseHeader",
    "SendMessageRequestHeader",
    "SendMessageRequestHeaderV2",
    "SendMessageResponseHeader",
    "UpdateConsumerOffsetRequestHeader",
    "send_header_from_v2",
    "send_header_to_v2",
]


# --- send ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SendMessageRequestHeader:
    """SEND_MESSAGE request header, long field names."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.SEND_MESSAGE

    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: Int32
    queue_id: Int32
    sys_flag: Int32
    born_timestamp: Int64
    flag: Int32
    properties: str | None = None
    reconsume_times: Int32 | None = None
    unit_mode: bool = False
    batch: bool = False
    max_reconsume_times: Int32 | None = None
    broker_name: str | None = field(default=None, metadata=wire_key("bname"))
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class SendMessageRequestHeaderV2:
    """SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE / SEND_REPLY_MESSAGE_V2 header: one-letter keys.

    Same content as :class:`SendMessageRequestHeader` (see :func:`send_header_to_v2`); the long
    header's ``bname`` travels as ``n``. Used by SEND_MESSAGE_V2 (the default),
    SEND_BATCH_MESSAGE and SEND_REPLY_MESSAGE_V2.
    """

    REQUEST_CODE: ClassVar[int | None] = RequestCode.SEND_MESSAGE_V2

    a: str  # producerGroup
    b: str  # topic
    c: str  # defaultTopic
    d: Int32  # defaultTopicQueueNums
    e: Int32  # queueId
    f: Int32  # sysFlag
    g: Int64  # bornTimestamp
    h: Int32  # flag
    i: str | None = None  # properties
    j: Int32 | None = None  # reconsumeTimes
    k: bool = False  # unitMode
    l: Int32 | None = None  # maxReconsumeTimes (the wire key is "l")  # noqa: E741
    m: bool = False  # batch
    n: str | None = None  # brokerName
    extra: Mapping[str, str] = extra_field()


def _carry_extra(extra: Mapping[str, str], target: type) -> Mapping[str, str]:
    # An unknown key of one form may be a defined key of the other ("a", "topic"): drop it
    # rather than let it shadow a real field.
    if not extra:
        return extra
    defined = header_keys(target)
    return {k: v for k, v in extra.items() if k not in defined}


def send_header_to_v2(header: SendMessageRequestHeader) -> SendMessageRequestHeaderV2:
    """The short-key form of a long-name send header.

    Unknown keys are carried over, except any that name a V2 field (``"a"``..``"n"``).
    """
    return SendMessageRequestHeaderV2(
        a=header.producer_group,
        b=header.topic,
        c=header.default_topic,
        d=header.default_topic_queue_nums,
        e=header.queue_id,
        f=header.sys_flag,
        g=header.born_timestamp,
        h=header.flag,
        i=header.properties,
        j=header.reconsume_times,
        k=header.unit_mode,
        l=header.max_reconsume_times,
        m=header.batch,
        n=header.broker_name,
        extra=_carry_extra(header.extra, SendMessageRequestHeaderV2),
    )


def send_header_from_v2(header: SendMessageRequestHeaderV2) -> SendMessageRequestHeader:
    """The long-name form of a short-key send header.

    Unknown keys are carried over, except any that name a long-form field (``"topic"``...).
    """
    return SendMessageRequestHeader(
        producer_group=header.a,
        topic=header.b,
        default_topic=header.c,
        default_topic_queue_nums=header.d,
        queue_id=header.e,
        sys_flag=header.f,
        born_timestamp=header.g,
        flag=header.h,
        properties=header.i,
        reconsume_times=header.j,
        unit_mode=header.k,
        max_reconsume_times=header.l,
        batch=header.m,
        broker_name=header.n,
        extra=_carry_extra(header.extra, SendMessageRequestHeader),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SendMessageResponseHeader:
    """Reply to a send: where the message was stored. ``msg_id`` is the *offset* message id."""

    REQUEST_CODE: ClassVar[int | None] = None

    msg_id: str
    queue_id: Int32
    queue_offset: Int64
    transaction_id: str | None = None
    batch_uniq_id: str | None = None
    recall_handle: str | None = None
    extra: Mapping[str, str] = extra_field()


# --- pull ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class PullMessageRequestHeader:
    """PULL_MESSAGE (11) request header; LITE_PULL_MESSAGE (361) uses the same one."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.PULL_MESSAGE

    consumer_group: str
    topic: str
    queue_id: Int32
    queue_offset: Int64
    max_msg_nums: Int32
    sys_flag: Int32
    commit_offset: Int64
    suspend_timeout_millis: Int64
    sub_version: Int64
    subscription: str | None = None
    expression_type: str | None = None
    max_msg_bytes: Int32 | None = None
    request_source: Int32 | None = None
    proxy_forward_client_id: str | None = field(default=None, metadata=wire_key("proxyFrowardClientId"))
    broker_name: str | None = field(default=None, metadata=wire_key("bname"))
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class PullMessageResponseHeader:
    """Reply to a pull: next offset and the queue's bounds."""

    REQUEST_CODE: ClassVar[int | None] = None

    suggest_which_broker_id: Int64
    next_begin_offset: Int64
    min_offset: Int64
    max_offset: Int64
    offset_delta: Int64 | None = None
    topic_sys_flag: Int32 | None = None
    group_sys_flag: Int32 | None = None
    forbidden_type: Int32 | None = None
    extra: Mapping[str, str] = extra_field()


# --- offsets -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryConsumerOffsetRequestHeader:
    """QUERY_CONSUMER_OFFSET: the group's committed offset for one queue."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.QUERY_CONSUMER_OFFSET

    consumer_group: str
    topic: str
    queue_id: Int32
    set_zero_if_not_found: bool | None = None
    broker_name: str | None = field(default=None, metadata=wire_key("bname"))
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryConsumerOffsetResponseHeader:
    """Reply to QUERY_CONSUMER_OFFSET."""

    REQUEST_CODE: ClassVar[int | None] = None

    offset: Int64
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateConsumerOffsetRequestHeader:
    """UPDATE_CONSUMER_OFFSET (often oneway): commit the group's offset for one queue."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.UPDATE_CONSUMER_OFFSET

    consumer_group: str
    topic: str
    queue_id: Int32
    commit_offset: Int64
    broker_name: str | None = field(default=None, metadata=wire_key("bname"))
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class GetMaxOffsetRequestHeader:
    """GET_MAX_OFFSET: the queue's next write offset."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.GET_MAX_OFFSET

    topic: str
    queue_id: Int32
    committed: bool = True
    broker_name: str | None = field(default=None, metadata=wire_key("bname"))
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class GetMaxOffsetResponseHeader:
    """Reply to GET_MAX_OFFSET."""

    REQUEST_CODE: ClassVar[int | None] = None

    offset: Int64
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class GetMinOffsetRequestHeader:
    """GET_MIN_OFFSET: the queue's oldest retained offset."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.GET_MIN_OFFSET

    topic: str
    queue_id: Int32
    broker_name: str | None = field(default=None, metadata=wire_key("bname"))
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class GetMinOffsetResponseHeader:
    """Reply to GET_MIN_OFFSET."""

    REQUEST_CODE: ClassVar[int | None] = None

    offset: Int64
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOffsetRequestHeader:
    """SEARCH_OFFSET_BY_TIMESTAMP.

    ``boundary_type``: ``"lower"`` (broker default) or ``"upper"``, which message to pick when
    several share the timestamp; the broker compares case-insensitively.
    """

    REQUEST_CODE: ClassVar[int | None] = RequestCode.SEARCH_OFFSET_BY_TIMESTAMP

    topic: str
    queue_id: Int32
    timestamp: Int64
    boundary_type: str | None = None
    broker_name: str | None = field(default=None, metadata=wire_key("bname"))
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOffsetResponseHeader:
    """Reply to SEARCH_OFFSET_BY_TIMESTAMP."""

    REQUEST_CODE: ClassVar[int | None] = None

    offset: Int64
    extra: Mapping[str, str] = extra_field()


# Build every plan at import: a malformed class fails here, and no first call pays for reflection.
prepare_headers(
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
)
