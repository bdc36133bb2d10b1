"""benchmarks/plot.py: one SVG per benchmark, a bar per (case, side) and panel, the same bytes each run.

matplotlib comes with the ``docs`` extra. Without it this module is skipped with the reason,
except in CI (``CI`` set), where it fails: the plots of the documentation must be checked there.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("matplotlib") is None:
    if os.environ.get("CI"):
        pytest.fail(
            "tests/test_plot.py needs matplotlib (the docs extra), and CI is set: install it with "
            "`pip install -e '.[docs]'`",
            pytrace=False,
        )
    pytest.skip("needs matplotlib: `pip install -e '.[docs]'` to run it", allow_module_level=True)

PLOT = Path(__file__).resolve().parent.parent / "benchmarks" / "plot.py"


@pytest.fixture(scope="module")
def plot() -> Any:
    """benchmarks/plot.py imported as a module (it is a script, not part of a package)."""
    spec = importlib.util.spec_from_file_location("benchmarks_plot", PLOT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for case in ("single sends", "batches of 16"):
        for side, rate in (("java", 11000.0), ("trio", 9500.0), ("asyncio", 9000.0)):
            rows += [
                {
                    "benchmark": "producer",
                    "case": case,
                    "side": side,
                    "round": r,
                    "rate": rate + r,
                    "cpu_us": 60.0 + r,
                }
                for r in (1, 2, 3)
            ]
    rows += [
        {"benchmark": "consumer", "case": "drain", "side": side, "round": 1, "rate": 30000, "cpu_us": 31.5}
        for side in ("java", "trio")
    ]
    return rows


def _run(results: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(PLOT), "--results", str(results), "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_one_svg_per_benchmark_with_a_bar_per_case_side_and_panel(tmp_path: Path, plot: Any) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "run.json").write_text(json.dumps(_rows()))
    done = _run(results, tmp_path / "img")
    assert done.returncode == 0, done.stderr
    producer = (tmp_path / "img" / "bench-producer.svg").read_text()
    consumer = (tmp_path / "img" / "bench-consumer.svg").read_text()
    assert sorted(p.name for p in (tmp_path / "img").iterdir()) == [
        "bench-consumer.svg",
        "bench-producer.svg",
    ]
    # Two panels (msg/s, CPU µs per message) x cases x sides.
    assert producer.count('id="bar-') == 2 * 2 * 3
    assert consumer.count('id="bar-') == 2 * 1 * 2
    assert producer.count('id="bar-rate-') == producer.count('id="bar-cpu_us-') == 6
    assert "<dc:date>" not in producer  # no date: the file changes only when the figures do

    # Deterministic: another run (here in this process) writes the same bytes.
    again = plot.plot_all(results, tmp_path / "again")
    assert [p.name for p in again] == ["bench-producer.svg", "bench-consumer.svg"]
    assert (tmp_path / "again" / "bench-producer.svg").read_text() == producer


def test_a_bad_row_is_refused_naming_the_file(tmp_path: Path, plot: Any) -> None:
    (tmp_path / "bad.json").write_text(json.dumps([{"benchmark": "producer", "case": "x", "side": "go"}]))
    with pytest.raises(plot.ResultError, match=r"bad\.json, row 0: 'round' must be an integer"):
        plot.plot_all(tmp_path, tmp_path / "img")
    (tmp_path / "bad.json").write_text(json.dumps([{**_rows()[0], "side": "go"}]))
    with pytest.raises(plot.ResultError, match="side 'go' is not one of java, trio, asyncio"):
        plot.plot_all(tmp_path, tmp_path / "img")
    assert not (tmp_path / "img").exists()


def test_the_repositorys_own_results_plot(tmp_path: Path) -> None:
    """Every file in benchmarks/results/ is read and plotted: each side a benchmark writes is known
    (the POP and trace result files of issue 15 stopped the script: side 'pop' was refused)."""
    run = subprocess.run(
        [sys.executable, str(PLOT), "--out", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert sorted(p.name for p in tmp_path.glob("*.svg")) == [
        "bench-consumer.svg",
        "bench-peers.svg",
        "bench-producer.svg",
        "bench-spark-vs-kafka.svg",
    ]
