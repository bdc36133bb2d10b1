"""Requests the peer sends us on a connection (broker -> client), each handled in a task of its own.

The connection's reader hands every request frame to :meth:`InboundRequests.route`, which looks
its code up in the ``handlers`` registry and starts the handler in the connection's handler
nursery, so that a slow handler never stalls the reader. Oneway requests get no answer; others
get the handler's response, ``REQUEST_CODE_NOT_SUPPORTED`` for a code with no handler, or
``SYSTEM_ERROR`` when the handler raises or gives none. Answers go out through the connection's
writer with the request's ``opaque``, the RESPONSE flag and the connection's header encoding; one
the connection can no longer carry is dropped.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping

import trio

from rocketmq_py.errors import ConnectionFailed
from rocketmq_py.protocol._codes import FLAG_RESPONSE, RequestCode, ResponseCode, SerializeType
from rocketmq_py.protocol._command import RemotingCommand

__all__ = ["InboundRequests", "RequestHandler", "code_name"]

logger = logging.getLogger("rocketmq_py.transport")

#: Answers one request the broker sends us: the response, or ``None`` (right for oneway requests;
#: a request that needs an answer then gets ``SYSTEM_ERROR``).
RequestHandler = Callable[[RemotingCommand], Awaitable[RemotingCommand | None]]


def code_name(code: int) -> str:
    """``NAME(code)`` for a known request code, else the number (for errors and logs)."""
    try:
        return f"{RequestCode(code).name}({code})"
    except ValueError:
        return str(code)


class InboundRequests:
    """Routes one connection's incoming requests to their handlers and writes the answers.

    Args:
        handlers: request code -> handler; looked up per request, so a mapping filled later works.
        write: writes whole frames on the connection; raises ConnectionFailed once it is closed.
        serialize_type: header encoding of our answers.
        peer: names the connection in log lines (formatted with ``%s`` when a line is written).
    """

    __slots__ = ("_handlers", "_peer", "_serialize_type", "_write", "nursery", "running")

    def __init__(
        self,
        handlers: Mapping[int, RequestHandler],
        write: Callable[[bytes], Awaitable[None]],
        serialize_type: SerializeType,
        peer: object,
    ) -> None:
        self._handlers = handlers
        self._write = write
        self._serialize_type = serialize_type
        self._peer = peer
        #: Where handlers run: the connection's handler nursery, set while it serves.
        self.nursery: trio.Nursery | None = None
        #: Handlers running now.
        self.running = 0

    def route(self, request: RemotingCommand) -> None:
        """Start the handler of ``request``, or its ``REQUEST_CODE_NOT_SUPPORTED`` answer, in :attr:`nursery`."""
        assert self.nursery is not None
        handler = self._handlers.get(request.code)
        if handler is not None:
            self.nursery.start_soon(self._run_handler, handler, request)
        elif request.is_oneway:
            logger.warning("%s: ignoring oneway request with unsupported code %d", self._peer, request.code)
        else:
            response = RemotingCommand.response(
                request,
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                remark=f"request code {request.code} is not supported by this client",
            )
            self.nursery.start_soon(self._reply, request, response)

    async def _run_handler(self, handler: RequestHandler, request: RemotingCommand) -> None:
        self.running += 1
        try:
            try:
                response = await handler(request)
            except Exception as exc:
                logger.exception("%s: handler for %s failed", self._peer, code_name(request.code))
                if request.is_oneway:
                    return
                response = RemotingCommand.response(
                    request, ResponseCode.SYSTEM_ERROR, remark=f"{type(exc).__name__}: {exc}"
                )
            if request.is_oneway:
                return
            if response is None:
                response = RemotingCommand.response(
                    request,
                    ResponseCode.SYSTEM_ERROR,
                    remark=f"the client's handler for code {request.code} gave no response",
                )
            await self._reply(request, response)
        finally:
            self.running -= 1

    async def _reply(self, request: RemotingCommand, response: RemotingCommand) -> None:
        if response.opaque != request.opaque or not response.is_response:
            response = dataclasses.replace(
                response, opaque=request.opaque, flag=response.flag | FLAG_RESPONSE
            )
        if response.serialize_type != self._serialize_type:
            response = dataclasses.replace(response, serialize_type=self._serialize_type)
        try:
            await self._write(response.encode())
        except ConnectionFailed:
            logger.debug(
                "could not answer %s from %s: connection closed", code_name(request.code), self._peer
            )
