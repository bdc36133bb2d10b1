"""A recording TCP proxy: forward bytes untouched between clients and a server, keep every frame.

Each :class:`ProxyRoute` listens on one address and forwards every accepted connection to a
target. Bytes are passed on exactly as read, in both directions; on the side, each direction is
split into remoting frames by their length prefix::

    +--------------+---------------------------------------+
    | total length | header-length word, header, body      |   <- one RecordedFrame.data,
    | int32 (BE)   | `total length` bytes                  |      length prefix included
    +--------------+---------------------------------------+

Every complete frame becomes a :class:`RecordedFrame` (direction ``c2s`` = client to server,
``s2c`` = server to client, the route's ``peer`` name, the connection number and the caller's
current ``phase`` label). A direction whose length prefix is impossible stops being split (the
bytes are still forwarded) and is counted in :meth:`Recorder.statistics`.

One thread runs every socket of the proxy through a selector; :meth:`Recorder.stop` (or leaving
the ``with`` block) wakes it, closes every socket and joins it. :func:`write_recording` stores the
frames of a recording, one file each, with a ``manifest.json`` describing them.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Final, Literal

from rocketmq_py.errors import ClusterError, ProtocolError

__all__ = ["Direction", "FrameSplitter", "ProxyRoute", "RecordedFrame", "Recorder", "parse_address"]

Direction = Literal["c2s", "s2c"]

#: Java's ``com.rocketmq.remoting.frameMaxLength`` default; a longer "frame" means the stream is
#: not the remoting protocol (or we lost the framing).
MAX_FRAME_SIZE: Final = 16 * 1024 * 1024
_READ_SIZE: Final = 256 * 1024
_CONNECT_TIMEOUT: Final = 5.0
_LENGTH: Final = struct.Struct(">i")


def parse_address(text: str) -> tuple[str, int]:
    """``"host:port"`` as a ``(host, port)`` pair."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ClusterError(f"not a host:port address: {text!r}")
    return host, int(port)


@dataclass(frozen=True, slots=True)
class ProxyRoute:
    """Listen on ``listen`` and forward each connection to ``target``.

    Attributes:
        listen: the address to accept clients on (port 0 picks a free one).
        target: the server to forward to.
        peer: a name for the server side, used in recordings (``namesrv``, ``broker``...).
    """

    listen: tuple[str, int]
    target: tuple[str, int]
    peer: str = "server"


@dataclass(frozen=True, slots=True)
class RecordedFrame:
    """One frame seen by the proxy, exactly as it crossed it (length prefix included)."""

    seq: int
    connection: int
    peer: str
    direction: Direction
    phase: str
    data: bytes


class FrameSplitter:
    """Split a byte stream into whole frames (length prefix included), without decoding them.

    Raises :class:`~rocketmq_py.errors.ProtocolError` on a length below 4 or above
    ``max_frame_size``: the stream is then not splittable any more.
    """

    __slots__ = ("_buffer", "_max_frame_size")

    def __init__(self, max_frame_size: int = MAX_FRAME_SIZE) -> None:
        self._buffer = bytearray()
        self._max_frame_size = max_frame_size

    @property
    def pending(self) -> int:
        """Bytes held that do not make a whole frame yet."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes]:
        """Add ``data``; return every frame it completes, in order."""
        buffer = self._buffer
        buffer += data
        frames: list[bytes] = []
        pos = 0
        while len(buffer) - pos >= 4:
            (total,) = _LENGTH.unpack_from(buffer, pos)
            if not 4 <= total <= self._max_frame_size - 4:
                raise ProtocolError(f"impossible frame length {total}")
            end = pos + 4 + total
            if end > len(buffer):
                break
            frames.append(bytes(buffer[pos:end]))
            pos = end
        del buffer[:pos]
        return frames


# --- the proxy -----------------------------------------------------------------------------------


class _Side:
    """One socket of a proxied connection and the bytes waiting to be written to it."""

    __slots__ = ("out", "read_eof", "sock", "splitter", "write_shut")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.out = bytearray()  # to be written to ``sock``
        self.read_eof = False  # ``sock`` said EOF
        self.write_shut = False  # we said EOF on ``sock``
        self.splitter: FrameSplitter | None = FrameSplitter()  # frames *read* from ``sock``


@dataclass(eq=False)
class _Connection:
    number: int
    route: ProxyRoute
    client: _Side
    server: _Side
    closed: bool = False

    def other(self, side: _Side) -> _Side:
        return self.server if side is self.client else self.client


@dataclass
class _Stats:
    connections: int = 0
    failed_connects: int = 0
    bytes_c2s: int = 0
    bytes_s2c: int = 0
    unsplittable_streams: int = 0
    errors: list[str] = field(default_factory=list)


class Recorder:
    """A recording proxy for one or more routes, run by one background thread.

    Use it as a context manager (``with Recorder(routes) as rec: ...``) or call :meth:`start`
    and :meth:`stop`. Set :attr:`phase` to label the frames recorded from then on.

    Args:
        routes: what to listen on and where to forward.
        on_frame: called from the proxy thread with every frame as it completes.
    """

    def __init__(
        self,
        routes: Sequence[ProxyRoute],
        *,
        on_frame: Callable[[RecordedFrame], None] | None = None,
    ) -> None:
        if not routes:
            raise ClusterError("a recorder needs at least one route")
        self.routes = list(routes)
        #: Label stored with every frame completed from now on.
        self.phase = ""
        self._on_frame = on_frame
        self._lock = threading.Lock()
        self._frames: list[RecordedFrame] = []
        self._stats = _Stats()
        self._selector: selectors.BaseSelector | None = None
        self._listeners: list[tuple[socket.socket, ProxyRoute]] = []
        self._connections: list[_Connection] = []
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        self._frame_arrived = threading.Condition(self._lock)

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> Recorder:
        """Bind every listen address and start forwarding.

        Raises:
            ClusterError: an address cannot be bound, or the recorder was started before.
        """
        if self._thread is not None or self._stopping.is_set():
            raise ClusterError("a recorder starts once")
        selector = selectors.DefaultSelector()
        self._selector = selector
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        selector.register(self._wake_r, selectors.EVENT_READ, None)
        try:
            for route in self.routes:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    sock.bind(route.listen)
                except OSError as exc:
                    sock.close()
                    raise ClusterError(f"the recorder cannot listen on {route.listen}: {exc}") from exc
                sock.listen(64)
                sock.setblocking(False)
                self._listeners.append((sock, route))
                selector.register(sock, selectors.EVENT_READ, route)
        except BaseException:
            self._close_all()
            raise
        self._thread = threading.Thread(target=self._run, name="rocketmq-py-recorder", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Close every socket and stop the thread (idempotent)."""
        thread = self._thread
        if thread is None:
            self._close_all()
            return
        self._stopping.set()
        if self._wake_w is not None:
            with contextlib.suppress(OSError):
                self._wake_w.send(b"x")
        thread.join(timeout=10.0)
        self._thread = None
        self._close_all()

    def __enter__(self) -> Recorder:
        return self.start() if self._thread is None else self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- results ---------------------------------------------------------------------------------

    @property
    def listen_addresses(self) -> list[str]:
        """The bound listen address of each route, ``host:port``, in route order."""
        out = []
        for sock, _ in self._listeners:
            host, port = sock.getsockname()[:2]
            out.append(f"{host}:{port}")
        return out

    def frames(self) -> list[RecordedFrame]:
        """Every frame recorded so far, in the order they completed."""
        with self._lock:
            return list(self._frames)

    def wait_for(self, predicate: Callable[[RecordedFrame], bool], timeout: float) -> RecordedFrame | None:
        """The first recorded frame matching ``predicate``, waiting up to ``timeout`` seconds."""
        with self._frame_arrived:
            seen = 0
            deadline = time.monotonic() + timeout
            while True:
                for frame in self._frames[seen:]:
                    if predicate(frame):
                        return frame
                seen = len(self._frames)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._frame_arrived.wait(remaining)

    def statistics(self) -> dict[str, Any]:
        """Counters: connections, bytes each way, frames, unsplittable streams, errors."""
        with self._lock:
            return {
                "connections": self._stats.connections,
                "failed_connects": self._stats.failed_connects,
                "bytes_c2s": self._stats.bytes_c2s,
                "bytes_s2c": self._stats.bytes_s2c,
                "frames": len(self._frames),
                "unsplittable_streams": self._stats.unsplittable_streams,
                "errors": list(self._stats.errors),
            }

    # --- the proxy thread ------------------------------------------------------------------------

    def _run(self) -> None:
        selector = self._selector
        assert selector is not None
        try:
            while not self._stopping.is_set():
                for key, events in selector.select(timeout=1.0):
                    if key.data is None:  # the wake-up socket
                        continue
                    if isinstance(key.data, ProxyRoute):
                        self._accept(key.fileobj, key.data)  # type: ignore[arg-type]
                        continue
                    conn, side = key.data
                    if conn.closed:
                        continue
                    if events & selectors.EVENT_WRITE:
                        self._flush(conn, side)
                    if events & selectors.EVENT_READ and not conn.closed:
                        self._read(conn, side)
        except Exception as exc:  # the thread must not die silently
            with self._lock:
                self._stats.errors.append(f"proxy thread failed: {exc!r}")

    def _accept(self, listener: socket.socket, route: ProxyRoute) -> None:
        try:
            client, _ = listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        try:
            server = socket.create_connection(route.target, timeout=_CONNECT_TIMEOUT)
        except OSError as exc:
            client.close()
            with self._lock:
                self._stats.failed_connects += 1
                self._stats.errors.append(f"connect to {route.target} failed: {exc}")
            return
        for sock in (client, server):
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self._stats.connections += 1
            number = self._stats.connections
        conn = _Connection(number, route, _Side(client), _Side(server))
        self._connections.append(conn)
        assert self._selector is not None
        self._selector.register(client, selectors.EVENT_READ, (conn, conn.client))
        self._selector.register(server, selectors.EVENT_READ, (conn, conn.server))

    def _read(self, conn: _Connection, side: _Side) -> None:
        try:
            data = side.sock.recv(_READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(conn)
            return
        other = conn.other(side)
        if not data:
            side.read_eof = True
            self._update_interest(conn, side)
            if not other.out:
                self._shut_write(conn, other)
            return
        direction: Direction = "c2s" if side is conn.client else "s2c"
        self._record(conn, side, direction, data)
        other.out += data
        self._flush(conn, other)

    def _record(self, conn: _Connection, side: _Side, direction: Direction, data: bytes) -> None:
        frames: list[bytes] = []
        broken = False
        if side.splitter is not None:
            try:
                frames = side.splitter.feed(data)
            except ProtocolError:
                side.splitter = None
                broken = True
        with self._lock:
            if direction == "c2s":
                self._stats.bytes_c2s += len(data)
            else:
                self._stats.bytes_s2c += len(data)
            if broken:
                self._stats.unsplittable_streams += 1
            recorded = []
            for raw in frames:
                frame = RecordedFrame(
                    len(self._frames) + 1, conn.number, conn.route.peer, direction, self.phase, raw
                )
                self._frames.append(frame)
                recorded.append(frame)
            if recorded:
                self._frame_arrived.notify_all()
        if self._on_frame is not None:
            for frame in recorded:
                self._on_frame(frame)

    def _flush(self, conn: _Connection, side: _Side) -> None:
        if side.out:
            try:
                sent = side.sock.send(side.out)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                self._close(conn)
                return
            del side.out[:sent]
        self._update_interest(conn, side)
        if not side.out and conn.other(side).read_eof:
            self._shut_write(conn, side)

    def _update_interest(self, conn: _Connection, side: _Side) -> None:
        events = 0
        if not side.read_eof:
            events |= selectors.EVENT_READ
        if side.out:
            events |= selectors.EVENT_WRITE
        selector = self._selector
        assert selector is not None
        registered = side.sock in selector.get_map()
        if events and registered:
            selector.modify(side.sock, events, (conn, side))
        elif events:
            selector.register(side.sock, events, (conn, side))
        elif registered:
            selector.unregister(side.sock)

    def _shut_write(self, conn: _Connection, side: _Side) -> None:
        if not side.write_shut:
            side.write_shut = True
            with contextlib.suppress(OSError):
                side.sock.shutdown(socket.SHUT_WR)
        if conn.client.write_shut and conn.server.write_shut:
            self._close(conn)

    def _close(self, conn: _Connection) -> None:
        if conn.closed:
            return
        conn.closed = True
        for side in (conn.client, conn.server):
            if self._selector is not None:
                with contextlib.suppress(KeyError, ValueError):
                    self._selector.unregister(side.sock)
            side.sock.close()
        with contextlib.suppress(ValueError):
            self._connections.remove(conn)

    def _close_all(self) -> None:
        for conn in list(self._connections):
            self._close(conn)
        for listener, _ in self._listeners:
            listener.close()
        for wake in (self._wake_r, self._wake_w):
            if wake is not None:
                wake.close()
        if self._selector is not None:
            self._selector.close()
            self._selector = None
