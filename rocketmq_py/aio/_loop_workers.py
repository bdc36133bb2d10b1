"""The trio -> asyncio direction of the guest run: coroutines run in asyncio tasks on the loop.

Listeners (and other user callbacks) are asyncio coroutines; the trio task that calls one awaits
:meth:`LoopWorkers.run_on_loop`, which runs it in one of the *loop workers*: asyncio tasks on the
user's loop that take queued calls one after another, as a thread pool's threads do, so calls
that wait on I/O overlap. The trio task sleeps until its call is done; a trio cancel (a consume
timeout, a shutdown) cancels that call and waits for it to end. A call still running when the
loop shuts down fails with :class:`~rocketmq_py.errors.ListenerCancelled` (:mod:`._shutdown`).
What a worker is handed is in :mod:`._loop_calls`; each call started and finished is counted on
the guest's :class:`~rocketmq_py.aio._spinner.Spinner`.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar, cast

import outcome
import trio
from sniffio import thread_local as sniffio_thread_local

from rocketmq_py.aio._loop_calls import _LoopCall, _Parked, _Resume
from rocketmq_py.aio._shutdown import cancelled_by_itself, cut_by_shutdown
from rocketmq_py.aio._spinner import Spinner

__all__ = ["LoopWorkers"]

T = TypeVar("T")

#: Loop workers running calls at once: at most this many (more calls wait), as trio workers.
_MAX_WORKERS = 1024
#: Loop workers kept parked for the next burst; more idle ones end.
_MAX_IDLE_WORKERS = 256

# asyncio's own way of making a task current while it runs a step (private, but what its eager task
# start does); without them every call starts in its worker's next step.
_enter_task: Callable[[asyncio.AbstractEventLoop, asyncio.Task[Any]], None] | None = getattr(
    asyncio.tasks, "_enter_task", None
)
_leave_task: Callable[[asyncio.AbstractEventLoop, asyncio.Task[Any]], None] = getattr(
    asyncio.tasks, "_leave_task", lambda loop, task: None
)


class LoopWorkers:
    """The loop workers of one guest run on ``loop``.

    Args:
        loop: the asyncio loop hosting the trio run.
        spin: the guest's spinner: each call started wakes it, and bumps and drops its count.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, spin: Spinner) -> None:
        self.loop = loop
        self._spin = spin
        self._calls: deque[_LoopCall] = deque()  # run_on_loop calls no loop worker took yet
        self._idle: list[_Parked] = []  # parked loop workers
        self._workers = 0
        self._waking = False  # a loop worker was woken (or made) and has not run yet
        self._running = False  # the trio run is up: idle workers park (else they end)

    def start(self) -> None:
        """The trio run is up: from now on, workers with nothing to do park for the next call."""
        self._running = True

    def stop(self) -> None:
        """The trio run has ended: parked workers end, and busy ones once their call is done."""
        self._running = False
        idle, self._idle = self._idle, []
        for parked in idle:
            parked.wake.cancel()
        self._waking = False

    async def run_on_loop(self, coro_fn: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
        """(In trio) await ``coro_fn(*args)`` in an asyncio task on the loop and wait for its result.

        The coroutine runs in one of the *loop workers*: long-lived asyncio tasks, each
        awaiting one call at a time, so calls that wait on I/O overlap. As in a thread pool,
        ``asyncio.current_task()`` and the context variables are the worker's. When a worker is
        idle, the call starts at once in this trio step as that worker's (asyncio's eager task
        start: the worker is the current asyncio task, its context is the context): a call that
        finishes without waiting returns here with no loop crossing; one that waits goes on in
        the worker. A trio cancel cancels the call (the worker goes on with the next one) and
        waits for it to end, then raises trio's Cancelled.
        """
        # (Trio steps run in loop callbacks, never inside an asyncio task: _enter_task may be used.)
        if self._idle and _enter_task is not None:
            parked = self._idle.pop()
            coro = coro_fn(*args)
            library, sniffio_thread_local.name = sniffio_thread_local.name, None  # asyncio's step
            _enter_task(self.loop, parked.task)
            try:
                yielded = parked.context.run(coro.send, None)
            except StopIteration as stop:
                self._idle.append(parked)  # still parked on its wake-up
                return cast(T, stop.value)
            except asyncio.CancelledError as exc:  # not a cancel of the call: nobody cancelled it yet
                self._idle.append(parked)
                raise cancelled_by_itself(coro_fn, exc) from exc
            except BaseException:
                self._idle.append(parked)
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
            self._calls.append(call)
            self._wake_worker()
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

    def _wake_worker(self) -> None:
        """Make sure a loop worker will look at the queued calls (one wake-up at a time)."""
        if self._waking:
            return
        if self._idle:
            self._waking = True
            self._idle.pop().wake.set_result(None)
        elif self._workers < _MAX_WORKERS:
            self._waking = True
            self._workers += 1
            context = contextvars.Context()
            self.loop.create_task(self._worker(context), context=context)

    async def _worker(self, context: contextvars.Context) -> None:
        """(In asyncio) runs :meth:`run_on_loop` calls, queued or handed over; parks when there are none."""
        me = asyncio.current_task()
        assert me is not None
        calls = self._calls
        try:
            while True:
                self._waking = False
                while calls:
                    call = calls.popleft()
                    if call.skip:
                        continue
                    if calls:  # more waiting: another worker takes them if this call awaits
                        self._wake_worker()
                    await self._run_call(me, call)
                if not self._running or len(self._idle) >= _MAX_IDLE_WORKERS:
                    return
                parked = _Parked(me, context, self.loop.create_future())
                self._idle.append(parked)
                try:
                    handed = await parked.wake
                except asyncio.CancelledError as exc:
                    if not parked.wake.done() or parked.wake.cancelled():
                        return  # the trio run ended
                    handed = parked.wake.result()  # handed over, and cancelled before this step
                    if handed is not None and handed.raise_cancel is None:  # the loop is closing
                        self._finish_call(handed, outcome.Error(cut_by_shutdown(handed.coro_fn, exc)))
                        raise
                    me.uncancel()
                if handed is not None:
                    await self._run_call(me, handed)
        finally:
            self._workers -= 1

    async def _run_call(self, me: asyncio.Task[Any], call: _LoopCall) -> None:
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
                self._finish_call(call, outcome.Error(cut_by_shutdown(call.coro_fn, exc)))
                raise
            else:  # raised by the call itself (it awaited something another task cancelled): it failed
                result = outcome.Error(cancelled_by_itself(call.coro_fn, exc))
        except BaseException as exc:  # every error crosses to the trio task
            result = outcome.Error(exc)
            if not isinstance(exc, Exception):
                self._finish_call(call, result)
                raise
        if call.raise_cancel is not None and me.cancelling():
            me.uncancel()  # the cancel was for this call only (delivered, or swallowed by it)
        self._finish_call(call, result)

    def _finish_call(self, call: _LoopCall, result: outcome.Outcome[Any]) -> None:
        call.worker = None
        spin = self._spin
        spin.on_loop -= 1
        spin.finished_on_loop += 1
        trio.lowlevel.reschedule(call.trio_task, result)
