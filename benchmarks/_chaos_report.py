"""What ``benchmarks/chaos.py`` measures per phase, and the table it prints: one row per phase, the
errors of failed sends, the totals."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field


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


def _seconds(value: float | None) -> str:
    return f"{value:.1f}" if value is not None else "never"


def print_report(report: ChaosReport) -> None:
    """The per-phase table, the errors of failed sends, and the totals."""
    print()
    header = (
        f"{'phase':<12}{'broker':<10}{'acked':>7}{'failed':>8}{'fault fail/sent':>17}{'lost':>6}"
        f"{'dups':>6}{'again/redeliv':>14}{'retries':>8}{'in flight at/peak':>18}{'resumed first/all s':>21}"
    )
    print(header)
    for p in report.phases:
        print(
            f"{p.name:<12}{p.broker or '-':<10}{p.acked:>7}{p.failed:>8}"
            f"{f'{p.failed_during_fault}/{p.sent_during_fault}':>17}{p.lost:>6}{p.duplicates:>6}"
            f"{f'{p.stored_again}/{p.redelivered}':>14}{p.retries:>8}"
            f"{f'{p.in_flight_at_fault}/{p.in_flight_peak}':>18}"
            f"{f'{_seconds(p.resumed_first)} / {_seconds(p.resumed_all)}':>21}"
        )
    for p in report.phases:
        for note in p.notes:
            print(f"  {p.name}: {note}")
        for kind, count in p.errors.most_common(3):
            print(f"  {p.name}: {count} x {kind}")
    print(
        f"\ntotal: acked {report.acked}, failed {report.failed}, consumed {report.consumed}, "
        f"lost {report.lost}, duplicates {report.duplicates}"
    )
    print(f"producer: {report.producer_stats}")
