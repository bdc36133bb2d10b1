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
    │   └── NoPermission (16)
    │       └── AuthenticationFailed  wrong secret, unknown access key, no credentials (ACL)
    ├── ClientError                   the caller asked for something invalid (no I/O happened)
    │   ├── InvalidMessage            topic name, empty/oversized body, reserved property
    │   │   ├── InvalidTopic          empty, too long, illegal characters, or a system topic
    │   │   ├── EmptyBody             a message with no body
    │   │   ├── MessageTooLarge       a body above the producer's maximum message size
    │   │   ├── ReservedProperty      a property only the client or broker may set
    │   │   └── DeliveryTimeNotSupported  a delivery time for a broker older than 5.0 (none sent)
    │   ├── InvalidGroup              a producer/consumer group name that the broker rejects
    │   ├── InvalidRecallHandle       a recall handle that is not one a send returned
    │   └── RecallNotSupported        a recall for a broker older than 5.3.2 (none sent)
    ├── StateError                    the object is in the wrong state (closed, not started)
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
import re
from collections.abc import Sequence
from typing import ClassVar, TypeVar

__all__ = [
    "AuthenticationFailed",
    "BrokerError",
    "ClientError",
    "ClusterError",
    "CompressionUnavailable",
    "ConnectionFailed",
    "DeliveryTimeNotSupported",
    "EmptyBody",
    "FrameTooLarge",
    "InvalidGroup",
    "InvalidMessage",
    "InvalidRecallHandle",
    "InvalidTopic",
    "LocalProtocolError",
    "MalformedBody",
    "MalformedFrame",
    "MalformedHeader",
    "MalformedMessage",
    "MessageTooLarge",
    "NoPermission",
    "ProtocolError",
    "RecallNotSupported",
    "RemoteProtocolError",
    "RequestReplyTimeout",
    "RequestTimeout",
    "ReservedProperty",
    "RocketMQError",
    "RouteNotFound",
    "StateError",
    "TlsMismatch",
    "TransportError",
    "UnknownSerializeType",
    "broker_error_class",
    "broker_error_for",
    "first_of_ours",
    "leaf_exceptions",
    "unwrap_single",
]


class RocketMQError(Exception):
    """Base of every error rocketmq-py raises on purpose."""


# --- protocol ------------------------------------------------------------------------------------


class ProtocolError(RocketMQError):
    """Bytes that are not valid RocketMQ remoting protocol."""


class LocalProtocolError(ProtocolError):
    """We were asked to encode something the protocol cannot carry."""


class RemoteProtocolError(ProtocolError):
    """The peer sent bytes we cannot decode."""


class FrameTooLarge(RemoteProtocolError):
    """A frame's length prefix is above the configured maximum frame size."""


class MalformedFrame(RemoteProtocolError):
    """A frame whose lengths are negative, lie, or end early."""


class UnknownSerializeType(RemoteProtocolError):
    """The header's serialize-type byte is neither JSON (0) nor ROCKETMQ (1)."""


class MalformedHeader(RemoteProtocolError):
    """A JSON or binary header that does not parse."""


class MalformedBody(RemoteProtocolError):
    """A JSON body that does not parse into the expected schema."""


class MalformedMessage(RemoteProtocolError):
    """A stored-message body that ends mid-message or whose lengths lie."""


class CompressionUnavailable(MalformedMessage):
    """A body compressed with lz4/zstd while the optional codec is not installed."""


# --- transport -----------------------------------------------------------------------------------


class TransportError(RocketMQError):
    """The connection failed (not the broker's answer)."""


class RequestTimeout(TransportError):
    """No reply arrived within the call's deadline."""


class RequestReplyTimeout(RequestTimeout):
    """``Producer.request``: no reply message arrived within the timeout (Java ``RequestTimeoutException``).

    The request itself may have been stored (``sent`` tells): the responder may still run it,
    and its late reply is dropped.

    Attributes:
        topic: the request's topic.
        correlation_id: the request's ``CORRELATION_ID``.
        timeout: the seconds waited.
        sent: whether the broker had stored the request.
    """

    def __init__(self, topic: str, correlation_id: str, timeout: float, *, sent: bool) -> None:
        self.topic = topic
        self.correlation_id = correlation_id
        self.timeout = timeout
        self.sent = sent
        what = "sent, but no reply came" if sent else "not sent"
        super().__init__(f"request {correlation_id} to {topic}: {what} within {timeout:g} s")


class ConnectionFailed(TransportError):
    """Connecting failed, or the connection closed while a request was pending."""


class TlsMismatch(ConnectionFailed):
    """The connection failed the way a TLS/plaintext mismatch makes it fail.

    Raised when a TLS handshake ends because the server closed the connection or answered
    without TLS ("is the server plaintext?"), and when a plaintext server closes the connection
    right after our first request without a byte in reply, or answers with TLS records ("does
    the server require TLS?"). The message names the address and what was seen.
    """


# --- broker answers ------------------------------------------------------------------------------


class BrokerError(RocketMQError):
    """A broker or NameServer answered with a non-success response code.

    Attributes:
        code: the response code.
        remark: the server's explanation (may be empty).
    """

    #: The code this class stands for; ``None`` on the base class (unknown codes).
    response_code: ClassVar[int | None] = None
    #: A send may be retried (on another broker) after this error.
    retriable: ClassVar[bool] = False
    #: The route cache is probably stale: refresh it before the next attempt.
    refresh_route: ClassVar[bool] = False

    def __init__(self, code: int, remark: str | None = None) -> None:
        self.code = code
        self.remark = remark or ""
        super().__init__(f"broker answered code {code} ({type(self).__name__}): {self.remark}")


_REGISTRY: dict[int, type[BrokerError]] = {}


_B = TypeVar("_B", bound=type[BrokerError])


def _register(cls: _B) -> _B:
    assert cls.response_code is not None
    _REGISTRY[cls.response_code] = cls
    return cls


# retriable = in Java DefaultMQProducer.retryResponseCodes (TOPIC_NOT_EXIST, SERVICE_NOT_AVAILABLE,
# SYSTEM_ERROR, SYSTEM_BUSY, NO_PERMISSION, NO_BUYER_ID, NOT_IN_CURRENT_UNIT, GO_AWAY), plus FLOW_CONTROL.


@_register
class BrokerSystemError(BrokerError):
    """Response code 1."""

    response_code = 1
    retriable = True


@_register
class SystemBusy(BrokerError):
    """Response code 2."""

    response_code = 2
    retriable = True


@_register
class RequestCodeNotSupported(BrokerError):
    """Response code 3."""

    response_code = 3


@_register
class TransactionFailed(BrokerError):
    """Response code 4."""

    response_code = 4


@_register
class FlushDiskTimeout(BrokerError):
    """Response code 10."""

    response_code = 10


@_register
class SlaveNotAvailable(BrokerError):
    """Response code 11."""

    response_code = 11


@_register
class FlushSlaveTimeout(BrokerError):
    """Response code 12."""

    response_code = 12


@_register
class MessageIllegal(BrokerError):
    """Response code 13."""

    response_code = 13


@_register
class ServiceNotAvailable(BrokerError):
    """Response code 14."""

    response_code = 14
    retriable = True
    refresh_route = True


@_register
class VersionNotSupported(BrokerError):
    """Response code 15."""

    response_code = 15


@_register
class NoPermission(BrokerError):
    """Response code 16."""

    response_code = 16
    retriable = True
    refresh_route = True


class AuthenticationFailed(NoPermission):
    """The broker rejected the request's ACL credentials.

    A wrong secret key (the signature does not match), an access key the broker does not know, a
    disabled user, or no credentials where the broker requires them. A 5.x broker answers code 16
    (NO_PERMISSION), a 4.x broker code 1 (SYSTEM_ERROR) with its ``AclException`` text; ``code`` is
    the code received. The remark names the access key at most, never the secret.
    """

    retriable = False
    refresh_route = False


@_register
class TopicNotExist(BrokerError):
    """Response code 17."""

    response_code = 17
    retriable = True
    refresh_route = True


@_register
class TopicExistAlready(BrokerError):
    """Response code 18."""

    response_code = 18


@_register
class PullNotFound(BrokerError):
    """Response code 19."""

    response_code = 19


@_register
class PullRetryImmediately(BrokerError):
    """Response code 20."""

    response_code = 20


@_register
class PullOffsetMoved(BrokerError):
    """Response code 21."""

    response_code = 21


@_register
class QueryNotFound(BrokerError):
    """Response code 22."""

    response_code = 22


@_register
class SubscriptionParseFailed(BrokerError):
    """Response code 23."""

    response_code = 23


@_register
class SubscriptionNotExist(BrokerError):
    """Response code 24."""

    response_code = 24


@_register
class SubscriptionNotLatest(BrokerError):
    """Response code 25."""

    response_code = 25


@_register
class SubscriptionGroupNotExist(BrokerError):
    """Response code 26."""

    response_code = 26


@_register
class FilterDataNotExist(BrokerError):
    """Response code 27."""

    response_code = 27


@_register
class FilterDataNotLatest(BrokerError):
    """Response code 28."""

    response_code = 28


@_register
class InvalidParameter(BrokerError):
    """Response code 29."""

    response_code = 29


@_register
class TransactionShouldCommit(BrokerError):
    """Response code 200."""

    response_code = 200


@_register
class TransactionShouldRollback(BrokerError):
    """Response code 201."""

    response_code = 201


@_register
class TransactionStateUnknown(BrokerError):
    """Response code 202."""

    response_code = 202


@_register
class TransactionStateGroupWrong(BrokerError):
    """Response code 203."""

    response_code = 203


@_register
class NoBuyerId(BrokerError):
    """Response code 204."""

    response_code = 204
    retriable = True


@_register
class NotInCurrentUnit(BrokerError):
    """Response code 205."""

    response_code = 205
    retriable = True


@_register
class ConsumerNotOnline(BrokerError):
    """Response code 206."""

    response_code = 206


@_register
class ConsumeMsgTimeout(BrokerError):
    """Response code 207."""

    response_code = 207


@_register
class NoMessage(BrokerError):
    """Response code 208."""

    response_code = 208


@_register
class PollingFull(BrokerError):
    """Response code 209."""

    response_code = 209


@_register
class PollingTimeout(BrokerError):
    """Response code 210."""

    response_code = 210


@_register
class BrokerNotExist(BrokerError):
    """Response code 211."""

    response_code = 211
    refresh_route = True


@_register
class BrokerDispatchNotComplete(BrokerError):
    """Response code 212."""

    response_code = 212


@_register
class FlowControl(BrokerError):
    """Response code 215."""

    response_code = 215
    retriable = True


@_register
class NotLeaderForQueue(BrokerError):
    """Response code 501."""

    response_code = 501
    refresh_route = True


@_register
class IllegalOperation(BrokerError):
    """Response code 604."""

    response_code = 604


@_register
class GoAway(BrokerError):
    """Response code 1500."""

    response_code = 1500
    retriable = True
    refresh_route = True


# Answers told apart by their remark: (code, pattern searched in the remark, class).
_BY_REMARK: tuple[tuple[int, re.Pattern[str], type[BrokerError]], ...] = (
    # 5.x ACL 2.0: AuthenticationException texts (AuthenticationPipeline / the authorization
    # pipeline's user check answer them as NO_PERMISSION).
    (
        16,
        re.compile(
            r"check signature failed|User:\S* (?:is )?not found|User:\S* is disabled"
            r"|username cannot be null|Authentication failed|authentication header is incorrect",
            re.IGNORECASE,
        ),
        AuthenticationFailed,
    ),
    # 4.x ACL 1.0: the broker's RPC hook throws AclException, answered as SYSTEM_ERROR.
    (
        1,
        re.compile(
            r"AclException: (?:Check signature failed|No acl config for|No accessKey is configured"
            r"|No PlainAccessResource for)"
        ),
        AuthenticationFailed,
    ),
    (
        1,
        re.compile(r"AclException: (?:No default permission|Need admin permission|No permission)"),
        NoPermission,
    ),
)


def broker_error_for(code: int, remark: str | None = None) -> BrokerError:
    """Build the typed error for a non-success response code (unknown codes give ``BrokerError``).

    The remark picks the class where one code means several things (see the module docstring).
    """
    if remark:
        for refined_code, pattern, refined in _BY_REMARK:
            if code == refined_code and pattern.search(remark):
                return refined(code, remark)
    cls = _REGISTRY.get(code, BrokerError)
    return cls(code, remark)


def broker_error_class(code: int) -> type[BrokerError]:
    """The class registered for ``code`` (``BrokerError`` itself for unknown codes)."""
    return _REGISTRY.get(code, BrokerError)


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


class InvalidGroup(ClientError):
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
