"""A pool of connections keyed by address, one live connection per broker or NameServer.

``get(address)`` first decides, with no I/O, what to do (:meth:`ConnectionPool._decide`):

- a live connection for the address      -> use it;
- another task is already connecting     -> wait for that attempt, then decide again;
- nothing, or a connection that closed   -> this task connects (and the closed one is dropped).

So many tasks asking for the same address at once cause one connect, and a connection that
dropped (or closed itself after a timed-out call on a silent peer) is replaced the next time
someone needs it. A failed connect fails every task that was waiting for it (with its own
``ConnectionFailed`` of the same class) rather than letting each retry in turn.
:meth:`ConnectionPool.close_idle` drops connections to addresses the client no longer uses.

Every connection's reader runs in the pool's nursery: ``async with ConnectionPool() as pool``.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

import trio

from rocketmq_py._transport._connection import Connection
from rocketmq_py._transport._diagnosis import DEFAULT_CLOSE_ON_TIMEOUT
from rocketmq_py._transport._hooks import RPCHook
from rocketmq_py._transport._inbound import RequestHandler
from rocketmq_py._transport._nursery import open_service_nursery
from rocketmq_py._transport._open import DEFAULT_CONNECT_TIMEOUT, start_connection
from rocketmq_py.errors import ConnectionFailed, StateError
from rocketmq_py.protocol._codes import SerializeType
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.protocol._frame import DEFAULT_MAX_FRAME_SIZE

__all__ = ["ConnectionPool", "PoolStatistics"]

logger = logging.getLogger("rocketmq_py.transport")


@dataclass(frozen=True, slots=True)
class PoolStatistics:
    """A snapshot of a pool (:meth:`ConnectionPool.statistics`).

    Attributes:
        connections: live connections.
        connecting: addresses with a connect in progress.
        pending_requests: requests waiting for a response, over all live connections.
        closed: whether the pool is closed.
    """

    connections: int
    connecting: int
    pending_requests: int
    closed: bool


class _Connecting:
    """One connect attempt that other tasks may wait for."""

    __slots__ = ("done", "error")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.error: ConnectionFailed | None = None


class ConnectionPool:
    """Connections keyed by ``"host:port"``, created on first use and replaced when they drop.

    Args:
        ssl_context: use TLS with this context for every connection.
        hooks: RPC hooks applied to every request (e.g. :class:`AclRPCHook`).
        serialize_type: header encoding of what we send.
        handlers: request code -> handler for requests brokers send us (shared by all connections).
        max_frame_size: largest frame accepted from a peer.
        connect_timeout: seconds for TCP connect plus TLS handshake.
        close_on_timeout: a call that times out with nothing received meanwhile closes its
            connection, and the next call reconnects (see :class:`Connection`).
        on_connection: called with an address and ``None`` when a connection to it opens, and
            with the reason when it closes (not when the pool itself closes).
    """

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None = None,
        hooks: Sequence[RPCHook] = (),
        serialize_type: SerializeType = SerializeType.JSON,
        handlers: Mapping[int, RequestHandler] | None = None,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        close_on_timeout: bool = DEFAULT_CLOSE_ON_TIMEOUT,
        on_connection: Callable[[str, str | None], None] | None = None,
    ) -> None:
        self._ssl_context = ssl_context
        self._on_connection = on_connection
        self._hooks = tuple(hooks)
        self._serialize_type = serialize_type
        self._handlers = handlers
        self._max_frame_size = max_frame_size
        self._connect_timeout = connect_timeout
        self._close_on_timeout = close_on_timeout
        self._connections: dict[str, Connection] = {}
        self._connecting: dict[str, _Connecting] = {}
        self._nursery: trio.Nursery | None = None
        self._exit_stack: AsyncExitStack | None = None
        self._closed = False

    def __repr__(self) -> str:
        stats = self.statistics()
        return (
            f"<ConnectionPool {stats.connections} connections, {stats.connecting} connecting,"
            f" {stats.pending_requests} pending{', closed' if stats.closed else ''}>"
        )

    async def __aenter__(self) -> Self:
        if self._exit_stack is not None or self._closed:
            raise StateError("a ConnectionPool can be entered only once")
        stack = AsyncExitStack()
        self._nursery = await stack.enter_async_context(open_service_nursery())
        self._exit_stack = stack
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._exit_stack is not None
        try:
            await self.aclose()
        finally:
            assert self._nursery is not None
            self._nursery.cancel_scope.cancel()
            suppress = await self._exit_stack.__aexit__(exc_type, exc, tb)
        return suppress

    def statistics(self) -> PoolStatistics:
        """Return a snapshot of the pool's counters."""
        live = [conn for conn in self._connections.values() if not conn.is_closed]
        return PoolStatistics(
            connections=len(live),
            connecting=len(self._connecting),
            pending_requests=sum(conn.statistics().pending_requests for conn in live),
            closed=self._closed,
        )

    def connections(self) -> Iterable[Connection]:
        """The live connections (a snapshot)."""
        return [conn for conn in self._connections.values() if not conn.is_closed]

    # --- calls ------------------------------------------------------------------------------------

    async def get(self, address: str) -> Connection:
        """Return a live connection to ``address``, connecting if there is none.

        Raises:
            ConnectionFailed: the connect failed (every task waiting for that attempt gets it).
            StateError: the pool is not open.
            ClientError: ``address`` is not ``host:port``.
        """
        while True:
            decision = self._decide(address)
            if isinstance(decision, Connection):
                return decision
            attempt, mine = decision
            if mine:
                return await self._connect(address, attempt)
            await attempt.done.wait()
            if attempt.error is not None:
                error = type(attempt.error)(str(attempt.error))
                raise error from attempt.error.__cause__
            # Connected (or the connecting task was cancelled): decide again.

    # An RPC deadline, as Connection.request's.
    def is_connected(self, address: str) -> bool:
        """Whether the pool is open and holds a live connection to ``address`` (no I/O)."""
        connection = self._connections.get(address)
        return connection is not None and not connection.is_closed and not self._closed

    def has_hooks(self) -> bool:
        """Whether the pool's connections run RPC hooks (ACL signing, recording)."""
        return bool(self._hooks)

    # The RPC's own timeout, as request(). Hands back the connection's coroutine (see there).
    def request_frame(
        self,
        address: str,
        encode: Callable[..., bytes],
        args: tuple[Any, ...] = (),
        *,
        code: int,
        timeout: float,
    ) -> Coroutine[Any, Any, RemotingCommand]:
        """:meth:`Connection.request_frame` on the pool's live connection to ``address``.

        For callers that checked :meth:`is_connected` and :meth:`has_hooks` (the send hot path).

        Raises:
            ConnectionFailed: no live connection to ``address``.
            ClientError, RequestTimeout, StateError: as :meth:`Connection.request_frame`.
        """
        connection = self._connections.get(address)
        if connection is None or self._closed:
            raise ConnectionFailed(f"no open connection to {address}")
        return connection.request_frame(encode, args, code=code, timeout=timeout)

    async def request(
        self,
        address: str,
        command: RemotingCommand,
        *,
        timeout: float,  # noqa: ASYNC109
    ) -> RemotingCommand:
        """Send a request to ``address`` and wait for its response, connecting first if needed.

        Args:
            address: ``"host:port"``.
            command: the request.
            timeout: seconds for the whole call; connecting counts against it (and is also
                bounded by the pool's ``connect_timeout``).

        Returns:
            The response, whatever its code.

        Raises:
            RequestTimeout: no response in time.
            ConnectionFailed: connecting failed or the connection dropped before the response.
            StateError: the pool is not open.
        """
        connection = self._connections.get(address)
        if connection is not None and not connection.is_closed and not self._closed:
            # The common case, connected already: no clock reads, straight to the connection.
            return await connection.request(command, timeout=timeout)
        started = trio.current_time()
        connection = await self.get(address)
        remaining = max(0.0, timeout - (trio.current_time() - started))
        return await connection.request(command, timeout=remaining)

    async def oneway(self, address: str, command: RemotingCommand) -> None:
        """Send a oneway request to ``address``, connecting first if needed.

        Raises:
            ConnectionFailed: connecting or writing failed.
            StateError: the pool is not open.
        """
        connection = await self.get(address)
        await connection.oneway(command)

    async def send_many(self, address: str, commands: Sequence[RemotingCommand]) -> None:
        """Send oneway requests to ``address`` in a single write, connecting first if needed.

        Raises:
            ConnectionFailed: connecting or writing failed.
            StateError: the pool is not open.
        """
        connection = await self.get(address)
        await connection.send_many(commands)

    async def close_idle(self, addresses: Iterable[str]) -> set[str]:
        """Close the connections to ``addresses`` that have no call or handler in flight.

        A busy connection is left alone (closing it would fail its calls); the next call to a
        closed address connects again.

        Returns:
            The addresses whose connection was busy and stays open.
        """
        busy: set[str] = set()
        for address in addresses:
            connection = self._connections.get(address)
            if connection is None or connection.is_closed:
                continue
            if not connection.is_idle:
                busy.add(address)
                continue
            del self._connections[address]
            await connection.aclose()
        return busy

    async def aclose(self) -> None:
        """Close every connection; later calls raise StateError. Idempotent."""
        self._closed = True
        connections = list(self._connections.values())
        self._connections.clear()
        for connection in connections:
            await connection.aclose()

    # --- internals ------------------------------------------------------------------------------

    def _decide(self, address: str) -> Connection | tuple[_Connecting, bool]:
        """What ``get`` must do next; no I/O and no await, so nothing changes in between.

        Returns:
            A live connection to use, or a connect attempt and whether this task owns it.
        """
        if self._closed or self._nursery is None:
            raise StateError("the connection pool is not open")
        connection = self._connections.get(address)
        if connection is not None:
            if not connection.is_closed:
                return connection
            del self._connections[address]
        attempt = self._connecting.get(address)
        if attempt is not None:
            return attempt, False
        attempt = self._connecting[address] = _Connecting()
        return attempt, True

    def _closed_connection(self, address: str, reason: str, by_client: bool) -> None:
        if not self._closed:  # the pool's own close is no news
            self._tell(address, reason)

    def _tell(self, address: str, closed: str | None) -> None:
        assert self._on_connection is not None
        try:
            self._on_connection(address, closed)
        except Exception:
            logger.exception("the connection listener failed on %s", address)

    async def _connect(self, address: str, attempt: _Connecting) -> Connection:
        assert self._nursery is not None
        try:
            connection = await start_connection(
                self._nursery,
                address,
                ssl_context=self._ssl_context,
                hooks=self._hooks,
                serialize_type=self._serialize_type,
                handlers=self._handlers,
                max_frame_size=self._max_frame_size,
                connect_timeout=self._connect_timeout,
                close_on_timeout=self._close_on_timeout,
                on_close=self._closed_connection if self._on_connection is not None else None,
            )
        except ConnectionFailed as exc:
            attempt.error = exc
            raise
        else:
            if not self._closed:
                self._connections[address] = connection
                if self._on_connection is not None:
                    self._tell(address, None)
        finally:
            # Waiters wake to find the connection stored, the error set, or (if this task was
            # cancelled) neither, and then one of them connects.
            del self._connecting[address]
            attempt.done.set()
        if self._closed:  # the pool closed while we were connecting
            await connection.aclose()
            raise StateError("the connection pool is not open")
        return connection
