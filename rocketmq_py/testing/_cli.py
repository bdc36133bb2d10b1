"""``python -m rocketmq_py.testing``: a local cluster for humans and scripts.

Commands::

    up [--brokers N] [--version V]   start a detached cluster; the last line is ROCKETMQ_NAMESRV=host:port
    status                           what runs
    down                             stop every detached cluster (and any left by dead processes)
    fetch [--version V]              download the jars (server and benchmark tools) into the cache
    mqadmin ARGS...                  the official admin tool against the running cluster
    java-bench TOOL ARGS...          the official benchmark producer|consumer|batch-producer|...
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._distribution import DEFAULT_VERSION, resolve_bench, resolve_server
from rocketmq_py.testing._processes import Registry, cleanup_stale, pid_alive
from rocketmq_py.testing._tools import BENCH_MAIN_CLASSES, ToolResult, run_java_bench, run_mqadmin

__all__ = ["main"]


def _running_detached() -> list[Registry]:
    return [r for r in Registry.all() if r.detached and any(pid_alive(p) for p in r.pids.values())]


def _target() -> tuple[str, str]:
    """(namesrv, version) of the cluster the tools should talk to."""
    env = os.environ.get("ROCKETMQ_NAMESRV")
    if env:
        return env, os.environ.get("ROCKETMQ_VERSION", DEFAULT_VERSION)
    running = _running_detached()
    if not running:
        raise ClusterError(
            "no cluster is running: run `python -m rocketmq_py.testing up` or set ROCKETMQ_NAMESRV"
        )
    return running[-1].namesrv, running[-1].version or DEFAULT_VERSION


def _cmd_up(args: argparse.Namespace) -> int:
    from rocketmq_py.testing._local import LocalCluster

    cleanup_stale()
    for reg in _running_detached():
        if len(reg.brokers) == args.brokers and (reg.version or DEFAULT_VERSION) == args.version:
            print(f"already running: {reg.cluster_id} ({', '.join(reg.brokers)})")
            print(f"ROCKETMQ_NAMESRV={reg.namesrv}")
            return 0
    cluster = LocalCluster(args.brokers, version=args.version, detached=True).start()
    cluster.detach()
    print(f"cluster {cluster.cluster_id}: RocketMQ {args.version}, work directory {cluster.workdir}")
    for broker in cluster.brokers:
        print(f"  {broker.name}: {broker.address}")
    print("  timings: " + ", ".join(f"{k} {v:.1f}s" for k, v in cluster.timings.items()))
    print(f"ROCKETMQ_NAMESRV={cluster.namesrv_addr}")
    return 0


def _cmd_status(_: argparse.Namespace) -> int:
    regs = Registry.all()
    if not regs:
        print("nothing running")
        return 0
    for reg in regs:
        alive = {name: pid_alive(pid) for name, pid in reg.pids.items()}
        kind = "detached" if reg.detached else f"owned by pid {reg.owner_pid}"
        print(f"{reg.cluster_id} ({kind}, RocketMQ {reg.version}) namesrv {reg.namesrv}")
        for name, pid in reg.pids.items():
            where = reg.namesrv if name == "namesrv" else reg.brokers.get(name, "?")
            print(f"  {name:<10} pid {pid:<8} {where:<22} {'running' if alive[name] else 'gone'}")
    return 0


def _cmd_down(_: argparse.Namespace) -> int:
    stale = cleanup_stale()
    stopped = []
    for reg in Registry.all():
        if reg.detached:
            reg.discard()
            stopped.append(reg.cluster_id)
    for cid in stale:
        print(f"cleaned up {cid} (its owner had died)")
    print(f"stopped {', '.join(stopped)}" if stopped else "nothing to stop")
    return 0


def _cmd_fetch(args: argparse.Namespace) -> int:
    for cp in (resolve_server(args.version), resolve_bench(args.version)):
        how = f"downloaded in {cp.resolve_seconds:.1f}s" if cp.resolve_seconds else "cached"
        size = cp.size_bytes() / 1e6
        print(f"{cp.name} {cp.version}: {size:.1f} MB of jars in {cp.lib} ({how})")
    return 0


def _print_tool(result: ToolResult) -> int:
    print(result.output)
    if result.timed_out:
        print("(timed out)", file=sys.stderr)
        return 124
    return result.returncode or 0


def _cmd_mqadmin(args: argparse.Namespace) -> int:
    namesrv, version = _target()
    return _print_tool(run_mqadmin(args.args, namesrv=namesrv, version=version, timeout=None))


def _cmd_java_bench(args: argparse.Namespace) -> int:
    namesrv, version = _target()
    return _print_tool(run_java_bench(args.tool, args.args, namesrv=namesrv, version=version, timeout=None))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rocketmq_py.testing", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start a cluster in the background")
    up.add_argument("--brokers", type=int, default=1)
    up.add_argument("--version", default=os.environ.get("ROCKETMQ_VERSION", DEFAULT_VERSION))
    up.set_defaults(func=_cmd_up)
    sub.add_parser("status", help="what runs").set_defaults(func=_cmd_status)
    sub.add_parser("down", help="stop what `up` started").set_defaults(func=_cmd_down)
    fetch = sub.add_parser("fetch", help="download the jars into the cache")
    fetch.add_argument("--version", default=os.environ.get("ROCKETMQ_VERSION", DEFAULT_VERSION))
    fetch.set_defaults(func=_cmd_fetch)
    admin = sub.add_parser("mqadmin", help="run mqadmin against the running cluster")
    admin.add_argument("args", nargs=argparse.REMAINDER)
    admin.set_defaults(func=_cmd_mqadmin)
    bench = sub.add_parser("java-bench", help="run an official benchmark tool")
    bench.add_argument("tool", choices=sorted(BENCH_MAIN_CLASSES))
    bench.add_argument("args", nargs=argparse.REMAINDER)
    bench.set_defaults(func=_cmd_java_bench)
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except ClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return code
