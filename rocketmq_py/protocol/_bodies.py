"""JSON request/response bodies: heartbeat, queue locks, consumer lists, routes, offset resets.

Wire format
-----------
These bodies are JSON objects written by Java's fastjson: UTF-8, compact, fields in
alphabetical order, ``null`` fields left out, enums by name, Java ``Set``s as arrays. Two
departures from standard JSON occur (see :mod:`._fastjson`): integer map keys written bare
(``"brokerAddrs":{0:"host:10911"}`` in route data from old name servers, and always in cluster
info) and ``MessageQueue`` objects used as map keys (``ResetOffsetBody.offsetTable``). Decoding
therefore always goes through :func:`parse_fastjson`, which accepts both forms.

Shapes (wire keys)::

    HeartbeatData     {clientID, consumerDataSet:[ConsumerData], heartbeatFingerprint,
                       producerDataSet:[ProducerData], withoutSub}
    ProducerData      {groupName}
    ConsumerData      {consumeFromWhere, consumeType, groupName, messageModel,
                       subscriptionDataSet:[SubscriptionData], unitMode}
    SubscriptionData  {classFilterMode, codeSet:[int], expressionType, subString, subVersion,
                       tagsSet:[str], topic}
    MessageQueue      {brokerName, queueId, topic}
    LockBatchRequestBody / UnlockBatchRequestBody
                      {clientId, consumerGroup, mqSet:[MessageQueue], onlyThisBroker}
    LockBatchResponseBody  {lockOKMQSet:[MessageQueue]}
    ConsumerListBody  {consumerIdList:[str]}
    TopicRouteData    {brokerDatas:[BrokerData], filterServerTable:{addr:[str]},
                       orderTopicConf?, queueDatas:[QueueData], topicQueueMappingByBroker?}
    QueueData         {brokerName, perm, readQueueNums, topicSysFlag, writeQueueNums}
    BrokerData        {brokerAddrs:{<brokerId>:addr}, brokerName, cluster, enableActingMaster,
                       zoneName?}
    ResetOffsetBody   {offsetTable:{<MessageQueue object>:offset}}

:func:`encode_body` writes compact JSON with sorted keys (so output is deterministic); sets are
written sorted. :func:`decode_body` ignores keys it does not know and raises
:class:`MalformedBody` for a wrong type or a missing required key.
"""

from __future__ import annotations

import enum
import json
import re
import sys
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self, TypeVar

from rocketmq_py.errors import ClientError, LocalProtocolError, MalformedBody
from rocketmq_py.protocol._fastjson import FrozenObject, dump_fastjson, parse_fastjson

__all__ = [
    "SUB_ALL",
    "BrokerData",
    "ConsumeFromWhere",
    "ConsumeType",
    "ConsumerData",
    "ConsumerListBody",
    "ExpressionType",
    "HeartbeatData",
    "JsonBody",
    "LockBatchRequestBody",
    "LockBatchResponseBody",
    "MessageModel",
    "MessageQueue",
    "ProducerData",
    "QueueData",
    "ResetOffsetBody",
    "SubscriptionData",
    "TopicRouteData",
    "UnlockBatchRequestBody",
    "build_subscription_data",
    "decode_body",
    "encode_body",
    "java_string_hash",
]

#: Subscription expression meaning "every message" (Java SubscriptionData.SUB_ALL).
SUB_ALL = "*"


# --- Java String.hashCode and subscription expressions -------------------------------------------

_UTF16_NATIVE = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"  # array("H") is native
_JAVA_TRIMMED = "".join(chr(c) for c in range(0x21))  # String.trim(): every char <= U+0020


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode()``: ``h = 31*h + unit`` over UTF-16 code units, as an int32.

    A character outside the BMP counts as its two surrogate units, as in Java; lone surrogates
    are allowed (Java strings can hold them).
    """
    h = 0
    for unit in array("H", s.encode(_UTF16_NATIVE, "surrogatepass")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


class ExpressionType(enum.StrEnum):
    """How a subscription's ``subString`` is interpreted."""

    TAG = "TAG"
    SQL92 = "SQL92"


class ConsumeType(enum.StrEnum):
    """Consumer kind reported in heartbeats."""

    CONSUME_ACTIVELY = "CONSUME_ACTIVELY"  # pull consumer
    CONSUME_PASSIVELY = "CONSUME_PASSIVELY"  # push consumer
    CONSUME_POP = "CONSUME_POP"


class MessageModel(enum.StrEnum):
    """Whether a group shares the queues (CLUSTERING) or every member reads all (BROADCASTING)."""

    BROADCASTING = "BROADCASTING"
    CLUSTERING = "CLUSTERING"


class ConsumeFromWhere(enum.StrEnum):
    """Where a group without a committed offset starts (names as Java's enum)."""

    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = (
        "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST"
    )
    CONSUME_FROM_MIN_OFFSET = "CONSUME_FROM_MIN_OFFSET"
    CONSUME_FROM_MAX_OFFSET = "CONSUME_FROM_MAX_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


# --- typed access to decoded JSON ----------------------------------------------------------------

_MISSING: Any = object()
_INT_KEY = re.compile(r"-?[0-9]{1,19}")


def _object(value: Any, where: str) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise MalformedBody(f"{where}: expected a JSON object, got {type(value).__name__}")
    return value


def _get(obj: Mapping[Any, Any], key: str, kind: type, where: str, default: Any = _MISSING) -> Any:
    value = obj.get(key)
    if value is None:  # fastjson omits nulls; treat an explicit null the same way
        if default is _MISSING:
            raise MalformedBody(f"{where}: required key {key!r} is missing")
        return default
    if type(value) is not kind and not (kind is not int and isinstance(value, kind)):
        raise MalformedBody(f"{where}.{key}: expected {kind.__name__}, got {type(value).__name__}")
    return value


def _str(obj: Mapping[Any, Any], key: str, where: str, default: Any = _MISSING) -> str:
    value: str = _get(obj, key, str, where, default)
    return value


def _opt_str(obj: Mapping[Any, Any], key: str, where: str) -> str | None:
    value: str | None = _get(obj, key, str, where, None)
    return value


def _int(obj: Mapping[Any, Any], key: str, where: str, default: Any = _MISSING) -> int:
    value: int = _get(obj, key, int, where, default)  # exact int: rejects bool and float
    return value


def _bool(obj: Mapping[Any, Any], key: str, where: str, default: Any = _MISSING) -> bool:
    value: bool = _get(obj, key, bool, where, default)
    return value


def _list(obj: Mapping[Any, Any], key: str, where: str) -> list[Any]:
    value: list[Any] = _get(obj, key, list, where, [])
    return value


_E = TypeVar("_E", bound=enum.Enum)


def _enum(cls: type[_E], obj: Mapping[Any, Any], key: str, where: str) -> _E:
    name = _str(obj, key, where)
    try:
        return cls[name]
    except KeyError:
        raise MalformedBody(f"{where}.{key}: unknown {cls.__name__} {name!r}") from None


def _strings(values: Iterable[Any], where: str) -> tuple[str, ...]:
    out = tuple(values)
    if not all(type(v) is str for v in out):
        raise MalformedBody(f"{where}: expected a list of strings")
    return out


class JsonBody:
    """Base of the body types: :func:`encode_body` / :func:`decode_body` work on any subclass."""

    __slots__ = ()

    #: The body needs fastjson's object-as-key form (not expressible in standard JSON).
    _OBJECT_KEYS: ClassVar[bool] = False

    def to_json(self) -> Any:
        """This value as Python JSON data (dicts may have ``int``/``FrozenObject`` keys)."""
        raise NotImplementedError

    @classmethod
    def from_json(cls, value: Any) -> Self:
        """Build from parsed JSON data; raises :class:`MalformedBody` on a schema mismatch."""
        raise NotImplementedError


B = TypeVar("B", bound=JsonBody)


def encode_body(body: JsonBody, *, bare_keys: bool = False) -> bytes:
    """Encode a body as compact UTF-8 JSON with sorted keys.

    Args:
        body: the value to encode.
        bare_keys: write integer map keys unquoted, as fastjson's default output does (what an
            old name server sends); a fake server can use it to exercise the quirk.

    Raises:
        LocalProtocolError: a value JSON cannot carry (e.g. a string with a lone surrogate).
    """
    value = body.to_json()
    if bare_keys or body._OBJECT_KEYS:
        return dump_fastjson(value)
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False)
        return text.encode("utf-8")
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
        raise LocalProtocolError(f"cannot encode {type(body).__name__} as JSON: {exc}") from None


def decode_body(cls: type[B], data: bytes | bytearray | memoryview | str) -> B:
    """Decode a JSON body (standard or fastjson dialect) into ``cls``; unknown keys are ignored.

    Raises:
        MalformedBody: the bytes are not JSON, or do not fit the schema of ``cls``.
    """
    return cls.from_json(parse_fastjson(data))


# --- message queues and locks --------------------------------------------------------------------


@dataclass(frozen=True, slots=True, order=True)
class MessageQueue(JsonBody):
    """One queue of a topic on one broker; orders like Java's ``compareTo``.

    Ordering is ``(topic, broker_name, queue_id)``. Java compares strings by UTF-16 unit, Python
    by code point; the two agree for every name RocketMQ accepts (ASCII).
    """

    topic: str
    broker_name: str
    queue_id: int

    def to_json(self) -> dict[str, Any]:
        return {"brokerName": self.broker_name, "queueId": self.queue_id, "topic": self.topic}

    @classmethod
    def from_json(cls, value: Any) -> Self:
        obj = _object(value, "MessageQueue")
        return cls(
            _str(obj, "topic", "MessageQueue"),
            _str(obj, "brokerName", "MessageQueue"),
            _int(obj, "queueId", "MessageQueue"),
        )


def _mq_set(values: list[Any]) -> frozenset[MessageQueue]:
    return frozenset(MessageQueue.from_json(v) for v in values)


def _mq_list(queues: frozenset[MessageQueue]) -> list[dict[str, Any]]:
    return [mq.to_json() for mq in sorted(queues)]


@dataclass(frozen=True, slots=True, kw_only=True)
class _QueueLockBody(JsonBody):
    consumer_group: str
    client_id: str
    only_this_broker: bool = False
    mq_set: frozenset[MessageQueue] = frozenset()

    def to_json(self) -> dict[str, Any]:
        return {
            "clientId": self.client_id,
            "consumerGroup": self.consumer_group,
            "mqSet": _mq_list(self.mq_set),
            "onlyThisBroker": self.only_this_broker,
        }

    @classmethod
    def from_json(cls, value: Any) -> Self:
        where = cls.__name__
        obj = _object(value, where)
        return cls(
            consumer_group=_str(obj, "consumerGroup", where),
            client_id=_str(obj, "clientId", where),
            only_this_broker=_bool(obj, "onlyThisBroker", where, False),
            mq_set=_mq_set(_list(obj, "mqSet", where)),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class LockBatchRequestBody(_QueueLockBody):
    """LOCK_BATCH_MQ body: lock ``mq_set`` for ``client_id`` (orderly consumption)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UnlockBatchRequestBody(_QueueLockBody):
    """UNLOCK_BATCH_MQ body: release ``mq_set``; same fields as :class:`LockBatchRequestBody`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LockBatchResponseBody(JsonBody):
    """LOCK_BATCH_MQ reply: the subset of the requested queues that is now locked for us."""

    lock_ok_mq_set: frozenset[MessageQueue] = frozenset()

    def to_json(self) -> dict[str, Any]:
        return {"lockOKMQSet": _mq_list(self.lock_ok_mq_set)}

    @classmethod
    def from_json(cls, value: Any) -> Self:
        obj = _object(value, cls.__name__)
        return cls(lock_ok_mq_set=_mq_set(_list(obj, "lockOKMQSet", cls.__name__)))


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerListBody(JsonBody):
    """GET_CONSUMER_LIST_BY_GROUP reply: the client ids of the group's live members."""

    consumer_id_list: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"consumerIdList": list(self.consumer_id_list)}

    @classmethod
    def from_json(cls, value: Any) -> Self:
        where = cls.__name__
        obj = _object(value, where)
        return cls(consumer_id_list=_strings(_list(obj, "consumerIdList", where), where))


@dataclass(frozen=True, slots=True, kw_only=True)
class ResetOffsetBody(JsonBody):
    """RESET_CONSUMER_CLIENT_OFFSET body: the new offset of each queue.

    Always written in fastjson's form, with each ``MessageQueue`` object as a map key.
    """

    _OBJECT_KEYS: ClassVar[bool] = True

    offset_table: Mapping[MessageQueue, int] = field(default_factory=dict, hash=False)

    def to_json(self) -> dict[Any, Any]:
        return {"offsetTable": {FrozenObject(mq.to_json()): off for mq, off in self.offset_table.items()}}

    @classmethod
    def from_json(cls, value: Any) -> Self:
        where = f"{cls.__name__}.offsetTable"
        obj = _object(value, cls.__name__)
        table = _object(_get(obj, "offsetTable", dict, cls.__name__, {}), where)
        offsets: dict[MessageQueue, int] = {}
        for key, offset in table.items():
            if not isinstance(key, Mapping):
                raise MalformedBody(f"{where}: expected MessageQueue object keys, got {key!r}")
            if type(offset) is not int:
                raise MalformedBody(f"{where}: expected an int offset, got {type(offset).__name__}")
            offsets[MessageQueue.from_json(key)] = offset
        return cls(offset_table=offsets)


# --- heartbeat -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SubscriptionData(JsonBody):
    """One topic subscription of a consumer group (build it with :func:`build_subscription_data`).

    ``tags_set`` and ``code_set`` (the tags' :func:`java_string_hash`) are Java sets, written
    sorted; both are empty for ``"*"`` and for SQL92.
    """

    topic: str
    sub_string: str
    sub_version: int
    expression_type: ExpressionType = ExpressionType.TAG
    tags_set: frozenset[str] = frozenset()
    code_set: frozenset[int] = frozenset()
    class_filter_mode: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "classFilterMode": self.class_filter_mode,
            "codeSet": sorted(self.code_set),
            "expressionType": self.expression_type.value,
            "subString": self.sub_string,
            "subVersion": self.sub_version,
            "tagsSet": sorted(self.tags_set),
            "topic": self.topic,
        }

    @classmethod
    def from_json(cls, value: Any) -> Self:
        where = cls.__name__
        obj = _object(value, where)
        codes = _list(obj, "codeSet", where)
        if not all(type(code) is int for code in codes):
            raise MalformedBody(f"{where}.codeSet: expected a list of ints")
        return cls(
            topic=_str(obj, "topic", where),
            sub_string=_str(obj, "subString", where),
            sub_version=_int(obj, "subVersion", where),
            expression_type=(
                _enum(ExpressionType, obj, "expressionType", where)
                if obj.get("expressionType") is not None
                else ExpressionType.TAG
            ),
            tags_set=frozenset(_strings(_list(obj, "tagsSet", where), f"{where}.tagsSet")),
            code_set=frozenset(codes),
            class_filter_mode=_bool(obj, "classFilterMode", where, False),
        )


def build_subscription_data(
    topic: str,
    expression: str | None = SUB_ALL,
    *,
    sub_version: int,
    expression_type: ExpressionType = ExpressionType.TAG,
) -> SubscriptionData:
    """Build a subscription the way Java's ``FilterAPI`` does.

    TAG: ``None``, ``""`` or ``"*"`` subscribe to everything (``sub_string`` becomes ``"*"``);
    otherwise the expression is split on ``||``, each part trimmed like Java's ``String.trim``
    (chars <= U+0020), empty parts dropped; the rest form ``tags_set`` and their hashes
    ``code_set``. SQL92: the expression is kept as is, with no tags.

    Args:
        topic: the subscribed topic.
        expression: ``"*"``, ``"tagA || tagB"`` or an SQL92 condition.
        sub_version: the subscription version, Java uses the current time in ms.
        expression_type: TAG (default) or SQL92.

    Raises:
        ClientError: an SQL92 subscription without an expression, or a TAG expression made of
            nothing but ``||`` separators.
    """
    if expression_type is ExpressionType.SQL92:
        if not expression:
            raise ClientError("an SQL92 subscription needs an expression")
        return SubscriptionData(
            topic=topic, sub_string=expression, sub_version=sub_version, expression_type=expression_type
        )
    if not expression or expression == SUB_ALL:
        return SubscriptionData(topic=topic, sub_string=SUB_ALL, sub_version=sub_version)
    parts = expression.split("||")
    if not any(parts):  # Java's split drops trailing empty strings and then finds nothing
        raise ClientError(f"tag expression {expression!r} names no tag")
    tags = frozenset(tag for tag in (part.strip(_JAVA_TRIMMED) for part in parts) if tag)
    return SubscriptionData(
        topic=topic,
        sub_string=expression,
        sub_version=sub_version,
        tags_set=tags,
        code_set=frozenset(java_string_hash(tag) for tag in tags),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerData(JsonBody):
    """A producer group this client hosts."""

    group_name: str

    def to_json(self) -> dict[str, Any]:
        return {"groupName": self.group_name}

    @classmethod
    def from_json(cls, value: Any) -> Self:
        return cls(group_name=_str(_object(value, cls.__name__), "groupName", cls.__name__))


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerData(JsonBody):
    """A consumer group this client hosts, with its subscriptions (in the order given)."""

    group_name: str
    consume_type: ConsumeType
    message_model: MessageModel
    consume_from_where: ConsumeFromWhere
    subscription_data_set: tuple[SubscriptionData, ...] = ()
    unit_mode: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "consumeFromWhere": self.consume_from_where.value,
            "consumeType": self.consume_type.value,
            "groupName": self.group_name,
            "messageModel": self.message_model.value,
            "subscriptionDataSet": [sub.to_json() for sub in self.subscription_data_set],
            "unitMode": self.unit_mode,
        }

    @classmethod
    def from_json(cls, value: Any) -> Self:
        where = cls.__name__
        obj = _object(value, where)
        return cls(
            group_name=_str(obj, "groupName", where),
            consume_type=_enum(ConsumeType, obj, "consumeType", where),
            message_model=_enum(MessageModel, obj, "messageModel", where),
            consume_from_where=_enum(ConsumeFromWhere, obj, "consumeFromWhere", where),
            subscription_data_set=tuple(
                SubscriptionData.from_json(sub) for sub in _list(obj, "subscriptionDataSet", where)
            ),
            unit_mode=_bool(obj, "unitMode", where, False),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatData(JsonBody):
    """HEART_BEAT body: who this client is and which groups it hosts.

    ``heartbeat_fingerprint`` 0 and ``without_sub`` False are the classic (v1) heartbeat.
    """

    client_id: str
    producer_data_set: tuple[ProducerData, ...] = ()
    consumer_data_set: tuple[ConsumerData, ...] = ()
    heartbeat_fingerprint: int = 0
    without_sub: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "clientID": self.client_id,
            "consumerDataSet": [data.to_json() for data in self.consumer_data_set],
            "heartbeatFingerprint": self.heartbeat_fingerprint,
            "producerDataSet": [data.to_json() for data in self.producer_data_set],
            "withoutSub": self.without_sub,
        }

    @classmethod
    def from_json(cls, value: Any) -> Self:
        where = cls.__name__
        obj = _object(value, where)
        return cls(
            client_id=_str(obj, "clientID", where),
            producer_data_set=tuple(ProducerData.from_json(d) for d in _list(obj, "producerDataSet", where)),
            consumer_data_set=tuple(ConsumerData.from_json(d) for d in _list(obj, "consumerDataSet", where)),
            heartbeat_fingerprint=_int(obj, "heartbeatFingerprint", where, 0),
            without_sub=_bool(obj, "withoutSub", where, False),
        )


# --- routes --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueData(JsonBody):
    """A topic's queues on one broker; ``perm`` is the PermName bit set (R=4, W=2, INHERIT=1)."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerName": self.broker_name,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_json(cls, value: Any) -> Self:
        where = cls.__name__
        obj = _object(value, where)
        return cls(
            broker_name=_str(obj, "brokerName", where),
            read_queue_nums=_int(obj, "readQueueNums", where),
            write_queue_nums=_int(obj, "writeQueueNums", where),
            perm=_int(obj, "perm", where),
            topic_sys_flag=_int(obj, "topicSysFlag", where, 0),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerData(JsonBody):
    """One broker group: its addresses by broker id (0 = master, >= 1 = slaves)."""

    cluster: str
    broker_name: str
    broker_addrs: Mapping[int, str] = field(default_factory=dict, hash=False)
    zone_name: str | None = None
    enable_acting_master: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "brokerAddrs": dict(self.broker_addrs),
            "brokerName": self.broker_name,
            "cluster": self.cluster,
            "enableActingMaster": self.enable_acting_master,
        }
        if self.zone_name is not None:
            out["zoneName"] = self.zone_name
        return out

    @classmethod
    def from_json(cls, value: Any) -> Self:
        where = cls.__name__
        obj = _object(value, where)
        addrs: dict[int, str] = {}
        for key, addr in _object(_get(obj, "brokerAddrs", dict, where, {}), f"{where}.brokerAddrs").items():
            # "0" (standard JSON) and bare 0 (fastjson) both arrive as the text "0"
            if type(key) is not str or _INT_KEY.fullmatch(key) is None or type(addr) is not str:
                raise MalformedBody(f"{where}.brokerAddrs: bad entry {key!r}: {addr!r}")
            addrs[int(key)] = addr
        return cls(
            cluster=_str(obj, "cluster", where),
            broker_name=_str(obj, "brokerName", where),
            broker_addrs=addrs,
            zone_name=_opt_str(obj, "zoneName", where),
            enable_acting_master=_bool(obj, "enableActingMaster", where, False),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicRouteData(JsonBody):
    """GET_ROUTEINFO_BY_TOPIC reply, in the order the name server sent it.

    ``topic_queue_mapping_by_broker`` (5.x static topics) is kept as parsed, not interpreted.
    """

    queue_datas: tuple[QueueData, ...] = ()
    broker_datas: tuple[BrokerData, ...] = ()
    order_topic_conf: str | None = None
    filter_server_table: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    topic_queue_mapping_by_broker: Any = field(default=None, hash=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "brokerDatas": [data.to_json() for data in self.broker_datas],
            "filterServerTable": {addr: list(names) for addr, names in self.filter_server_table.items()},
            "queueDatas": [data.to_json() for data in self.queue_datas],
        }
        if self.order_topic_conf is not None:
            out["orderTopicConf"] = self.order_topic_conf
        if self.topic_queue_mapping_by_broker is not None:
            out["topicQueueMappingByBroker"] = self.topic_queue_mapping_by_broker
        return out

    @classmethod
    def from_json(cls, value: Any) -> Self:
        where = cls.__name__
        obj = _object(value, where)
        table_where = f"{where}.filterServerTable"
        table = _object(_get(obj, "filterServerTable", dict, where, {}), table_where)
        filters: dict[str, tuple[str, ...]] = {}
        for addr, names in table.items():
            if type(addr) is not str or type(names) is not list:
                raise MalformedBody(f"{table_where}: bad entry {addr!r}")
            filters[addr] = _strings(names, table_where)
        return cls(
            queue_datas=tuple(QueueData.from_json(d) for d in _list(obj, "queueDatas", where)),
            broker_datas=tuple(BrokerData.from_json(d) for d in _list(obj, "brokerDatas", where)),
            order_topic_conf=_opt_str(obj, "orderTopicConf", where),
            filter_server_table=filters,
            topic_queue_mapping_by_broker=obj.get("topicQueueMappingByBroker"),
        )
