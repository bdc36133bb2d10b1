"""One queue a push consumer owns: its cache, its pull task's scope and its handoff state."""

from __future__ import annotations

import collections
from collections.abc import Sequence
from dataclasses import dataclass, field

import trio

from rocketmq_py.consumer._flow import FlowVerdict
from rocketmq_py.consumer._process_queue import ProcessQueue
from rocketmq_py.protocol import MessageExt, MessageQueue

__all__ = ["QueueState"]


@dataclass(slots=True)
class QueueState:
    """What the push consumer's services share about one owned queue.

    The pull loop runs under :attr:`scope` (cancelled to stop pulling); listener calls on the
    queue's messages are counted in :attr:`inflight` (:meth:`begin` / :meth:`end`) so that a
    revoke can wait for :attr:`quiet`.
    """

    mq: MessageQueue
    pq: ProcessQueue
    #: The offset the next pull asks for.
    next_offset: int
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    #: Why flow control pauses the pull now, if it does.
    flow: FlowVerdict | None = None
    #: Leaving: no new listener call starts; running ones may finish (graceful handoff).
    revoking: bool = False
    #: Listener calls running on this queue's messages.
    inflight: int = 0
    #: Set (and dropped) when :attr:`inflight` drops to zero while someone waits for it.
    quiet: trio.Event | None = None
    #: (orderly) messages arrived / state changed: the queue's consume task looks again.
    wake: trio.Event = field(default_factory=trio.Event)
    #: (orderly) paused after a SUSPEND answer until this clock time.
    suspended_until: float = 0.0
    #: The pull loop waits for the consume workers to take its messages (it is alive, not idle).
    handing_off: bool = False
    #: The offset last committed (to the broker or the local file) by this consumer, -1 none.
    persisted_offset: int = -1
    #: When the last listener call on the queue's messages was cut at ``consume_timeout`` (trio
    #: clock); ``None`` once a later call ended by itself (the health check's stall).
    timed_out_at: float | None = None
    #: (orderly) when the listener call running on the queue's messages started (trio clock).
    call_started: float | None = None
    #: The queue's max offset (its next write offset) in the last pull answer; -1 before one.
    max_offset: int = -1
    #: (orderly) (last queue offset, clock time) of each pull's messages not consumed yet: when
    #: the messages a consume task takes arrived (``ConsumeContext.await_time``).
    arrivals: collections.deque[tuple[int, float]] = field(default_factory=collections.deque)

    @property
    def last_pull_time(self) -> float:
        """Clock time of the pull loop's last attempt (the idle check reads it)."""
        return self.pq.last_pull_time

    def begin(self) -> None:
        """A listener call on this queue starts."""
        self.inflight += 1

    def end(self) -> None:
        """A listener call on this queue ended."""
        self.inflight -= 1
        if self.inflight == 0 and self.quiet is not None:  # an event only when waited for
            self.quiet.set()
            self.quiet = None

    def arrived(self, msgs: Sequence[MessageExt]) -> None:
        """(orderly) ``msgs``, in offset order, were just cached."""
        if msgs:
            self.arrivals.append((msgs[-1].queue_offset, trio.current_time()))

    def arrival_of(self, offset: int) -> float | None:
        """(orderly) When the message at ``offset`` arrived (its pull's time); forgets the pulls
        before it. ``None`` when no pull recorded it."""
        arrivals = self.arrivals
        while arrivals and arrivals[0][0] < offset:
            arrivals.popleft()
        return arrivals[0][1] if arrivals else None

    def poke(self) -> None:
        """Wake the queue's orderly consume task."""
        self.wake.set()
        self.wake = trio.Event()

    async def wait_quiet(self) -> None:
        """Return once no listener call runs on this queue."""
        while self.inflight:
            if self.quiet is None:
                self.quiet = trio.Event()
            await self.quiet.wait()
