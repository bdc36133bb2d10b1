"""Keeping the guest trio run runnable while the asyncio loop is about to hand it work.

Trio's guest mode waits for I/O in a helper thread whenever trio has nothing to run, and getting
it back costs a round trip through that thread (a wake-up socket, then the loop's self-pipe): more
CPU than a listener call itself. While listener tasks it waits for are running on the loop, the
*spinner* task keeps trio runnable for a few loop iterations (each polls trio's I/O without
waiting), so that a listener finishing at once is picked up in the next iteration; after
``_SPIN_TICKS`` iterations with no listener finishing, the spinner parks and trio waits as usual
(a listener awaiting slow I/O costs no busy loop). The same goes the other way: once a call's
result is set on its asyncio caller's future, the caller resumes in the next loop iteration and
usually calls again (a send loop), so the spinner keeps trio runnable for ``_SPIN_AFTER_RESULT``
iterations after the last result. Measured: asyncio sends went from about 0.78 to 0.85 of the trio
API's rate (``benchmarks/producer.py --sides ours,aio``).

The :class:`Spinner` holds the counters both directions of :class:`~rocketmq_py.aio._guest.TrioGuest`
bump, and the parked spinner task they wake; they update it in place (no call per crossing).
"""

from __future__ import annotations

from typing import Any

import trio

__all__ = ["Spinner"]

#: Loop iterations the spinner keeps trio awake with no listener task finishing, before it parks.
_SPIN_TICKS = 8
#: Loop iterations it keeps trio awake after a call's result went to its asyncio caller, when no
#: listener runs: the caller resumes in the next iteration and often calls again at once.
_SPIN_AFTER_RESULT = 2


class Spinner:
    """The spinner task of one guest run, and the progress counters it watches.

    Whoever hands trio work wakes the parked task: ``task, spinner.task = spinner.task, None``
    then ``trio.lowlevel.reschedule(task)`` when ``task`` is not ``None``.
    """

    __slots__ = ("finished_on_loop", "on_loop", "results", "task", "ticks")

    def __init__(self) -> None:
        #: The spinner task while it is parked (``None`` while it spins or no run is up).
        self.task: trio.lowlevel.Task | None = None
        #: Listener tasks running on the loop that trio tasks wait for.
        self.on_loop = 0
        #: How many of those have finished, ever.
        self.finished_on_loop = 0
        #: How many call results (or errors) went to asyncio callers, ever.
        self.results = 0
        #: Loop iterations spent spinning (for tests and benchmarks).
        self.ticks = 0

    async def run(self) -> None:
        """Parked until woken (a listener task started, or a call's result went to its asyncio
        caller); then checkpoints once per loop iteration until ``_SPIN_TICKS`` iterations
        (``_SPIN_AFTER_RESULT`` when no listener runs) passed with no listener finishing and no
        result handed over. Runs until cancelled with the guest run."""
        while True:
            self.task = trio.lowlevel.current_task()
            await trio.lowlevel.wait_task_rescheduled(self._abort)
            quiet = 0
            while quiet < (_SPIN_TICKS if self.on_loop else _SPIN_AFTER_RESULT):
                progress = self.finished_on_loop + self.results
                await trio.lowlevel.cancel_shielded_checkpoint()
                self.ticks += 1
                quiet = 0 if self.finished_on_loop + self.results != progress else quiet + 1

    def _abort(self, _: Any) -> trio.lowlevel.Abort:
        self.task = None
        return trio.lowlevel.Abort.SUCCEEDED
