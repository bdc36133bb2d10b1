"""Seconds per test file from pytest's JUnit XML, as a Markdown table (slowest first).

    python scripts/durations.py reports/main.xml                 # one run
    python scripts/durations.py before.xml reports/main.xml      # runs side by side, by the first

``make test`` writes reports/main.xml, reports/versions-<release>[-last].xml and reports/docker.xml.
A file's time is the sum of its tests' setup, call and teardown times; on pytest-xdist workers the
files run side by side, so the sum over files is worker time, not the run's wall time. The fast
tests/ files under ``--small`` seconds in every run are summed in one row.
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path


def per_file(report: Path) -> tuple[Counter[str], Counter[str]]:
    """(seconds, tests) per test file of one JUnit XML report."""
    seconds: Counter[str] = Counter()
    tests: Counter[str] = Counter()
    for case in ET.parse(report).iter("testcase"):
        parts = case.get("classname", "").split(".")
        ends = [i for i, part in enumerate(parts) if part.startswith("test_")]
        name = "/".join(parts[: ends[-1] + 1]) + ".py" if ends else ".".join(parts)
        seconds[name] += float(case.get("time", 0))
        tests[name] += 1
    return seconds, tests


def table(reports: list[Path], small: float) -> str:
    """The Markdown table of ``reports``' per-file seconds, slowest in the first report first."""
    runs = [per_file(r) for r in reports]
    files = sorted(set().union(*(s for s, _ in runs)), key=lambda f: (-runs[0][0].get(f, 0), f))
    lines = [
        "| file | tests | " + " | ".join(f"s ({r.name})" for r in reports) + " |",
        "|---|---:|" + "---:|" * len(reports),
    ]
    rest, rest_tests = [0.0] * len(runs), 0
    for name in files:
        counts = max(t.get(name, 0) for _, t in runs)
        if name.startswith("tests/") and all(s.get(name, 0) < small for s, _ in runs):
            rest = [total + s.get(name, 0) for total, (s, _) in zip(rest, runs, strict=True)]
            rest_tests += counts
            continue
        lines.append(f"| {name} | {counts} | " + " | ".join(f"{s.get(name, 0):.0f}" for s, _ in runs) + " |")
    lines.append(
        f"| tests/ files under {small:g} s each | {rest_tests} | "
        + " | ".join(f"{r:.0f}" for r in rest)
        + " |"
    )
    lines.append(
        "| **sum (worker seconds)** | | " + " | ".join(f"{sum(s.values()):.0f}" for s, _ in runs) + " |"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path, help="JUnit XML files (pytest --junitxml)")
    parser.add_argument("--small", type=float, default=10.0, help="tests/ files under this are one row")
    args = parser.parse_args()
    print(table(args.reports, args.small))


if __name__ == "__main__":
    main()
