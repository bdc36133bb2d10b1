"""A producer's counters, and the snapshot of them and of its fault table that ``statistics()`` returns.

:class:`ProducerCounters` is live: the send path counts into it. :class:`ProducerStatistics` is a
new frozen copy at each call (with a read-only copy of the fault table), which later sends do not
change, as trio's ``statistics()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from rocketmq_py.producer._fault import FaultItem, LatencyFaultTolerance

__all__ = ["ProducerCounters", "ProducerStatistics"]

_NO_FAULTS: Final[Mapping[str, FaultItem]] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ProducerStatistics:
    """A snapshot of one producer's counters and fault table (see :meth:`Producer.statistics`).

    Built at each call: it does not change as the producer sends more.

    Attributes:
        sent: sends that succeeded (a batch counts once; oneway sends once written).
        failed: sends that raised, after their retries.
        attempts: attempts made by sends (first tries and retries).
        retries: attempts after the first of their send.
        fault: the latency fault table when the snapshot was taken, broker name ->
            :class:`FaultItem` (read-only; empty with fault tolerance off).
    """

    # Defaults and field order as when this was the live object, so that code building one still works.
    sent: int = 0
    failed: int = 0
    attempts: int = 0
    retries: int = 0
    fault: Mapping[str, FaultItem] = field(default_factory=lambda: _NO_FAULTS)

    def __post_init__(self) -> None:
        if type(self.fault) is not MappingProxyType:  # a read-only copy of a table given as a dict
            object.__setattr__(self, "fault", MappingProxyType(dict(self.fault)))


@dataclass(slots=True)
class ProducerCounters:
    """The producer's own, live counters (:class:`ProducerStatistics` is their snapshot)."""

    sent: int = 0
    failed: int = 0
    attempts: int = 0
    retries: int = 0

    def snapshot(self, fault: LatencyFaultTolerance | None) -> ProducerStatistics:
        """The counters now, with a read-only copy of ``fault``'s table."""
        return ProducerStatistics(
            sent=self.sent,
            failed=self.failed,
            attempts=self.attempts,
            retries=self.retries,
            fault=_NO_FAULTS if fault is None else MappingProxyType(fault.snapshot()),
        )
