"""Opening connections: address parsing, TCP connect, optional TLS, and the reader task.

:func:`start_connection` connects *inside* the task it starts in the caller's nursery, so a connect
error comes straight out of ``nursery.start`` and a connected reader is owned by that nursery
from the first byte; :func:`open_connection` wraps it in an ``async with`` of its own.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Final

import trio

from rocketmq_py._transport._connection import Connection, RequestHandler
from rocketmq_py._transport._hooks import RPCHook
from rocketmq_py._transport._io import translate_io_errors
from rocketmq_py._transport._nursery import open_service_nursery
from rocketmq_py.errors import ClientError, ConnectionFailed
from rocketmq_py.protocol._codes import SerializeType
from rocketmq_py.protocol._frame import DEFAULT_MAX_FRAME_SIZE

__all__ = ["DEFAULT_CONNECT_TIMEOUT", "open_connection", "parse_address", "start_connection"]

#: Connect (TCP + TLS handshake) deadline in seconds; Java ``NettyClientConfig.connectTimeoutMillis``
#: is 3000 ms.
DEFAULT_CONNECT_TIMEOUT: Final = 3.0


def parse_address(address: str) -> tuple[str, int]:
    """Split ``"host:port"`` (or ``"[v6]:port"``) into host and port.

    Raises:
        ClientError: the address has no valid port.
    """
    host, sep, port_text = address.rpartition(":")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ClientError(f"not a host:port address: {address!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port_text)


async def _open_stream(
    address: str, ssl_context: ssl.SSLContext | None, connect_timeout: float
) -> trio.abc.Stream:
    host, port = parse_address(address)
    with trio.move_on_after(connect_timeout) as scope:
        with translate_io_errors(f"connecting to {address} failed"):
            tcp = await trio.open_tcp_stream(host, port)
        if ssl_context is None:
            return tcp
        tls = trio.SSLStream(tcp, ssl_context, server_hostname=host)
        try:
            with translate_io_errors(f"TLS handshake with {address} failed"):
                await tls.do_handshake()
        except BaseException:
            await trio.aclose_forcefully(tls)
            raise
        return tls
    assert scope.cancelled_caught
    raise ConnectionFailed(f"connecting to {address} timed out after {connect_timeout:g} s")


async def _run_connection(
    address: str,
    ssl_context: ssl.SSLContext | None,
    connect_timeout: float,
    make: Callable[[trio.abc.Stream], Connection],
    task_status: trio.TaskStatus[Connection] = trio.TASK_STATUS_IGNORED,
) -> None:
    # Connect inside the started task, so that connect errors come out of nursery.start().
    stream = await _open_stream(address, ssl_context, connect_timeout)
    await make(stream).serve(task_status=task_status)


async def start_connection(
    nursery: trio.Nursery,
    address: str,
    *,
    ssl_context: ssl.SSLContext | None = None,
    hooks: Sequence[RPCHook] = (),
    serialize_type: SerializeType = SerializeType.JSON,
    handlers: Mapping[int, RequestHandler] | None = None,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
) -> Connection:
    """Connect to ``address`` and run the connection's reader task in ``nursery``.

    The reader ends when the connection closes (it never raises for I/O failures, so it never
    cancels ``nursery``); close the connection with :meth:`Connection.aclose`.

    Args:
        nursery: owns the reader task and the handler tasks.
        address: ``"host:port"``.
        ssl_context: wrap the TCP stream in TLS with this context (``server_hostname`` = host).
        hooks: RPC hooks applied to every request and oneway, in order.
        serialize_type: header encoding of everything we send (responses can come in either).
        handlers: request code -> handler for requests the broker sends us; looked up per request,
            so a mapping filled later works.
        max_frame_size: largest frame accepted from the peer.
        connect_timeout: seconds for TCP connect plus TLS handshake.

    Returns:
        The open connection.

    Raises:
        ConnectionFailed: connect refused or timed out, name resolution or TLS handshake failed.
        ClientError: ``address`` is not ``host:port``.
    """
    make = functools.partial(
        Connection,
        address=address,
        hooks=hooks,
        serialize_type=serialize_type,
        handlers=handlers,
        max_frame_size=max_frame_size,
    )
    runner = functools.partial(_run_connection, address, ssl_context, connect_timeout, make)
    connection: Connection = await nursery.start(runner)
    return connection


@asynccontextmanager
async def open_connection(
    address: str,
    *,
    ssl_context: ssl.SSLContext | None = None,
    hooks: Sequence[RPCHook] = (),
    serialize_type: SerializeType = SerializeType.JSON,
    handlers: Mapping[int, RequestHandler] | None = None,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
) -> AsyncIterator[Connection]:
    """Open a connection for the duration of an ``async with`` block.

    ``async with open_connection("127.0.0.1:10911") as conn: ...``; the arguments are those of
    :func:`start_connection`. Leaving the block closes the connection and waits for its tasks.

    Raises:
        ConnectionFailed: as :func:`start_connection`.
    """
    async with open_service_nursery() as nursery:
        connection = await start_connection(
            nursery,
            address,
            ssl_context=ssl_context,
            hooks=hooks,
            serialize_type=serialize_type,
            handlers=handlers,
            max_frame_size=max_frame_size,
            connect_timeout=connect_timeout,
        )
        try:
            yield connection
        finally:
            await connection.aclose()
