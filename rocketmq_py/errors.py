"""The one error tree of rocketmq-py.

Every error the SDK raises on purpose is a :class:`RocketMQError`. The tree::

    RocketMQError
    ├── ProtocolError                 bytes that are not the RocketMQ remoting protocol
    │   ├── LocalProtocolError        we were asked to encode something the protocol cannot carry
    │   └── RemoteProtocolError       the peer sent bytes we cannot decode
    │       ├── FrameTooLarge         a length prefix above the configured maximum
    │       ├── MalformedFrame        negative/lying lengths, truncated frames
    │       ├── UnknownSerializeType  header type byte other than JSON (0) / ROCKETMQ (1)
    │       ├── MalformedHeader       header JSON/binary layout that does not parse
    │       ├── MalformedBody         a JSON body that does not parse into its schema
    │       └── MalformedMessage      a stored-message body that ends mid-message or lies
    │           └── CompressionUnavailable  lz4/zstd body without the optional extra installed
    ├── TransportError                the connection, not the broker, failed
    │   ├── RequestTimeout            no reply within the call's deadline
    │   │   └── RequestReplyTimeout   a request was sent, but no reply message came in time
    │   └── ConnectionFailed          connect refused/reset/closed, incl. mid-request
    │       └── TlsMismatch           TLS on one side, plaintext on the other (most probably)
    ├── BrokerError                   the broker or NameServer answered with a non-success code
    │   ├── one subclass per response code (registry: :func:`broker_error_for`)
    │   ├── RequestCodeNotSupported (3)
    │   │   └── UnsupportedByProxy    a request a 5.x Proxy does not serve; says what to use instead
    │   └── NoPermission (16)
    │       └── AuthenticationFailed  wrong secret, unknown access key, no credentials (ACL)
    ├── ClientError                   the caller asked for something invalid (no I/O happened)
    │   ├── InvalidMessage            topic name, empty/oversized body, reserved property
    │   │   ├── InvalidTopic          empty, too long, illegal characters, or a system topic
    │   │   ├── EmptyBody             a message with no body
    │   │   ├── MessageTooLarge       a body above the producer's maximum message size
    │   │   ├── ReservedProperty      a property only the client or broker may set
    │   │   └── DeliveryTimeNotSupported  a delivery time for a broker older than 5.0 (none sent)
    │   ├── InvalidOption             a client/connector option out of range or malformed (also a ValueError)
    │   │   └── InvalidGroup          a producer/consumer group name that the broker rejects
    │   ├── InvalidRecallHandle       a recall handle that is not one a send returned
    │   └── RecallNotSupported        a recall for a broker older than 5.3.2 (none sent)
    ├── StateError                    the object is in the wrong state (closed, not started)
    ├── ListenerCancelled             an asyncio listener or callback raised asyncio.CancelledError
    ├── ClusterError                  the local test cluster (rocketmq_py.testing) failed
    └── RouteNotFound                 no route (or no writable queue) for a topic

``BrokerError`` subclasses carry ``code`` and ``remark`` and two class attributes that the
services consult instead of matching on codes: ``retriable`` (a producer may retry, on another
broker) and ``refresh_route`` (the route cache is probably stale).

A few answers share a code with others and differ only by their remark; :func:`broker_error_for`
tells them apart. ACL is the case: a 5.x broker answers NO_PERMISSION (16) both for a user without
the right and for credentials it rejects, and a 4.x broker answers SYSTEM_ERROR (1) with the
``AclException`` text for both. Rejected credentials become :class:`AuthenticationFailed` (not
retriable: another attempt signs with the same keys), a 4.x permission denial :class:`NoPermission`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from rocketmq_py._errors_base import (
    CompressionUnavailable,
    ConnectionFailed,
    FrameTooLarge,
    LocalProtocolError,
    MalformedBody,
    MalformedFrame,
    MalformedHeader,
    MalformedMessage,
    ProtocolError,
    RemoteProtocolError,
    RequestReplyTimeout,
    RequestTimeout,
    RocketMQError,
    TlsMismatch,
    TransportError,
    UnknownSerializeType,
)
from rocketmq_py._errors_broker import (
    AuthenticationFailed,
    BrokerDispatchNotComplete,
    BrokerError,
    BrokerNotExist,
    BrokerSystemError,
    ConsumeMsgTimeout,
    ConsumerNotOnline,
    FilterDataNotExist,
    FilterDataNotLatest,
    FlowControl,
    FlushDiskTimeout,
    FlushSlaveTimeout,
    GoAway,
    IllegalOperation,
    InvalidParameter,
    MessageIllegal,
    NoBuyerId,
    NoMessage,
    NoPermission,
    NotInCurrentUnit,
    NotLeaderForQueue,
    PollingFull,
    PollingTimeout,
    PullNotFound,
    PullOffsetMoved,
    PullRetryImmediately,
    QueryNotFound,
    RequestCodeNotSupported,
    ServiceNotAvailable,
    SlaveNotAvailable,
    SubscriptionGroupNotExist,
    SubscriptionNotExist,
    SubscriptionNotLatest,
    SubscriptionParseFailed,
    SystemBusy,
    TopicExistAlready,
    TopicNotExist,
    TransactionFailed,
    TransactionShouldCommit,
    TransactionShouldRollback,
    TransactionStateGroupWrong,
    TransactionStateUnknown,
    UnsupportedByProxy,
    VersionNotSupported,
    broker_error_class,
    broker_error_for,
)

__all__ = [
    "AuthenticationFailed",
    "BrokerDispatchNotComplete",
    "BrokerError",
    "BrokerNotExist",
    "BrokerSystemError",
    "ClientError",
    "ClusterError",
    "CompressionUnavailable",
    "ConnectionFailed",
    "ConsumeMsgTimeout",
    "ConsumerNotOnline",
    "DeliveryTimeNotSupported",
    "EmptyBody",
    "FilterDataNotExist",
    "FilterDataNotLatest",
    "FlowControl",
    "FlushDiskTimeout",
    "FlushSlaveTimeout",
    "FrameTooLarge",
    "GoAway",
    "IllegalOperation",
    "InvalidGroup",
    "InvalidMessage",
    "InvalidOption",
    "InvalidParameter",
    "InvalidRecallHandle",
    "InvalidTopic",
    "ListenerCancelled",
    "LocalProtocolError",
    "MalformedBody",
    "MalformedFrame",
    "MalformedHeader",
    "MalformedMessage",
    "MessageIllegal",
    "MessageTooLarge",
    "NoBuyerId",
    "NoMessage",
    "NoPermission",
    "NotInCurrentUnit",
    "NotLeaderForQueue",
    "PollingFull",
    "PollingTimeout",
    "ProtocolError",
    "PullNotFound",
    "PullOffsetMoved",
    "PullRetryImmediately",
    "QueryNotFound",
    "RecallNotSupported",
    "RemoteProtocolError",
    "RequestCodeNotSupported",
    "RequestReplyTimeout",
    "RequestTimeout",
    "ReservedProperty",
    "RocketMQError",
    "RouteNotFound",
    "ServiceNotAvailable",
    "SlaveNotAvailable",
    "StateError",
    "SubscriptionGroupNotExist",
    "SubscriptionNotExist",
    "SubscriptionNotLatest",
    "SubscriptionParseFailed",
    "SystemBusy",
    "TlsMismatch",
    "TopicExistAlready",
    "TopicNotExist",
    "TransactionFailed",
    "TransactionShouldCommit",
    "TransactionShouldRollback",
    "TransactionStateGroupWrong",
    "TransactionStateUnknown",
    "TransportError",
    "UnknownSerializeType",
    "UnsupportedByProxy",
    "VersionNotSupported",
    "broker_error_class",
    "broker_error_for",
    "first_of_ours",
    "leaf_exceptions",
    "unwrap_single",
]

# The classes live in private modules (one job each); users and reprs see them here.
for _cls in (
    RocketMQError,
    ProtocolError,
    LocalProtocolError,
    RemoteProtocolError,
    FrameTooLarge,
    MalformedFrame,
    UnknownSerializeType,
    MalformedHeader,
    MalformedBody,
    MalformedMessage,
    CompressionUnavailable,
    TransportError,
    RequestTimeout,
    RequestReplyTimeout,
    ConnectionFailed,
    TlsMismatch,
    BrokerError,
    BrokerSystemError,
    SystemBusy,
    RequestCodeNotSupported,
    UnsupportedByProxy,
    TransactionFailed,
    FlushDiskTimeout,
    SlaveNotAvailable,
    FlushSlaveTimeout,
    MessageIllegal,
    ServiceNotAvailable,
    VersionNotSupported,
    NoPermission,
    AuthenticationFailed,
    TopicNotExist,
    TopicExistAlready,
    PullNotFound,
    PullRetryImmediately,
    PullOffsetMoved,
    QueryNotFound,
    SubscriptionParseFailed,
    SubscriptionNotExist,
    SubscriptionNotLatest,
    SubscriptionGroupNotExist,
    FilterDataNotExist,
    FilterDataNotLatest,
    InvalidParameter,
    TransactionShouldCommit,
    TransactionShouldRollback,
    TransactionStateUnknown,
    TransactionStateGroupWrong,
    NoBuyerId,
    NotInCurrentUnit,
    ConsumerNotOnline,
    ConsumeMsgTimeout,
    NoMessage,
    PollingFull,
    PollingTimeout,
    BrokerNotExist,
    BrokerDispatchNotComplete,
    FlowControl,
    NotLeaderForQueue,
    IllegalOperation,
    GoAway,
):
    _cls.__module__ = __name__
del _cls


# --- caller mistakes and state -------------------------------------------------------------------


class ClientError(RocketMQError):
    """The caller asked for something invalid; no I/O happened."""


class InvalidMessage(ClientError):
    """A message that fails validation: topic name, empty or oversized body, reserved property."""


class InvalidTopic(InvalidMessage):
    """A topic name that cannot be sent to: empty, too long, illegal characters, or a system topic.

    Attributes:
        topic: the rejected name.
        reason: what is wrong with it.
    """

    def __init__(self, topic: str, reason: str) -> None:
        self.topic = topic
        self.reason = reason
        super().__init__(f"invalid topic {topic!r}: {reason}")


class EmptyBody(InvalidMessage):
    """A message whose body is empty (the broker stores no empty messages)."""


class MessageTooLarge(InvalidMessage):
    """A message body longer than the producer's maximum message size.

    Attributes:
        size: the body's length in bytes.
        max_size: the limit it exceeds.
    """

    def __init__(self, size: int, max_size: int) -> None:
        self.size = size
        self.max_size = max_size
        super().__init__(f"message body is {size} bytes, above the maximum of {max_size} bytes")


class ReservedProperty(InvalidMessage):
    """A message property that only the client or the broker may set.

    Attributes:
        key: the property key.
    """

    def __init__(self, key: str, reason: str | None = None) -> None:
        self.key = key
        super().__init__(reason or f"property {key!r} is reserved for the client and broker")


class DeliveryTimeNotSupported(InvalidMessage):
    """A message with a delivery time (``TIMER_DELIVER_MS`` / ``TIMER_DELAY_SEC`` / ``TIMER_DELAY_MS``)
    for a broker older than 5.0, which has no timer messages: it would store the message and deliver
    it at once. Nothing was sent; a delay level (``Message.delay_level``) works on every release.

    Attributes:
        broker_name: the broker the message was for.
        broker_version: its release (``"4.9.7"``), or the version ordinal its replies carry.
        key: the delivery-time property of the message.
    """

    def __init__(self, broker_name: str, broker_version: str, key: str) -> None:
        self.broker_name = broker_name
        self.broker_version = broker_version
        self.key = key
        super().__init__(
            f"broker {broker_name} runs RocketMQ {broker_version}, which has no timer messages: a message "
            f"with {key} would be delivered at once, so it was not sent (use a delay level, or a 5.x broker)"
        )


class InvalidOption(ClientError, ValueError):
    """A client or connector option that is missing, out of range or does not parse: a producer's
    or consumer's settings, a :class:`~rocketmq_py.ClientConfig` field, a ``send_many`` argument, a
    Spark data source option. Nothing was sent.

    It is also a :class:`ValueError`, so code written against the earlier ``ValueError`` of some of
    these checks keeps working.
    """


class InvalidGroup(InvalidOption):
    """A producer or consumer group name that is empty, too long or has illegal characters.

    Attributes:
        group: the rejected name.
        reason: what is wrong with it.
    """

    def __init__(self, group: str, reason: str) -> None:
        self.group = group
        self.reason = reason
        super().__init__(f"invalid group {group!r}: {reason}")


class InvalidRecallHandle(ClientError):
    """A recall handle that is not one a send returned (``SendResult.recall_handle``), or that
    names another topic than the one given. Nothing was sent.

    Attributes:
        handle: the rejected handle.
        reason: what is wrong with it.
    """

    def __init__(self, handle: str, reason: str) -> None:
        self.handle = handle
        self.reason = reason
        super().__init__(f"invalid recall handle {handle!r}: {reason}")


class RecallNotSupported(ClientError):
    """A recall for a broker older than RocketMQ 5.3.2, which has no RECALL_MESSAGE. Nothing was sent.

    Attributes:
        broker_name: the broker holding the message.
        broker_version: its release (``"5.3.1"``), or the version ordinal its replies carry.
    """

    def __init__(self, broker_name: str, broker_version: str) -> None:
        self.broker_name = broker_name
        self.broker_version = broker_version
        super().__init__(
            f"broker {broker_name} runs RocketMQ {broker_version}, which cannot recall messages (5.3.2 or later can)"
        )


class StateError(RocketMQError):
    """The object is in the wrong state for this call (closed, not started, already started)."""


class ListenerCancelled(RocketMQError):
    """An asyncio listener or callback (``rocketmq_py.aio``) raised ``asyncio.CancelledError``
    although nobody cancelled its call: it awaited something another task cancelled.

    It counts as a failed call, as any exception from a listener (the messages are consumed again
    later, as Java treats any Throwable); the ``CancelledError`` is its ``__cause__``. Only a cancel
    of the call itself, or the loop closing, stops a client.
    """


class ClusterError(RocketMQError):
    """The local test cluster could not be resolved, started or controlled."""


# --- routes --------------------------------------------------------------------------------------


class RouteNotFound(RocketMQError):
    """The name servers know no route for a topic, or the route has no queue to use.

    Attributes:
        topic: the topic asked for.
        namesrv_addrs: the name servers that were asked (empty when not known, e.g. from the
            pure queue-selection code).
    """

    def __init__(self, topic: str, namesrv_addrs: Sequence[str] = (), detail: str | None = None) -> None:
        self.topic = topic
        self.namesrv_addrs = tuple(namesrv_addrs)
        message = detail or f"no route info for topic {topic!r}"
        if self.namesrv_addrs:
            message += f" (name servers: {', '.join(self.namesrv_addrs)})"
        super().__init__(message)


# --- offsets ---------------------------------------------------------------------------------------


class OffsetStoreError(RocketMQError):
    """A local offset file (BROADCASTING consumers) could not be read or written.

    Attributes:
        path: the file.
        reason: what went wrong.
    """

    def __init__(self, path: os.PathLike[str] | str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"offset file {path}: {reason}")


class OffsetFileCorrupt(OffsetStoreError):
    """Neither the offset file nor its ``.bak`` parses (delete both to start over)."""


# --- exception groups ------------------------------------------------------------------------------
# trio nurseries raise ExceptionGroups, even around one error. These helpers take our errors out of
# them wherever a caller wants the error itself (the CLI, the blocking facade, Spark's driver).


def leaf_exceptions(exc: BaseException) -> list[BaseException]:
    """The exceptions inside ``exc``, depth first, groups flattened (``[exc]`` for a plain one)."""
    if not isinstance(exc, BaseExceptionGroup):
        return [exc]
    leaves: list[BaseException] = []
    for inner in exc.exceptions:
        leaves.extend(leaf_exceptions(inner))
    return leaves


def unwrap_single(exc: BaseException) -> BaseException:
    """``exc`` without the groups around it as long as each holds exactly one exception."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def first_of_ours(exc: BaseException) -> BaseException:
    """The first :class:`RocketMQError` inside ``exc``, else its first exception of any kind."""
    leaves = leaf_exceptions(exc)
    return next((leaf for leaf in leaves if isinstance(leaf, RocketMQError)), leaves[0])
