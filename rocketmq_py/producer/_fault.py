"""Queue selection for sends: which queue the next attempt goes to, avoiding slow or failed brokers.

Two decisions, both pure (the clock and the random source are injected), following the Java 5.x
client's ``MQFaultStrategy`` (protocol.md §7.3):

* :class:`LatencyFaultTolerance` decides whether a broker is *available* (not benched after a
  slow or failed send) and *reachable* (its last send did not fail outright). A send that took
  ``latency`` ms benches its broker for :func:`bench_ms` ``(latency)`` ms; a failed send is
  judged as if it took :data:`ISOLATION_LATENCY_MS`. A broker's bench only ever grows: a fast
  send does not lift an earlier, longer one.
* :class:`QueueSelector` walks a topic's queues round-robin from a random start and picks the
  first that passes the filters: with fault tolerance on, (available and not the broker of the
  previous attempt), else (reachable and not that broker), else simply the next queue; with it
  off, (not the broker of the previous attempt), else the next queue.

The 4.x client differed (longer benches, ``lastBrokerName`` ignored with fault tolerance on,
"pick one at least" synthesising a queue); this module implements 5.x only.

Latencies and benches are milliseconds, as in Java, so every name that holds one ends in ``_ms``;
the clock is in seconds. The tables were once called ``latency_max`` and ``not_available``: those
keywords and attributes still work for one release, with a :class:`DeprecationWarning`.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, TypeVar

from rocketmq_py._client._route import TopicPublishInfo
from rocketmq_py._deprecation import warn_deprecated
from rocketmq_py.errors import InvalidOption, RouteNotFound
from rocketmq_py.protocol._bodies import MessageQueue

__all__ = [
    "ISOLATION_LATENCY_MS",
    "LATENCY_MAX_MS",
    "NOT_AVAILABLE_DURATION_MS",
    "SEND_LATENCY_FAULT_ENABLE",
    "FaultConfig",
    "FaultItem",
    "LatencyFaultTolerance",
    "QueueSelector",
    "bench_ms",
]

#: Latency thresholds in ms (Java 5.x ``MQFaultStrategy.latencyMax``; 4.x had 1000/2000/3000
#: where 5.x has 1800/3000/5000).
LATENCY_MAX_MS: Final = (50, 100, 550, 1800, 3000, 5000, 15000)
#: How long a broker is benched for a latency at or above the matching threshold, in ms (Java 5.x
#: ``MQFaultStrategy.notAvailableDuration``; 4.x benched for 30 s to 10 min).
NOT_AVAILABLE_DURATION_MS: Final = (0, 0, 2000, 5000, 6000, 10000, 30000)
#: The latency a failed send counts as (Java 5.x ``updateFaultItem`` with isolation: 10000, so a
#: 10 s bench; 4.x used 30000).
ISOLATION_LATENCY_MS: Final = 10000
#: Whether producers use latency fault tolerance by default (Java ``sendLatencyFaultEnable`` = false).
SEND_LATENCY_FAULT_ENABLE: Final = False

_INT32: Final = 1 << 32
_POSITIVE_MASK: Final = 0x7FFFFFFF  # Java ThreadLocalIndex.POSITIVE_MASK

_T = TypeVar("_T")


def _renamed(owner: str, old: str, new: str, old_value: _T | None, new_value: _T | None) -> _T | None:
    """The value of a keyword renamed from ``old`` to ``new``: warns when ``old`` is used.

    Called from ``owner``'s ``__init__``, so that the warning points at the line that built it.

    Raises:
        InvalidOption: both names were given.
    """
    if old_value is None:
        return new_value
    if new_value is not None:
        raise InvalidOption(f"{owner} got both {new} and its deprecated name {old}: pass only {new}")
    warn_deprecated(f"{owner}({old}=...) is deprecated; use {new}")
    return old_value


def _checked_tables(
    owner: str, latency_max_ms: Sequence[float] | None, not_available_ms: Sequence[float] | None
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Both tables as tuples (the Java 5.x ones where ``None``), checked to be of the same length.

    Raises:
        InvalidOption: the two tables differ in length.
    """
    latency = LATENCY_MAX_MS if latency_max_ms is None else tuple(latency_max_ms)
    bench = NOT_AVAILABLE_DURATION_MS if not_available_ms is None else tuple(not_available_ms)
    if len(latency) != len(bench):
        raise InvalidOption(
            f"{owner}: latency_max_ms and not_available_ms must have the same length, not {len(latency)} "
            f"and {len(bench)}"
        )
    return latency, bench


def bench_ms(
    latency_ms: float,
    latency_max_ms: Sequence[float] = LATENCY_MAX_MS,
    not_available_ms: Sequence[float] = NOT_AVAILABLE_DURATION_MS,
) -> float:
    """How long, in ms, a broker is benched after a send that took ``latency_ms``.

    Args:
        latency_ms: the send's latency (or :data:`ISOLATION_LATENCY_MS` for a failed send).
        latency_max_ms: ascending latency thresholds.
        not_available_ms: the bench for each threshold.

    Returns:
        ``not_available_ms[i]`` for the largest ``i`` with ``latency_ms >= latency_max_ms[i]``, else 0.
    """
    for threshold, duration in zip(reversed(latency_max_ms), reversed(not_available_ms), strict=True):
        if latency_ms >= threshold:
            return duration
    return 0


@dataclass(frozen=True, slots=True)
class FaultItem:
    """What the fault table knows about one broker.

    Attributes:
        broker: the broker name.
        latency_ms: the latency of its last recorded send.
        available_at: clock time (seconds, the table's clock) from which it is available again.
        reachable: its last send did not fail outright.
    """

    broker: str
    latency_ms: float
    available_at: float
    reachable: bool = True

    def is_available(self, now: float) -> bool:
        """The bench is over at clock time ``now``."""
        return now >= self.available_at


class _Item:
    """The table's own, mutable record of one broker (:class:`FaultItem` is its snapshot)."""

    __slots__ = ("available_at", "latency_ms", "reachable")

    def __init__(self, latency_ms: float, available_at: float, reachable: bool) -> None:
        self.latency_ms = latency_ms
        self.available_at = available_at
        self.reachable = reachable


class LatencyFaultTolerance:
    """The brokers a producer currently avoids (Java 5.x ``LatencyFaultToleranceImpl``).

    Every send records its latency here and every queue choice asks whether a broker is
    available, so both are cheap in the common case: a broker that was never benched is
    available without reading the clock, and a fast send updates its record in place.

    Args:
        clock: returns the current time in seconds (monotonic); inject a fake one in tests.
        latency_max_ms: ascending latency thresholds in ms (default :data:`LATENCY_MAX_MS`).
        not_available_ms: the bench in ms for each threshold (default
            :data:`NOT_AVAILABLE_DURATION_MS`).
        rng: the random source of :meth:`pick_one_at_least`.
        latency_max: the deprecated name of ``latency_max_ms`` (a :class:`DeprecationWarning`).
        not_available: the deprecated name of ``not_available_ms`` (a :class:`DeprecationWarning`).

    Raises:
        InvalidOption: the two tables differ in length, or a table is given under both names.
    """

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        latency_max_ms: Sequence[float] | None = None,
        not_available_ms: Sequence[float] | None = None,
        rng: random.Random | None = None,
        *,
        latency_max: Sequence[float] | None = None,
        not_available: Sequence[float] | None = None,
    ) -> None:
        owner = "LatencyFaultTolerance"
        latency_max_ms = _renamed(owner, "latency_max", "latency_max_ms", latency_max, latency_max_ms)
        not_available_ms = _renamed(
            owner, "not_available", "not_available_ms", not_available, not_available_ms
        )
        self._clock = clock
        self._latency_max_ms, self._not_available_ms = _checked_tables(
            owner, latency_max_ms, not_available_ms
        )
        self._rng = rng if rng is not None else random.Random()
        self._items: dict[str, _Item] = {}
        # Brokers whose bench may not be over yet: broker -> available_at.
        self._benched: dict[str, float] = {}
        # Below this latency no threshold benches (bench_ms is 0).
        self._benching_latency = min(
            (
                limit
                for limit, bench in zip(self._latency_max_ms, self._not_available_ms, strict=True)
                if bench > 0
            ),
            default=math.inf,
        )

    def bench_ms(self, latency_ms: float) -> float:
        """How long, in ms, a send that took ``latency_ms`` benches its broker.

        Args:
            latency_ms: the send's latency.

        Returns:
            The bench in ms (0: none), from this table's thresholds.
        """
        return bench_ms(latency_ms, self._latency_max_ms, self._not_available_ms)

    def duration_for(self, latency_ms: float) -> float:
        """Deprecated name of :meth:`bench_ms` (the result is in ms, so the new name says so).

        Args:
            latency_ms: the send's latency.

        Returns:
            The bench in ms.
        """
        warn_deprecated("LatencyFaultTolerance.duration_for() is deprecated; use bench_ms()")
        return self.bench_ms(latency_ms)

    def update(self, broker: str, latency_ms: float, isolation: bool, reachable: bool = True) -> None:
        """Record the outcome of one send attempt to ``broker``.

        The producer calls it after every attempt: success ``(latency, False, True)``; a
        connection error or timeout ``(latency, True, ...)``; a broker error ``(latency, True,
        False)``.

        Args:
            broker: the broker name.
            latency_ms: how long the attempt took.
            isolation: the attempt failed; bench as if it took :data:`ISOLATION_LATENCY_MS`.
            reachable: whether the broker answered at all.
        """
        judged = ISOLATION_LATENCY_MS if isolation else latency_ms
        item = self._items.get(broker)
        if item is None:
            item = self._items[broker] = _Item(latency_ms, self._clock(), reachable)
        else:
            item.latency_ms = latency_ms
            item.reachable = reachable
        if judged >= self._benching_latency:
            duration = self.bench_ms(judged)
            if duration > 0:
                until = self._clock() + duration / 1000
                if until > item.available_at:  # only ever extended
                    item.available_at = until
                    self._benched[broker] = until

    def is_available(self, broker: str) -> bool:
        """``broker`` is not benched (unknown brokers are available).

        Args:
            broker: the broker name.

        Returns:
            ``True`` if the broker has no bench or its bench is over.
        """
        until = self._benched.get(broker)
        if until is None:
            return True
        if self._clock() >= until:
            del self._benched[broker]  # over (the clock is monotonic)
            return True
        return False

    def is_reachable(self, broker: str) -> bool:
        """``broker``'s last recorded send did not fail outright (unknown brokers are reachable).

        Args:
            broker: the broker name.

        Returns:
            The item's reachable flag, ``True`` for unknown brokers.
        """
        item = self._items.get(broker)
        return item is None or item.reachable

    def mark_reachable(self, broker: str, reachable: bool = True) -> None:
        """Set ``broker``'s reachable flag without touching its bench (a detector's probe result).

        Args:
            broker: the broker name; unknown brokers are ignored.
            reachable: the probe's verdict.
        """
        item = self._items.get(broker)
        if item is not None:
            item.reachable = reachable

    def remove(self, broker: str) -> None:
        """Forget ``broker`` (it left the route); unknown names are ignored.

        Args:
            broker: the broker name.
        """
        self._items.pop(broker, None)
        self._benched.pop(broker, None)

    def pick_one_at_least(self) -> str | None:
        """A random reachable broker among those recorded (Java 5.x ``pickOneAtLeast``).

        Returns:
            A broker name, or ``None`` if no recorded broker is reachable.
        """
        reachable = [name for name, item in self._items.items() if item.reachable]
        return self._rng.choice(reachable) if reachable else None

    def unreachable(self) -> tuple[str, ...]:
        """The brokers whose last send failed outright, sorted (what a detector would probe).

        Returns:
            Broker names.
        """
        return tuple(sorted(name for name, item in self._items.items() if not item.reachable))

    def snapshot(self) -> dict[str, FaultItem]:
        """A copy of the table, for statistics.

        Returns:
            Broker name -> :class:`FaultItem` (items are immutable).
        """
        return {
            name: FaultItem(name, item.latency_ms, item.available_at, item.reachable)
            for name, item in self._items.items()
        }


class QueueSelector:
    """Round-robin queue choice with broker avoidance (Java 5.x ``MQFaultStrategy``).

    Holds the send index: it starts at a random int32, is incremented before each use, and
    position = ``(index & 0x7fffffff) % len(queues)``. Java keeps one index per thread and
    topic; here one selector belongs to one producer.

    Args:
        rng: the random source for the start index and :meth:`reset_index`.
    """

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng if rng is not None else random.Random()
        self._index = self._rng.randrange(-(1 << 31), 1 << 31)  # Java Random.nextInt()

    def reset_index(self) -> None:
        """Re-randomise the index (a retry starts somewhere else), in ``[0, 2**31 - 1)``."""
        self._index = self._rng.randrange(_POSITIVE_MASK)  # Java Math.abs(nextInt(MAX_VALUE))

    def _next(self, queues: Sequence[MessageQueue]) -> MessageQueue:
        self._index = (self._index + 1 + (1 << 31)) % _INT32 - (1 << 31)  # int32 overflow
        return queues[(self._index & _POSITIVE_MASK) % len(queues)]

    def select(
        self,
        info: TopicPublishInfo,
        last_broker: str | None,
        fault: LatencyFaultTolerance | None,
        *,
        reset_index: bool = False,
    ) -> MessageQueue:
        """Choose the queue for the next send attempt.

        Args:
            info: the topic's publish info.
            last_broker: the broker of the previous attempt of this send, ``None`` on the first.
            fault: the fault table when latency fault tolerance is on, else ``None``.
            reset_index: re-randomise the index first (Java does it from the 2nd attempt on;
                only with fault tolerance on, as in Java).

        Returns:
            A queue of ``info``.

        Raises:
            RouteNotFound: ``info`` has no queue (no route, or no writable queue with a master).
        """
        queues = info.queues
        if not queues:
            raise RouteNotFound(info.topic, detail=f"no writable queue in the route of topic {info.topic!r}")
        # The filters of the module docstring, walked inline (this runs once per send).
        count = len(queues)
        if fault is None:
            if last_broker is not None:
                for _ in range(count):
                    queue = self._next(queues)
                    if queue.broker_name != last_broker:
                        return queue
            return self._next(queues)
        if reset_index:
            self.reset_index()
        for _ in range(count):
            queue = self._next(queues)
            if fault.is_available(queue.broker_name) and queue.broker_name != last_broker:
                return queue
        for _ in range(count):
            queue = self._next(queues)
            if fault.is_reachable(queue.broker_name) and queue.broker_name != last_broker:
                return queue
        return self._next(queues)


@dataclass(frozen=True, slots=True, kw_only=True)
class FaultConfig:
    """Latency fault tolerance settings of a producer.

    Args:
        enabled: route around slow or failing brokers. **On by default**: Java ships it off
            (``sendLatencyFaultEnable=false``), but a Python user expects a producer to avoid a
            sick broker without being told to.
        latency_max_ms: ascending latency thresholds in ms (default :data:`LATENCY_MAX_MS`, Java
            5.x ``latencyMax``).
        not_available_ms: how long (ms) a broker is avoided after an attempt that took at least
            the matching threshold (default :data:`NOT_AVAILABLE_DURATION_MS`, Java 5.x
            ``notAvailableDuration``).
        latency_max: the deprecated name of ``latency_max_ms`` (a :class:`DeprecationWarning`);
            readable as an attribute too.
        not_available: the deprecated name of ``not_available_ms`` (a :class:`DeprecationWarning`);
            readable as an attribute too.

    Raises:
        InvalidOption: the two tables differ in length, or a table is given under both names.
    """

    enabled: bool = True
    latency_max_ms: tuple[float, ...] = LATENCY_MAX_MS
    not_available_ms: tuple[float, ...] = NOT_AVAILABLE_DURATION_MS

    def __init__(
        self,
        *,
        enabled: bool = True,
        latency_max_ms: Sequence[float] | None = None,
        not_available_ms: Sequence[float] | None = None,
        latency_max: Sequence[float] | None = None,
        not_available: Sequence[float] | None = None,
    ) -> None:
        """Replaces the dataclass's ``__init__`` only to accept the deprecated names."""
        owner = "FaultConfig"
        latency_max_ms = _renamed(owner, "latency_max", "latency_max_ms", latency_max, latency_max_ms)
        not_available_ms = _renamed(
            owner, "not_available", "not_available_ms", not_available, not_available_ms
        )
        latency, bench = _checked_tables(owner, latency_max_ms, not_available_ms)
        # Frozen: set the fields as the dataclass's own __init__ would.
        object.__setattr__(self, "enabled", enabled)
        object.__setattr__(self, "latency_max_ms", latency)
        object.__setattr__(self, "not_available_ms", bench)

    @property
    def latency_max(self) -> tuple[float, ...]:
        """Deprecated name of :attr:`latency_max_ms`."""
        warn_deprecated("FaultConfig.latency_max is deprecated; use latency_max_ms")
        return self.latency_max_ms

    @property
    def not_available(self) -> tuple[float, ...]:
        """Deprecated name of :attr:`not_available_ms`."""
        warn_deprecated("FaultConfig.not_available is deprecated; use not_available_ms")
        return self.not_available_ms

    def build(self, clock: Callable[[], float] = time.monotonic) -> LatencyFaultTolerance | None:
        """The fault table these settings describe (``None`` when disabled).

        Args:
            clock: the table's clock, in seconds (monotonic).

        Returns:
            A new :class:`LatencyFaultTolerance`, or ``None`` when fault tolerance is off.
        """
        if not self.enabled:
            return None
        return LatencyFaultTolerance(clock, self.latency_max_ms, self.not_available_ms)
