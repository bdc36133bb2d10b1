"""A userspace TCP relay that can black-hole what it forwards: no root, no iptables, no system tool.

A :class:`TcpRelay` owns one thread running its own trio loop. :meth:`TcpRelay.forward` listens on an
address and forwards every connection to a target, byte for byte, both ways. Several listeners may
share a route name (a broker's ``listenPort`` and its VIP channel ``listenPort - 2``), and
:meth:`TcpRelay.block` cuts a route as a dead network path would, until :meth:`TcpRelay.unblock`:

- **Open connections go silent both ways.** The relay stops reading from either side and holds what
  it had read; the kernel's buffers fill and the senders' windows close. Nothing is dropped: when the
  block lifts, the held bytes are delivered in order, as TCP retransmits across a healed path.
- **New connects hang.** The listener stays open (a closed one would refuse, at once) and stops
  accepting; its accept queue shrinks to nothing (``listen(0)``) and is filled with one connection
  of the relay's own. A full accept queue makes the kernel drop every SYN, so a client's
  ``connect()`` waits, retransmitting, as it does behind a firewall that drops packets; once
  unblocked, its next SYN gets through. (A connection that completed its handshake in the instant
  before may sit in the queue; it is silent until the block lifts.)

A target that refuses the relay's connect (a stopped broker) makes the relay reset the accepted
connection, so the client reads an error at once, as toxiproxy does; a peer's reset is passed on as
a reset, an end of stream as an end of stream.

Control calls (:meth:`~TcpRelay.forward`, :meth:`~TcpRelay.block`, ...) may come from any thread
but the relay's own, a trio thread included: each runs on the relay's loop and returns when done.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import threading
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

import outcome
import trio

from rocketmq_py.errors import ClusterError

__all__ = ["TcpRelay"]

_T = TypeVar("_T")
#: Bytes read from one side before they are written to the other.
_CHUNK: Final = 256 * 1024
#: The accept queue of a listener that is not blocked.
_BACKLOG: Final = 128
#: Seconds a control call waits for the relay's loop (it answers in microseconds when alive).
_CONTROL_TIMEOUT: Final = 30.0
#: SO_LINGER on, zero seconds: close() sends a reset instead of an end of stream.
_RESET_LINGER: Final = struct.pack("ii", 1, 0)
#: Seconds before accepting again after accept() failed (out of descriptors, say).
_ACCEPT_RETRY_DELAY: Final = 0.1

log = logging.getLogger(__name__)


def _reset(sock: socket.socket | trio.socket.SocketType) -> None:
    """Close ``sock`` with a TCP reset (the peer's next read fails)."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET_LINGER)
    sock.close()


class _Listener:
    """One listening socket of a route, and the state of its route's gate (trio thread only)."""

    def __init__(self, route: str, sock: trio.socket.SocketType, target: tuple[str, int]) -> None:
        self.route = route
        self.sock = sock
        self.address: tuple[str, int] = sock.getsockname()
        self.target = target
        #: Set while traffic flows; replaced by an unset event while blocked.
        self.flowing = trio.Event()
        self.flowing.set()
        #: Set by the accept loop once it stopped accepting for a block.
        self.accept_parked = trio.Event()
        self.accept_scope: trio.CancelScope | None = None
        #: The relay's own connection that fills the accept queue while blocked.
        self.filler: socket.socket | None = None
        #: Fillers of lifted blocks whose connection still waits in the accept queue.
        self.filler_addresses: set[tuple[str, int]] = set()

    @property
    def blocked(self) -> bool:
        return not self.flowing.is_set()

    async def wait_flowing(self) -> None:
        await self.flowing.wait()  # the current event: block() replaces it

    def fill_accept_queue(self) -> None:
        """Shrink the accept queue to nothing and fill it, so that the kernel drops new SYNs."""
        self.sock.listen(0)
        filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        filler.setblocking(False)
        # Completes at once when the queue is empty; when a client's connection got in first, the
        # filler's SYN is dropped like every other and it never completes.
        filler.connect_ex(self.address)
        self.filler = filler

    def empty_accept_queue(self) -> None:
        """Undo :meth:`fill_accept_queue`: drop the filler, accept again."""
        if self.filler is not None:
            with contextlib.suppress(OSError):  # not connected: it never got into the queue
                self.filler.getpeername()
                self.filler_addresses.add(self.filler.getsockname())
            self.filler.close()
            self.filler = None
        self.sock.listen(_BACKLOG)


class TcpRelay:
    """Forwards TCP connections from listening addresses to targets; can black-hole a route.

    Args:
        name: names the relay's thread (``ps -T``, debuggers).

    Use as a context manager, or :meth:`start` and :meth:`close`.
    """

    def __init__(self, name: str = "tcp-relay") -> None:
        self.name = name
        self._thread: threading.Thread | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._stop: trio.Event | None = None
        self._ready = threading.Event()
        self._crashed: BaseException | None = None
        self._listeners: list[_Listener] = []
        self._closed = False

    def __repr__(self) -> str:
        routes = sorted({lst.route for lst in self._listeners})
        return f"<TcpRelay {self.name} routes={routes} {'closed' if self._closed else 'open'}>"

    # --- lifetime ----------------------------------------------------------------------------------

    def start(self) -> TcpRelay:
        """Start the relay's thread and loop; returns ``self``."""
        if self._thread is not None:
            raise ClusterError(f"{self.name} was already started")
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        if not self._ready.wait(_CONTROL_TIMEOUT) or self._crashed is not None:
            raise ClusterError(f"{self.name} did not start: {self._crashed!r}")
        return self

    def _run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:  # reported by start() or the next control call
            self._crashed = exc
            self._ready.set()

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self._ready.set()
                await self._stop.wait()
                nursery.cancel_scope.cancel()
        finally:
            for listener in self._listeners:
                if listener.filler is not None:
                    listener.filler.close()
                listener.sock.close()

    def close(self) -> None:
        """Stop forwarding, close every socket (listeners and connections) and end the thread."""
        if self._closed or self._thread is None:
            self._closed = True
            return
        self._closed = True
        if self._token is not None and self._stop is not None and self._crashed is None:
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(self._stop.set)
        self._thread.join(_CONTROL_TIMEOUT)

    def __enter__(self) -> TcpRelay:
        return self.start() if self._thread is None else self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _call(self, fn: Callable[[], Awaitable[_T]]) -> _T:
        """Run ``fn`` on the relay's loop; wait for it and return its result or raise its error."""
        if self._closed or self._token is None or self._nursery is None:
            raise ClusterError(f"{self.name} is not running")
        if threading.current_thread() is self._thread:
            raise RuntimeError("a TcpRelay control call from the relay's own thread would wait forever")
        nursery = self._nursery
        done = threading.Event()
        result: list[outcome.Outcome[_T]] = []

        async def run() -> None:
            result.append(await outcome.acapture(fn))
            done.set()

        try:
            self._token.run_sync_soon(nursery.start_soon, run)
        except trio.RunFinishedError:
            raise ClusterError(f"{self.name} has stopped: {self._crashed!r}") from None
        if not done.wait(_CONTROL_TIMEOUT):
            raise ClusterError(f"{self.name} did not answer in {_CONTROL_TIMEOUT:.0f} s")
        return result[0].unwrap()

    # --- control -----------------------------------------------------------------------------------

    def forward(self, route: str, listen: tuple[str, int], target: tuple[str, int]) -> tuple[str, int]:
        """Listen on ``listen`` and forward each connection to ``target``, as part of ``route``.

        Args:
            route: the name :meth:`block` and :meth:`unblock` take (several listeners may share it;
                a new listener of a blocked route starts blocked).
            listen: the address to listen on (port 0: any free port).
            target: where connections go.

        Returns:
            The address listened on.

        Raises:
            ClusterError: the address could not be bound, or the relay is not running.
        """
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(listen)
            sock.listen(_BACKLOG)
        except OSError as exc:
            sock.close()
            raise ClusterError(f"{self.name}: cannot listen on {listen[0]}:{listen[1]}: {exc}") from exc

        async def add() -> tuple[str, int]:
            assert self._nursery is not None
            listener = _Listener(route, trio.socket.from_stdlib_socket(sock), target)
            if any(other.route == route and other.blocked for other in self._listeners):
                listener.flowing = trio.Event()
                listener.fill_accept_queue()
            self._listeners.append(listener)
            self._nursery.start_soon(self._accept_loop, listener)
            return listener.address

        try:
            return self._call(add)
        except BaseException:
            sock.close()
            raise

    def block(self, route: str) -> None:
        """Black-hole ``route``: open connections go silent both ways, new connects hang.

        Raises:
            ClusterError: no such route, or the relay is not running.
        """
        self._call(lambda: self._block(self._route(route)))

    def unblock(self, route: str) -> None:
        """Lift :meth:`block`: held bytes flow on, waiting connects complete (idempotent).

        Raises:
            ClusterError: no such route, or the relay is not running.
        """
        self._call(lambda: self._unblock(self._route(route)))

    def blocked(self, route: str) -> bool:
        """Whether ``route`` is blocked."""
        return any(listener.blocked for listener in self._route(route))

    def routes(self) -> dict[str, list[tuple[str, int]]]:
        """Each route's listening addresses."""
        found: dict[str, list[tuple[str, int]]] = {}
        for listener in self._listeners:
            found.setdefault(listener.route, []).append(listener.address)
        return found

    def _route(self, route: str) -> list[_Listener]:
        listeners = [listener for listener in self._listeners if listener.route == route]
        if not listeners:
            raise ClusterError(f"{self.name} has no route {route!r} (has {sorted(self.routes())})")
        return listeners

    # --- the loop's side ---------------------------------------------------------------------------

    @staticmethod
    async def _block(listeners: list[_Listener]) -> None:
        for listener in listeners:
            if listener.blocked:
                continue
            listener.flowing = trio.Event()
            listener.accept_parked = trio.Event()
            if listener.accept_scope is not None:
                listener.accept_scope.cancel()
            await listener.accept_parked.wait()  # accept() is no longer called
            listener.fill_accept_queue()

    @staticmethod
    async def _unblock(listeners: list[_Listener]) -> None:
        for listener in listeners:
            if listener.blocked:
                listener.empty_accept_queue()
                listener.flowing.set()
        await trio.lowlevel.checkpoint()

    async def _accept_loop(self, listener: _Listener) -> None:
        assert self._nursery is not None
        while True:
            if listener.blocked:
                listener.accept_parked.set()
                await listener.wait_flowing()
            accepted = None
            try:
                with trio.CancelScope() as listener.accept_scope:
                    accepted = await listener.sock.accept()
            except OSError as exc:  # a queued connection reset before accept(), no descriptor left, ...
                log.warning("%s: accept on %s:%d failed: %s", self.name, *listener.address, exc)
                await trio.sleep(_ACCEPT_RETRY_DELAY)
                continue
            finally:
                listener.accept_scope = None
            if accepted is None:
                continue  # cancelled by a block
            sock, peer = accepted
            if peer in listener.filler_addresses:
                listener.filler_addresses.discard(peer)
                sock.close()  # the queue filler of a lifted block
                continue
            self._nursery.start_soon(self._connection, listener, sock)

    async def _connection(self, listener: _Listener, sock: trio.socket.SocketType) -> None:
        client = trio.SocketStream(sock)
        try:
            await listener.wait_flowing()
            try:
                upstream = await trio.open_tcp_stream(*listener.target)
            except OSError:
                _reset(sock)  # the target is down: the client reads a reset
                return
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._pump, listener, client, upstream)
                    nursery.start_soon(self._pump, listener, upstream, client)
            except* (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                _reset(upstream.socket)  # one side reset: so is the other
                _reset(sock)
            finally:
                await upstream.aclose()
        finally:
            await client.aclose()

    @staticmethod
    async def _pump(listener: _Listener, source: trio.SocketStream, sink: trio.SocketStream) -> None:
        """Copy ``source`` to ``sink`` while the route flows; pass the end of stream on."""
        while True:
            await listener.wait_flowing()
            data = await source.receive_some(_CHUNK)
            if not data:
                break
            await listener.wait_flowing()
            await sink.send_all(data)
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            await sink.send_eof()
