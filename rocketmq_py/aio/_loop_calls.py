"""What :meth:`rocketmq_py.aio._guest.TrioGuest.run_on_loop` hands its asyncio loop workers.

A :class:`_LoopCall` is one trio task's call, queued or running; a :class:`_Parked` is an idle
loop worker; :class:`_Resume` lets a worker finish a coroutine whose first step ran eagerly.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Coroutine, Generator
from typing import Any

import trio

__all__ = ["_LoopCall", "_Parked", "_Resume"]


class _Parked:
    """An idle loop worker: its task and context, and the future it waits on for work."""

    __slots__ = ("context", "task", "wake")

    def __init__(
        self, task: asyncio.Task[Any], context: contextvars.Context, wake: asyncio.Future[_LoopCall | None]
    ) -> None:
        self.task = task
        self.context = context
        self.wake = wake


class _Resume:
    """Awaited by a loop worker: a coroutine whose first step ran eagerly, from where it stopped.

    Forwards what the coroutine yields to the worker's task and what the task sends or throws
    back, as ``await`` would have. ``cancelled``: its call was cancelled before the worker got it.
    """

    __slots__ = ("cancelled", "coro", "yielded")

    def __init__(self, coro: Coroutine[Any, Any, Any], yielded: Any, *, cancelled: bool) -> None:
        self.coro = coro
        self.yielded = yielded
        self.cancelled = cancelled

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, pending = self.coro, self.yielded
        error: BaseException | None = None
        if self.cancelled:
            if pending is not None and hasattr(pending, "cancel"):
                pending.cancel()  # what Task.cancel() does to the future a task waits on
            else:
                error = asyncio.CancelledError()
        while True:
            if error is None:
                try:
                    sent = yield pending
                except BaseException as exc:  # a cancel or a throw into the worker: the coroutine's
                    error = exc
            try:
                if error is not None:
                    thrown, error = error, None
                    pending = coro.throw(thrown)
                else:
                    pending = coro.send(sent)
            except StopIteration as stop:
                return stop.value


class _LoopCall:
    """One trio task's :meth:`TrioGuest.run_on_loop` call, queued or running in a loop worker."""

    __slots__ = ("args", "coro_fn", "raise_cancel", "resume", "skip", "trio_task", "worker")

    def __init__(
        self,
        coro_fn: Callable[..., Coroutine[Any, Any, Any]],
        args: tuple[Any, ...],
        trio_task: trio.lowlevel.Task,
    ) -> None:
        self.coro_fn = coro_fn
        self.args = args
        self.trio_task = trio_task
        self.worker: asyncio.Task[Any] | None = None
        self.raise_cancel: Callable[[], Any] | None = None
        self.skip = False
        #: A coroutine started eagerly, and what its first step yielded.
        self.resume: tuple[Coroutine[Any, Any, Any], Any] | None = None
