"""The cache of one owned queue between pulling and consuming, with no I/O.

Mirrors the Java client's ``ProcessQueue`` (protocol.md §8.3):

* pulled messages are kept by queue offset (Java: a ``TreeMap``; here a dict plus a sorted list
  of its keys kept with :mod:`bisect`, which appends in O(1) for the usual in-order pulls and
  removes an arbitrary offset with one ``memmove``); a message whose offset is already cached is
  ignored;
* ``msg_count`` and ``msg_size`` (sum of body lengths) grow on put and shrink on remove; they feed
  the flow control of :mod:`._flow`, together with ``max_span`` = last offset - first offset;
* :meth:`ProcessQueue.remove_messages` (concurrent consumption acking messages) returns Java's
  ``removeMessage`` value, the offset to commit: the smallest offset still cached if any remain,
  else the largest offset ever cached + 1; -1 when the cache was already empty (nothing to
  commit). Committing the smallest un-acked offset means a restart re-delivers every message at
  or after a slow one, never skips one;
* orderly consumption instead *takes* messages in offset order into a consuming map
  (:meth:`~ProcessQueue.take_messages`), then either commits them (:meth:`~ProcessQueue.commit`
  returns the last taken offset + 1) or puts them back for another attempt
  (:meth:`~ProcessQueue.make_message_to_consume_again`, :meth:`~ProcessQueue.rollback`). Taken
  messages still count in ``msg_count``/``msg_size`` until committed.

Time comes from an injected clock (seconds, monotonic, e.g. ``trio.current_time``); the
CONSUME_START_TIME property read by :meth:`~ProcessQueue.expired_messages` is wall-clock epoch ms,
as Java writes it. Not thread-safe: one trio task at a time, no locks needed.
"""

from __future__ import annotations

import time
from bisect import bisect_left, insort
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from rocketmq_py.consumer._flow import (
    CLEAN_EXPIRED_MAX_MESSAGES,
    PULL_MAX_IDLE_TIME_MS,
    REBALANCE_LOCK_MAX_LIVE_TIME_MS,
)
from rocketmq_py.protocol._message import MessageExt
from rocketmq_py.protocol._properties import PropertyKey

__all__ = ["ProcessQueue", "ProcessQueueStatistics"]

#: Removing more than this many offsets at once rebuilds the sorted list in one pass instead of
#: deleting them one by one (each delete is a memmove of the list's tail).
_REBUILD_THRESHOLD: Final = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessQueueStatistics:
    """A snapshot of one :class:`ProcessQueue` (Java ``ProcessQueueInfo``), for ``statistics()``.

    Attributes:
        msg_count: cached messages, taken ones included.
        msg_size: their body bytes.
        pending_count: messages waiting to be consumed.
        consuming_count: (orderly) messages taken and not yet committed.
        min_offset, max_offset: first and last waiting offset, -1 when none waits.
        max_span: ``max_offset - min_offset`` (0 when none waits).
        queue_offset_max: the largest offset ever cached.
        msg_acc_count: messages the broker held beyond the last pull (MAX_OFFSET - last offset).
        dropped, locked: the flags.
        last_pull_time, last_consume_time, last_lock_time: clock readings, in seconds.
        try_unlock_times: (orderly) failed unlock attempts.
    """

    msg_count: int
    msg_size: int
    pending_count: int
    consuming_count: int
    min_offset: int
    max_offset: int
    max_span: int
    queue_offset_max: int
    msg_acc_count: int
    dropped: bool
    locked: bool
    last_pull_time: float
    last_consume_time: float
    last_lock_time: float
    try_unlock_times: int


class ProcessQueue:
    """Messages pulled from one queue and not yet acknowledged, ordered by queue offset.

    Args:
        clock: current time in seconds (monotonic); all timestamps start at its first reading.

    Attributes:
        dropped: the queue is no longer ours (rebalanced away, pull idle, offset illegal); its pull
            loop and consume tasks stop and must not commit offsets.
        locked: (orderly) the broker granted us the queue lock.
        consuming: (orderly) a consume task is working on this queue; see :meth:`put_messages`.
        last_pull_time: set by the pull loop on each pull; see :meth:`is_pull_expired`.
        last_answer_time: set by the pull loop on each pull a broker answered (the health check).
        last_consume_time: set on :meth:`remove_messages` and :meth:`take_messages`.
        last_lock_time: (orderly) set on each successful lock; see :meth:`is_lock_expired`.
        try_unlock_times: (orderly) unlock attempts deferred because a consume was running.
    """

    __slots__ = (
        "_clock",
        "_consuming",
        "_msg_acc_count",
        "_msg_count",
        "_msg_size",
        "_msgs",
        "_offsets",
        "_queue_offset_max",
        "consuming",
        "dropped",
        "last_answer_time",
        "last_consume_time",
        "last_lock_time",
        "last_pull_time",
        "locked",
        "try_unlock_times",
    )

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._msgs: dict[int, MessageExt] = {}
        self._offsets: list[int] = []  # sorted keys of _msgs
        self._consuming: dict[int, MessageExt] = {}  # orderly: taken, not yet committed
        self._msg_count = 0
        self._msg_size = 0
        self._queue_offset_max = 0  # Java starts at 0 as well
        self._msg_acc_count = 0
        self.dropped = False
        self.locked = False
        self.consuming = False
        self.try_unlock_times = 0
        now = clock()
        self.last_pull_time = now
        self.last_answer_time = now
        self.last_consume_time = now
        self.last_lock_time = now

    # -- counters --------------------------------------------------------------------------------

    @property
    def msg_count(self) -> int:
        """Cached messages: waiting ones plus (orderly) taken ones not yet committed."""
        return self._msg_count

    @property
    def msg_size(self) -> int:
        """Sum of the body lengths of the messages counted by :attr:`msg_count`."""
        return self._msg_size

    @property
    def max_span(self) -> int:
        """Last waiting offset minus first waiting offset; 0 when none waits (Java ``getMaxSpan``)."""
        offsets = self._offsets
        return offsets[-1] - offsets[0] if offsets else 0

    @property
    def queue_offset_max(self) -> int:
        """The largest offset ever cached (0 before the first message)."""
        return self._queue_offset_max

    @property
    def msg_acc_count(self) -> int:
        """How far the broker's queue was ahead of the last put batch (Java ``msgAccCnt``)."""
        return self._msg_acc_count

    @property
    def pending_count(self) -> int:
        """Messages waiting to be consumed (not taken)."""
        return len(self._offsets)

    @property
    def consuming_count(self) -> int:
        """(Orderly) messages taken by :meth:`take_messages` and not yet committed."""
        return len(self._consuming)

    @property
    def first_offset(self) -> int | None:
        """The smallest waiting offset, or ``None``."""
        return self._offsets[0] if self._offsets else None

    @property
    def last_offset(self) -> int | None:
        """The largest waiting offset, or ``None``."""
        return self._offsets[-1] if self._offsets else None

    def oldest_store_timestamp(self) -> int | None:
        """The store timestamp (epoch ms) of the cached message of the smallest offset, taken
        ones included; ``None`` when none is cached."""
        if self._consuming:
            return next(iter(self._consuming.values())).store_timestamp
        if self._offsets:
            return self._msgs[self._offsets[0]].store_timestamp
        return None

    def has_pending_messages(self) -> bool:
        """Whether any message waits (Java ``hasTempMessage``)."""
        return bool(self._offsets)

    def __contains__(self, offset: object) -> bool:
        return offset in self._msgs

    def __len__(self) -> int:
        return len(self._offsets)

    # -- pulling side ----------------------------------------------------------------------------

    def add_messages(self, msgs: Iterable[MessageExt]) -> list[MessageExt]:
        """Cache pulled messages; return those that were new (in the order given).

        A message whose offset is already waiting is ignored. Concurrent consumption dispatches
        exactly the returned messages, so a message pulled twice is not consumed twice. Also
        records ``msg_acc_count`` from the last message's MAX_OFFSET property.
        """
        batch = msgs if isinstance(msgs, list) else list(msgs)
        table, offsets = self._msgs, self._offsets
        added: list[MessageExt] = []
        size = 0
        for msg in batch:
            offset = msg.queue_offset
            if offset in table:
                continue
            table[offset] = msg
            if not offsets or offset > offsets[-1]:
                offsets.append(offset)
            else:
                insort(offsets, offset)
            size += len(msg.body)
            added.append(msg)
        if added:
            self._msg_count += len(added)
            self._msg_size += size
            if offsets[-1] > self._queue_offset_max:
                self._queue_offset_max = offsets[-1]
        if batch:
            last = batch[-1]
            try:
                accumulated = int(last.properties.get(PropertyKey.MAX_OFFSET, "")) - last.queue_offset
            except ValueError:
                accumulated = 0
            if accumulated > 0:
                self._msg_acc_count = accumulated
        return added

    def put_messages(self, msgs: Iterable[MessageExt]) -> bool:
        """Cache pulled messages (as :meth:`add_messages`); return whether to dispatch a consumer.

        Java ``putMessage``: ``True`` when messages wait and :attr:`consuming` was false, which
        it then becomes. Orderly consumption starts a consume task only on ``True``, so one task
        at a time works a queue; the task resets the flag when :meth:`take_messages` finds
        nothing. (Concurrent consumption dispatches every new message regardless.)
        """
        self.add_messages(msgs)
        if self._offsets and not self.consuming:
            self.consuming = True
            return True
        return False

    # -- concurrent consumption ------------------------------------------------------------------

    def remove_messages(self, msgs: Iterable[MessageExt], *, now: float | None = None) -> int:
        """Forget consumed (or sent back) messages; return the offset to commit.

        ``now`` is the clock time to record as the last consumption (default: read the clock).

        Returns:
            -1 if nothing was waiting (nothing to commit); else the smallest offset still waiting,
            or :attr:`queue_offset_max` + 1 when none is left (Java ``removeMessage``). Offsets
            not cached are ignored.
        """
        table = self._msgs
        if not table:
            return -1
        self.last_consume_time = self._clock() if now is None else now
        offsets = self._offsets
        if type(msgs) is list and len(msgs) == 1:  # one message a listener call (the default)
            offset = msgs[0].queue_offset
            cached = table.pop(offset, None)
            if cached is not None:
                self._msg_count -= 1
                self._msg_size -= len(cached.body)
                if offsets[0] == offset:
                    del offsets[0]
                else:
                    del offsets[bisect_left(offsets, offset)]
            return offsets[0] if offsets else self._queue_offset_max + 1
        removed: list[int] = []
        size = 0
        for msg in msgs:
            offset = msg.queue_offset
            cached = table.pop(offset, None)
            if cached is not None:
                removed.append(offset)
                size += len(cached.body)
        if removed:
            self._msg_count -= len(removed)
            self._msg_size -= size
            self._drop_offsets(removed)
        return self._offsets[0] if self._offsets else self._queue_offset_max + 1

    def _drop_offsets(self, removed: list[int]) -> None:
        """Remove ``removed`` (already gone from ``_msgs``) from the sorted offset list."""
        offsets = self._offsets
        if not self._msgs:
            offsets.clear()
            return
        if len(removed) > _REBUILD_THRESHOLD:
            table = self._msgs
            self._offsets = [offset for offset in offsets if offset in table]
            return
        removed.sort()
        count = len(removed)
        if offsets[count - 1] == removed[-1] and offsets[0] == removed[0]:
            # Sorted, distinct and inside the list: first and last matching means a prefix.
            del offsets[:count]
            return
        for offset in reversed(removed):
            del offsets[bisect_left(offsets, offset)]

    def expired_messages(
        self, now_ms: int, consume_timeout_ms: int, *, limit: int = CLEAN_EXPIRED_MAX_MESSAGES
    ) -> list[MessageExt]:
        """The leading waiting messages whose consumption started over ``consume_timeout_ms`` ago.

        Java ``cleanExpiredMsg`` looks at the first cached message up to 16 times and sends it
        back (delay level 3) while its CONSUME_START_TIME property is older than
        ``consumeTimeout``, stopping at the first one that is not; this returns the messages it
        would send back, in offset order. The caller sends them back, then removes each with
        :meth:`remove_messages` if it is still cached.

        Args:
            now_ms: wall-clock epoch ms (the clock CONSUME_START_TIME is written with).
            consume_timeout_ms: the consume timeout.
            limit: most messages returned.
        """
        result: list[MessageExt] = []
        for offset in self._offsets[:limit]:
            msg = self._msgs[offset]
            started = msg.properties.get(PropertyKey.CONSUME_START_TIMESTAMP)
            try:
                if started is None or now_ms - int(started) <= consume_timeout_ms:
                    break
            except ValueError:
                break
            result.append(msg)
        return result

    # -- orderly consumption ---------------------------------------------------------------------

    def take_messages(self, batch_size: int) -> list[MessageExt]:
        """(Orderly) move up to ``batch_size`` of the first waiting messages to the consuming map.

        Taken messages stay counted until :meth:`commit`; taking an offset that is already taken
        (it was pulled again) replaces the older copy. When nothing waits, :attr:`consuming`
        becomes false (Java ``takeMessages``), so the next :meth:`put_messages` dispatches again.
        """
        self.last_consume_time = self._clock()
        offsets = self._offsets
        count = min(batch_size, len(offsets))
        if count <= 0:
            self.consuming = False
            return []
        taken = offsets[:count]
        del offsets[:count]
        table, consuming = self._msgs, self._consuming
        result: list[MessageExt] = []
        for offset in taken:
            msg = table.pop(offset)
            replaced = consuming.get(offset)
            if replaced is not None:  # pulled again while taken: keep one copy, counted once
                self._msg_count -= 1
                self._msg_size -= len(replaced.body)
            consuming[offset] = msg
            result.append(msg)
        return result

    def commit(self) -> int:
        """(Orderly) forget the taken messages; return the offset to commit.

        Returns:
            the largest taken offset + 1, or -1 when nothing was taken (Java ``commit``).
        """
        consuming = self._consuming
        if not consuming:
            return -1
        self._msg_count -= len(consuming)
        self._msg_size -= sum(len(msg.body) for msg in consuming.values())
        offset = max(consuming) + 1
        consuming.clear()
        return offset

    def make_message_to_consume_again(self, msgs: Iterable[MessageExt]) -> None:
        """(Orderly) put taken messages back among the waiting ones, to be taken again.

        Messages that were not taken are ignored. A taken message whose offset meanwhile waits
        again (pulled twice) is simply forgotten, so the counters stay exact (Java would count
        it twice).
        """
        for msg in msgs:
            self._restore(msg.queue_offset)

    def rollback(self) -> None:
        """(Orderly) put every taken message back among the waiting ones (Java ``rollback``)."""
        for offset in list(self._consuming):
            self._restore(offset)

    def _restore(self, offset: int) -> None:
        msg = self._consuming.pop(offset, None)
        if msg is None:
            return
        if offset in self._msgs:
            self._msg_count -= 1
            self._msg_size -= len(msg.body)
            return
        self._msgs[offset] = msg
        insort(self._offsets, offset)

    def clear(self) -> None:
        """Forget everything cached, taken messages included (Java ``clear``)."""
        self._msgs.clear()
        self._offsets.clear()
        self._consuming.clear()
        self._msg_count = 0
        self._msg_size = 0
        self._queue_offset_max = 0

    # -- time ------------------------------------------------------------------------------------

    def is_pull_expired(self, now: float, max_idle: float = PULL_MAX_IDLE_TIME_MS / 1000) -> bool:
        """Whether the queue went unpulled for more than ``max_idle`` seconds (rebalance drops it)."""
        return now - self.last_pull_time > max_idle

    def is_lock_expired(self, now: float, max_live: float = REBALANCE_LOCK_MAX_LIVE_TIME_MS / 1000) -> bool:
        """(Orderly) whether the last lock is more than ``max_live`` seconds old."""
        return now - self.last_lock_time > max_live

    # -- statistics ------------------------------------------------------------------------------

    def statistics(self) -> ProcessQueueStatistics:
        """A snapshot of the counters, offsets, flags and timestamps."""
        offsets = self._offsets
        return ProcessQueueStatistics(
            msg_count=self._msg_count,
            msg_size=self._msg_size,
            pending_count=len(offsets),
            consuming_count=len(self._consuming),
            min_offset=offsets[0] if offsets else -1,
            max_offset=offsets[-1] if offsets else -1,
            max_span=self.max_span,
            queue_offset_max=self._queue_offset_max,
            msg_acc_count=self._msg_acc_count,
            dropped=self.dropped,
            locked=self.locked,
            last_pull_time=self.last_pull_time,
            last_consume_time=self.last_consume_time,
            last_lock_time=self.last_lock_time,
            try_unlock_times=self.try_unlock_times,
        )

    def __repr__(self) -> str:
        return (
            f"<ProcessQueue msgs={self._msg_count} bytes={self._msg_size} span={self.max_span} "
            f"consuming={len(self._consuming)} dropped={self.dropped} locked={self.locked}>"
        )
