"""Consumer diagnostics bodies: running info (GET_CONSUMER_RUNNING_INFO) and direct consumption results.

A broker forwards GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309) from an admin
tool to one consumer client; the client answers with one of these JSON bodies, which the broker
hands back to the tool unchanged.

Wire format (fastjson, keys in alphabetical order, ``MessageQueue`` objects as map keys)::

    ConsumerRunningInfo  {jstack?, mqPopTable:{<MessageQueue>:PopProcessQueueInfo}, mqTable:{<MessageQueue>:
                          ProcessQueueInfo}, properties:{str:str}, statusTable:{topic:ConsumeStatus},
                          subscriptionSet:[SubscriptionData], userConsumerInfo:{str:str}}
    ProcessQueueInfo     {cachedMsgCount, cachedMsgMaxOffset, cachedMsgMinOffset, cachedMsgSizeInMiB,
                          commitOffset, droped, lastConsumeTimestamp, lastLockTimestamp,
                          lastPullTimestamp, locked, transactionMsgCount, transactionMsgMaxOffset,
                          transactionMsgMinOffset, tryUnlockTimes}
    PopProcessQueueInfo  {droped, lastPopTimestamp, waitAckCount}
    ConsumeStatus        {consumeFailedMsgs, consumeFailedTPS, consumeOKTPS, consumeRT, pullRT, pullTPS}
    ConsumeMessageDirectlyResult
                         {autoCommit, consumeResult:CMResult name, order, remark?, spentTimeMills}

Quirks kept for compatibility: Java 5.3.3 spells ``dropped`` as ``droped`` (newer sources say
``dropped``; we write ``droped`` and read either); ``properties`` is a ``java.util.Properties`` whose
values tools read as strings (non-string values are turned into text on decode); ``mqPopTable``
holds the queues a consumer pops (``client_rebalance=False``), empty otherwise, and its
``PopProcessQueueInfo`` also spells ``droped``. Timestamps are epoch milliseconds.

Admin tools rely on two properties: ``mqadmin consumerStatus`` parses
:data:`PROP_CONSUMER_START_TIMESTAMP` as a long and :data:`PROP_CONSUME_TYPE` as a ConsumeType name,
and fails without them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Self

from rocketmq_py.errors import MalformedBody
from rocketmq_py.protocol._bodies import MessageQueue, SubscriptionData
from rocketmq_py.protocol._fastjson import FrozenObject
from rocketmq_py.protocol._json_body import JsonBody, decode_body, encode_body

__all__ = [
    "PROP_ALLOCATE_STRATEGY",
    "PROP_CLIENT_VERSION",
    "PROP_CONSUMER_START_TIMESTAMP",
    "PROP_CONSUME_ORDERLY",
    "PROP_CONSUME_TYPE",
    "PROP_NAMESERVER_ADDR",
    "PROP_THREADPOOL_CORE_SIZE",
    "ConsumeMessageDirectlyResult",
    "ConsumeRateStatus",
    "ConsumeResult",
    "ConsumerRunningInfo",
    "PopProcessQueueInfo",
    "ProcessQueueInfo",
]

#: The name server list the consumer uses.
PROP_NAMESERVER_ADDR: Final = "PROP_NAMESERVER_ADDR"
#: Consume threads (for us: consume workers).
PROP_THREADPOOL_CORE_SIZE: Final = "PROP_THREADPOOL_CORE_SIZE"
#: ``"true"`` for an orderly consumer (Java's key has no underscore between the words).
PROP_CONSUME_ORDERLY: Final = "PROP_CONSUMEORDERLY"
#: A ConsumeType name, ``CONSUME_PASSIVELY`` for push consumers (required by ``mqadmin consumerStatus``).
PROP_CONSUME_TYPE: Final = "PROP_CONSUME_TYPE"
#: The client version, e.g. ``V5_3_3``.
PROP_CLIENT_VERSION: Final = "PROP_CLIENT_VERSION"
#: Start time in epoch ms, decimal (required by ``mqadmin consumerStatus``).
PROP_CONSUMER_START_TIMESTAMP: Final = "PROP_CONSUMER_START_TIMESTAMP"
#: The allocation strategy. Java copies every consumer field into the properties; this one holds
#: the strategy object's ``toString()``, e.g. ``org.apache...AllocateMessageQueueAveragely@1b2c3d``.
PROP_ALLOCATE_STRATEGY: Final = "allocateMessageQueueStrategy"


def _object(value: Any, where: str) -> Mapping[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise MalformedBody(f"{where}: expected a JSON object, got {type(value).__name__}")
    return value


def _int(obj: Mapping[Any, Any], key: str, where: str) -> int:
    value = obj.get(key)
    if value is None:
        return 0
    if type(value) is not int:
        raise MalformedBody(f"{where}.{key}: expected an integer, got {type(value).__name__}")
    return value


def _float(obj: Mapping[Any, Any], key: str, where: str) -> float:
    value = obj.get(key)
    if value is None:
        return 0.0
    if type(value) not in (int, float):
        raise MalformedBody(f"{where}.{key}: expected a number, got {type(value).__name__}")
    return float(value)


def _bool(obj: Mapping[Any, Any], key: str, where: str, default: bool = False) -> bool:
    value = obj.get(key)
    if value is None:
        return default
    if type(value) is not bool:
        raise MalformedBody(f"{where}.{key}: expected a boolean, got {type(value).__name__}")
    return value


def _text(value: Any) -> str:
    # Properties values are strings when Java uses setProperty; anything else prints as Java would.
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


def _string_map(value: Any, where: str) -> dict[str, str]:
    return {str(k): _text(v) for k, v in _object(value, where).items()}


def _mq_key(key: Any, where: str) -> MessageQueue:
    if not isinstance(key, Mapping):
        raise MalformedBody(f"{where}: expected MessageQueue object keys, got {key!r}")
    return MessageQueue.from_json(key)


def _subscription_order(sub: SubscriptionData) -> str:
    return f"{sub.topic}@{sub.sub_string}"  # Java SubscriptionData.compareTo (a TreeSet)


@dataclass(frozen=True, slots=True)
class ProcessQueueInfo(JsonBody):
    """One owned queue's state in a consumer (Java ``ProcessQueueInfo``); timestamps in epoch ms."""

    commit_offset: int = 0
    cached_msg_min_offset: int = 0
    cached_msg_max_offset: int = 0
    cached_msg_count: int = 0
    cached_msg_size_in_mib: int = 0
    transaction_msg_min_offset: int = 0
    transaction_msg_max_offset: int = 0
    transaction_msg_count: int = 0
    locked: bool = False
    try_unlock_times: int = 0
    last_lock_timestamp: int = 0
    dropped: bool = False
    last_pull_timestamp: int = 0
    last_consume_timestamp: int = 0

    def to_json(self) -> dict[str, Any]:
        """The Java field names; ``dropped`` as Java spells it (``droped``)."""
        return {
            "cachedMsgCount": self.cached_msg_count,
            "cachedMsgMaxOffset": self.cached_msg_max_offset,
            "cachedMsgMinOffset": self.cached_msg_min_offset,
            "cachedMsgSizeInMiB": self.cached_msg_size_in_mib,
            "commitOffset": self.commit_offset,
            "droped": self.dropped,
            "lastConsumeTimestamp": self.last_consume_timestamp,
            "lastLockTimestamp": self.last_lock_timestamp,
            "lastPullTimestamp": self.last_pull_timestamp,
            "locked": self.locked,
            "transactionMsgCount": self.transaction_msg_count,
            "transactionMsgMaxOffset": self.transaction_msg_max_offset,
            "transactionMsgMinOffset": self.transaction_msg_min_offset,
            "tryUnlockTimes": self.try_unlock_times,
        }

    @classmethod
    def from_json(cls, value: Any) -> Self:
        """Read Java's field names; ``dropped`` from ``droped`` (Java's spelling) or ``dropped``.

        Raises:
            MalformedBody: not an object, or a field of the wrong type.
        """
        where = cls.__name__
        obj = _object(value, where)
        dropped_key = "droped" if obj.get("droped") is not None else "dropped"
        return cls(
            commit_offset=_int(obj, "commitOffset", where),
            cached_msg_min_offset=_int(obj, "cachedMsgMinOffset", where),
            cached_msg_max_offset=_int(obj, "cachedMsgMaxOffset", where),
            cached_msg_count=_int(obj, "cachedMsgCount", where),
            cached_msg_size_in_mib=_int(obj, "cachedMsgSizeInMiB", where),
            transaction_msg_min_offset=_int(obj, "transactionMsgMinOffset", where),
            transaction_msg_max_offset=_int(obj, "transactionMsgMaxOffset", where),
            transaction_msg_count=_int(obj, "transactionMsgCount", where),
            locked=_bool(obj, "locked", where),
            try_unlock_times=_int(obj, "tryUnlockTimes", where),
            last_lock_timestamp=_int(obj, "lastLockTimestamp", where),
            dropped=_bool(obj, dropped_key, where),
            last_pull_timestamp=_int(obj, "lastPullTimestamp", where),
            last_consume_timestamp=_int(obj, "lastConsumeTimestamp", where),
        )


@dataclass(frozen=True, slots=True)
class PopProcessQueueInfo(JsonBody):
    """One queue a consumer pops (Java ``PopProcessQueueInfo``).

    Attributes:
        wait_ack_count: messages popped and not acknowledged (or re-timed) yet.
        dropped: the queue is no longer popped.
        last_pop_timestamp: epoch ms of the last POP_MESSAGE.
    """

    wait_ack_count: int = 0
    dropped: bool = False
    last_pop_timestamp: int = 0

    def to_json(self) -> dict[str, Any]:
        """The Java field names; ``dropped`` as Java spells it (``droped``)."""
        return {
            "droped": self.dropped,
            "lastPopTimestamp": self.last_pop_timestamp,
            "waitAckCount": self.wait_ack_count,
        }

    @classmethod
    def from_json(cls, value: Any) -> Self:
        """Read Java's field names; ``dropped`` from ``droped`` or ``dropped``.

        Raises:
            MalformedBody: not an object, or a field of the wrong type.
        """
        where = cls.__name__
        obj = _object(value, where)
        dropped_key = "droped" if obj.get("droped") is not None else "dropped"
        return cls(
            wait_ack_count=_int(obj, "waitAckCount", where),
            dropped=_bool(obj, dropped_key, where),
            last_pop_timestamp=_int(obj, "lastPopTimestamp", where),
        )


@dataclass(frozen=True, slots=True)
class ConsumeRateStatus(JsonBody):
    """One topic's pull and consume rates (Java ``ConsumeStatus``): RT in ms, TPS per second.

    ``consume_failed_msgs`` counts failures over the last hour.
    """

    pull_rt: float = 0.0
    pull_tps: float = 0.0
    consume_rt: float = 0.0
    consume_ok_tps: float = 0.0
    consume_failed_tps: float = 0.0
    consume_failed_msgs: int = 0

    def to_json(self) -> dict[str, Any]:
        """The Java field names (``pullRT``, ``consumeOKTPS``, ...), rates as floats."""
        return {
            "consumeFailedMsgs": self.consume_failed_msgs,
            "consumeFailedTPS": float(self.consume_failed_tps),
            "consumeOKTPS": float(self.consume_ok_tps),
            "consumeRT": float(self.consume_rt),
            "pullRT": float(self.pull_rt),
            "pullTPS": float(self.pull_tps),
        }

    @classmethod
    def from_json(cls, value: Any) -> Self:
        """Read Java's field names; a missing field is 0.

        Raises:
            MalformedBody: not an object, or a field of the wrong type.
        """
        where = cls.__name__
        obj = _object(value, where)
        return cls(
            pull_rt=_float(obj, "pullRT", where),
            pull_tps=_float(obj, "pullTPS", where),
            consume_rt=_float(obj, "consumeRT", where),
            consume_ok_tps=_float(obj, "consumeOKTPS", where),
            consume_failed_tps=_float(obj, "consumeFailedTPS", where),
            consume_failed_msgs=_int(obj, "consumeFailedMsgs", where),
        )


@dataclass(frozen=True, slots=True)
class ConsumerRunningInfo(JsonBody):
    """A consumer's answer to GET_CONSUMER_RUNNING_INFO (Java ``ConsumerRunningInfo``).

    Attributes:
        properties: configuration and identity (see the ``PROP_*`` keys).
        subscription_set: the group's subscriptions (Java writes them sorted by topic).
        mq_table: every owned queue and its state.
        status_table: rates per subscribed topic.
        jstack: a thread dump, only when the request asked for one.
        user_consumer_info: free-form entries (Java's ``userConsumerInfo``).
        mq_pop_table: every queue the consumer pops and its state (Java's ``mqPopTable``).
    """

    _OBJECT_KEYS: ClassVar[bool] = True

    properties: Mapping[str, str] = field(default_factory=dict, hash=False)
    subscription_set: tuple[SubscriptionData, ...] = ()
    mq_table: Mapping[MessageQueue, ProcessQueueInfo] = field(default_factory=dict, hash=False)
    status_table: Mapping[str, ConsumeRateStatus] = field(default_factory=dict, hash=False)
    jstack: str | None = None
    user_consumer_info: Mapping[str, str] = field(default_factory=dict, hash=False)
    mq_pop_table: Mapping[MessageQueue, PopProcessQueueInfo] = field(default_factory=dict, hash=False)

    def encode(self) -> bytes:
        """The body bytes (fastjson form, keys sorted)."""
        return encode_body(self)

    @classmethod
    def decode(cls, body: bytes | bytearray | memoryview | str) -> Self:
        """Decode a body as a Java or Python consumer writes it.

        Raises:
            MalformedBody: not JSON, or not the expected shape.
        """
        return decode_body(cls, body)

    def to_json(self) -> dict[str, Any]:
        """Java's layout: queues as object keys (both tables), subscriptions sorted."""
        out: dict[str, Any] = {
            "mqPopTable": {FrozenObject(mq.to_json()): pq.to_json() for mq, pq in self.mq_pop_table.items()},
            "mqTable": {FrozenObject(mq.to_json()): pq.to_json() for mq, pq in self.mq_table.items()},
            "properties": dict(self.properties),
            "statusTable": {topic: status.to_json() for topic, status in self.status_table.items()},
            "subscriptionSet": [
                sub.to_json() for sub in sorted(self.subscription_set, key=_subscription_order)
            ],
            "userConsumerInfo": dict(self.user_consumer_info),
        }
        if self.jstack is not None:
            out["jstack"] = self.jstack
        return out

    @classmethod
    def from_json(cls, value: Any) -> Self:
        """Read Java's layout (queues as object keys); missing tables are empty.

        Raises:
            MalformedBody: not the expected shape.
        """
        where = cls.__name__
        obj = _object(value, where)
        subs = obj.get("subscriptionSet")
        if subs is None:
            subs = []
        if not isinstance(subs, list):
            raise MalformedBody(f"{where}.subscriptionSet: expected an array")
        mq_table = {
            _mq_key(key, f"{where}.mqTable"): ProcessQueueInfo.from_json(info)
            for key, info in _object(obj.get("mqTable"), f"{where}.mqTable").items()
        }
        mq_pop_table = {
            _mq_key(key, f"{where}.mqPopTable"): PopProcessQueueInfo.from_json(info)
            for key, info in _object(obj.get("mqPopTable"), f"{where}.mqPopTable").items()
        }
        status_table = {
            str(topic): ConsumeRateStatus.from_json(status)
            for topic, status in _object(obj.get("statusTable"), f"{where}.statusTable").items()
        }
        jstack = obj.get("jstack")
        if jstack is not None and not isinstance(jstack, str):
            raise MalformedBody(f"{where}.jstack: expected a string")
        return cls(
            properties=_string_map(obj.get("properties"), f"{where}.properties"),
            subscription_set=tuple(SubscriptionData.from_json(sub) for sub in subs),
            mq_table=mq_table,
            status_table=status_table,
            jstack=jstack,
            user_consumer_info=_string_map(obj.get("userConsumerInfo"), f"{where}.userConsumerInfo"),
            mq_pop_table=mq_pop_table,
        )


class ConsumeResult(enum.StrEnum):
    """How a directly consumed message fared (Java ``CMResult``)."""

    CR_SUCCESS = "CR_SUCCESS"
    CR_LATER = "CR_LATER"
    CR_ROLLBACK = "CR_ROLLBACK"
    CR_COMMIT = "CR_COMMIT"
    CR_THROW_EXCEPTION = "CR_THROW_EXCEPTION"
    CR_RETURN_NULL = "CR_RETURN_NULL"


@dataclass(frozen=True, slots=True)
class ConsumeMessageDirectlyResult(JsonBody):
    """A consumer's answer to CONSUME_MESSAGE_DIRECTLY (Java ``ConsumeMessageDirectlyResult``).

    Attributes:
        order: consumed by an orderly listener.
        auto_commit: the orderly listener's auto-commit mode (``True`` for concurrent ones).
        consume_result: what the listener did.
        remark: the listener's status name, or the error.
        spent_time_mills: listener time in ms (Java's spelling).
    """

    order: bool = False
    auto_commit: bool = True
    consume_result: ConsumeResult = ConsumeResult.CR_SUCCESS
    remark: str | None = None
    spent_time_mills: int = 0

    def encode(self) -> bytes:
        """The body bytes (JSON, keys sorted)."""
        return encode_body(self)

    @classmethod
    def decode(cls, body: bytes | bytearray | memoryview | str) -> Self:
        """Decode a body as a Java or Python consumer writes it.

        Raises:
            MalformedBody: not JSON, or not the expected shape.
        """
        return decode_body(cls, body)

    def to_json(self) -> dict[str, Any]:
        """Java's field names; ``remark`` only when there is one."""
        out: dict[str, Any] = {
            "autoCommit": self.auto_commit,
            "consumeResult": self.consume_result.value,
            "order": self.order,
            "spentTimeMills": self.spent_time_mills,
        }
        if self.remark is not None:
            out["remark"] = self.remark
        return out

    @classmethod
    def from_json(cls, value: Any) -> Self:
        """Read Java's field names; ``consumeResult`` is required.

        Raises:
            MalformedBody: ``consumeResult`` missing or not a ``CMResult`` name, or a field of
                the wrong type.
        """
        where = cls.__name__
        obj = _object(value, where)
        name = obj.get("consumeResult")
        if name is None:
            raise MalformedBody(f"{where}: required key 'consumeResult' is missing")
        try:
            result = ConsumeResult[name] if isinstance(name, str) else None
        except KeyError:
            result = None
        if result is None:
            raise MalformedBody(f"{where}.consumeResult: unknown CMResult {name!r}")
        remark = obj.get("remark")
        if remark is not None and not isinstance(remark, str):
            raise MalformedBody(f"{where}.remark: expected a string")
        return cls(
            order=_bool(obj, "order", where),
            auto_commit=_bool(obj, "autoCommit", where, True),
            consume_result=result,
            remark=remark,
            spent_time_mills=_int(obj, "spentTimeMills", where),
        )
