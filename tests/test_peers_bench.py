"""benchmarks/peers.py: its command line, the children it starts, the medians and ratios it prints, its rows.

Nothing here starts a cluster or a client: these are the pure parts of the benchmark. The gRPC
child (``benchmarks/_peers_grpc.py``) runs in a virtualenv without rocketmq-py, so it must import
nothing of it.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def peers(load_benchmark: Callable[[str], ModuleType]) -> ModuleType:
    """benchmarks/peers.py imported as a module (a script next to the ``_side_by_side`` it imports)."""
    return load_benchmark("peers")


def _target(peers: ModuleType) -> object:
    return peers.Target(
        namesrv="127.0.0.1:9876",
        proxy="127.0.0.1:8080",
        proxy_grpc="127.0.0.1:8081",
        brokers=[1, 2],
        proxies=[3],
        peers_python=Path("/venv/bin/python"),
    )


def test_defaults_are_the_issue_s_measurement(peers: ModuleType) -> None:
    args = peers.parse_args([])
    assert (args.rounds, args.seconds, args.in_flight, args.size) == (5, 20.0, 64, 128)
    assert args.backlog == 100_000
    assert args.send_sides.split(",") == ["ours", "proxy", "grpc"]
    assert args.drain_sides.split(",") == ["ours", "proxy", "pop", "grpc"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--send-sides", "ours,java"], "--send-sides: unknown java"),
        (["--drain-sides", "proxypop"], "--drain-sides: unknown proxypop"),
        (["--backlog", "1000", "--pop-count", "2000"], "--pop-count cannot exceed --backlog"),
    ],
)
def test_bad_arguments_are_refused(
    peers: ModuleType, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        peers.parse_args(argv)
    assert message in capsys.readouterr().err


def test_each_side_goes_where_it_should(peers: ModuleType) -> None:
    target = _target(peers)
    args = peers.parse_args(["--seconds", "5", "--warmup", "1"])
    ours = peers.send_argv("ours", target, "t", args)
    assert ours[1].endswith("producer.py")
    assert ours[2] == "child"
    assert ours[ours.index("--namesrv") + 1] == "127.0.0.1:9876"
    assert ours[ours.index("--batch") + 1] == "1"
    proxy = peers.send_argv("proxy", target, "t", args)
    assert proxy[proxy.index("--namesrv") + 1] == "127.0.0.1:8080"
    grpc = peers.send_argv("grpc", target, "t", args)
    assert grpc[:3] == ["/venv/bin/python", str(BENCHMARKS / "_peers_grpc.py"), "send"]
    assert grpc[grpc.index("--endpoint") + 1] == "127.0.0.1:8081"
    assert grpc[grpc.index("--in-flight") + 1] == "64"

    drain = peers.drain_argv("ours", target, "t", "g", 500, args)
    assert drain[2:] == ["drain-child", "127.0.0.1:9876", "t", "g", "500", "trio"]
    assert peers.drain_argv("proxy", target, "t", "g", 500, args)[3] == "127.0.0.1:8080"
    assert peers.drain_argv("pop", target, "t", "g", 500, args)[-1] == "pop"
    grpc_drain = peers.drain_argv("grpc", target, "t", "g", 500, args)
    assert grpc_drain[2] == "drain"
    assert grpc_drain[grpc_drain.index("--threads") + 1] == "8"


def _figures(peers: ModuleType, rate: float, cpu: float) -> object:
    return peers.Figures(
        rate=rate, cpu_us=cpu, broker_cpu_us=10.0, proxy_cpu_us=5.0, rss_mib=40.0, messages=rate, extra=1
    )


def test_summary_prints_medians_and_the_ratios_of_sides_that_ran(peers: ModuleType) -> None:
    results = {
        "single sends": {
            "ours": [_figures(peers, r, c) for r, c in ((10_000, 30), (12_000, 28), (11_000, 29))],
            "proxy": [_figures(peers, r, c) for r, c in ((5_000, 40), (6_000, 38), (5_500, 39))],
            "grpc": [],
        }
    }
    lines = peers.summary(results)
    assert lines[0] == "medians:"
    ours = next(line for line in lines if line.strip().startswith("ours"))
    assert "11,000" in ours
    assert "29.0" in ours
    assert ours.rstrip().endswith("3")  # extra: summed
    assert not any(line.strip().startswith("grpc") for line in lines)
    ratios = [line.strip() for line in lines if "median ratio" in line]
    assert ratios == [
        "single sends rate: median ratio through the Proxy / direct 0.50 (per round 0.50, 0.50, 0.50)",
        "single sends CPU/msg: median ratio through the Proxy / direct 1.34 (per round 1.33, 1.36, 1.34)",
    ]


def test_result_rows_have_what_plot_py_reads(peers: ModuleType) -> None:
    row = peers.result_rows("drain", "grpc", 2, _figures(peers, 612.345, 367.04), "busy")
    assert row == {
        "case": "drain",
        "side": "grpc",
        "round": 2,
        "rate": 612.3,
        "cpu_us": 367.0,
        "broker_cpu_us": 10.0,
        "proxy_cpu_us": 5.0,
        "peak_rss_mib": 40.0,
        "messages": 612,
        "source": "busy",
    }
    assert "source" not in peers.result_rows("drain", "grpc", 1, _figures(peers, 1.0, 1.0), None)


def test_an_installed_venv_is_reused(peers: ModuleType, tmp_path: Path) -> None:
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.touch()
    (tmp_path / ".installed").write_text("rocketmq-python-client==5.1.2\n")
    assert peers.peers_python(tmp_path, "rocketmq-python-client==5.1.2") == python


def test_the_grpc_child_imports_only_the_standard_library_and_the_grpc_client() -> None:
    tree = ast.parse((BENCHMARKS / "_peers_grpc.py").read_text())
    imported = {
        (node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
        if not (isinstance(node, ast.ImportFrom) and node.level)
    }
    assert imported - sys.stdlib_module_names == {"rocketmq"}
