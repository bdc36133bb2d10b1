"""Plot the side-by-side benchmarks' result files: one SVG per benchmark, for the documentation.

The benchmarks write their rounds with ``--json FILE`` (``_side_by_side.write_results``): a JSON
list of rows ::

    {"benchmark": "producer", "case": "single sends", "side": "java" | "trio" | "asyncio" | ...,
     "round": 1, "rate": 11329.0, "cpu_us": 61.7}

(the sides are those of :data:`SIDES`: what ``producer.py``, ``consumer.py`` and ``peers.py``
write, with ``--sides`` ``ours`` written as ``trio`` and ``aio`` as ``asyncio``, and the readers and
sinks of ``spark_vs_kafka.py``, whose ``cpu_us`` is the Python workers' and the Spark JVM's per row)

``rate`` in messages per second, ``cpu_us`` the client's CPU microseconds per message; other keys
(``source``, ...) are allowed and a ``source`` is printed under the figure. This script reads every
``*.json`` of a directory (default ``benchmarks/results/``) and writes ``bench-<benchmark>.svg``
into another (default ``docs/img/``): two panels, msg/s and CPU µs per message, each with a group
of bars per case, one bar per side at the median of its rounds and each round as a dot on it.

The output depends only on the rows: matplotlib's Agg backend, a fixed ``svg.hashsalt``, no date
in the metadata, no random jitter. ``python benchmarks/plot.py [--results DIR] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import matplotlib

matplotlib.use("Agg")

from matplotlib.axes import Axes
from matplotlib.figure import Figure

ROOT: Final = Path(__file__).resolve().parent.parent
DEFAULT_RESULTS: Final = ROOT / "benchmarks" / "results"
DEFAULT_OUT: Final = ROOT / "docs" / "img"
#: The sides in plotting order, with their colours and legend labels.
SIDES: Final = {
    "java": ("#b0413e", "Java client / tools"),
    "trio": ("#2f6db5", "rocketmq-py (trio)"),
    "asyncio": ("#5aa469", "rocketmq-py (asyncio)"),
    "portal": ("#b5cf6b", "asyncio over a trio thread (portal)"),
    "threads": ("#8c8c8c", "asyncio.to_thread over the blocking facade"),
    "javatrace": ("#e08a5a", "Java tools, message trace on"),
    "trace": ("#7fa7d9", "rocketmq-py (trio), message trace on"),
    "metrics": ("#aec7e8", "rocketmq-py (trio), OpenTelemetry metrics on"),
    "javapop": ("#8c564b", "Java client, POP consumer"),
    "pop": ("#9467bd", "rocketmq-py (trio), POP consumer"),
    "proxy": ("#17becf", "rocketmq-py (trio) through the Proxy (remoting)"),
    "grpc": ("#e377c2", "Apache Python client (gRPC through the Proxy)"),
    "kafka": ("#7f7f7f", "Spark's Kafka source / sink, defaults"),
    "kafka-tuned": ("#4d4d4d", "Spark's Kafka source, fetch.max.wait.ms=10"),
    "rocketmq": ("#2f6db5", "rocketmq source / sink, brokers' default caps"),
    "rocketmq-tuned": ("#1b3f73", "rocketmq source, brokers' caps raised"),
}
#: The two panels: the row key plotted, and the axis label.
PANELS: Final = (("rate", "messages per second"), ("cpu_us", "client CPU µs per message"))
#: How each panel labels its bars (the median).
_LABEL_FORMATS: Final = {"rate": "{:,.0f}", "cpu_us": "{:.1f}"}
_KIND_NAMES: Final = {str: "a string", int: "an integer", float: "a number"}
_REQUIRED: Final = {"benchmark": str, "case": str, "side": str, "round": int, "rate": float, "cpu_us": float}


class ResultError(ValueError):
    """A result file that is not a list of valid rows; the message names the file and the row."""


@dataclass(frozen=True, slots=True)
class Row:
    """One round of one side of one case of a benchmark."""

    benchmark: str
    case: str
    side: str
    round: int
    rate: float
    cpu_us: float
    source: str | None = None

    def value(self, key: str) -> float:
        """``rate`` or ``cpu_us``."""
        return float(getattr(self, key))


def _row(raw: Any, where: str) -> Row:
    if not isinstance(raw, dict):
        raise ResultError(f"{where}: a row must be a JSON object, not {type(raw).__name__}")
    values: dict[str, Any] = {}
    for key, kind in _REQUIRED.items():
        value = raw.get(key)
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ResultError(f"{where}: {key!r} must be {_KIND_NAMES[kind]}, not {value!r}")
        values[key] = value
    if values["side"] not in SIDES:
        raise ResultError(f"{where}: side {values['side']!r} is not one of {', '.join(SIDES)}")
    source = raw.get("source")
    return Row(**values, source=source if isinstance(source, str) else None)


def read_results(directory: Path) -> list[Row]:
    """Every row of every ``*.json`` file of ``directory``, files in name order.

    Raises:
        ResultError: a file is not JSON, not a list, or holds an invalid row.
    """
    rows: list[Row] = []
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except ValueError as exc:
            raise ResultError(f"{path}: not JSON: {exc}") from None
        if not isinstance(data, list):
            raise ResultError(f"{path}: expected a JSON list of rows")
        rows.extend(_row(raw, f"{path}, row {index}") for index, raw in enumerate(data))
    return rows


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "benchmark"


def _bars(ax: Axes, rows: Sequence[Row], cases: Sequence[str], sides: Sequence[str], key: str) -> None:
    width = 0.8 / len(sides)
    for s, side in enumerate(sides):
        colour, label = SIDES[side]
        for c, case in enumerate(cases):
            values = [r.value(key) for r in rows if r.case == case and r.side == side]
            if not values:
                continue
            x = c - 0.4 + width * (s + 0.5)
            container = ax.bar([x], [statistics.median(values)], width * 0.9, color=colour, label=label)
            container.patches[0].set_gid(f"bar-{key}-{c}-{side}")
            ax.bar_label(
                container, fmt=_LABEL_FORMATS[key], label_type="center", fontsize="x-small", color="white"
            )
            label = "_nolegend_"  # one legend entry per side
            # Each round as a dot, spread evenly across the bar (no random jitter: same output each run).
            offsets = [
                (i - (len(values) - 1) / 2) * width * 0.5 / max(len(values), 1) for i in range(len(values))
            ]
            ax.scatter(
                [x + o for o in offsets],
                values,
                s=14,
                color="black",
                zorder=3,
                linewidths=0,
                label="_nolegend_",
            )
    ax.set_xticks(range(len(cases)), list(cases))
    ax.set_xlim(-0.6, len(cases) - 0.4)
    ax.grid(axis="y", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)


def plot_benchmark(benchmark: str, rows: Sequence[Row], out: Path) -> Path:
    """Write ``bench-<benchmark>.svg`` into ``out`` from ``rows`` (all of that benchmark)."""
    cases = list(dict.fromkeys(r.case for r in rows))
    sides = [side for side in SIDES if any(r.side == side for r in rows)]
    fig = Figure(figsize=(4.0 + 1.6 * len(cases) * len(sides) / 2, 3.6), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, (key, label) in zip(axes, PANELS, strict=True):
        _bars(ax, rows, cases, sides, key)
        ax.set_ylabel(label)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(
        handles, labels, loc="outside lower center", ncols=min(len(sides), 3), fontsize="small", frameon=False
    )
    title = f"{benchmark}: bars are the median of the rounds, dots each round"
    sources = sorted({r.source for r in rows if r.source})
    if sources:
        title += "\nsource: " + "; ".join(sources)
    fig.suptitle(title, fontsize="small")
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"bench-{_slug(benchmark)}.svg"
    with matplotlib.rc_context({"svg.hashsalt": "rocketmq-py benchmarks", "svg.fonttype": "none"}):
        fig.savefig(path, format="svg", metadata={"Date": None, "Creator": "benchmarks/plot.py"})
    return path


def plot_all(results: Path, out: Path) -> list[Path]:
    """One SVG per benchmark found in ``results``; the paths written, in benchmark order."""
    rows = read_results(results)
    benchmarks = list(dict.fromkeys(r.benchmark for r in rows))
    return [plot_benchmark(b, [r for r in rows if r.benchmark == b], out) for b in benchmarks]


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: plot ``--results`` into ``--out``; prints each file written."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--results", type=Path, default=DEFAULT_RESULTS, help="directory of *.json result files"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="directory the SVG files go to")
    args = parser.parse_args(argv)
    try:
        paths = plot_all(args.results, args.out)
    except ResultError as exc:
        print(f"plot.py: {exc}", file=sys.stderr)
        return 1
    if not paths:
        print(f"plot.py: no result rows in {args.results}/*.json", file=sys.stderr)
        return 1
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
