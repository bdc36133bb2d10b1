"""Typed custom headers: the ``extFields`` map of a remoting command.

Wire format
-----------
Every request or response may carry a flat ``extFields`` map (JSON object, or the binary
key/value list of the ROCKETMQ header encoding). Keys are the Java header class's field names;
**every value is a string**, written with Java's ``toString``::

    {"consumerGroup": "g", "queueId": "3", "queueOffset": "1024", "setZeroIfNotFound": "true"}

    Java type        on the wire              here
    String           as is                    ``str``
    Integer / int    decimal, optional sign   ``Int32`` (an ``int`` checked to int32 range)
    Long / long      decimal, optional sign   ``Int64`` (an ``int`` checked to int64 range)
    Boolean          "true" / "false"         ``bool``
    null             key absent               ``None``

Each header is a frozen, slotted, keyword-only dataclass. A field without a default is
required (Java ``@CFNotNull``); a missing key on decode raises :class:`MalformedHeader`.
Wire-key rule: the Python field name in camelCase (``queue_offset`` -> ``queueOffset``),
unless the field says otherwise with ``metadata={"wire": ...}`` (``clientID``, ``bname``,
the misspelt ``proxyFrowardClientId``). ``REQUEST_CODE`` is the request code that carries the
header; response headers have ``None``.

Keys a header class does not know are kept in its ``extra`` map on decode and written back by
:func:`to_ext_fields`, so fields added by newer brokers survive a round trip (and extra
response keys such as ``MSG_REGION`` / ``TRACE_ON`` on a send reply stay readable).

The 5.x request headers inherit optional ``RpcRequestHeader`` fields (``ns``, ``nsd``, ``bname``,
``oway``, ``lo``); only ``bname`` (broker name, field ``broker_name``) is modelled, on the headers
where the Java client sets it. The others land in ``extra`` if a peer sends them.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Annotated, Any, ClassVar, Protocol, TypeVar

from rocketmq_py.errors import LocalProtocolError, MalformedHeader

__all__ = [
    "CheckTransactionStateRequestHeader",
    "ConsumeMessageDirectlyResultRequestHeader",
    "ConsumerSendMsgBackRequestHeader",
    "CustomHeader",
    "EndTransactionRequestHeader",
    "GetConsumerListByGroupRequestHeader",
    "GetConsumerRunningInfoRequestHeader",
    "GetMaxOffsetRequestHeader",
    "GetMaxOffsetResponseHeader",
    "GetMinOffsetRequestHeader",
    "GetMinOffsetResponseHeader",
    "GetRouteInfoRequestHeader",
    "HeartbeatRequestHeader",
    "Int32",
    "Int64",
    "LockBatchMqRequestHeader",
    "NotifyConsumerIdsChangedRequestHeader",
    "PullMessageRequestHeader",
    "PullMessageResponseHeader",
    "QueryConsumerOffsetRequestHeader",
    "QueryConsumerOffsetResponseHeader",
    "QueryMessageRequestHeader",
    "QueryMessageResponseHeader",
    "ResetOffsetRequestHeader",
    "SearchOffsetRequestHeader",
    "SearchOffsetResponseHeader",
    "SendMessageRequestHeader",
    "SendMessageRequestHeaderV2",
    "SendMessageResponseHeader",
    "UnlockBatchMqRequestHeader",
    "UnregisterClientRequestHeader",
    "UpdateAndCreateTopicRequestHeader",
    "UpdateConsumerOffsetRequestHeader",
    "ViewMessageRequestHeader",
    "from_ext_fields",
    "send_header_from_v2",
    "send_header_to_v2",
    "to_ext_fields",
]


@dataclass(frozen=True, slots=True)
class _JavaInt:
    """Annotation marker: an ``int`` carried as a Java integer of ``bits`` width."""

    bits: int


#: A Java ``Integer``/``int`` field (int32 range checked on encode and decode).
Int32 = Annotated[int, _JavaInt(32)]
#: A Java ``Long``/``long`` field (int64 range checked on encode and decode).
Int64 = Annotated[int, _JavaInt(64)]


def _wire(key: str) -> dict[str, str]:
    return {"wire": key}


def _extra() -> Any:
    # Shared declaration of the ``extra`` field: excluded from the hash (a dict is unhashable),
    # still part of equality and repr.
    return field(default_factory=dict, hash=False)


class CustomHeader(Protocol):
    """What every header class here provides (for typing the generic codec functions)."""

    REQUEST_CODE: ClassVar[int | None]

    @property
    def extra(self) -> Mapping[str, str]: ...


H = TypeVar("H", bound=CustomHeader)


# --- send ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SendMessageRequestHeader:
    """SEND_MESSAGE request header, long field names."""

    REQUEST_CODE: ClassVar[int | None] = 10  # SEND_MESSAGE

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
    broker_name: str | None = field(default=None, metadata=_wire("bname"))
    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class SendMessageRequestHeaderV2:
    """SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE / SEND_REPLY_MESSAGE_V2 header: one-letter keys.

    Same content as :class:`SendMessageRequestHeader` (see :func:`send_header_to_v2`); the long
    header's ``bname`` travels as ``n``. Used by codes 310 (default), 320 and 325.
    """

    REQUEST_CODE: ClassVar[int | None] = 310  # SEND_MESSAGE_V2

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
    extra: Mapping[str, str] = _extra()


def _carry_extra(extra: Mapping[str, str], target: type) -> Mapping[str, str]:
    # An unknown key of one form may be a defined key of the other ("a", "topic"): drop it
    # rather than let it shadow a real field.
    if not extra:
        return extra
    defined = _plan_for(target).keys
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
    extra: Mapping[str, str] = _extra()


# --- pull ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class PullMessageRequestHeader:
    """PULL_MESSAGE (11) request header; LITE_PULL_MESSAGE (361) uses the same one."""

    REQUEST_CODE: ClassVar[int | None] = 11  # PULL_MESSAGE

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
    proxy_forward_client_id: str | None = field(default=None, metadata=_wire("proxyFrowardClientId"))
    broker_name: str | None = field(default=None, metadata=_wire("bname"))
    extra: Mapping[str, str] = _extra()


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
    extra: Mapping[str, str] = _extra()


# --- offsets -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryConsumerOffsetRequestHeader:
    """QUERY_CONSUMER_OFFSET: the group's committed offset for one queue."""

    REQUEST_CODE: ClassVar[int | None] = 14  # QUERY_CONSUMER_OFFSET

    consumer_group: str
    topic: str
    queue_id: Int32
    set_zero_if_not_found: bool | None = None
    broker_name: str | None = field(default=None, metadata=_wire("bname"))
    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryConsumerOffsetResponseHeader:
    """Reply to QUERY_CONSUMER_OFFSET."""

    REQUEST_CODE: ClassVar[int | None] = None

    offset: Int64
    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateConsumerOffsetRequestHeader:
    """UPDATE_CONSUMER_OFFSET (often oneway): commit the group's offset for one queue."""

    REQUEST_CODE: ClassVar[int | None] = 15  # UPDATE_CONSUMER_OFFSET

    consumer_group: str
    topic: str
    queue_id: Int32
    commit_offset: Int64
    broker_name: str | None = field(default=None, metadata=_wire("bname"))
    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class GetMaxOffsetRequestHeader:
    """GET_MAX_OFFSET: the queue's next write offset."""

    REQUEST_CODE: ClassVar[int | None] = 30  # GET_MAX_OFFSET

    topic: str
    queue_id: Int32
    committed: bool = True
    broker_name: str | None = field(default=None, metadata=_wire("bname"))
    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class GetMaxOffsetResponseHeader:
    """Reply to GET_MAX_OFFSET."""

    REQUEST_CODE: ClassVar[int | None] = None

    offset: Int64
    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class GetMinOffsetRequestHeader:
    """GET_MIN_OFFSET: the queue's oldest retained offset."""

    REQUEST_CODE: ClassVar[int | None] = 31  # GET_MIN_OFFSET

    topic: str
    queue_id: Int32
    broker_name: str | None = field(default=None, metadata=_wire("bname"))
    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class GetMinOffsetResponseHeader:
    """Reply to GET_MIN_OFFSET."""

    REQUEST_CODE: ClassVar[int | None] = None

    offset: Int64
    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOffsetRequestHeader:
    """SEARCH_OFFSET_BY_TIMESTAMP.

    ``boundary_type``: ``"lower"`` (broker default) or ``"upper"``, which message to pick when
    several share the timestamp; the broker compares case-insensitively.
    """

    REQUEST_CODE: ClassVar[int | None] = 29  # SEARCH_OFFSET_BY_TIMESTAMP

    topic: str
    queue_id: Int32
    timestamp: Int64
    boundary_type: str | None = None
    broker_name: str | None = field(default=None, metadata=_wire("bname"))
    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOffsetResponseHeader:
    """Reply to SEARCH_OFFSET_BY_TIMESTAMP."""

    REQUEST_CODE: ClassVar[int | None] = None

    offset: Int64
    extra: Mapping[str, str] = _extra()


# --- consumer ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatRequestHeader:
    """HEART_BEAT: no fields of its own (the body is HeartbeatData)."""

    REQUEST_CODE: ClassVar[int | None] = 34  # HEART_BEAT

    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerSendMsgBackRequestHeader:
    """CONSUMER_SEND_MSG_BACK: hand a failed message back for a delayed retry.

    ``offset`` is the message's commit-log (physical) offset; ``delay_level`` 0 lets the broker
    pick ``3 + reconsumeTimes``.
    """

    REQUEST_CODE: ClassVar[int | None] = 36  # CONSUMER_SEND_MSG_BACK

    offset: Int64
    group: str
    delay_level: Int32
    origin_msg_id: str | None = None
    origin_topic: str | None = None
    unit_mode: bool = False
    max_reconsume_times: Int32 | None = None
    broker_name: str | None = field(default=None, metadata=_wire("bname"))
    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumerListByGroupRequestHeader:
    """GET_CONSUMER_LIST_BY_GROUP; the reply body is ConsumerListBody."""

    REQUEST_CODE: ClassVar[int | None] = 38  # GET_CONSUMER_LIST_BY_GROUP

    consumer_group: str
    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterClientRequestHeader:
    """UNREGISTER_CLIENT: sent to every broker on shutdown."""

    REQUEST_CODE: ClassVar[int | None] = 35  # UNREGISTER_CLIENT

    client_id: str = field(metadata=_wire("clientID"))
    producer_group: str | None = None
    consumer_group: str | None = None
    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class NotifyConsumerIdsChangedRequestHeader:
    """NOTIFY_CONSUMER_IDS_CHANGED (broker -> client, oneway): rebalance now."""

    REQUEST_CODE: ClassVar[int | None] = 40  # NOTIFY_CONSUMER_IDS_CHANGED

    consumer_group: str
    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class LockBatchMqRequestHeader:
    """LOCK_BATCH_MQ: no fields (the body is LockBatchRequestBody)."""

    REQUEST_CODE: ClassVar[int | None] = 41  # LOCK_BATCH_MQ

    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class UnlockBatchMqRequestHeader:
    """UNLOCK_BATCH_MQ: no fields (the body is UnlockBatchRequestBody)."""

    REQUEST_CODE: ClassVar[int | None] = 42  # UNLOCK_BATCH_MQ

    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class ResetOffsetRequestHeader:
    """RESET_CONSUMER_CLIENT_OFFSET (broker -> client, oneway); body is ResetOffsetBody."""

    REQUEST_CODE: ClassVar[int | None] = 220  # RESET_CONSUMER_CLIENT_OFFSET

    topic: str
    group: str
    timestamp: Int64
    is_force: bool
    queue_id: Int32 = -1
    offset: Int64 | None = None
    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumerRunningInfoRequestHeader:
    """GET_CONSUMER_RUNNING_INFO (broker -> client, needs a reply)."""

    REQUEST_CODE: ClassVar[int | None] = 307  # GET_CONSUMER_RUNNING_INFO

    consumer_group: str
    client_id: str
    jstack_enable: bool = False
    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumeMessageDirectlyResultRequestHeader:
    """CONSUME_MESSAGE_DIRECTLY (broker -> client, needs a reply); body is one stored message."""

    REQUEST_CODE: ClassVar[int | None] = 309  # CONSUME_MESSAGE_DIRECTLY

    consumer_group: str
    client_id: str | None = None
    msg_id: str | None = None
    broker_name: str | None = None  # the real Java field "brokerName", not the inherited "bname"
    topic: str | None = None
    topic_sys_flag: Int32 | None = None
    group_sys_flag: Int32 | None = None
    extra: Mapping[str, str] = _extra()


# --- transactions --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class EndTransactionRequestHeader:
    """END_TRANSACTION (oneway). ``commit_or_rollback``: 0 unknown, 8 commit, 12 rollback."""

    REQUEST_CODE: ClassVar[int | None] = 37  # END_TRANSACTION

    producer_group: str
    tran_state_table_offset: Int64
    commit_log_offset: Int64
    commit_or_rollback: Int32
    msg_id: str
    topic: str | None = None
    from_transaction_check: bool = False
    transaction_id: str | None = None
    broker_name: str | None = field(default=None, metadata=_wire("bname"))
    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckTransactionStateRequestHeader:
    """CHECK_TRANSACTION_STATE (broker -> client, oneway); body is the half message."""

    REQUEST_CODE: ClassVar[int | None] = 39  # CHECK_TRANSACTION_STATE

    tran_state_table_offset: Int64
    commit_log_offset: Int64
    topic: str | None = None
    msg_id: str | None = None
    transaction_id: str | None = None
    offset_msg_id: str | None = None
    broker_name: str | None = field(default=None, metadata=_wire("bname"))
    extra: Mapping[str, str] = _extra()


# --- name server, admin, queries -----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class GetRouteInfoRequestHeader:
    """GET_ROUTEINFO_BY_TOPIC (to the name server); the reply body is TopicRouteData.

    ``accept_standard_json_only=True`` asks for quoted map keys whatever our ``version``.
    """

    REQUEST_CODE: ClassVar[int | None] = 105  # GET_ROUTEINFO_BY_TOPIC

    topic: str
    accept_standard_json_only: bool | None = None
    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateAndCreateTopicRequestHeader:
    """UPDATE_AND_CREATE_TOPIC (admin, to a broker); Java's CreateTopicRequestHeader."""

    REQUEST_CODE: ClassVar[int | None] = 17  # UPDATE_AND_CREATE_TOPIC

    topic: str
    default_topic: str
    read_queue_nums: Int32
    write_queue_nums: Int32
    perm: Int32
    topic_filter_type: str  # "SINGLE_TAG" or "MULTI_TAG"
    order: bool
    topic_sys_flag: Int32 | None = None
    attributes: str | None = None
    force: bool | None = None
    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewMessageRequestHeader:
    """VIEW_MESSAGE_BY_ID: ``offset`` is the commit-log offset from an offset msgId."""

    REQUEST_CODE: ClassVar[int | None] = 33  # VIEW_MESSAGE_BY_ID

    offset: Int64
    topic: str | None = None
    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryMessageRequestHeader:
    """QUERY_MESSAGE: look messages up by key in the broker's index."""

    REQUEST_CODE: ClassVar[int | None] = 12  # QUERY_MESSAGE

    topic: str
    key: str
    max_num: Int32
    begin_timestamp: Int64
    end_timestamp: Int64
    extra: Mapping[str, str] = _extra()


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryMessageResponseHeader:
    """Reply to QUERY_MESSAGE."""

    REQUEST_CODE: ClassVar[int | None] = None

    index_last_update_timestamp: Int64
    index_last_update_phyoffset: Int64
    extra: Mapping[str, str] = _extra()


# --- the generic codec ---------------------------------------------------------------------------

_INT_TEXT = re.compile(r"[+-]?[0-9]{1,20}")  # Java parseInt/parseLong: optional sign, ASCII digits


def _encode_str(value: object) -> str:
    if type(value) is str:
        return value
    if isinstance(value, str):
        return str.__str__(value)  # a StrEnum member: its value, not its name
    raise ValueError(f"expected str, got {type(value).__name__}")


def _decode_str(text: str) -> str:
    if type(text) is not str:
        raise ValueError(f"expected a string value, got {type(text).__name__}")
    return text


def _encode_bool(value: object) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    raise ValueError(f"expected bool, got {type(value).__name__}")


def _decode_bool(text: str) -> bool:
    lowered = text.lower()  # Java's Boolean.parseBoolean ignores case
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    raise ValueError("expected 'true' or 'false'")


def _int_codec(bits: int) -> tuple[Callable[[object], str], Callable[[str], int]]:
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def encode(value: object) -> str:
        if type(value) is not int:
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"expected int, got {type(value).__name__}")
            value = int(value)  # an IntEnum/IntFlag: write the number, not the name
        if not low <= value <= high:
            raise ValueError(f"{value} is outside the int{bits} range")
        return str(value)

    def decode(text: str) -> int:
        # Fast path for the usual unsigned value; int() alone would also take "1_0", " 1" and
        # non-ASCII digits, which Java rejects.
        if not (text.isascii() and text.isdigit()) and _INT_TEXT.fullmatch(text) is None:
            raise ValueError("not a decimal integer")
        value = int(text)
        if not low <= value <= high:
            raise ValueError(f"outside the int{bits} range")
        return value

    return encode, decode


_CODECS: dict[object, tuple[Callable[[object], str], Callable[[str], Any]]] = {
    str: (_encode_str, _decode_str),
    bool: (_encode_bool, _decode_bool),
    32: _int_codec(32),
    64: _int_codec(64),
}


@dataclass(frozen=True, slots=True)
class _FieldPlan:
    attr: str
    key: str
    required: bool
    encode: Callable[[object], str]
    decode: Callable[[str], Any]


@dataclass(frozen=True, slots=True)
class _ClassPlan:
    fields: tuple[_FieldPlan, ...]
    keys: frozenset[str]
    values: Callable[[object], tuple[Any, ...]]  # all field values in one attrgetter call


_PLANS: dict[type, _ClassPlan] = {}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _codec_for(hint: Any, where: str) -> tuple[Callable[[object], str], Callable[[str], Any]]:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        if len(args) != 1:
            raise TypeError(f"{where}: unsupported union {hint!r}")
        hint = args[0]
    if typing.get_origin(hint) is Annotated:
        base, *marks = typing.get_args(hint)
        widths = [mark.bits for mark in marks if isinstance(mark, _JavaInt)]
        if base is int and len(widths) == 1:
            return _CODECS[widths[0]]
    elif hint in (str, bool):
        return _CODECS[hint]
    raise TypeError(f"{where}: unsupported header field type {hint!r} (use str, bool, Int32, Int64)")


def _values_getter(names: list[str]) -> Callable[[object], tuple[Any, ...]]:
    if len(names) > 1:
        return attrgetter(*names)  # already returns a tuple
    if names:
        single = attrgetter(names[0])
        return lambda obj: (single(obj),)
    return lambda obj: ()


def _build_plan(cls: type) -> _ClassPlan:
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not a header dataclass")
    hints = typing.get_type_hints(cls, include_extras=True)
    plans: list[_FieldPlan] = []
    for f in dataclasses.fields(cls):
        if f.name == "extra":
            continue
        encode, decode = _codec_for(hints[f.name], f"{cls.__name__}.{f.name}")
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        key = f.metadata.get("wire", _camel(f.name))
        plans.append(_FieldPlan(f.name, key, required, encode, decode))
    plan = _ClassPlan(tuple(plans), frozenset(p.key for p in plans), _values_getter([p.attr for p in plans]))
    _PLANS[cls] = plan
    return plan


def _plan_for(cls: type) -> _ClassPlan:
    plan = _PLANS.get(cls)
    return plan if plan is not None else _build_plan(cls)


def to_ext_fields(header: CustomHeader) -> dict[str, str]:
    """Encode a header as its ``extFields`` map.

    Ints are written in decimal, booleans as ``"true"``/``"false"``, ``None`` fields are left
    out, and the keys in ``header.extra`` are written back as they are.

    Raises:
        LocalProtocolError: a field holds a value the Java side cannot parse (wrong type, an
            int outside its Java range, a required field set to ``None``), or ``extra``
            repeats a key the header class defines.
    """
    cls = type(header)
    plan = _plan_for(cls)
    extra = header.extra
    if extra:
        clash = plan.keys.intersection(extra)
        if clash:
            raise LocalProtocolError(f"{cls.__name__}.extra repeats defined keys {sorted(clash)}")
        out = dict(extra)
    else:
        out = {}
    for fp, value in zip(plan.fields, plan.values(header), strict=True):
        if value is None:
            if fp.required:
                raise LocalProtocolError(f"{cls.__name__}.{fp.attr} ({fp.key!r}) is required")
            continue
        try:
            out[fp.key] = fp.encode(value)
        except ValueError as exc:
            raise LocalProtocolError(f"{cls.__name__}.{fp.attr} ({fp.key!r}): {exc}") from None
    return out


def from_ext_fields(cls: type[H], ext: Mapping[str, str] | None) -> H:
    """Decode an ``extFields`` map (``None`` = no map) into a header of class ``cls``.

    Keys ``cls`` does not define are kept in the result's ``extra``.

    Raises:
        MalformedHeader: a required key is missing, or a value does not parse as the field's
            Java type (naming the class and the key).
    """
    plan = _plan_for(cls)
    if ext is None:
        ext = {}
    kwargs: dict[str, Any] = {}
    seen = 0
    for fp in plan.fields:
        text = ext.get(fp.key)
        if text is None:
            if fp.required:
                raise MalformedHeader(f"{cls.__name__}: required extFields key {fp.key!r} is missing")
            continue
        seen += 1
        try:
            kwargs[fp.attr] = fp.decode(text)
        except (ValueError, TypeError, AttributeError):
            raise MalformedHeader(
                f"{cls.__name__}: extFields key {fp.key!r} has an unparseable value {text!r}"
            ) from None
    if seen != len(ext):
        kwargs["extra"] = {k: v for k, v in ext.items() if k not in plan.keys}
    return cls(**kwargs)


# Build every plan at import: a malformed class fails here, and no first call pays for reflection.
for _cls in (
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
    EndTransactionRequestHeader,
    CheckTransactionStateRequestHeader,
    GetRouteInfoRequestHeader,
    UpdateAndCreateTopicRequestHeader,
    ViewMessageRequestHeader,
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
):
    _build_plan(_cls)
del _cls
