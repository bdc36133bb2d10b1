"""What ``benchmarks/chaos.py`` measures per phase, and the table it prints: one row per phase (and
one per phase for the orderly group, with sharding keys), the errors of failed sends, the totals."""

from __future__ import annotations

import collections
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

#: Where one delivery came from: (store host, queue id, queue offset).
Where = tuple[str, int, int]
_NUMBERS = re.compile(r"\d+(\.\d+)?")


def error_kind(exc: BaseException) -> str:
    """An error's type and text with numbers masked, so that failures group by cause."""
    return f"{type(exc).__name__}: {_NUMBERS.sub('#', str(exc))}"[:300]


@dataclass
class PhaseFigures:
    """What happened in one phase (times are trio clock seconds)."""

    name: str
    broker: str | None  # the hit broker; None: all (the NameServer, the Proxy)
    start: float = 0.0
    fault_at: float = 0.0
    lifted_at: float = 0.0
    end: float = 0.0
    in_flight_at_fault: int = 0
    #: The most sends in flight at once while the fault was on: each may end as one duplicate (an
    #: attempt abandoned on the hit broker that it stored anyway).
    in_flight_peak: int = 0
    resumed_first: float | None = None
    resumed_all: float | None = None
    acked: int = 0
    failed: int = 0
    sent_during_fault: int = 0
    failed_during_fault: int = 0
    lost: int = 0
    duplicates: int = 0
    #: Of the duplicates: the same stored message delivered again (same broker, queue and offset).
    redelivered: int = 0
    #: Of the duplicates: one send stored more than once (an abandoned attempt the broker stored).
    stored_again: int = 0
    #: Send attempts retried (each after an abandoned or refused one) from this phase's start to
    #: the next one's: every extra stored copy of a send needs one.
    retries: int = 0
    #: Seconds from the fault's start to the first acknowledgment of a send started after it.
    sends_resumed: float | None = None
    #: First deliveries of a sharding key below an earlier one (the orderly group's rows; see
    #: ``_chaos_controller.order_breaks``).
    order_breaks: int = 0
    #: (group, queue id) -> the offset committed on the hit broker just before the fault, and on the
    #: broker that holds the queues after the run (the ``controller`` phase: the new master).
    committed_at_fault: dict[tuple[str, int], int] = field(default_factory=dict)
    committed_after: dict[tuple[str, int], int] = field(default_factory=dict)
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    notes: list[str] = field(default_factory=list)


@dataclass
class ChaosReport:
    """Per-phase figures plus the run's totals."""

    phases: list[PhaseFigures]
    acked: int
    failed: int
    consumed: int
    lost: int
    duplicates: int
    producer_stats: str
    #: With sharding keys: the same figures for the orderly group (lost, duplicates, order breaks).
    orderly: list[PhaseFigures] = field(default_factory=list)


class Watch:
    """The first delivery from each watched queue after a moment."""

    def __init__(self, queues: Sequence[tuple[str, int]], since: float) -> None:
        self.since = since
        self.first: dict[tuple[str, int], float | None] = dict.fromkeys(queues)

    def delivered(self, queue: tuple[str, int], now: float) -> None:
        """Note a delivery from ``queue`` (broker name, queue id) at ``now``."""
        if queue in self.first and self.first[queue] is None and now >= self.since:
            self.first[queue] = now

    @property
    def complete(self) -> bool:
        """Whether every watched queue delivered."""
        return all(t is not None for t in self.first.values())

    def figures(self) -> tuple[float | None, float | None]:
        """Seconds from the moment to the first queue's delivery, and to every queue's."""
        times = [t for t in self.first.values() if t is not None]
        first = min(times) - self.since if times else None
        every = max(times) - self.since if times and self.complete else None
        return first, every


@dataclass(frozen=True)
class Records:
    """What a run recorded per sequence number: its phase and start, its acknowledgment or failure,
    and where the (first) group got each delivery from."""

    phase_of: Sequence[int]
    started_at: Sequence[float]
    acked_at: Mapping[int, float]
    failed: Sequence[tuple[int, str]]
    delivered_from: Mapping[int, Sequence[Where]]


#: The orderly group's deliveries, its order breaks per key, and its (first, every) queue
#: resumption per phase.
Orderly = tuple[
    Mapping[int, Sequence[Where]],
    Mapping[int, list[tuple[int, int]]],
    Sequence[tuple[float | None, float | None]],
]


def tally(
    records: Records, phases: list[PhaseFigures], producer_stats: str, *, orderly: Orderly | None = None
) -> ChaosReport:
    """Fill ``phases`` (a send belongs to the phase in which it started) and build the report."""
    failed_seqs = {seq for seq, _ in records.failed}
    for seq, kind in records.failed:
        phases[records.phase_of[seq]].errors[kind] += 1
    for seq, phase_index in enumerate(records.phase_of):
        phase = phases[phase_index]
        started = records.started_at[seq]
        during = phase.fault_at <= started < phase.lifted_at
        phase.sent_during_fault += during
        if seq in records.acked_at:
            phase.acked += 1
            if started >= phase.fault_at and phase.lifted_at > phase.fault_at:
                since = records.acked_at[seq] - phase.fault_at
                if phase.sends_resumed is None or since < phase.sends_resumed:
                    phase.sends_resumed = since
        elif seq in failed_seqs:
            phase.failed += 1
            phase.failed_during_fault += during
        _tally(phase, seq in records.acked_at, records.delivered_from.get(seq, ()))
    orderly_phases: list[PhaseFigures] = []
    if orderly is not None:
        delivered_from, breaks, resumed = orderly
        for phase, (first, every) in zip(phases, resumed, strict=True):
            copy = PhaseFigures(f"{phase.name}/orderly", phase.broker, resumed_first=first, resumed_all=every)
            copy.acked, copy.failed, copy.retries = phase.acked, phase.failed, phase.retries
            copy.in_flight_at_fault, copy.in_flight_peak = phase.in_flight_at_fault, phase.in_flight_peak
            orderly_phases.append(copy)
        for seq, phase_index in enumerate(records.phase_of):
            _tally(orderly_phases[phase_index], seq in records.acked_at, delivered_from.get(seq, ()))
        for key, found in sorted(breaks.items()):
            phase = orderly_phases[records.phase_of[found[0][1]]]
            phase.order_breaks += len(found)
            phase.notes.append(f"key {key} out of order (highest so far, then): {found[:5]}")
    return ChaosReport(
        phases=phases,
        acked=len(records.acked_at),
        failed=len(records.failed),
        consumed=sum(1 for seq in records.delivered_from if seq < len(records.phase_of)),
        lost=sum(p.lost for p in [*phases, *orderly_phases]),
        duplicates=sum(p.duplicates for p in phases),
        producer_stats=producer_stats,
        orderly=orderly_phases,
    )


def _tally(phase: PhaseFigures, acked: bool, where: Sequence[Where]) -> None:
    """Add one send's deliveries to a group's figures: lost, duplicates, stored again, redelivered."""
    phase.lost += acked and not where
    if len(where) > 1:
        phase.duplicates += len(where) - 1
        phase.stored_again += len(set(where)) - 1
        phase.redelivered += len(where) - len(set(where))


def _seconds(value: float | None) -> str:
    return f"{value:.1f}" if value is not None else "never"


def print_report(report: ChaosReport) -> None:
    """The per-phase table, the errors of failed sends, and the totals."""
    print()
    rows = [*report.phases, *report.orderly]
    w = max([12, *(len(p.name) + 2 for p in rows)])
    header = (
        f"{'phase':<{w}}{'broker':<10}{'acked':>7}{'failed':>8}{'fault fail/sent':>17}{'lost':>6}"
        f"{'dups':>6}{'again/redeliv':>14}{'retries':>8}{'in flight at/peak':>18}{'resumed first/all s':>21}"
    )
    print(header)
    for p in rows:
        print(
            f"{p.name:<{w}}{p.broker or '-':<10}{p.acked:>7}{p.failed:>8}"
            f"{f'{p.failed_during_fault}/{p.sent_during_fault}':>17}{p.lost:>6}{p.duplicates:>6}"
            f"{f'{p.stored_again}/{p.redelivered}':>14}{p.retries:>8}"
            f"{f'{p.in_flight_at_fault}/{p.in_flight_peak}':>18}"
            f"{f'{_seconds(p.resumed_first)} / {_seconds(p.resumed_all)}':>21}"
        )
    for p in rows:
        if p.sends_resumed is not None:
            print(f"  {p.name}: sends acknowledged again {p.sends_resumed:.1f} s after the fault began")
        if p.order_breaks:
            print(f"  {p.name}: {p.order_breaks} deliveries out of their key's order")
        for note in p.notes:
            print(f"  {p.name}: {note}")
        for kind, count in p.errors.most_common(3):
            print(f"  {p.name}: {count} x {kind}")
    print(
        f"\ntotal: acked {report.acked}, failed {report.failed}, consumed {report.consumed}, "
        f"lost {report.lost}, duplicates {report.duplicates}"
    )
    print(f"producer: {report.producer_stats}")
