"""The one place where trio and OS exceptions become rocketmq-py's own.

Every read, write, connect and TLS handshake of the transport runs inside
:func:`translate_io_errors`, so no ``OSError``, ``ssl.SSLError``, ``trio.BrokenResourceError`` or
``trio.ClosedResourceError`` reaches a caller: they become :class:`ConnectionFailed`, with the
original as ``__cause__``. Timeouts are not translated here: each call site owns its deadline.
"""

from __future__ import annotations

import socket
from types import TracebackType

import trio

from rocketmq_py.errors import ConnectionFailed

__all__ = ["ReadWrite", "raw_socket", "translate_io_errors"]


class translate_io_errors:  # named like a function: used as ``with translate_io_errors(...)``
    """Turn I/O exceptions raised in the block into :class:`ConnectionFailed`.

    ``ssl.SSLError`` is an ``OSError``; ``trio.SSLStream`` reports TLS failures as
    ``BrokenResourceError`` with the ``SSLError`` as cause; ``ClosedResourceError`` means our own
    ``aclose`` closed the stream under a pending read or write. A plain class rather than a
    generator-based context manager: every read and write of a connection enters one.

    Args:
        what: the start of the error message, e.g. ``"reading from 10.0.0.1:10911 failed"``.

    Raises:
        ConnectionFailed: in place of the I/O exception.
    """

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if isinstance(exc, _IO_ERRORS):
            detail = str(exc) or type(exc).__name__
            raise ConnectionFailed(f"{self.what}: {detail}") from exc


_IO_ERRORS = (OSError, trio.BrokenResourceError, trio.ClosedResourceError)


class ReadWrite:
    """Reads and writes of one connection's stream with as few scheduler passes as they need.

    On a plain TCP ``trio.SocketStream`` the stdlib socket under it is used directly, without
    trio's per-call wrappers: a read receives what is there or waits for readiness, and yields once
    either way; a write sends at once and waits only when the socket buffer is full (trio's
    ``send_all`` yields after every send, holding the writer back one scheduler pass). A connection has one reader and
    one writer task, so nothing else uses the socket meanwhile. Any other stream (TLS, a memory
    stream in tests) goes through its own ``receive_some`` / ``send_all``.
    """

    __slots__ = ("_sock", "_stream")

    def __init__(self, stream: trio.abc.SendStream) -> None:
        self._stream = stream
        self._sock = raw_socket(stream)

    @property
    def direct(self) -> bool:
        """Whether the stdlib socket is used directly."""
        return self._sock is not None

    async def receive(self, max_bytes: int) -> bytes | bytearray:
        """At most ``max_bytes``, waiting for some; ``b""`` at the end of the stream.

        Yields to the other tasks once per call, as trio's ``receive_some`` does (the tasks the
        previous read woke run then), and raises ``Cancelled`` like it.
        """
        sock = self._sock
        if sock is None:
            assert isinstance(self._stream, trio.abc.ReceiveStream)  # a connection's whole stream
            return await self._stream.receive_some(max_bytes)
        try:
            data = sock.recv(max_bytes)  # under load the bytes are usually there already
        except (BlockingIOError, InterruptedError):
            while True:
                await trio.lowlevel.wait_readable(sock)  # the yield of this call
                try:
                    return sock.recv(max_bytes)
                except (BlockingIOError, InterruptedError):
                    continue  # a spurious wake-up: wait again
        await trio.lowlevel.checkpoint()
        return data

    async def send_all(self, data: bytes) -> None:
        """Write all of ``data``."""
        sock = self._sock
        if sock is None:
            await self._stream.send_all(data)
            return
        try:
            sent = sock.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        if sent < len(data):  # the socket buffer is full: trio waits for room
            await self._stream.send_all(memoryview(data)[sent:])


def raw_socket(stream: object) -> socket.socket | None:
    """The stdlib socket of a plain TCP ``trio.SocketStream``, or None for any other stream.

    trio keeps it as ``SocketStream.socket._sock`` (private, unchanged since trio 0.2); where that
    is missing the caller uses the stream's own methods (``tests/transport/test_read_write.py``
    checks that the direct path is taken on the supported trio releases).
    """
    if not isinstance(stream, trio.SocketStream):
        return None
    sock = getattr(stream.socket, "_sock", None)
    return sock if isinstance(sock, socket.socket) else None
