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
  (a consume timeout, a shutdown) cancels that call and waits for it to end.

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
import contextvars
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar, cast

import outcome
import trio
from sniffio import thread_local as sniffio_thread_local

from rocketmq_py.aio._loop_calls import _LoopCall, _Parked, _Resume
from rocketmq_py.aio._shutdown import Closable, cancelled_by_itself, close_left_open, cut_by_shutdown
from rocketmq_py.aio._spinner import Spinner
from rocketmq_py.errors import StateError

__all__ = ["TrioGuest", "guest_for_running_loop"]

T = TypeVar("T")

#: Trio workers running asyncio callers' calls: at most this many at once (more calls wait).
_MAX_WORKERS = 1024
#: Workers kept parked for the next burst; more idle ones end.
_MAX_IDLE_WORKERS = 256


# asyncio's own way of making a task current while it runs a step (private, but what its eager task
# start does); without them every call starts in its worker's next step.
_enter_task: Callable[[asyncio.AbstractEventLoop, asyncio.Task[Any]], None] | None = getattr(
    asyncio.tasks, "_enter_task", None
)
_leave_task: Callable[[asyncio.AbstractEventLoop, asyncio.Task[Any]], None] = getattr(
    asyncio.tasks, "_leave_task", lambda loop, task: None
)

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
        self._loop_calls: deque[_LoopCall] = deque()  # run_on_loop calls no loop worker took yet
        self._loop_idle: list[_Parked] = []  # parked loop workers
        self._loop_workers = 0
        self._loop_waking = False  # a loop worker was woken (or made) and has not run yet
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
        idle, self._loop_idle = self._loop_idle, []
        for parked in idle:  # parked loop workers end
            parked.wake.cancel()
        self._loop_waking = False
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

    # --- trio -> asyncio ------------------------------------------------------------------------

    async def run_on_loop(self, coro_fn: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
        """(In trio) await ``coro_fn(*args)`` in an asyncio task on the loop and wait for its result.

        The coroutine runs in one of the guest's *loop workers*: long-lived asyncio tasks, each
        awaiting one call at a time, so calls that wait on I/O overlap. As in a thread pool,
        ``asyncio.current_task()`` and the context variables are the worker's. When a worker is
        idle, the call starts at once in this trio step as that worker's (asyncio's eager task
        start: the worker is the current asyncio task, its context is the context): a call that
        finishes without waiting returns here with no loop crossing; one that waits goes on in
        the worker. A trio cancel cancels the call (the worker goes on with the next one) and
        waits for it to end, then raises trio's Cancelled.
        """
        # (Trio steps run in loop callbacks, never inside an asyncio task: _enter_task may be used.)
        if self._loop_idle and _enter_task is not None:
            parked = self._loop_idle.pop()
            coro = coro_fn(*args)
            library, sniffio_thread_local.name = sniffio_thread_local.name, None  # asyncio's step
            _enter_task(self.loop, parked.task)
            try:
                yielded = parked.context.run(coro.send, None)
            except StopIteration as stop:
                self._loop_idle.append(parked)  # still parked on its wake-up
                return cast(T, stop.value)
            except asyncio.CancelledError as exc:  # not a cancel of the call: nobody cancelled it yet
                self._loop_idle.append(parked)
                raise cancelled_by_itself(coro_fn, exc) from exc
            except BaseException:
                self._loop_idle.append(parked)
                raise
            finally:
                _leave_task(self.loop, parked.task)
                sniffio_thread_local.name = library
            call = _LoopCall(coro_fn, args, trio.lowlevel.current_task())
            call.resume = (coro, yielded)
            call.worker = parked.task
            parked.wake.set_result(call)  # the worker goes on with it
        else:
            call = _LoopCall(coro_fn, args, trio.lowlevel.current_task())
            self._loop_calls.append(call)
            self._wake_loop_worker()
        spin = self._spin
        spin.on_loop += 1
        if spin.task is not None:
            spinner, spin.task = spin.task, None
            trio.lowlevel.reschedule(spinner)

        def abort(raise_cancel: Callable[[], Any]) -> trio.lowlevel.Abort:
            call.raise_cancel = raise_cancel
            if call.worker is None:  # still queued: a worker will skip it
                call.skip = True
                spin.on_loop -= 1
                return trio.lowlevel.Abort.SUCCEEDED
            call.worker.cancel()
            return trio.lowlevel.Abort.FAILED  # the worker wakes us once the call has ended

        result: T = await trio.lowlevel.wait_task_rescheduled(abort)
        return result

    def _wake_loop_worker(self) -> None:
        """Make sure a loop worker will look at the queued calls (one wake-up at a time)."""
        if self._loop_waking:
            return
        if self._loop_idle:
            self._loop_waking = True
            self._loop_idle.pop().wake.set_result(None)
        elif self._loop_workers < _MAX_WORKERS:
            self._loop_waking = True
            self._loop_workers += 1
            context = contextvars.Context()
            self.loop.create_task(self._loop_worker(context), context=context)

    async def _loop_worker(self, context: contextvars.Context) -> None:
        """(In asyncio) runs :meth:`run_on_loop` calls, queued or handed over; parks when there are none."""
        me = asyncio.current_task()
        assert me is not None
        calls = self._loop_calls
        try:
            while True:
                self._loop_waking = False
                while calls:
                    call = calls.popleft()
                    if call.skip:
                        continue
                    if calls:  # more waiting: another worker takes them if this call awaits
                        self._wake_loop_worker()
                    await self._run_loop_call(me, call)
                if self._nursery is None or len(self._loop_idle) >= _MAX_IDLE_WORKERS:
                    return
                parked = _Parked(me, context, self.loop.create_future())
                self._loop_idle.append(parked)
                try:
                    handed = await parked.wake
                except asyncio.CancelledError as exc:
                    if not parked.wake.done() or parked.wake.cancelled():
                        return  # the trio run ended
                    handed = parked.wake.result()  # handed over, and cancelled before this step
                    if handed is not None and handed.raise_cancel is None:  # the loop is closing
                        self._finish_loop_call(handed, outcome.Error(cut_by_shutdown(handed.coro_fn, exc)))
                        raise
                    me.uncancel()
                if handed is not None:
                    await self._run_loop_call(me, handed)
        finally:
            self._loop_workers -= 1

    async def _run_loop_call(self, me: asyncio.Task[Any], call: _LoopCall) -> None:
        call.worker = me
        result: outcome.Outcome[Any]
        try:
            if call.resume is None:
                value = await call.coro_fn(*call.args)
            else:
                value = await _Resume(*call.resume, cancelled=call.raise_cancel is not None)
            result = outcome.Value(value)
        except asyncio.CancelledError as exc:
            if call.raise_cancel is not None:  # the call was cancelled (from trio)
                result = outcome.capture(call.raise_cancel)  # trio's Cancelled, for the trio task
            elif me.cancelling():  # the worker itself is cancelled: the loop is closing
                self._finish_loop_call(call, outcome.Error(cut_by_shutdown(call.coro_fn, exc)))
                raise
            else:  # raised by the call itself (it awaited something another task cancelled): it failed
                result = outcome.Error(cancelled_by_itself(call.coro_fn, exc))
        except BaseException as exc:  # every error crosses to the trio task
            result = outcome.Error(exc)
            if not isinstance(exc, Exception):
                self._finish_loop_call(call, result)
                raise
        if call.raise_cancel is not None and me.cancelling():
            me.uncancel()  # the cancel was for this call only (delivered, or swallowed by it)
        self._finish_loop_call(call, result)

    def _finish_loop_call(self, call: _LoopCall, result: outcome.Outcome[Any]) -> None:
        call.worker = None
        spin = self._spin
        spin.on_loop -= 1
        spin.finished_on_loop += 1
        trio.lowlevel.reschedule(call.trio_task, result)


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
