"""The trio run hosted on an asyncio loop (trio's guest mode), shared by the loop's clients.

One :class:`TrioGuest` per asyncio event loop runs the trio clients' tasks on that loop's own
thread: trio's scheduler ticks are ordinary asyncio callbacks, and trio waits for I/O in a helper
thread only when it has nothing to run. Nothing crosses a thread per call:

- asyncio → trio (:meth:`TrioGuest.call`): the call becomes a trio task in the guest's nursery; its
  result or error is set on an asyncio future the caller awaits. Cancelling the caller cancels the
  trio task's scope (the trio call unwinds in the background; :meth:`TrioGuest.release` waits for it).
- trio → asyncio (:meth:`TrioGuest.run_on_loop`): a listener coroutine runs in one of the guest's
  loop workers (asyncio tasks on the user's loop that take queued calls one after another, as a
  thread pool's threads do); the trio task that awaits it sleeps until it is done. A trio cancel
  (a consume timeout, a shutdown) cancels that call and waits for it to end (:mod:`._loop_workers`).

The guest starts with the first client entered on a loop and ends when the last one leaves, so a
loop left without clients has no trio run, no helper thread and no sockets. A client still open
when the loop shuts down (``asyncio.run`` cancels every task before it closes the loop) is closed
then, as ``async with`` would have (offsets committed, the client unregistered), with a
ResourceWarning naming it: a parked *keeper* task of the guest does that when it is cancelled. A
listener still running then fails with :class:`~rocketmq_py.errors.ListenerCancelled`.

While work crosses in either direction, a *spinner* task keeps trio runnable for a few loop
iterations, so that trio does not wait for I/O in guest mode's helper thread just before the loop
hands it the next piece (:mod:`rocketmq_py.aio._spinner`).
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol, TypeVar

import outcome
import trio

from rocketmq_py.aio._loop_workers import LoopWorkers
from rocketmq_py.aio._shutdown import Closable, close_left_open
from rocketmq_py.aio._spinner import Spinner
from rocketmq_py.errors import StateError

__all__ = ["TrioGuest", "guest_for_running_loop"]

T = TypeVar("T")

#: Trio workers running asyncio callers' calls: at most this many at once (more calls wait).
_MAX_WORKERS = 1024
#: Workers kept parked for the next burst; more idle ones end.
_MAX_IDLE_WORKERS = 256


class _RunOnLoop(Protocol):
    """The signature of :meth:`TrioGuest.run_on_loop`."""

    def __call__(self, coro_fn: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> Awaitable[T]: ...


_GUESTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, TrioGuest] = weakref.WeakKeyDictionary()


def guest_for_running_loop() -> TrioGuest:
    """The :class:`TrioGuest` of the running asyncio loop (made on first use).

    Raises:
        StateError: no asyncio loop runs in this thread.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise StateError("rocketmq_py.aio clients need a running asyncio event loop") from None
    guest = _GUESTS.get(loop)
    if guest is None:
        guest = _GUESTS[loop] = TrioGuest(loop)
    return guest


class TrioGuest:
    """A trio run in guest mode on ``loop``, started and stopped by reference count.

    Args:
        loop: the asyncio loop hosting the trio run (the current thread's running loop).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._users = 0
        self._nursery: trio.Nursery | None = None
        self._stop: trio.Event | None = None
        self._ready: asyncio.Future[None] | None = None
        self._done: asyncio.Future[None] | None = None
        self._queue: deque[_Call] = deque()
        self._idle: list[trio.lowlevel.Task] = []
        self._workers = 0
        self._spin = Spinner()
        self._loop_workers = LoopWorkers(loop, self._spin)
        #: (In trio) await ``coro_fn(*args)`` in an asyncio task on the loop and wait for its result:
        #: :meth:`LoopWorkers.run_on_loop <rocketmq_py.aio._loop_workers.LoopWorkers.run_on_loop>`
        #: itself, not a wrapper (no extra frame per listener call).
        self.run_on_loop: _RunOnLoop = self._loop_workers.run_on_loop
        #: The clients open on this loop (``open()`` adds, ``aclose()`` removes): closed by the
        #: keeper if the loop shuts down first.
        self.open_clients: set[Closable] = set()
        self._keeper: asyncio.Task[None] | None = None
        self._closing_left_open = False

    @property
    def nursery(self) -> trio.Nursery | None:
        """The guest run's nursery (``None`` while the run is down): host tasks start in it."""
        return self._nursery

    @property
    def running(self) -> bool:
        """Whether the trio run is up (some client is open on this loop)."""
        return self._nursery is not None

    @property
    def spin_ticks(self) -> int:
        """Loop iterations the spinner spent keeping trio awake, ever (for tests and benchmarks)."""
        return self._spin.ticks

    # --- lifetime -------------------------------------------------------------------------------

    async def acquire(self) -> None:
        """Count one more user, starting the trio run if it is not up (or is ending)."""
        while self._done is not None and self._users == 0:
            await asyncio.shield(self._done)  # the last run is still ending: wait, then start anew
        self._users += 1
        if self._ready is None:
            self._start()
        assert self._ready is not None
        try:
            await asyncio.shield(self._ready)
        except BaseException:
            await self.release()
            raise

    async def release(self) -> None:
        """Count one user less; the last one stops the trio run and waits until it has ended."""
        self._users -= 1
        if self._users:
            return
        done = self._done
        if self._stop is not None:
            self._stop.set()
        if done is not None:
            await asyncio.shield(done)

    def _start(self) -> None:
        loop = self.loop
        self._ready = loop.create_future()
        self._done = loop.create_future()
        try:
            trio.lowlevel.start_guest_run(
                self._main,
                run_sync_soon_threadsafe=loop.call_soon_threadsafe,
                run_sync_soon_not_threadsafe=loop.call_soon,
                done_callback=self._finished,
                host_uses_signal_set_wakeup_fd=True,  # asyncio owns the signal wake-up fd
                strict_exception_groups=True,
            )
        except RuntimeError as exc:  # e.g. a trio run already runs in this thread
            self._ready = self._done = None
            self._users -= 1
            raise StateError(f"cannot host the trio clients on this asyncio loop: {exc}") from exc
        self._keeper = loop.create_task(self._close_left_open(), name="rocketmq_py.aio keeper")

    async def _close_left_open(self) -> None:
        """Parked for the guest's life; cancelled by the loop's shutdown (``asyncio.run``) while
        clients are still open, it closes them first, each with a ResourceWarning naming it."""
        try:
            await self.loop.create_future()
        except asyncio.CancelledError:
            left = list(self.open_clients)
            if left:
                self._closing_left_open = True
                await close_left_open(left)
            raise

    async def _main(self) -> None:
        self._stop = trio.Event()
        if self._users == 0:  # every user left (cancelled) before the run got here
            return
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._loop_workers.start()
            nursery.start_soon(self._spin.run)
            assert self._ready is not None
            if not self._ready.done():
                self._ready.set_result(None)
            await self._stop.wait()
            nursery.cancel_scope.cancel()  # calls still running belong to no open client

    def _finished(self, result: outcome.Outcome[None]) -> None:
        keeper, self._keeper = self._keeper, None
        if keeper is not None and not self._closing_left_open:
            keeper.cancel()  # nothing left open for it to close
        self._closing_left_open = False
        ready, done = self._ready, self._done
        self._loop_workers.stop()  # parked loop workers end
        self._nursery = self._stop = self._ready = self._done = None
        if self._users == 0 and _GUESTS.get(self.loop) is self:
            del _GUESTS[self.loop]  # (the guest refers to its loop: kept, the loop would never go)
        error = result.error if isinstance(result, outcome.Error) else None
        for fut in (ready, done):
            if fut is None or fut.done():
                continue
            if error is not None and fut is ready:
                fut.set_exception(StateError(f"the trio run on this asyncio loop failed: {error!r}"))
            else:
                fut.set_result(None)
        if error is not None and not isinstance(error, trio.Cancelled):
            self.loop.call_exception_handler(
                {"message": "rocketmq_py.aio: the trio guest run failed", "exception": error}
            )

    # --- asyncio -> trio ------------------------------------------------------------------------

    def call(self, afn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> Awaitable[T]:
        """``await afn(*args, **kwargs)`` in a trio worker; the result or error comes back here.

        Raises:
            StateError: the trio run is not up (no client open on this loop).
        """
        return self.call_keeping(None, afn, *args, **kwargs)

    async def call_keeping(
        self,
        on_lost: Callable[[T], object] | None,
        afn: Callable[..., Awaitable[T]],
        *args: Any,
        **kwargs: Any,
    ) -> T:
        """:meth:`call`, handing a result its cancelled caller never got to ``on_lost``.

        A cancel can meet a result: the trio call returns just after the caller was cancelled, or
        the caller is cancelled after the result was set but before it resumed. Results that
        change state when taken (a poll moves the consumed offset) must be put back there.
        """
        if self._nursery is None:
            raise StateError("the client is not open (use `async with`)")
        fut: asyncio.Future[T] = self.loop.create_future()
        call = _Call(fut, afn, args, kwargs, on_lost)
        self._queue.append(call)
        if self._idle:
            trio.lowlevel.reschedule(self._idle.pop())
        elif self._workers < _MAX_WORKERS:
            self._workers += 1
            self._nursery.start_soon(self._worker)
        try:
            return await fut
        except asyncio.CancelledError:
            call.cancelled = True
            if call.scope is not None:
                call.scope.cancel()  # only this call runs in that scope
            if on_lost is not None and fut.done() and not fut.cancelled() and fut.exception() is None:
                on_lost(fut.result())  # set, but this task was cancelled before it resumed
            raise

    async def _worker(self) -> None:
        """Runs queued calls one after another; parks when there are none.

        The calls share one cancel scope (a scope per call would cost more than the call's
        bridge): a cancelled call ends its scope, and the worker opens a new one.
        """
        queue = self._queue
        spin = self._spin
        try:
            while True:
                with trio.CancelScope() as scope:
                    while True:
                        while not queue:
                            if len(self._idle) >= _MAX_IDLE_WORKERS:
                                return
                            self._idle.append(trio.lowlevel.current_task())
                            await trio.lowlevel.wait_task_rescheduled(self._abort_idle)
                        call = queue.popleft()
                        if call.cancelled:
                            continue
                        call.scope = scope
                        await _run_call(call)
                        call.scope = None
                        spin.results += 1
                        if spin.task is not None:  # keep trio awake for the caller's next call
                            spinner, spin.task = spin.task, None
                            trio.lowlevel.reschedule(spinner)
                        if scope.cancel_called:  # cancelled, but the call swallowed it
                            break
        finally:
            self._workers -= 1

    def _abort_idle(self, _: Any) -> trio.lowlevel.Abort:
        task = trio.lowlevel.current_task()
        if task in self._idle:
            self._idle.remove(task)
        return trio.lowlevel.Abort.SUCCEEDED


class _Call:
    """One asyncio caller's request, waiting in the queue or running in a worker."""

    __slots__ = ("afn", "args", "cancelled", "fut", "kwargs", "on_lost", "scope")

    def __init__(
        self,
        fut: asyncio.Future[Any],
        afn: Callable[..., Awaitable[Any]],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        on_lost: Callable[[Any], object] | None,
    ) -> None:
        self.fut = fut
        self.on_lost = on_lost
        self.afn = afn
        self.args = args
        self.kwargs = kwargs
        self.cancelled = False
        self.scope: trio.CancelScope | None = None


async def _run_call(call: _Call) -> None:
    fut = call.fut
    try:
        kwargs = call.kwargs
        value = await (call.afn(*call.args, **kwargs) if kwargs else call.afn(*call.args))
    except trio.Cancelled:
        if not fut.done():
            fut.set_exception(StateError("the client was closed while this call ran"))
        raise
    except Exception as exc:  # every error crosses to the awaiting caller, unchanged
        if not fut.done():
            fut.set_exception(exc)
        return
    except BaseException as exc:  # KeyboardInterrupt, SystemExit: the caller sees it, trio too
        if not fut.done():
            fut.set_exception(exc)
        raise
    if not fut.done():
        fut.set_result(value)
    elif call.on_lost is not None:
        call.on_lost(value)  # the caller was cancelled while the call returned
