"""Idle scale: one push consumer owning 1,000 idle queues, rocketmq-py and the Java client, side by side.

A topic of ``--queues`` read/write queues on the one broker of a local cluster (or ``--topics``
topics sharing them) gets no message at all. One consumer in a new group subscribes to it, with
its client's defaults: long polling (the broker holds each pull up to 15 s and answers "not found"),
offsets persisted every 5 s, rebalance every 20 s, heartbeat every 30 s. First ours (a
``PushConsumer`` in a child process of its own), then the official Java ``DefaultMQPushConsumer``
(``java/IdleConsumer.java``, compiled with ``javac`` against the rocketmq-client jars of the Java
benchmark tools, cached), one after the other, each in a new group (``--order`` swaps them).

Readiness is polled, not waited for: each consumer checks its owned queues (ours with
``statistics()``, Java through its rebalance table) every 500 ms. It prints ``pulling`` once it owns
all of them and every one has begun a pull after the moment they were all first seen owned, and
``ready`` once every one has begun another pull after that: a whole long-polling round (held 15 s,
answered, pulled again) was seen on every queue, the same test on both sides, so that neither is
measured during its start-up (Java's JIT, the first offsets). Then, over ``--seconds`` idle
seconds, this script reads from ``/proc``:

- the consumer's resident set (``VmRSS``) at the start and the end of the window and its highest
  value over one-second samples in it, and ``VmHWM``, its peak since it started (start-up and the
  first rebalance included);
- the consumer's CPU (user + system, all threads, ``/proc/<pid>/stat``) over the window, as % of
  one core; and the broker's over the same window (local clusters only: the broker processes are
  found by the marker their command line carries; an external or Docker cluster gets "n/a");
- the consumer's own check every 10 s: owned queues, and how many of them began no pull for 30 s
  (0 while long polling works).

Goals (ours): RSS <= 50 MB and CPU <= 5 % of a core. Sizes are printed in MB (10^6 bytes).

    python benchmarks/idle_scale.py [--seconds 120] [--queues 1000] [--topics 1] [--order ours,java]

A local one-broker cluster is started unless ROCKETMQ_NAMESRV names one; everything on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import trio
from _side_by_side import Watched, cpu_seconds
from latency import JAVA_OPTS, compile_java, java_argv

from rocketmq_py import MessageExt, PushConsumer
from rocketmq_py.testing import Cluster, LocalCluster, resolve_bench, start_cluster
from rocketmq_py.testing._processes import marker_for

HERE = Path(__file__).resolve().parent
JAVA_SOURCE = HERE / "java" / "IdleConsumer.java"
STARTING_POLL = 0.5  # seconds between checks of the owned queues until ready (both sides)
READY_POLL = 10.0  # ... and once ready
STALE = 30.0  # a queue with no pull begun for this long is not long polling
READY_TIMEOUT = 300.0  # seconds for a consumer to be ready (JVM start-up, 1,000 offsets, first polls)
GOAL_RSS_MB = 50.0
GOAL_CPU_PERCENT = 5.0


# --- ours, in a child process ----------------------------------------------------------------------


async def idle(namesrv: str, group: str, topics: list[str], expected: int) -> None:
    """The twin of IdleConsumer.java: the same lines."""

    async def listener(msgs: list[MessageExt]) -> None:
        pass

    consumer = PushConsumer(group, namesrv=namesrv, listener=listener)
    for topic in topics:
        consumer.subscribe(topic)
    wanted = set(topics)
    async with consumer:
        print(f"started {group}", flush=True)
        last = -1
        since: float | None = None  # pulls begun after this count; None while not all are owned
        stage = 0  # 0: owning, 1: pulling, 2: ready
        while True:
            await trio.sleep(READY_POLL if stage == 2 else STARTING_POLL)
            now = trio.current_time()
            stats = [q for q in consumer.statistics() if q.queue.topic in wanted]
            owned = len(stats)
            if owned != last:
                print(f"owned {owned}", flush=True)
                last = owned
                since = now if owned == expected else None
                stage = 0
                continue
            if stage == 2:
                print(f"check {owned} {sum(1 for q in stats if q.last_pull_age > STALE)}", flush=True)
            elif since is not None and all(now - q.last_pull_age > since for q in stats):
                stage += 1
                since = now
                print(f"{'pulling' if stage == 1 else 'ready'} {owned}", flush=True)


# --- measuring -------------------------------------------------------------------------------------


def status_kib(pid: int, key: str) -> int:
    """A ``/proc/<pid>/status`` figure in KiB (``VmRSS``, ``VmHWM``); 0 once the process is gone."""
    try:
        found = re.search(rf"^{key}:\s+(\d+)", Path(f"/proc/{pid}/status").read_text(), re.M)
    except OSError:
        return 0
    return int(found.group(1)) if found else 0


def threads(pid: int) -> int:
    return status_kib(pid, "Threads")  # a count, same layout


def cluster_broker_pids(cluster: Cluster) -> list[int] | None:
    """The cluster's broker processes, or None when they are not ours to see (Docker, external)."""
    if not isinstance(cluster, LocalCluster):
        return None
    marker = marker_for(cluster.cluster_id).encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker in cmdline and b"org.apache.rocketmq.broker.BrokerStartup" in cmdline:
            pids.append(int(entry.name))
    return pids


@dataclass
class Figures:
    queues: int
    pulling_s: float  # from process start to "pulling": every queue owned and pulling
    ready_s: float  # ... to "ready"
    rss_start_mb: float
    rss_end_mb: float
    rss_peak_mb: float  # highest one-second sample in the window
    hwm_mb: float  # VmHWM at the end: the peak since the process started
    cpu_percent: float
    broker_cpu_percent: float | None
    threads: int
    checks: int
    stale_max: int
    owned_changes: int  # "owned" lines during the window (0: no rebalance moved a queue)


def measure(child: Watched, expected: int, seconds: float, brokers: list[int] | None) -> Figures:
    spawned = time.perf_counter()
    pulling = child.wait_for(rf"^pulling {expected}\b", READY_TIMEOUT)
    ready = child.wait_for(rf"^ready {expected}\b", READY_TIMEOUT)
    pid = child.proc.pid
    t0 = time.perf_counter()
    cpu0 = cpu_seconds(pid)
    broker0 = sum(cpu_seconds(p) for p in brokers) if brokers is not None else 0.0
    rss0 = status_kib(pid, "VmRSS")
    peak = rss0
    end = t0 + seconds
    while (now := time.perf_counter()) < end:
        time.sleep(min(1.0, end - now))
        if child.proc.poll() is not None:
            raise SystemExit(f"the consumer exited during the idle window:\n{child.tail()}")
        peak = max(peak, status_kib(pid, "VmRSS"))
    t1 = time.perf_counter()
    cpu1 = cpu_seconds(pid)
    broker1 = sum(cpu_seconds(p) for p in brokers) if brokers is not None else 0.0
    rss1 = status_kib(pid, "VmRSS")
    in_window = [ln for ln in child.lines if t0 <= ln.at <= t1]
    checks = [ln.text.split() for ln in in_window if ln.text.startswith("check ")]
    return Figures(
        queues=expected,
        pulling_s=pulling.at - spawned,
        ready_s=ready.at - spawned,
        rss_start_mb=rss0 * 1024 / 1e6,
        rss_end_mb=rss1 * 1024 / 1e6,
        rss_peak_mb=max(peak, rss1) * 1024 / 1e6,
        hwm_mb=status_kib(pid, "VmHWM") * 1024 / 1e6,
        cpu_percent=(cpu1 - cpu0) / (t1 - t0) * 100,
        broker_cpu_percent=(broker1 - broker0) / (t1 - t0) * 100 if brokers is not None else None,
        threads=threads(pid),
        checks=len(checks),
        stale_max=max((int(c[2]) for c in checks), default=0),
        owned_changes=sum(1 for ln in in_window if ln.text.startswith("owned ")),
    )


# --- the run ---------------------------------------------------------------------------------------


HEADER = (
    f"    {'client':<6} {'queues':>6} {'pulling s':>9} {'ready s':>7} {'RSS start':>9} {'RSS end':>8} {'RSS peak':>8}"
    f" {'VmHWM':>6} {'CPU %':>6} {'broker %':>8} {'threads':>7} {'stale':>5} {'moved':>5}"
)


def row(side: str, f: Figures) -> str:
    broker = f"{f.broker_cpu_percent:>8.2f}" if f.broker_cpu_percent is not None else f"{'n/a':>8}"
    return (
        f"    {side:<6} {f.queues:>6,} {f.pulling_s:>9.1f} {f.ready_s:>7.1f} {f.rss_start_mb:>9.1f} {f.rss_end_mb:>8.1f}"
        f" {f.rss_peak_mb:>8.1f} {f.hwm_mb:>6.1f} {f.cpu_percent:>6.2f} {broker} {f.threads:>7}"
        f" {f.stale_max:>5} {f.owned_changes:>5}"
    )


def run_side(
    side: str, cluster: Cluster, topics: list[str], expected: int, args: argparse.Namespace, work: Path
) -> Figures:
    group = f"bench-idle-{side}-{uuid.uuid4().hex[:8]}"
    call = [cluster.namesrv_addr, group, ",".join(topics), str(expected)]
    if side == "ours":
        child = Watched([sys.executable, __file__, "idle-child", *call])
    else:
        home = work / "java-home"
        java_cp = compile_java(JAVA_SOURCE, resolve_bench(cluster.version))
        argv = java_argv(java_cp, JAVA_SOURCE.stem, home, call, args.java_opts.split())
        child = Watched(argv, env=dict(os.environ, ROCKETMQ_HOME=str(home)), cwd=home)
    try:
        return measure(child, expected, args.seconds, cluster_broker_pids(cluster))
    finally:
        child.stop()


def run(cluster: Cluster, args: argparse.Namespace) -> None:
    if args.queues % args.topics:
        raise SystemExit(f"--queues {args.queues} is not a multiple of --topics {args.topics}")
    run_id = uuid.uuid4().hex[:8]
    topics = [f"bench-idle-{run_id}-{i}" for i in range(args.topics)]
    per_topic = args.queues // args.topics
    for topic in topics:
        cluster.create_topic(topic, per_topic)
    expected = per_topic * args.topics * len(cluster.brokers)
    brokers = cluster_broker_pids(cluster)
    print(
        f"cluster {cluster.namesrv_addr} (RocketMQ {cluster.version}, {len(cluster.brokers)} broker(s)):"
        f" {args.topics} topic(s) x {per_topic} queues per broker = {expected:,} idle queues;"
        f" {args.seconds:g} s idle window per client; Java: rocketmq-client"
        f" {resolve_bench(cluster.version).version}, {args.java_opts}"
    )
    if brokers is None:
        print("broker CPU: n/a (not a local cluster: its broker processes are not visible here)")
    print()
    results: dict[str, Figures] = {}
    with tempfile.TemporaryDirectory(prefix="bench-idle-") as tmp:
        for side in args.order.split(","):
            results[side] = run_side(side, cluster, topics, expected, args, Path(tmp))
            print(f"{side}: ready, measured", flush=True)
    print(
        "\npulling / ready s: from process start to every queue pulling / one whole long-polling round"
        " seen on each;\nRSS in MB (10^6 B): start / end of the window, peak = highest 1-s sample in it,"
        " VmHWM = peak since start;\nCPU % of one core over the window; stale = most queues seen with no"
        f" pull for {STALE:.0f} s; moved = owned-queue changes in the window"
    )
    print(HEADER)
    for side, figures in results.items():
        print(row(side, figures))
    if "ours" in results:
        ours = results["ours"]
        rss_ok = ours.rss_peak_mb <= GOAL_RSS_MB
        cpu_ok = ours.cpu_percent <= GOAL_CPU_PERCENT
        print(
            f"  goals (ours): RSS <= {GOAL_RSS_MB:g} MB: {'met' if rss_ok else 'missed'}"
            f" (peak {ours.rss_peak_mb:.1f} MB in the window, VmHWM {ours.hwm_mb:.1f} MB);"
            f" CPU <= {GOAL_CPU_PERCENT:g} % of a core: {'met' if cpu_ok else 'missed'} ({ours.cpu_percent:.2f} %)"
        )


def main() -> int:
    if sys.argv[1:2] == ["idle-child"]:
        namesrv, group, topics, expected = sys.argv[2:6]
        trio.run(idle, namesrv, group, topics.split(","), int(expected))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="idle window per client")
    parser.add_argument("--queues", type=int, default=1000, help="queues per broker, over all topics")
    parser.add_argument("--topics", type=int, default=1, help="topics sharing the queues")
    parser.add_argument("--order", default="ours,java", help="clients to run, in order (ours, java)")
    parser.add_argument(
        "--java-opts",
        default=" ".join(JAVA_OPTS),
        help='JVM flags of the Java consumer (--java-opts="-Xmx256m ...")',
    )
    args = parser.parse_args()
    if os.environ.get("ROCKETMQ_NAMESRV"):
        run(start_cluster(), args)
    else:
        with start_cluster() as cluster:
            run(cluster, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
