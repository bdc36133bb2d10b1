"""One remoting connection over trio: the I/O shell around the sans-IO codec.

Tasks and ownership::

    owner nursery (ConnectionPool, open_connection, or the caller's)
    └── Connection.serve              one per connection; owns the stream
        ├── reader loop               receive_some(256 KiB) -> FrameBuffer -> route each frame
        └── handler nursery           the writer task, and one task per request the broker sends us

- **Our requests.** :meth:`Connection.request` gives the command a fresh ``opaque``, registers the
  calling task under it and parks it; the reader wakes it when a response with that ``opaque``
  arrives, the connection's deadline task (:mod:`._deadlines`) when its timeout passes. A
  response nobody waits for (its caller timed out or was cancelled) is dropped.
- **Writes** go through one writer task (:class:`~rocketmq_py._transport._writer.FrameWriter`):
  frames queued while it is writing go out together in its next ``send_all``.
- **Broker -> client requests** go to the ``handlers`` registry, each in its own task so that a
  slow handler never stalls the reader (:mod:`._inbound`).
- **Failure.** When the stream ends, breaks, or carries bytes the codec rejects, every waiting call
  fails at once with :class:`ConnectionFailed` (the codec's :class:`ProtocolError` or the OS error
  as ``__cause__``), and every later call fails the same way immediately (with :class:`StateError`
  instead once the client closed the connection itself). trio and OS exceptions become ours in
  one place, :func:`~rocketmq_py._transport._io.translate_io_errors`. A failure that looks like
  a TLS server refusing plaintext is :class:`TlsMismatch` (:mod:`._diagnosis`).
- **Close on timeout.** A call that times out while not a byte arrives on the connection closes
  it (Java ``clientCloseSocketIfTimeout``; the rule is in :mod:`._diagnosis`).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any, Final, NoReturn

import outcome
import trio

from rocketmq_py._transport._deadlines import CallDeadlines
from rocketmq_py._transport._diagnosis import (
    DEFAULT_CLOSE_ON_TIMEOUT,
    closes_on_timeout,
    plaintext_mismatch_hint,
)
from rocketmq_py._transport._hooks import RPCHook
from rocketmq_py._transport._inbound import InboundRequests, RequestHandler, code_name
from rocketmq_py._transport._io import ReadWrite, translate_io_errors
from rocketmq_py._transport._statistics import ConnectionStatistics
from rocketmq_py._transport._writer import FrameWriter
from rocketmq_py.errors import (
    ClientError,
    ConnectionFailed,
    ProtocolError,
    RequestTimeout,
    StateError,
    TlsMismatch,
)
from rocketmq_py.protocol._codes import FLAG_ONEWAY, SerializeType
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.protocol._frame import DEFAULT_MAX_FRAME_SIZE, FrameBuffer

__all__ = ["Connection"]

logger = logging.getLogger("rocketmq_py.transport")

#: Bytes asked of the stream per read: large, so a pull reply of many messages takes few reads.
RECEIVE_CHUNK: Final = 256 * 1024
# Opaques are non-negative int32 values, wrapping back to 0.
_OPAQUE_MASK: Final = 0x7FFFFFFF


class _Slot:
    """One of our requests waiting for its response: the parked task and the frame it sent."""

    __slots__ = ("task",)

    def __init__(self, task: trio.lowlevel.Task) -> None:
        self.task = task


class _TimedOut(Exception):
    """The deadline of a call passed (raised into the waiting task by the timer)."""


class Connection:
    """One remoting connection over a byte stream.

    Usually made by :func:`~rocketmq_py._transport._open.open_connection` or
    :func:`~rocketmq_py._transport._open.start_connection`; over any other
    ``trio.abc.Stream`` (a memory stream in tests), build it and run :meth:`serve` in a nursery.
    Safe to use from many tasks at once: requests are matched to responses by ``opaque``.

    Args:
        stream: the connected stream; the connection owns and closes it.
        address: the peer's ``"host:port"``, used in errors and logs.
        hooks: RPC hooks applied to every request and oneway, in order.
        serialize_type: header encoding of everything we send (responses can come in either).
        handlers: request code -> handler for requests the peer sends us; looked up per request,
            so a mapping filled later works. A handler returns the response (its opaque and
            RESPONSE flag are set for it) or ``None``, which answers ``SYSTEM_ERROR``.
        max_frame_size: largest frame accepted from the peer.
        close_on_timeout: close the connection when a call times out with nothing received on
            it meanwhile (:func:`~rocketmq_py._transport._diagnosis.closes_on_timeout`).
        on_close: called once, as the connection closes, with its address, the reason, and
            whether the client closed it (not the peer or a failure).
    """

    def __init__(
        self,
        stream: trio.abc.Stream,
        address: str,
        *,
        hooks: Sequence[RPCHook] = (),
        serialize_type: SerializeType = SerializeType.JSON,
        handlers: Mapping[int, RequestHandler] | None = None,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        close_on_timeout: bool = DEFAULT_CLOSE_ON_TIMEOUT,
        on_close: Callable[[str, str, bool], None] | None = None,
    ) -> None:
        self._stream = stream
        self._on_close = on_close
        self._address = address
        self._hooks = tuple(hooks)
        self._serialize_type = serialize_type
        self._max_frame_size = max_frame_size
        self._next_opaque = 0
        self._pending: dict[int, _Slot] = {}
        self._deadlines: CallDeadlines[_Slot] = CallDeadlines(self._is_pending, self._expire)
        self._writer = FrameWriter(stream, address)
        self._inbound = InboundRequests(
            handlers if handlers is not None else {}, self._write, serialize_type, self
        )
        self._serve_scope = trio.CancelScope()
        self._closed_reason: str | None = None
        self._closed_cause: BaseException | None = None
        self._closed_by_client = False
        self._closed_error: type[ConnectionFailed] = ConnectionFailed
        self._close_on_timeout = close_on_timeout
        self._tls = isinstance(stream, trio.SSLStream)
        self._frames_received = 0
        # Bytes read so far: a call that timed out compares it with the count when it started.
        self._bytes_received = 0
        self._first_bytes = b""
        # trio.current_time, minus two calls: the run's clock, read per call (set by serve()).
        self._now: Callable[[], float] = trio.current_time

    def __repr__(self) -> str:
        state = "closed" if self.is_closed else "open"
        return f"<Connection {self._address} {state}, {len(self._pending)} pending>"

    @property
    def address(self) -> str:
        """The peer, ``"host:port"``."""
        return self._address

    @property
    def is_closed(self) -> bool:
        """True once the connection dropped or was closed; calls then fail at once."""
        return self._closed_reason is not None

    @property
    def is_idle(self) -> bool:
        """True when open with no call waiting, nothing queued to write and no handler running."""
        return (
            self._closed_reason is None
            and not self._pending
            and not self._writer.busy
            and not self._inbound.running
        )

    def statistics(self) -> ConnectionStatistics:
        """Return a snapshot of the connection's counters."""
        return ConnectionStatistics(
            address=self._address,
            pending_requests=len(self._pending),
            running_handlers=self._inbound.running,
            frames_sent=self._writer.frames_sent,
            frames_received=self._frames_received,
            closed=self.is_closed,
        )

    # --- calls ------------------------------------------------------------------------------------

    # The timeout is part of the RPC contract (Java's timeoutMillis): it becomes RequestTimeout
    # naming the call, which a caller's own fail_after could not do.
    async def request(self, command: RemotingCommand, *, timeout: float) -> RemotingCommand:  # noqa: ASYNC109
        """Send a request and wait for its response.

        The command's ``opaque`` is replaced by a fresh one; hooks run before sending.

        Args:
            command: the request (not oneway).
            timeout: seconds to wait for the response, counting the write (``math.inf`` for none).

        Returns:
            The response, whatever its code (the caller decides what a non-success code means).

        Raises:
            RequestTimeout: no response within ``timeout``; a late response is dropped.
            ConnectionFailed: the connection dropped (before or during the call), or was closed
                while the call was pending.
            StateError: the connection had been closed with :meth:`aclose`.
            ClientError: ``command`` has the ONEWAY flag (use :meth:`oneway`).
        """
        if command.is_oneway:
            raise ClientError("a oneway command gets no response: send it with oneway()")
        command = self._prepare(command)
        response = await self._exchange(command.opaque, command.encode(), command.code, timeout)
        for hook in self._hooks:
            hook.after_response(command, response)
        return response

    @property
    def has_hooks(self) -> bool:
        """Whether RPC hooks see every request (then :meth:`request_frame` cannot be used)."""
        return bool(self._hooks)

    # The RPC's own timeout, as request(). Not a coroutine function: it hands back the waiting
    # coroutine itself, one frame less to suspend and resume on the hot path.
    def request_frame(
        self,
        encode: Callable[..., bytes],
        args: tuple[Any, ...] = (),
        *,
        code: int,
        timeout: float,
    ) -> Coroutine[Any, Any, RemotingCommand]:
        """Send a request encoded by the caller and wait for its response (the hot path of sends).

        Args:
            encode: builds the whole frame for the fresh ``opaque`` it is given, as
                ``encode(opaque, *args)`` (for example
                :meth:`~rocketmq_py.protocol._template.RequestTemplate.frame`).
            args: the rest of ``encode``'s arguments.
            code: the request code, for error messages.
            timeout: as :meth:`request`.

        Returns:
            A coroutine to await for the response. The frame is built and queued when it is
            made, so build it with ``await conn.request_frame(...)``.

        Raises:
            ClientError: the connection has RPC hooks (they need a command: use :meth:`request`).
            RequestTimeout, ConnectionFailed, StateError: as :meth:`request`.
        """
        if self._hooks:
            raise ClientError("RPC hooks need a RemotingCommand: send it with request()")
        opaque = self._new_opaque()
        return self._exchange(opaque, encode(opaque, *args), code, timeout)

    async def _exchange(self, opaque: int, data: bytes, code: int, timeout: float) -> RemotingCommand:  # noqa: ASYNC109
        """Queue the frame ``data`` of request ``opaque`` and wait for its response."""
        self._enqueue(data, 1)
        # The task parks until the reader, the deadline timer or _close wakes it: no Event and no
        # CancelScope per call (the hot path of every send and pull).
        slot = _Slot(trio.lowlevel.current_task())
        pending = self._pending
        pending[opaque] = slot
        if timeout != math.inf:
            self._deadlines.arm(self._now() + timeout, opaque, slot)
        received_before = self._bytes_received

        def abort(_: object) -> trio.lowlevel.Abort:
            if pending.get(opaque) is slot:
                del pending[opaque]
            return trio.lowlevel.Abort.SUCCEEDED

        try:
            response: RemotingCommand | None = await trio.lowlevel.wait_task_rescheduled(abort)
        except _TimedOut:
            self._writer.take_back(data)
            what = f"no response to {code_name(code)} (opaque {opaque}) from {self._address} within {timeout:g} s"
            if self._closed_reason is None and closes_on_timeout(
                enabled=self._close_on_timeout,
                waited=timeout,
                received_meanwhile=self._bytes_received != received_before,
            ):
                self._close(f"connection to {self._address} closed: {what}, nothing received", None)
                what += "; nothing else arrived either, so the connection was closed"
            raise RequestTimeout(what) from None
        except BaseException:
            self._writer.take_back(data)
            raise
        if response is None:  # _close woke the call: the connection is gone
            self._raise_closed()
        return response

    def _is_pending(self, opaque: int, slot: _Slot) -> bool:
        return self._pending.get(opaque) is slot

    def _expire(self, opaque: int, slot: _Slot) -> None:
        del self._pending[opaque]
        trio.lowlevel.reschedule(slot.task, outcome.Error(_TimedOut()))

    async def oneway(self, command: RemotingCommand) -> None:
        """Send a oneway request (no response is expected); return once it is written.

        Raises:
            ConnectionFailed: the connection dropped, before or while writing.
            StateError: the connection had been closed with :meth:`aclose`.
        """
        await self.send_many((command,))

    async def send_many(self, commands: Iterable[RemotingCommand]) -> None:
        """Send several oneway requests in a single write.

        Each command gets a fresh ``opaque`` and the ONEWAY flag; hooks run on each.

        Raises:
            ConnectionFailed: the connection dropped, before or while writing.
            StateError: the connection had been closed with :meth:`aclose`.
        """
        frames = [self._prepare(command, oneway=True).encode() for command in commands]
        if frames:
            await self._write(frames[0] if len(frames) == 1 else b"".join(frames), len(frames))

    async def aclose(self) -> None:
        """Close the connection: pending calls fail with ConnectionFailed, later ones with StateError.

        Idempotent. The reader task ends on its own right after; its owner nursery waits for it.
        """
        if self._closed_reason is None:
            self._closed_by_client = True
        self._close(f"connection to {self._address} was closed by the client", None)
        await trio.aclose_forcefully(self._stream)

    # --- internals: writing --------------------------------------------------------------------

    def _new_opaque(self) -> int:
        if self._closed_reason is not None:
            self._raise_closed(new_call=True)
        opaque = self._next_opaque
        self._next_opaque = (opaque + 1) & _OPAQUE_MASK
        return opaque

    def _prepare(self, command: RemotingCommand, *, oneway: bool = False) -> RemotingCommand:
        opaque = self._new_opaque()
        if command.serialize_type == self._serialize_type and (command.is_oneway or not oneway):
            command = command.with_opaque(opaque)
        else:
            flag = command.flag | FLAG_ONEWAY if oneway else command.flag
            command = dataclasses.replace(
                command, opaque=opaque, flag=flag, serialize_type=self._serialize_type
            )
        for hook in self._hooks:
            command = hook.before_request(command)
        return command

    def _enqueue(self, data: bytes, frames: int) -> None:
        """Queue whole frames for the writer task (see :class:`FrameWriter`)."""
        if self._closed_reason is not None:
            self._raise_closed()
        self._writer.enqueue(data, frames)

    async def _write(self, data: bytes, frames: int = 1) -> None:
        """Write ``data`` (whole frames), with whatever other tasks queued meanwhile, in one write."""
        if self._closed_reason is not None:
            self._raise_closed()
        if not await self._writer.write(data, frames):
            self._raise_closed()

    def _on_write_error(self, error: ConnectionFailed) -> None:
        self._fail(str(error), error.__cause__, peer_closed=True)

    # --- internals: failure --------------------------------------------------------------------

    def _fail(self, reason: str, cause: BaseException | None, *, peer_closed: bool) -> None:
        """Close after an I/O or protocol failure, as TlsMismatch when it looks like one."""
        if self._closed_reason is not None:
            return
        hint = None
        if not self._tls:
            first_write = self._writer.first_write_at
            hint = plaintext_mismatch_hint(
                first_bytes=self._first_bytes,
                bytes_received=self._bytes_received,
                since_first_write=None if first_write is None else trio.current_time() - first_write,
                peer_closed=peer_closed,
            )
        if hint is not None:
            self._closed_error = TlsMismatch
            reason = f"{reason} ({hint})"
        self._close(reason, cause)

    def _close(self, reason: str, cause: BaseException | None) -> None:
        """Mark the connection closed (first reason wins), fail every pending call, stop the reader."""
        if self._closed_reason is not None:
            return
        self._closed_reason = reason
        self._closed_cause = cause
        if self._on_close is not None:
            try:
                self._on_close(self._address, reason, self._closed_by_client)
            except Exception:
                logger.exception("%s: the close callback failed", self)
        pending = list(self._pending.values())
        self._pending.clear()
        self._writer.fail()  # not written: waiters raise ConnectionFailed
        for slot in pending:
            trio.lowlevel.reschedule(slot.task, outcome.Value(None))  # the waiter raises ConnectionFailed
        self._serve_scope.cancel()
        if pending:
            logger.debug("%s: %s; failing %d pending calls", self, reason, len(pending))

    def _raise_closed(self, *, new_call: bool = False) -> NoReturn:
        # Calls in flight when the connection went away failed with it: ConnectionFailed. A new
        # call on a connection that dropped fails the same way (the caller may retry elsewhere);
        # a new call on one the client closed itself is a misuse: StateError.
        if new_call and self._closed_by_client:
            raise StateError(f"connection to {self._address} was closed by the client")
        # A fresh exception per caller: tasks must not share (and re-raise) one instance.
        error = self._closed_error(self._closed_reason or f"connection to {self._address} is closed")
        raise error from self._closed_cause

    # --- internals: reading --------------------------------------------------------------------

    async def serve(self, *, task_status: trio.TaskStatus[Connection] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the reader and the handler tasks until the connection ends.

        Start it with ``await nursery.start(connection.serve)`` (which returns the connection);
        ``start_connection`` does this for a TCP connection. It returns when the connection
        closes and never raises for I/O or protocol failures: those fail the calls instead.
        The connection owns ``stream`` and closes it on the way out.
        """
        self._now = trio.lowlevel.current_clock().current_time
        try:
            with self._serve_scope:
                async with trio.open_nursery() as handler_nursery:
                    self._inbound.nursery = handler_nursery
                    handler_nursery.start_soon(self._writer.run, self._on_write_error)
                    handler_nursery.start_soon(self._deadlines.run)
                    task_status.started(self)
                    try:
                        await self._read_loop()
                    except ConnectionFailed as exc:
                        self._fail(str(exc), exc.__cause__, peer_closed=True)
                    except ProtocolError as exc:
                        reason = f"{self._address} sent bytes we cannot decode: {exc}"
                        self._fail(reason, exc, peer_closed=False)
                    finally:
                        # In-flight handlers can no longer answer.
                        handler_nursery.cancel_scope.cancel()
        finally:
            self._close(f"connection to {self._address} is closed", None)
            await trio.aclose_forcefully(self._stream)

    async def _read_loop(self) -> None:
        frames = FrameBuffer(max_frame_size=self._max_frame_size)
        io = ReadWrite(self._stream)
        translated = translate_io_errors(f"reading from {self._address} failed")
        route_request = self._inbound.route
        while True:
            with translated:
                data = await io.receive(RECEIVE_CHUNK)
            if not data:
                frames.eof()  # raises if the peer stopped mid-frame
                raise ConnectionFailed(f"connection to {self._address} was closed by the peer")
            if len(self._first_bytes) < 2:
                self._first_bytes = (self._first_bytes + data)[:2]
            self._bytes_received += len(data)
            for command in frames.feed(data):
                self._frames_received += 1
                if command.is_response:
                    self._route_response(command)
                else:
                    route_request(command)

    def _route_response(self, response: RemotingCommand) -> None:
        slot = self._pending.pop(response.opaque, None)
        if slot is None:
            logger.debug("%s: dropping a response nobody waits for (opaque %d)", self, response.opaque)
            return
        trio.lowlevel.reschedule(slot.task, outcome.Value(response))
