"""``python -m rocketmq_py.testing``: a local cluster for humans and scripts.

Commands::

    up [--brokers N] [--version V] [--acl] [--tls] [--slave BROKER]... [--proxy]
                                     start a detached cluster; the last line is ROCKETMQ_NAMESRV=host:port
                                     (--acl prints the account, --tls the CA file clients must trust)
    up --controller [--version V]    a 5.x controller-mode group: broker-a as a master and two slaves
    status                           what runs
    down                             stop every detached cluster (and any left by dead processes)
    fetch [--version V]              download the jars (server and benchmark tools) into the cache
    build-image [--version V]... [--if-needed]
                                     build rocketmq-py/rocketmq:V for the docker backend where no image
                                     registry answers (debootstrap, Debian's JRE, the Maven jars; root);
                                     --if-needed: only when apache/rocketmq:V cannot be pulled
    mqadmin ARGS...                  the official admin tool against the running cluster
    java-bench TOOL ARGS...          the official benchmark producer|consumer|batch-producer|...
    record --listen H:P --target H:P --out DIR [--label L] [--seconds N]
                                     a recording proxy: every frame both ways into DIR (+ manifest)
    record-vectors --out DIR         the scripted golden-vector session (cluster, proxies, Java client)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._distribution import DEFAULT_VERSION, resolve_bench, resolve_proxy, resolve_server
from rocketmq_py.testing._processes import Registry, cleanup_stale, pid_alive
from rocketmq_py.testing._tls import TlsFiles
from rocketmq_py.testing._tools import BENCH_MAIN_CLASSES, ToolResult, run_java_bench, run_mqadmin

__all__ = ["build_parser", "main"]


def _running_detached() -> list[Registry]:
    return [r for r in Registry.all() if r.detached and any(pid_alive(p) for p in r.pids.values())]


def _target() -> tuple[str, str, dict[str, Any]]:
    """(namesrv, version, tool settings) of the cluster the tools should talk to."""
    env = os.environ.get("ROCKETMQ_NAMESRV")
    if env:
        return env, os.environ.get("ROCKETMQ_VERSION", DEFAULT_VERSION), {}
    running = _running_detached()
    if not running:
        raise ClusterError(
            "no cluster is running: run `python -m rocketmq_py.testing up` or set ROCKETMQ_NAMESRV"
        )
    reg = running[-1]
    settings: dict[str, Any] = {}
    if reg.shape.get("acl") or reg.shape.get("tls"):
        workdir = Path(reg.workdir)
        settings["home"] = workdir / "tools-home"  # tools.yml with the ACL account
        if reg.shape.get("tls"):
            tls = workdir / "tls"
            files = TlsFiles(tls / "ca.pem", tls / "server.pem", tls / "server.key")
            settings["jvm_opts"] = files.tool_properties(tls / "no-tls.properties")
    return reg.namesrv, reg.version or DEFAULT_VERSION, settings


def _cmd_up(args: argparse.Namespace) -> int:
    from rocketmq_py.testing._local import LocalCluster

    cleanup_stale()
    if args.controller:
        return _up_controller(args)
    plain = not (args.acl or args.tls or args.slave or args.proxy)
    for reg in _running_detached():
        same = len(reg.brokers) == args.brokers and (reg.version or DEFAULT_VERSION) == args.version
        if same and plain and not any(reg.shape.values()):
            print(f"already running: {reg.cluster_id} ({', '.join(reg.brokers)})")
            print(f"ROCKETMQ_NAMESRV={reg.namesrv}")
            return 0
    cluster = LocalCluster(
        args.brokers,
        version=args.version,
        detached=True,
        acl=args.acl,
        tls=args.tls,
        slaves=args.slave,
        proxy=args.proxy,
    ).start()
    cluster.detach()
    print(f"cluster {cluster.cluster_id}: RocketMQ {args.version}, work directory {cluster.workdir}")
    for broker in [*cluster.brokers, *cluster.slaves]:
        role = " (slave)" if broker.broker_id else ""
        print(f"  {broker.name}{role}: {broker.address}")
    print("  timings: " + ", ".join(f"{k} {v:.1f}s" for k, v in cluster.timings.items()))
    if cluster.credentials is not None:
        # A throw-away account of a local test cluster: printed so that clients can use it.
        print(f"ROCKETMQ_ACCESS_KEY={cluster.credentials.access_key}")
        print(f"ROCKETMQ_SECRET_KEY={cluster.credentials.secret_key}")
    if args.tls:
        print(f"TLS: trust the CA in {cluster.workdir / 'tls' / 'ca.pem'}")
    print(f"ROCKETMQ_NAMESRV={cluster.namesrv_addr}")
    if cluster.proxy_addr is not None:
        print(f"Proxy (remoting; give it to clients as their NameServer): {cluster.proxy_addr}")
        print(f"Proxy (gRPC): {cluster.proxy_grpc_addr}")
        print(f"ROCKETMQ_PROXY={cluster.proxy_addr}")
    return 0


def _up_controller(args: argparse.Namespace) -> int:
    """``up --controller``: a detached controller-mode group (no other shape goes with it)."""
    from rocketmq_py.testing._controller_cluster import ControllerCluster

    if args.acl or args.tls or args.slave or args.proxy or args.brokers != 1:
        raise ClusterError("--controller starts one broker group of three replicas; it takes no other shape")
    cluster = ControllerCluster(version=args.version, detached=True).start()
    cluster.detach()
    print(
        f"cluster {cluster.cluster_id}: RocketMQ {args.version} controller mode, work directory {cluster.workdir}"
    )
    print(f"  controller (in the NameServer): {cluster.controller_addr}")
    for node in cluster.nodes:
        role = "master" if node == cluster.master else f"slave, id {cluster.controller_id(node)}"
        print(f"  {node} ({role}): {cluster.node_address(node)}")
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
    # The Proxy's jars too (5.x): the integration run starts one (integration/test_proxy.py).
    proxy = [] if args.version.startswith("4.") else [resolve_proxy(args.version)]
    for cp in (resolve_server(args.version), resolve_bench(args.version), *proxy):
        how = f"downloaded in {cp.resolve_seconds:.1f}s" if cp.resolve_seconds else "cached"
        size = cp.size_bytes() / 1e6
        print(f"{cp.name} {cp.version}: {size:.1f} MB of jars in {cp.lib} ({how})")
    return 0


def _cmd_build_image(args: argparse.Namespace) -> int:
    from rocketmq_py.testing._image import build_image, ensure_image

    make = ensure_image if args.if_needed else build_image
    for version in args.version or [DEFAULT_VERSION]:
        print(make(version, log=lambda line: print(line, flush=True)))
    return 0


def _print_tool(result: ToolResult) -> int:
    print(result.output)
    if result.timed_out:
        print("(timed out)", file=sys.stderr)
        return 124
    return result.returncode or 0


def _cmd_mqadmin(args: argparse.Namespace) -> int:
    namesrv, version, settings = _target()
    return _print_tool(run_mqadmin(args.args, namesrv=namesrv, version=version, timeout=None, **settings))


def _cmd_java_bench(args: argparse.Namespace) -> int:
    namesrv, version, _ = _target()
    return _print_tool(run_java_bench(args.tool, args.args, namesrv=namesrv, version=version, timeout=None))


def _cmd_record(args: argparse.Namespace) -> int:
    from rocketmq_py.testing._recorder import ProxyRoute, Recorder, parse_address
    from rocketmq_py.testing._recording import write_recording

    route = ProxyRoute(parse_address(args.listen), parse_address(args.target), args.label)
    with Recorder([route]) as recorder:
        print(f"recording {recorder.listen_addresses[0]} -> {args.target}; Ctrl-C to stop", flush=True)
        deadline = None if args.seconds is None else time.monotonic() + args.seconds
        try:
            while deadline is None or time.monotonic() < deadline:
                time.sleep(0.2 if deadline is None else max(0.0, min(0.2, deadline - time.monotonic())))
        except KeyboardInterrupt:
            pass
        frames = recorder.frames()
        stats = recorder.statistics()
    files = write_recording(Path(args.out), frames, label=f"record {args.listen} -> {args.target}")
    print(
        f"{len(frames)} frames on {stats['connections']} connections "
        f"({stats['bytes_c2s']} bytes c2s, {stats['bytes_s2c']} bytes s2c) -> {len(files) - 1} files in {args.out}"
    )
    for error in stats["errors"]:
        print(f"  {error}", file=sys.stderr)
    return 0


def _cmd_record_vectors(args: argparse.Namespace) -> int:
    from rocketmq_py.testing._record_vectors import record_vectors

    out = Path(args.out)
    keep = Path(args.keep_all) if args.keep_all else None
    files = record_vectors(out, version=args.version, client_version=args.client_version, keep_all=keep)
    total = sum(f.stat().st_size for f in files)
    print(f"wrote {len(files)} files ({total} bytes) to {out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m rocketmq_py.testing`` and its commands (each sets ``func``)."""
    parser = argparse.ArgumentParser(
        prog="python -m rocketmq_py.testing", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start a cluster in the background")
    up.add_argument("--brokers", type=int, default=1, help="master brokers: broker-a, broker-b, ...")
    up.add_argument(
        "--version",
        default=os.environ.get("ROCKETMQ_VERSION", DEFAULT_VERSION),
        help=f"RocketMQ release (default $ROCKETMQ_VERSION, else {DEFAULT_VERSION})",
    )
    up.add_argument("--acl", action="store_true", help="ACL on, with a fresh admin account")
    up.add_argument("--tls", action="store_true", help="NameServer and brokers enforce TLS")
    up.add_argument("--slave", action="append", default=[], metavar="BROKER", help="give BROKER a slave")
    up.add_argument(
        "--proxy", action="store_true", help="a Proxy (5.x, cluster mode) in front of the cluster"
    )
    up.add_argument(
        "--controller",
        action="store_true",
        help="(5.x) a controller-mode group instead: a NameServer with an embedded controller and "
        "broker-a as a master and two slaves that elect their master",
    )
    up.set_defaults(func=_cmd_up)
    sub.add_parser("status", help="what runs").set_defaults(func=_cmd_status)
    sub.add_parser("down", help="stop what `up` started").set_defaults(func=_cmd_down)
    fetch = sub.add_parser("fetch", help="download the jars into the cache (server, benchmark tools, Proxy)")
    fetch.add_argument(
        "--version",
        default=os.environ.get("ROCKETMQ_VERSION", DEFAULT_VERSION),
        help=f"RocketMQ release (default $ROCKETMQ_VERSION, else {DEFAULT_VERSION})",
    )
    fetch.set_defaults(func=_cmd_fetch)
    image = sub.add_parser("build-image", help="build the docker backend's image without a registry")
    image.add_argument("--version", action="append", help="RocketMQ release (repeatable; default 5.3.3)")
    image.add_argument(
        "--if-needed",
        action="store_true",
        help="use apache/rocketmq:V when it is here or can be pulled; build only where no registry answers",
    )
    image.set_defaults(func=_cmd_build_image)
    admin = sub.add_parser("mqadmin", help="run mqadmin against the running cluster")
    admin.add_argument("args", nargs=argparse.REMAINDER, help="mqadmin's command and options, e.g. topicList")
    admin.set_defaults(func=_cmd_mqadmin)
    bench = sub.add_parser("java-bench", help="run an official benchmark tool")
    bench.add_argument("tool", choices=sorted(BENCH_MAIN_CLASSES), help="the benchmark tool")
    bench.add_argument("args", nargs=argparse.REMAINDER, help="the tool's own options, e.g. -t TOPIC -w 4")
    bench.set_defaults(func=_cmd_java_bench)
    record = sub.add_parser("record", help="a recording proxy: every frame both ways, with a manifest")
    record.add_argument("--listen", required=True, help="host:port to accept clients on")
    record.add_argument("--target", required=True, help="host:port of the NameServer or broker")
    record.add_argument("--out", required=True, help="directory for the frames and manifest.json")
    record.add_argument("--label", default="server", help="name of the server side (namesrv, broker...)")
    record.add_argument("--seconds", type=float, default=None, help="stop after N seconds (default: Ctrl-C)")
    record.set_defaults(func=_cmd_record)
    vectors = sub.add_parser("record-vectors", help="record the golden vectors (real cluster + Java client)")
    vectors.add_argument("--out", default="protocol/vectors", help="directory of the vectors and manifest")
    vectors.add_argument(
        "--version",
        default=os.environ.get("ROCKETMQ_VERSION", DEFAULT_VERSION),
        help=f"RocketMQ release of the cluster (default $ROCKETMQ_VERSION, else {DEFAULT_VERSION})",
    )
    vectors.add_argument(
        "--client-version", default=None, help="rocketmq-client release (default: --version)"
    )
    vectors.add_argument("--keep-all", default=None, help="also write every recorded frame to this directory")
    vectors.set_defaults(func=_cmd_record_vectors)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command in ``argv`` (default ``sys.argv[1:]``); returns the exit code (1: ClusterError)."""
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except ClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return code
