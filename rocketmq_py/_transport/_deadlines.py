"""The deadlines of one connection's pending calls, kept by one task instead of a scope per call.

A call parks its task (``trio.lowlevel.wait_task_rescheduled``) and registers its deadline here.
The timer task sleeps until the earliest deadline of a call still pending and then hands every
expired call to ``expire`` (which wakes it with a timeout). Entering and leaving a trio
``CancelScope`` per call, which this replaces, was a tenth of the CPU of a send.

Calls that complete are not removed (that would cost a search per call): their entries are
dropped when they reach the top of the heap, so the timer wakes about once per timeout period of
the oldest call rather than once per call.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable
from typing import Generic, TypeVar

import trio

__all__ = ["CallDeadlines"]

_S = TypeVar("_S")


class CallDeadlines(Generic[_S]):
    """Deadlines of pending calls, each identified by its ``opaque`` and slot object.

    Args:
        is_pending: whether ``(opaque, slot)`` still waits (its response has not arrived).
        expire: called once for each pending call whose deadline passed.
    """

    def __init__(self, is_pending: Callable[[int, _S], bool], expire: Callable[[int, _S], None]) -> None:
        self._is_pending = is_pending
        self._expire = expire
        self._heap: list[tuple[float, int, int, _S]] = []
        self._order = itertools.count()  # ties on deadline and opaque never compare slots
        self._wake_at = math.inf
        self._scope: trio.CancelScope | None = None

    def __len__(self) -> int:
        return len(self._heap)

    def arm(self, deadline: float, opaque: int, slot: _S) -> None:
        """Register a call's deadline (trio time)."""
        heapq.heappush(self._heap, (deadline, next(self._order), opaque, slot))
        if deadline < self._wake_at:
            self._wake_at = deadline
            if self._scope is not None:
                self._scope.deadline = deadline

    async def run(self) -> None:
        """Expire calls as their deadlines pass, until cancelled."""
        heap = self._heap
        while True:
            now = trio.current_time()
            while heap:
                deadline, _, opaque, slot = heap[0]
                if deadline <= now:
                    heapq.heappop(heap)
                    if self._is_pending(opaque, slot):
                        self._expire(opaque, slot)
                elif not self._is_pending(opaque, slot):
                    heapq.heappop(heap)
                else:
                    break
            self._wake_at = heap[0][0] if heap else math.inf
            with trio.CancelScope(deadline=self._wake_at) as self._scope:
                await trio.sleep_forever()
            self._scope = None
