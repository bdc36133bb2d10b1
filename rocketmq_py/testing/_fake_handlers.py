"""What a :class:`~rocketmq_py.testing.FakeBroker` handler is, and what every default handler uses.

A handler answers one request: it returns the response, ``None`` for none (always for a oneway
request), or raises :class:`~rocketmq_py.errors.BrokerError` for the broker to answer with its code
and remark. The default handlers (``_fake_messages``, ``_fake_groups``, ``_fake_pop``) take the
broker's :class:`~rocketmq_py.testing._fake_store.FakeStore`, never the broker, and parse and
answer with the two helpers here: a malformed request header is SYSTEM_ERROR, as the broker
answers it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from rocketmq_py.errors import MalformedHeader, broker_error_for
from rocketmq_py.protocol._codes import ResponseCode
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.protocol._ext_fields import CustomHeader, from_ext_fields, to_ext_fields

__all__ = ["BrokerHandler", "answer", "parse_header"]

#: Answers one request; ``None`` means "send no response".
BrokerHandler = Callable[[RemotingCommand], Awaitable[RemotingCommand | None]]

_H = TypeVar("_H", bound=CustomHeader)


def parse_header(cls: type[_H], request: RemotingCommand) -> _H:
    """The request's header as ``cls``; a malformed one is answered SYSTEM_ERROR."""
    try:
        return from_ext_fields(cls, request.ext_fields)
    except MalformedHeader as exc:
        raise broker_error_for(ResponseCode.SYSTEM_ERROR, str(exc)) from exc


def answer(
    request: RemotingCommand,
    code: int = ResponseCode.SUCCESS,
    header: CustomHeader | None = None,
    body: bytes = b"",
    remark: str | None = None,
) -> RemotingCommand | None:
    """The response to ``request`` (``None`` for a oneway request, which gets none)."""
    if request.is_oneway:
        return None
    ext = to_ext_fields(header) if header is not None else None
    return RemotingCommand.response(request, code, remark, ext, body)
