"""Opening connections: address parsing, TCP connect, optional TLS, and the reader task.

:func:`start_connection` connects *inside* the task it starts in the caller's nursery, so a connect
error comes straight out of ``nursery.start`` and a connected reader is owned by that nursery
from the first byte; :func:`open_connection` wraps it in an ``async with`` of its own.

Every TCP socket gets keepalive probes (:data:`KEEPALIVE_IDLE` and friends, where the OS has the
options), so a peer that vanished (host down, network cut) is noticed on an idle connection in
about a minute. A TLS handshake that fails because the server closed the connection or answered
without TLS raises :class:`TlsMismatch` ("is the server plaintext?").
"""

from __future__ import annotations

import functools
import logging
import socket
import ssl
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Final

import trio

from rocketmq_py._transport._connection import Connection
from rocketmq_py._transport._diagnosis import DEFAULT_CLOSE_ON_TIMEOUT, handshake_error
from rocketmq_py._transport._hooks import RPCHook
from rocketmq_py._transport._inbound import RequestHandler
from rocketmq_py._transport._io import translate_io_errors
from rocketmq_py._transport._nursery import open_service_nursery
from rocketmq_py.errors import ConnectionFailed, InvalidOption
from rocketmq_py.protocol._codes import SerializeType
from rocketmq_py.protocol._frame import DEFAULT_MAX_FRAME_SIZE

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "KEEPALIVE_COUNT",
    "KEEPALIVE_IDLE",
    "KEEPALIVE_INTERVAL",
    "open_connection",
    "open_stream",
    "parse_address",
    "start_connection",
]

#: Connect (TCP + TLS handshake) deadline in seconds; Java ``NettyClientConfig.connectTimeoutMillis``
#: is 3000 ms.
DEFAULT_CONNECT_TIMEOUT: Final = 3.0

logger = logging.getLogger("rocketmq_py.transport")

# TCP keepalive. Java's client turns SO_KEEPALIVE off and closes a channel idle for 120 s
# (clientChannelMaxIdleTimeSeconds); we keep idle connections and let the kernel probe them
# instead: a silent peer is declared dead after KEEPALIVE_IDLE + KEEPALIVE_COUNT *
# KEEPALIVE_INTERVAL = 60 s (Linux defaults: 7200 s, 9 probes 75 s apart, over two hours).
#: Seconds of silence before the first probe (``TCP_KEEPIDLE``; ``TCP_KEEPALIVE`` on macOS).
KEEPALIVE_IDLE: Final = 30
#: Seconds between unanswered probes (``TCP_KEEPINTVL``).
KEEPALIVE_INTERVAL: Final = 10
#: Unanswered probes before the kernel drops the connection (``TCP_KEEPCNT``).
KEEPALIVE_COUNT: Final = 3


def parse_address(address: str) -> tuple[str, int]:
    """Split ``"host:port"`` (or ``"[v6]:port"``) into host and port.

    Raises:
        InvalidOption: the address has no valid port.
    """
    host, sep, port_text = address.rpartition(":")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise InvalidOption(f"not a host:port address: {address!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port_text)


def set_keepalive(stream: trio.SocketStream) -> None:
    """Turn on TCP keepalive with our probe settings (each option only where the OS has it).

    Best effort: an option the OS refuses is logged and skipped, never fatal to the connection.
    """
    # macOS calls the idle time TCP_KEEPALIVE; Linux and the BSDs call it TCP_KEEPIDLE.
    idle = getattr(socket, "TCP_KEEPIDLE", None) or getattr(socket, "TCP_KEEPALIVE", None)
    for level, option, value in (
        (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1),
        (socket.IPPROTO_TCP, idle, KEEPALIVE_IDLE),
        (socket.IPPROTO_TCP, getattr(socket, "TCP_KEEPINTVL", None), KEEPALIVE_INTERVAL),
        (socket.IPPROTO_TCP, getattr(socket, "TCP_KEEPCNT", None), KEEPALIVE_COUNT),
    ):
        if option is None:
            continue
        try:
            stream.setsockopt(level, option, value)
        except OSError as exc:
            logger.debug("could not set socket option %d to %d: %s", option, value, exc)


async def open_stream(
    address: str, ssl_context: ssl.SSLContext | None, connect_timeout: float
) -> trio.abc.Stream:
    """Connect to ``address`` (TCP with keepalive, then TLS when ``ssl_context`` is given).

    Raises:
        TlsMismatch: the TLS handshake failed because the server does not seem to speak TLS.
        ConnectionFailed: connect refused or timed out, name resolution or TLS handshake failed.
        ClientError: ``address`` is not ``host:port``.
    """
    host, port = parse_address(address)
    tcp: trio.SocketStream | None = None
    with trio.move_on_after(connect_timeout):
        with translate_io_errors(f"connecting to {address} failed"):
            tcp = await trio.open_tcp_stream(host, port)
        set_keepalive(tcp)
        if ssl_context is None:
            return tcp
        tls = trio.SSLStream(tcp, ssl_context, server_hostname=host)
        try:
            with translate_io_errors(f"TLS handshake with {address} failed"):
                await tls.do_handshake()
        except ConnectionFailed as exc:
            await trio.aclose_forcefully(tls)
            error = handshake_error(address, exc)
            raise error from error.__cause__
        except BaseException:
            await trio.aclose_forcefully(tls)
            raise
        return tls
    if tcp is None:
        raise ConnectionFailed(f"connecting to {address} timed out after {connect_timeout:g} s")
    await trio.aclose_forcefully(tcp)
    raise ConnectionFailed(
        f"TLS handshake with {address} timed out after {connect_timeout:g} s: the server is not"
        " answering, or is plaintext and waiting for more bytes"
    )


async def _run_connection(
    address: str,
    ssl_context: ssl.SSLContext | None,
    connect_timeout: float,
    make: Callable[[trio.abc.Stream], Connection],
    task_status: trio.TaskStatus[Connection] = trio.TASK_STATUS_IGNORED,
) -> None:
    # Connect inside the started task, so that connect errors come out of nursery.start().
    stream = await open_stream(address, ssl_context, connect_timeout)
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
    close_on_timeout: bool = DEFAULT_CLOSE_ON_TIMEOUT,
    on_close: Callable[[str, str, bool], None] | None = None,
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
        close_on_timeout: a call that times out with nothing received meanwhile closes the
            connection (see :class:`Connection`).
        on_close: the connection's close callback (see :class:`Connection`).

    Returns:
        The open connection.

    Raises:
        TlsMismatch: the TLS handshake failed because the server does not seem to speak TLS.
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
        close_on_timeout=close_on_timeout,
        on_close=on_close,
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
    close_on_timeout: bool = DEFAULT_CLOSE_ON_TIMEOUT,
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
            close_on_timeout=close_on_timeout,
        )
        try:
            yield connection
        finally:
            await connection.aclose()
