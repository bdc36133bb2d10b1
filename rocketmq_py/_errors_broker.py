"""The broker's answers as errors: one class per response code, and the registry that picks one.

Public in :mod:`rocketmq_py.errors` (see its docstring for the tree and how remarks refine codes).
"""

from __future__ import annotations

import re
from enum import IntEnum
from typing import ClassVar, TypeVar

from rocketmq_py._errors_base import RocketMQError


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


class UnsupportedByProxy(RequestCodeNotSupported):
    """A request that brokers and NameServers serve, refused as a 5.x Proxy refuses it.

    A Proxy in cluster mode answers REQUEST_CODE_NOT_SUPPORTED for every request code its
    ``RemotingProtocolServer`` does not register (admin calls such as GET_BROKER_CLUSTER_INFO and
    UPDATE_AND_CREATE_TOPIC, replies to requests...). The message names the request and says what
    to use instead.

    Args:
        address: the endpoint that refused.
        request_code: the refused request's code (a ``RequestCode`` member is named in the message).
        instead: what needs the request and what to use instead, as a sentence.

    Attributes:
        address: the endpoint that refused.
        request_code: the refused request's code.
    """

    def __init__(self, address: str, request_code: int, instead: str) -> None:
        self.address = address
        self.request_code = int(request_code)
        name = f"{request_code.name} " if isinstance(request_code, IntEnum) else ""
        super().__init__(
            RequestCodeNotSupported.response_code or 3,
            f"{address} does not serve {name}(request code {self.request_code}), as a 5.x Proxy "
            f"does not: {instead}",
        )


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
