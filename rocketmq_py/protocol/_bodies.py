"""JSON request/response bodies: heartbeat, queue locks, consumer lists, routes, offset resets.

Wire format
-----------
Each body is a :class:`JsonBody` dataclass: its fields are the keys of a fastjson object, named and
converted by the mapping of :mod:`._json_body` (camelCase field names unless a field names its
key, enums by name, sets as sorted arrays, ``None`` left out). Two bodies use fastjson's
departures from standard JSON: integer map keys written bare (``"brokerAddrs":{0:"host:10911"}``
in route data from old name servers, and always in cluster info) and ``MessageQueue`` objects used
as map keys (``ResetOffsetBody.offsetTable``).

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

Every body here fits the declarative mapping; none writes its own ``to_json`` / ``from_json``.
"""

from __future__ import annotations

import enum
import sys
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rocketmq_py.errors import ClientError
from rocketmq_py.protocol._ext_fields import wire_key
from rocketmq_py.protocol._json_body import JsonBody, prepare_bodies

__all__ = [
    "SUB_ALL",
    "BrokerData",
    "ConsumeFromWhere",
    "ConsumeType",
    "ConsumerData",
    "ConsumerListBody",
    "ExpressionType",
    "HeartbeatData",
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


@dataclass(frozen=True, slots=True, kw_only=True)
class _QueueLockBody(JsonBody):
    consumer_group: str
    client_id: str
    only_this_broker: bool = False
    mq_set: frozenset[MessageQueue] = frozenset()


@dataclass(frozen=True, slots=True, kw_only=True)
class LockBatchRequestBody(_QueueLockBody):
    """LOCK_BATCH_MQ body: lock ``mq_set`` for ``client_id`` (orderly consumption)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UnlockBatchRequestBody(_QueueLockBody):
    """UNLOCK_BATCH_MQ body: release ``mq_set``; same fields as :class:`LockBatchRequestBody`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LockBatchResponseBody(JsonBody):
    """LOCK_BATCH_MQ reply: the subset of the requested queues that is now locked for us."""

    lock_ok_mq_set: frozenset[MessageQueue] = field(default=frozenset(), metadata=wire_key("lockOKMQSet"))


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerListBody(JsonBody):
    """GET_CONSUMER_LIST_BY_GROUP reply: the client ids of the group's live members."""

    consumer_id_list: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ResetOffsetBody(JsonBody):
    """RESET_CONSUMER_CLIENT_OFFSET body: the new offset of each queue.

    Always written in fastjson's form, with each ``MessageQueue`` object as a map key.
    """

    _OBJECT_KEYS: ClassVar[bool] = True

    offset_table: Mapping[MessageQueue, int] = field(default_factory=dict, hash=False)


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


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerData(JsonBody):
    """A consumer group this client hosts, with its subscriptions (in the order given)."""

    group_name: str
    consume_type: ConsumeType
    message_model: MessageModel
    consume_from_where: ConsumeFromWhere
    subscription_data_set: tuple[SubscriptionData, ...] = ()
    unit_mode: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatData(JsonBody):
    """HEART_BEAT body: who this client is and which groups it hosts.

    ``heartbeat_fingerprint`` 0 and ``without_sub`` False are the classic (v1) heartbeat.
    """

    client_id: str = field(metadata=wire_key("clientID"))
    producer_data_set: tuple[ProducerData, ...] = ()
    consumer_data_set: tuple[ConsumerData, ...] = ()
    heartbeat_fingerprint: int = 0
    without_sub: bool = False


# --- routes --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueData(JsonBody):
    """A topic's queues on one broker; ``perm`` is the PermName bit set (R=4, W=2, INHERIT=1)."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerData(JsonBody):
    """One broker group: its addresses by broker id (0 = master, >= 1 = slaves)."""

    cluster: str
    broker_name: str
    broker_addrs: Mapping[int, str] = field(default_factory=dict, hash=False)
    zone_name: str | None = None
    enable_acting_master: bool = False


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


# Build every plan at import: a malformed class fails here, and no first call pays for reflection.
prepare_bodies(
    MessageQueue,
    LockBatchRequestBody,
    UnlockBatchRequestBody,
    LockBatchResponseBody,
    ConsumerListBody,
    ResetOffsetBody,
    SubscriptionData,
    ProducerData,
    ConsumerData,
    HeartbeatData,
    QueueData,
    BrokerData,
    TopicRouteData,
)
