"""The lite pull consumer's buffer: pulled batches waiting for ``poll``, with pause and flow control.

Pull tasks :meth:`~LiteBuffer.append` what they pulled, one batch per pull, in arrival order (Java's
``consumeRequestCache``); ``poll`` and friends :meth:`~LiteBuffer.take` from the front, skipping
paused queues, whose batches stay in place. Each queue's
:class:`~rocketmq_py.consumer._process_queue.ProcessQueue` holds its buffered messages, so taking a
message moves the queue's *consumed* offset (what a commit stores) just past it. Before pulling, a
task asks :meth:`~LiteBuffer.blocked`: paused, more than ``pull_threshold_for_all`` messages
buffered in all, or the queue over its own limits (:func:`~rocketmq_py.consumer._flow.flow_control`);
then it waits on :meth:`~LiteBuffer.wait_room`, woken when messages are taken, a queue is
discarded or resumed. No I/O here; the two wake-ups are trio events.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

import trio

from rocketmq_py.consumer._flow import FlowLimits, flow_control
from rocketmq_py.consumer._process_queue import ProcessQueue
from rocketmq_py.protocol import MessageExt, MessageQueue

__all__ = ["LiteBuffer", "LiteQueue"]


@dataclass(eq=False, slots=True)
class LiteQueue:
    """One assigned queue. A seek replaces it with a fresh one: the old one's late answers are void.

    Attributes:
        mq: the queue.
        pq: its buffered messages.
        next_offset: the offset of the next pull; -1 until the start offset is known.
        consumed: the offset after the last message taken (what a commit stores); -1 until known.
        moved: ``consumed`` was set by a poll, a seek or an offset correction, not only by the
            start position (Java's consumer offset is -1 until then: its ``commitAll`` skips it).
        scope: cancels the queue's pull task.
        dropped: discarded (seek, revoke, close); its batches are skipped and its task stops.
    """

    mq: MessageQueue
    next_offset: int = -1
    consumed: int = -1
    moved: bool = False
    pq: ProcessQueue = field(default_factory=lambda: ProcessQueue(clock=trio.current_time))
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    dropped: bool = False


@dataclass(eq=False, slots=True)
class _Batch:
    queue: LiteQueue
    msgs: deque[MessageExt]


class LiteBuffer:
    """Batches of pulled messages, oldest first, and the wake-ups of pollers and pull tasks.

    Args:
        limits: per-queue limits (count, MiB, span).
        threshold_for_all: buffered messages, all queues together, above which pulls wait.
    """

    def __init__(self, limits: FlowLimits, threshold_for_all: int) -> None:
        self.limits = limits
        self.threshold_for_all = threshold_for_all
        self._batches: deque[_Batch] = deque()
        self._paused: set[MessageQueue] = set()
        self._total = 0
        # Each event is set and replaced at once: a task that found nothing to do and then waits
        # on the current one (no checkpoint in between) is woken by the next change only.
        self._arrived = trio.Event()
        self._room = trio.Event()

    @property
    def total(self) -> int:
        """Messages buffered, all queues."""
        return self._total

    # --- pull side ---------------------------------------------------------------------------

    def append(self, queue: LiteQueue, msgs: list[MessageExt]) -> int:
        """Buffer pulled messages (those already buffered are ignored); returns how many were new."""
        if queue.dropped:
            return 0
        fresh = queue.pq.add_messages(msgs)
        if fresh:
            self._batches.append(_Batch(queue, deque(fresh)))
            self._total += len(fresh)
            self._wake(room=False)
        return len(fresh)

    def blocked(self, queue: LiteQueue) -> bool:
        """Whether ``queue`` must not be pulled now (paused, or a buffer limit is exceeded)."""
        if queue.mq in self._paused or self._total > self.threshold_for_all:
            return True
        return flow_control(queue.pq, self.limits, orderly=False) is not None

    async def wait_room(self) -> None:
        """Wait until messages are taken, a queue is discarded or one is resumed."""
        await self._room.wait()

    def discard(self, queue: LiteQueue) -> None:
        """Drop the queue's buffered messages and mark it dropped."""
        queue.dropped = True
        self._total -= queue.pq.msg_count
        queue.pq.clear()
        self._batches = deque(b for b in self._batches if b.queue is not queue)
        self._wake(room=True)

    # --- poll side ---------------------------------------------------------------------------

    def take(self, limit: int | None, *, one_batch: bool) -> dict[MessageQueue, list[MessageExt]]:
        """Take messages of queues not paused, oldest batch first, and move their consumed offsets.

        Args:
            limit: most messages to take (``None``: no limit).
            one_batch: stop after the first batch (or the part of it within ``limit``).

        Returns:
            The messages by queue, each list in offset order; empty when none could be taken.
        """
        taken: dict[MessageQueue, list[MessageExt]] = {}
        count = 0
        keep: deque[_Batch] = deque()
        batches = self._batches
        while batches and (limit is None or count < limit):
            batch = batches.popleft()
            queue = batch.queue
            if queue.dropped:
                continue
            if queue.mq in self._paused:
                keep.append(batch)
                continue
            n = len(batch.msgs) if limit is None else min(len(batch.msgs), limit - count)
            msgs = [batch.msgs.popleft() for _ in range(n)]
            if batch.msgs:
                keep.append(batch)
            offset = queue.pq.remove_messages(msgs)
            if offset >= 0:
                queue.consumed = offset
                queue.moved = True
            taken.setdefault(queue.mq, []).extend(msgs)
            count += n
            if one_batch:
                break
        keep.extend(batches)
        self._batches = keep
        if count:
            self._total -= count
            self._wake(room=True)
        return taken

    async def wait_arrival(self) -> None:
        """Wait until new messages are buffered, a queue resumes, or :meth:`close`."""
        await self._arrived.wait()

    def close(self) -> None:
        """Forget every batch and wake every waiter."""
        self._batches.clear()
        self._total = 0
        self._wake(room=True)
        self._wake(room=False)

    # --- pause -------------------------------------------------------------------------------

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        self._paused.update(queues)

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        self._paused.difference_update(queues)
        self._wake(room=True)
        if self._batches:
            self._wake(room=False)

    def paused(self) -> frozenset[MessageQueue]:
        return frozenset(self._paused)

    def _wake(self, *, room: bool) -> None:
        if room:
            self._room.set()
            self._room = trio.Event()
        else:
            self._arrived.set()
            self._arrived = trio.Event()
