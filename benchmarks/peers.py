"""rocketmq-py beside the Apache RocketMQ 5.x Python client (gRPC through the Proxy), same cluster, alternating rounds.

One local cluster (two brokers and a Proxy in cluster mode, RocketMQ 5.x), and in each round, in an
order that alternates between rounds, a fresh child process per client and case:

- **single sends**, ``--size`` bytes, ``--in-flight`` outstanding, a ``--seconds`` window after
  ``--warmup``: ``ours`` (rocketmq-py straight to the NameServer and brokers, ``producer.py``'s
  child), ``proxy`` (the same, given the Proxy's remoting port as its NameServer), ``grpc`` (PyPI
  ``rocketmq-python-client``'s ``Producer.send_async`` to the Proxy's gRPC port, ``_peers_grpc.py``);
- **drain** of a stored backlog by a new group: ``ours`` (the client-rebalance push consumer,
  pulling, ``consumer.py``'s child), ``proxy`` (the same through the Proxy), ``pop`` (ours with
  ``client_rebalance=False``, the group in POP mode: the like-for-like model of the gRPC client;
  direct, since a Proxy serves no POP over remoting, see ``docs/proxy.md``), ``grpc`` (the gRPC
  client's ``SimpleConsumer``: a POP per ``receive`` through the Proxy, one ``ack`` per
  message). The POP-model sides (``pop``, ``grpc``) are timed to
  ``--pop-count`` distinct messages of the backlog: at a few hundred to a few thousand messages a
  second the whole backlog would take minutes a round. Drains are timed as in ``consumer.py``:
  from "consumer starting" (start-up included) to the last message consumed.

For every run: msgs/s; CPU µs per message of the client (user + system of the child, all its
threads, from ``/proc``), of the brokers and of the Proxy, over the same window; the child's peak
RSS (``ru_maxrss``). The end prints the medians and the median of the per-round ratios.

The gRPC client is not a dependency of rocketmq-py: on first run this script makes a virtualenv
of its own, ``benchmarks/.peers-venv``, and installs ``--grpc-client`` there with pip (or give
``--peers-python`` an interpreter that has it). That client writes its log under ``$HOME/logs``:
its children get ``HOME`` in that virtualenv.

    python benchmarks/peers.py [--rounds 5] [--seconds 20] [--in-flight 64] [--size 128]
                               [--backlog 100000] [--pop-count 20000] [--only send|drain]
                               [--json benchmarks/results/peers.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _side_by_side import Watched, broker_pids, median, proxy_pids, ratio_line, write_results

from rocketmq_py.testing import Cluster, LocalCluster, start_cluster
from rocketmq_py.testing._processes import marker_for

HERE = Path(__file__).resolve().parent
PEERS_VENV = HERE / ".peers-venv"
GRPC_CLIENT = "rocketmq-python-client==5.1.2"
QUEUES = 8  # per broker
SEND_SIDES = ("ours", "proxy", "grpc")
DRAIN_SIDES = ("ours", "proxy", "pop", "grpc")
POP_MODEL = frozenset({"pop", "grpc"})
#: Ratios printed at the end: (case, numerator side, denominator side, label).
RATIOS = (
    ("single sends", "proxy", "ours", "through the Proxy / direct"),
    ("single sends", "grpc", "proxy", "gRPC client / ours, both through the Proxy"),
    ("single sends", "grpc", "ours", "gRPC client / ours direct"),
    ("drain", "proxy", "ours", "through the Proxy / direct"),
    ("drain", "grpc", "pop", "gRPC client / ours, both POP"),
    ("drain", "grpc", "ours", "gRPC client / ours pulling direct"),
)


@dataclass(frozen=True, slots=True)
class Figures:
    """One client's figures in one run."""

    rate: float  # msgs/s
    cpu_us: float  # client CPU per message
    broker_cpu_us: float
    proxy_cpu_us: float
    rss_mib: float  # the child's peak RSS
    messages: float  # sent in the window, or drained
    extra: int = 0  # failed sends, or redeliveries in a drain


# --- the gRPC client's virtualenv -----------------------------------------------------------------


def peers_python(venv: Path = PEERS_VENV, requirement: str = GRPC_CLIENT) -> Path:
    """The interpreter of ``venv`` with ``requirement`` installed: made (``python -m venv``, ``pip
    install``) unless its stamp file already names that requirement."""
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    if python.exists() and stamp.exists() and stamp.read_text().strip() == requirement:
        return python
    print(f"installing {requirement} into {venv} (once)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", requirement], check=True)
    stamp.write_text(requirement + "\n")
    return python


# --- one run --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Target:
    """Where the children go: the cluster's addresses and the server JVMs whose CPU is sampled."""

    namesrv: str
    proxy: str
    proxy_grpc: str
    brokers: list[int]
    proxies: list[int]
    peers_python: Path


def send_argv(side: str, target: Target, topic: str, args: argparse.Namespace) -> list[str]:
    """The child that sends for ``side``."""
    common = [
        *("--topic", topic, "--seconds", str(args.seconds), "--warmup", str(args.warmup)),
        *("--in-flight", str(args.in_flight), "--size", str(args.size)),
    ]
    if side == "grpc":
        grpc = [str(target.peers_python), str(HERE / "_peers_grpc.py"), "send"]
        return [*grpc, "--endpoint", target.proxy_grpc, *common]
    namesrv = target.proxy if side == "proxy" else target.namesrv
    return [sys.executable, str(HERE / "producer.py"), "child", "--namesrv", namesrv, *common, "--batch", "1"]


def drain_argv(
    side: str, target: Target, topic: str, group: str, count: int, args: argparse.Namespace
) -> list[str]:
    """The child that drains ``count`` messages of ``topic`` for ``side``."""
    if side == "grpc":
        return [
            *(str(target.peers_python), str(HERE / "_peers_grpc.py"), "drain"),
            *("--endpoint", target.proxy_grpc, "--topic", topic, "--group", group),
            *("--count", str(count), "--batch", str(args.grpc_batch), "--threads", str(args.grpc_threads)),
        ]
    namesrv = target.proxy if side == "proxy" else target.namesrv
    api = "pop" if side in POP_MODEL else "trio"
    return [sys.executable, str(HERE / "consumer.py"), "drain-child", namesrv, topic, group, str(count), api]


def _child_env() -> dict[str, str]:
    home = PEERS_VENV / "home"  # where the gRPC client's log goes ($HOME/logs/rocketmq_python)
    home.mkdir(parents=True, exist_ok=True)
    return dict(os.environ, HOME=str(home))


def run_sends(argv: list[str], target: Target, args: argparse.Namespace) -> Figures:
    """One send window of the child ``argv``."""
    child = Watched(argv, env=_child_env(), brokers=target.brokers, proxies=target.proxies)
    try:
        start = child.wait_for(r"^window start", args.warmup + 90)
        end = child.wait_for(r"^window end", args.seconds + 60)
        result: dict[str, Any] = json.loads(child.wait_for(r"^result ", 60).text.split(" ", 1)[1])
    finally:
        child.stop()
    sent = max(float(result["sent"]), 1.0)
    return Figures(
        rate=result["sent"] / result["seconds"],
        cpu_us=(end.cpu - start.cpu) / sent * 1e6,
        broker_cpu_us=(end.broker_cpu - start.broker_cpu) / sent * 1e6,
        proxy_cpu_us=(end.proxy_cpu - start.proxy_cpu) / sent * 1e6,
        rss_mib=result["peak_rss_kib"] / 1024,
        messages=result["sent"],
        extra=int(result["failed"]),
    )


def run_drain(argv: list[str], target: Target, count: int) -> Figures:
    """One drain of ``count`` messages by the child ``argv``."""
    child = Watched(argv, env=_child_env(), brokers=target.brokers, proxies=target.proxies)
    try:
        start = child.wait_for(r"^start", 90)
        done = child.wait_for(r"^done", count / 100 + 120)
        result: dict[str, Any] = json.loads(child.wait_for(r"^\{", 60).text)
    finally:
        child.stop()
    return Figures(
        rate=count / result["seconds"],
        cpu_us=(done.cpu - start.cpu) / count * 1e6,
        broker_cpu_us=(done.broker_cpu - start.broker_cpu) / count * 1e6,
        proxy_cpu_us=(done.proxy_cpu - start.proxy_cpu) / count * 1e6,
        rss_mib=result["peak_rss_kib"] / 1024,
        messages=count,
        extra=int(result.get("duplicates", 0)),
    )


# --- what is printed ------------------------------------------------------------------------------

HEADER = (
    f"    {'client':<9} {'msgs/s':>9} {'CPU µs/m':>9} {'broker µs':>10} {'proxy µs':>9} {'RSS MiB':>8}"
    f" {'failed/redeliv':>14}"
)


def row(side: str, f: Figures) -> str:
    """One line of a table of :data:`HEADER`."""
    return (
        f"    {side:<9} {f.rate:>9,.0f} {f.cpu_us:>9.1f} {f.broker_cpu_us:>10.1f} {f.proxy_cpu_us:>9.1f}"
        f" {f.rss_mib:>8.1f} {f.extra:>14}"
    )


def median_figures(runs: Sequence[Figures]) -> Figures:
    """The median of each figure over ``runs`` (``extra``: the sum)."""
    return Figures(
        rate=median([f.rate for f in runs]),
        cpu_us=median([f.cpu_us for f in runs]),
        broker_cpu_us=median([f.broker_cpu_us for f in runs]),
        proxy_cpu_us=median([f.proxy_cpu_us for f in runs]),
        rss_mib=median([f.rss_mib for f in runs]),
        messages=median([f.messages for f in runs]),
        extra=sum(f.extra for f in runs),
    )


def summary(results: dict[str, dict[str, list[Figures]]]) -> list[str]:
    """The medians of every case and side, then the :data:`RATIOS` whose two sides both ran."""
    lines = ["medians:"]
    for case, by_side in results.items():
        lines += [f"  {case}:", HEADER]
        lines += [row(side, median_figures(runs)) for side, runs in by_side.items() if runs]
    for case, top, bottom, label in RATIOS:
        ours, theirs = results.get(case, {}).get(top), results.get(case, {}).get(bottom)
        if ours and theirs and len(ours) == len(theirs):
            rates = ratio_line(f"{case} rate", [f.rate for f in ours], [f.rate for f in theirs], label)
            cpu = ratio_line(f"{case} CPU/msg", [f.cpu_us for f in ours], [f.cpu_us for f in theirs], label)
            lines += ["  " + rates, "  " + cpu]
    return lines


def result_rows(case: str, side: str, rnd: int, f: Figures, source: str | None) -> dict[str, object]:
    """One row of the JSON results (``_side_by_side.write_results``, ``plot.py``)."""
    out: dict[str, object] = {
        "case": case,
        "side": side,
        "round": rnd,
        "rate": round(f.rate, 1),
        "cpu_us": round(f.cpu_us, 1),
        "broker_cpu_us": round(f.broker_cpu_us, 1),
        "proxy_cpu_us": round(f.proxy_cpu_us, 1),
        "peak_rss_mib": round(f.rss_mib, 1),
        "messages": round(f.messages),
    }
    if source:
        out["source"] = source
    return out


# --- the run ---------------------------------------------------------------------------------------


def set_pop_mode(cluster: Cluster, group: str, topic: str) -> None:
    """The group reads ``topic`` in POP mode on every broker (``mqadmin setConsumeMode``)."""
    cluster.mqadmin(
        "setConsumeMode", "-c", "DefaultCluster", "-g", group, "-t", topic, "-m", "POP", "-q", "8"
    ).check()


def run(cluster: Cluster, target: Target, args: argparse.Namespace) -> None:
    """Every round of every case, then the medians and ratios (and the JSON results)."""
    from consumer import fill  # the backlog filler of consumer.py (our batch sends)

    run_id = uuid.uuid4().hex[:8]
    cases: dict[str, tuple[str, ...]] = {}
    if args.only in (None, "send"):
        cases["single sends"] = tuple(s for s in args.send_sides.split(",") if s)
    if args.only in (None, "drain"):
        cases["drain"] = tuple(s for s in args.drain_sides.split(",") if s)
    send_topic, drain_topic = f"peers-send-{run_id}", f"peers-drain-{run_id}"
    for topic in (send_topic, drain_topic):
        cluster.create_topic(topic, QUEUES, message_type="NORMAL")  # the gRPC producer checks the type
    print(f"cluster {target.namesrv}, Proxy remoting {target.proxy}, gRPC {target.proxy_grpc}")
    if "drain" in cases:
        took = fill(cluster, drain_topic, args.backlog, args.size, "python")
        print(f"backlog: {args.backlog:,} x {args.size} B in {drain_topic}, stored in {took:.1f} s")
    print(
        f"{args.size} B, {args.in_flight} in flight, {args.warmup:g} s warm-up + {args.seconds:g} s windows; "
        f"drains of {args.backlog:,} (POP-model sides: {args.pop_count:,}); {args.rounds} rounds\n"
    )
    results: dict[str, dict[str, list[Figures]]] = {c: {s: [] for s in sides} for c, sides in cases.items()}
    rows: list[dict[str, object]] = []
    for r in range(args.rounds):
        for case, sides in cases.items():
            print(f"round {r + 1}, {case}:\n{HEADER}")
            for side in sides if r % 2 == 0 else sides[::-1]:
                if case == "single sends":
                    figures = run_sends(send_argv(side, target, send_topic, args), target, args)
                else:
                    group = f"peers-{side}-{run_id}-{r}"
                    count = args.pop_count if side in POP_MODEL else args.backlog
                    if side == "pop":
                        set_pop_mode(cluster, group, drain_topic)
                    argv = drain_argv(side, target, drain_topic, group, count, args)
                    figures = run_drain(argv, target, count)
                results[case][side].append(figures)
                rows.append(result_rows(case, side, r + 1, figures, args.source))
                print(row(side, figures), flush=True)
    write_results(args.json, "peers", rows)
    print()
    print("\n".join(summary(results)))


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (see the module's docstring)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=20.0, help="measured send window")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds of sending before the window")
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--backlog", type=int, default=100_000, help="messages stored for the drains")
    parser.add_argument(
        "--pop-count", type=int, default=20_000, help="distinct messages a POP-model side drains"
    )
    parser.add_argument("--only", choices=["send", "drain"])
    parser.add_argument("--send-sides", default=",".join(SEND_SIDES), help="of: " + ", ".join(SEND_SIDES))
    parser.add_argument("--drain-sides", default=",".join(DRAIN_SIDES), help="of: " + ", ".join(DRAIN_SIDES))
    parser.add_argument("--grpc-batch", type=int, default=32, help="max messages per gRPC receive")
    parser.add_argument(
        "--grpc-threads", type=int, default=8, help="threads receiving (and acking) with the gRPC client"
    )
    parser.add_argument("--grpc-client", default=GRPC_CLIENT, help="pip requirement for the gRPC client")
    parser.add_argument("--peers-python", type=Path, help="an interpreter that has the gRPC client")
    parser.add_argument("--version", help="RocketMQ release of the cluster (5.x; default the kit's)")
    parser.add_argument("--json", help="write every round's figures here (benchmarks/results/peers.json)")
    parser.add_argument("--source", help="a note stored with each JSON row (machine, load)")
    args = parser.parse_args(argv)
    for name, allowed in (("send_sides", SEND_SIDES), ("drain_sides", DRAIN_SIDES)):
        unknown = [s for s in getattr(args, name).split(",") if s and s not in allowed]
        if unknown:
            parser.error(
                f"--{name.replace('_', '-')}: unknown {', '.join(unknown)} (of {', '.join(allowed)})"
            )
    if args.pop_count > args.backlog:
        parser.error("--pop-count cannot exceed --backlog")
    return args


def main() -> int:
    """Start the cluster with its Proxy, run, stop."""
    args = parse_args()
    python = args.peers_python or peers_python(requirement=args.grpc_client)
    with start_cluster(brokers=2, proxy=True, backend="jar", version=args.version) as cluster:
        if not isinstance(cluster, LocalCluster) or not cluster.proxy_addr or not cluster.proxy_grpc_addr:
            raise SystemExit("peers.py needs the kit's local cluster with a Proxy (RocketMQ 5.x)")
        marker = marker_for(cluster.cluster_id)  # this cluster's JVMs only: others may be running
        target = Target(
            namesrv=cluster.namesrv_addr,
            proxy=cluster.proxy_addr,
            proxy_grpc=cluster.proxy_grpc_addr,
            brokers=broker_pids(marker),
            proxies=proxy_pids(marker),
            peers_python=python,
        )
        run(cluster, target, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
