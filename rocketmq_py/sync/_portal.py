"""A trio loop in a background thread that blocking code calls into.

:class:`Portal` runs ``trio.run`` in one daemon thread. Other threads call async functions in
it with :meth:`Portal.call` (``trio.from_thread.run`` with the loop's token) and keep async
context managers open in it with :meth:`Portal.enter_async_context`: each one gets a *host task*
that enters it, waits until the portal closes, and exits it, so entering and exiting happen in
the same trio task as trio requires. The sync clients of :mod:`rocketmq_py.sync` are each one
async client hosted in one portal.

Lifecycle, from any thread::

    new --start()--> running --close()--> closed
                        |
                        +--(a hosted context or the loop fails)--> crashed --close()--> closed

- Errors raised by the called function cross the thread boundary as they are (same type, same
  object): a ``BrokerError`` from a send is a ``BrokerError`` in the caller.
- ``close()`` cancels the calls still running (they raise :class:`StateError`), exits the hosted
  contexts in reverse order of entry, ends the loop and joins the thread. An error raised while
  exiting a context is raised by ``close()``. A second ``close()`` is a no-op.
- If a hosted context fails on its own (a background task of the async client crashed), the loop
  ends: running calls and every later call raise :class:`StateError` chained to that error, and
  ``close()`` raises it if no call has reported it yet.
- Calling into the portal from its own loop thread would deadlock; it raises StateError instead.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import TracebackType
from typing import ParamSpec, Self, TypeVar

import trio

from rocketmq_py.errors import StateError

__all__ = ["Portal", "PortalState"]

T = TypeVar("T")
P = ParamSpec("P")

#: Seconds ``start()`` waits for the loop thread to be ready (it only starts ``trio.run``).
START_TIMEOUT = 30.0


class PortalState(enum.Enum):
    """Where a portal is in its life (see the module docstring)."""

    NEW = "new"
    RUNNING = "running"
    CLOSING = "closing"
    CRASHED = "crashed"
    CLOSED = "closed"


class _Interrupted(Exception):
    """A call was cancelled by the portal (closing or crashed); mapped to StateError."""


class Portal:
    """One trio loop in a daemon thread, for blocking callers in other threads.

    Args:
        name: the loop thread's name (shown by debuggers and ``threading.enumerate()``).

    Use ``with Portal() as portal:`` or :meth:`start` / :meth:`close`.
    """

    def __init__(self, name: str = "rocketmq-py-trio") -> None:
        self.name = name
        self._lock = threading.Lock()
        self._state = PortalState.NEW
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        # Loop-side state: touched only from the loop thread.
        self._stop: trio.Event | None = None
        self._hosts_nursery: trio.Nursery | None = None
        self._hosted: list[_Hosted] = []
        self._calls: set[trio.CancelScope] = set()
        self._call_ended = trio.lowlevel.ParkingLot()
        self._stopping = False
        # Written by the loop thread before it ends, read by callers after the loop is gone.
        self._error: BaseException | None = None
        self._error_reported = False

    # --- state ----------------------------------------------------------------------------------

    @property
    def state(self) -> PortalState:
        with self._lock:
            return self._state

    @property
    def thread(self) -> threading.Thread | None:
        """The loop thread (``None`` before :meth:`start`)."""
        return self._thread

    def _in_loop_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def _dead(self) -> StateError:
        """The StateError for a call that cannot (or can no longer) run."""
        with self._lock:
            state, error = self._state, self._error
            if error is not None and state is not PortalState.CLOSED:
                self._error_reported = True
        if state is PortalState.NEW:
            return StateError("not started: call start() first, or use a `with` block")
        if error is not None and state is not PortalState.CLOSED:
            crashed = StateError(f"the background trio loop stopped: {error!r}")
            crashed.__cause__ = error
            return crashed
        return StateError("closed")

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> Self:
        """Start the loop thread and wait until it accepts calls.

        Raises:
            StateError: already started, or closed.
        """
        with self._lock:
            if self._state is not PortalState.NEW:
                raise StateError(f"a portal can be started only once (it is {self._state.value})")
            self._state = PortalState.RUNNING
            self._thread = threading.Thread(target=self._thread_main, name=self.name, daemon=True)
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT):  # pragma: no cover - trio.run does not start
            raise StateError(f"the trio loop thread did not start within {START_TIMEOUT:g} s")
        if self._token is None:  # pragma: no cover - trio.run failed before the main task ran
            self._thread.join()
            raise self._dead()
        return self

    def close(self) -> None:
        """Cancel running calls, exit the hosted contexts (last entered first), stop the loop.

        Idempotent; concurrent callers all return once the loop thread has ended.

        Raises:
            StateError: called from the loop thread itself (it would wait for itself).
            BaseException: whatever exiting a hosted context raised, or the crash that ended the
                loop earlier if no call has reported it.
        """
        if self._in_loop_thread():
            raise StateError("a portal cannot be closed from its own trio thread")
        with self._lock:
            state = self._state
            if state is PortalState.NEW:
                self._state = PortalState.CLOSED
                return
            first = state in (PortalState.RUNNING, PortalState.CRASHED)
            if state is PortalState.RUNNING:
                self._state = PortalState.CLOSING
        thread, token = self._thread, self._token
        assert thread is not None
        if first and token is not None:
            with contextlib.suppress(trio.RunFinishedError):  # the loop already ended (crashed)
                token.run_sync_soon(self._request_stop)
        thread.join()
        with self._lock:
            self._state = PortalState.CLOSED
            error, report = self._error, first and not self._error_reported
            self._error_reported = True
        if error is not None and report:
            raise error

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- calls ----------------------------------------------------------------------------------

    def call(self, afn: Callable[P, Awaitable[T]], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``await afn(*args, **kwargs)`` in the loop and return its result.

        Safe from any number of threads at once (each call is its own trio task).

        Raises:
            StateError: the portal is not running, was closed while the call ran, its loop
                crashed (the crash is the ``__cause__``), or this is the loop thread itself.
            BaseException: whatever ``afn`` raised, unchanged.
        """
        token = self._running_token()
        bound = functools.partial(afn, *args, **kwargs)
        try:
            return trio.from_thread.run(self._guarded, bound, trio_token=token)
        except (_Interrupted, trio.RunFinishedError, trio.Cancelled):
            # Cancelled only when the loop ended under a call it had not cancelled itself.
            dead = self._dead()
        raise dead from dead.__cause__

    def call_sync(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn(*args, **kwargs)`` (a plain function) in the loop thread and return its result.

        Use it to read state the loop's tasks mutate. Raises as :meth:`call`.
        """
        bound = functools.partial(fn, *args, **kwargs)

        async def run() -> T:
            return bound()

        return self.call(run)

    def enter_async_context(self, manager: AbstractAsyncContextManager[T]) -> T:
        """Enter ``manager`` in the loop and keep it open until the portal closes.

        Returns:
            What ``__aenter__`` returned.

        Raises:
            StateError: as :meth:`call`.
            BaseException: whatever ``__aenter__`` raised, unchanged (nothing is kept open then).
        """
        return self.call(self._enter, manager)

    def _running_token(self) -> trio.lowlevel.TrioToken:
        if self._in_loop_thread():
            raise StateError(
                "a blocking rocketmq-py call was made from its own trio thread (e.g. in an async "
                "callback); it would deadlock: use the async API there"
            )
        with self._lock:
            if self._state is PortalState.RUNNING and self._token is not None:
                return self._token
        raise self._dead()

    # --- the loop thread ------------------------------------------------------------------------

    def _thread_main(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:  # recorded in _main already; keep the first one
            if self._error is None:  # pragma: no cover - trio.run itself failed
                self._error = exc
        finally:
            self._ready.set()
            with self._lock:
                if self._error is not None and self._state is PortalState.RUNNING:
                    self._state = PortalState.CRASHED

    async def _main(self) -> None:
        self._stop = trio.Event()
        try:
            async with _unwrapping_nursery() as nursery:
                self._hosts_nursery = nursery
                self._token = trio.lowlevel.current_trio_token()
                self._ready.set()
                await self._stop.wait()
                await self._cancel_calls()
                # One by one, last entered first, as nested `async with` blocks would end.
                for hosted in reversed(self._hosted):
                    hosted.exit.set()
                    await hosted.done.wait()
        except BaseException as exc:
            self._error = exc
            with self._lock:
                if self._state is PortalState.RUNNING:
                    self._state = PortalState.CRASHED
            raise
        finally:
            with trio.CancelScope(shield=True):
                await self._cancel_calls()

    def _request_stop(self) -> None:
        assert self._stop is not None
        self._stop.set()

    async def _cancel_calls(self) -> None:
        """Cancel the running calls and wait until every one has ended."""
        self._stopping = True
        for scope in list(self._calls):
            scope.cancel()
        while self._calls:
            await self._call_ended.park()

    async def _guarded(self, bound: Callable[[], Awaitable[T]]) -> T:
        if self._stopping:
            raise _Interrupted
        with trio.CancelScope() as scope:
            self._calls.add(scope)
            try:
                return await bound()
            finally:
                self._calls.discard(scope)
                self._call_ended.unpark_all()
        raise _Interrupted  # the portal cancelled the call (closing, or the loop crashed)

    async def _enter(self, manager: AbstractAsyncContextManager[T]) -> T:
        assert self._hosts_nursery is not None
        value: T = await self._hosts_nursery.start(self._host, manager)
        return value

    async def _host(
        self,
        manager: AbstractAsyncContextManager[T],
        *,
        task_status: trio.TaskStatus[T] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        hosted = _Hosted()
        try:
            async with manager as value:
                self._hosted.append(hosted)
                task_status.started(value)
                await hosted.exit.wait()
        finally:
            hosted.done.set()


class _Hosted:
    """The two events between the portal and one host task."""

    __slots__ = ("done", "exit")

    def __init__(self) -> None:
        self.exit = trio.Event()
        self.done = trio.Event()


@asynccontextmanager
async def _unwrapping_nursery() -> AsyncIterator[trio.Nursery]:
    """A nursery whose single error leaves unwrapped (hosted contexts raise their own groups)."""
    try:
        async with trio.open_nursery() as nursery:
            yield nursery
    except BaseExceptionGroup as group:
        if len(group.exceptions) != 1:
            raise
        error = group.exceptions[0]
        context = error.__context__
        try:
            raise error
        finally:
            error.__context__ = context
