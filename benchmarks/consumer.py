"""Push-consumer drain rate: rocketmq-py and the official Java benchmark Consumer, same cluster, one run.

A backlog of ``--backlog`` messages (128 B) is stored first in one topic (8 queues on each broker),
by the Java benchmark ``Producer`` (``--fill java``, the default) or our batch sends (``--fill
python``, much faster for big backlogs). Then two new groups drain it from the first offset, one
after the other, with each client's defaults (20 consume threads / tasks, one message a listener
call): the Java ``benchmark.Consumer`` and our ``PushConsumer`` (in a child process of its own).
Before that, ``--warmup`` messages are stored and drained on another topic, so that neither client
meets a broker whose pull path is not JIT-compiled yet. A drain is timed from "consumer started"
to the last message consumed:

- ours: from entering ``async with`` (start-up included) to the listener seeing the last message;
- Java: from its ``Consumer Started.`` line to the moment its count reached the backlog. The tool
  prints no count, only ``Consume TPS`` = (count(t) - count(t - 9 s)) / 9 s, once a second from a
  list of one-second snapshots. Once it prints 0 the count stood at the backlog 9 s earlier, and
  walking back from there recovers the count at every snapshot; the end is interpolated within
  its second. Completeness is then checked with ``mqadmin consumerProgress`` (Diff Total 0).

Last, our peak RSS (``ru_maxrss`` of the child) while draining ``--rss-backlog`` messages (1M in
the issue; smaller by default for quick runs) from another topic.

    python benchmarks/consumer.py [--backlog 200000] [--rss-backlog 200000] [--fill java|python]
                                  [--warmup 100000] [--size 128]

A local two-broker cluster is started unless ROCKETMQ_NAMESRV names one.
"""

from __future__ import annotations

import argparse
import ctypes
import itertools
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from rocketmq_py import Message, MessageExt, Producer, PushConsumer
from rocketmq_py.testing import Cluster, resolve_bench, run_java_bench, start_cluster
from rocketmq_py.testing._distribution import find_java, write_home_conf
from rocketmq_py.testing._tools import BENCH_MAIN_CLASSES

QUEUES = 8  # per broker
WINDOW = 9.0  # seconds between the first and last of the Java tool's ten one-second snapshots
_JAVA_OPTS = ["-Xms256m", "-Xmx512m", "-XX:+UseG1GC"]  # as run_java_bench gives the tools


# --- the backlog -----------------------------------------------------------------------------------


def fill(cluster: Cluster, topic: str, count: int, size: int, how: str) -> float:
    """Store ``count`` messages of ``size`` bytes in ``topic``; returns the seconds it took."""
    started = time.perf_counter()
    if how == "java":
        args = ["-t", topic, "-w", "64", "-q", str(count), "-s", str(size), "-ri", "10000"]
        out = run_java_bench("producer", args, namesrv=cluster.namesrv_addr, timeout=count / 500 + 60)
        out.check()
        if "Send Failed: 0" not in out.output.splitlines()[-1]:
            raise SystemExit(f"the Java producer failed sends:\n{out.output[-2000:]}")
    else:
        trio.run(fill_python, cluster.namesrv_addr, topic, count, size)
    return time.perf_counter() - started


async def fill_python(namesrv: str, topic: str, count: int, size: int) -> None:
    body = os.urandom(size // 2).hex().encode()[:size]
    left = count
    async with Producer("bench-fill", namesrv=namesrv) as producer:

        async def sender() -> None:
            nonlocal left
            while left > 0:
                n = min(128, left)
                left -= n
                await producer.send_batch([Message(topic, body) for _ in range(n)])

        async with trio.open_nursery() as nursery:
            for _ in range(8):
                nursery.start_soon(sender)


# --- ours, in a child process ---------------------------------------------------------------------


def vm_rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def drain(namesrv: str, topic: str, group: str, count: int) -> dict[str, Any]:
    consumed = 0
    first = last = 0.0
    done = trio.Event()

    async def listener(msgs: list[MessageExt]) -> None:
        nonlocal consumed, first, last
        if not consumed:
            first = time.perf_counter()
        consumed += len(msgs)
        if consumed >= count and not done.is_set():
            last = time.perf_counter()
            done.set()

    consumer = PushConsumer(
        group, namesrv=namesrv, listener=listener, consume_from_where="CONSUME_FROM_FIRST_OFFSET"
    )
    consumer.subscribe(topic)
    rss_idle = vm_rss_kib()
    started = time.perf_counter()  # start-up counts (Java's is before its "Consumer Started.")
    async with consumer:
        rss_started = vm_rss_kib()
        await done.wait()
    return {
        "consumed": consumed,
        "seconds": last - started,
        "to_first": first - started,
        "rss_idle_kib": rss_idle,
        "rss_started_kib": rss_started,
        "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,  # KiB on Linux
    }


def run_ours(namesrv: str, topic: str, group: str, count: int) -> dict[str, Any]:
    argv = [sys.executable, __file__, "drain-child", namesrv, topic, group, str(count)]
    out = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=count / 1000 + 120)
    if out.returncode != 0:
        raise SystemExit(f"our drain failed:\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.splitlines()[-1])
    return result


# --- the Java benchmark Consumer ------------------------------------------------------------------


def _die_with_parent() -> None:  # runs in the child between fork and exec
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


@dataclass
class JavaDrain:
    seconds: float
    to_first: float
    peak_rss_kib: int


def java_count_curve(ticks: list[tuple[float, int]], backlog: int) -> list[tuple[float, float]]:
    """(time, count) at each one-second snapshot, recovered from the TPS lines (see the docstring).

    ``ticks`` are (arrival time, TPS) in order and must end with a 0 printed after the drain.
    """
    zero = next(i for i, (_, tps) in enumerate(ticks) if tps == 0 and i > 0 and ticks[i - 1][1] > 0)
    t_zero = ticks[zero][0]
    # Snapshot j seconds before the zero line: count(j) = count(j - 9) - 9 * TPS(j - 9).
    count: dict[int, float] = {j: float(backlog) for j in range(10)}
    for i in range(zero - 1, -1, -1):
        j = round(t_zero - ticks[i][0])  # this line compares snapshots j and j + 9
        if j in count:
            count[j + 9] = count[j] - WINDOW * ticks[i][1]
    return sorted((t_zero - j, max(c, 0.0)) for j, c in count.items())


def crossing(curve: list[tuple[float, float]], level: float) -> float:
    """When the piecewise-linear ``curve`` first reaches ``level``."""
    for (t0, c0), (t1, c1) in itertools.pairwise(curve):
        if c0 < level <= c1:
            return t0 + (level - c0) / (c1 - c0) * (t1 - t0)
    return curve[0][0] if curve and curve[0][1] >= level else float("nan")


def run_java(cluster: Cluster, topic: str, group: str, backlog: int) -> JavaDrain:
    home = Path(tempfile.mkdtemp(prefix="bench-java-consumer-"))
    write_home_conf(home)
    argv = [
        find_java(),
        *_JAVA_OPTS,
        f"-Duser.home={home}",
        f"-Drocketmq.home.dir={home}",
        "-cp",
        resolve_bench(cluster.version).classpath,
        BENCH_MAIN_CLASSES["consumer"],
        *("-n", cluster.namesrv_addr, "-t", topic, "-g", group, "-p", "false", "-ri", "1000"),
    ]
    lines: list[tuple[float, str]] = []
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        env=dict(os.environ, ROCKETMQ_HOME=str(home)),
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append((time.perf_counter(), line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    peak_rss = 0
    try:
        deadline = time.perf_counter() + backlog / 1000 + 120
        while True:
            ticks = [(t, int(m.group(1))) for t, ln in lines if (m := re.search(r"Consume TPS: (\d+)", ln))]
            if any(tps == 0 and i > 0 and ticks[i - 1][1] > 0 for i, (_, tps) in enumerate(ticks)):
                break
            if proc.poll() is not None or time.perf_counter() > deadline:
                raise SystemExit(
                    "the Java consumer stopped or stalled:\n" + "".join(ln for _, ln in lines[-40:])
                )
            time.sleep(0.2)
        started = next(t for t, ln in lines if "Consumer Started." in ln)
        curve = java_count_curve(ticks, backlog)
        hwm = re.search(r"VmHWM:\s+(\d+)", Path(f"/proc/{proc.pid}/status").read_text())
        peak_rss = int(hwm.group(1)) if hwm else 0
        # Completeness: the group's committed offsets (persisted every 5 s) reach the backlog.
        for _ in range(10):
            progress = cluster.mqadmin("consumerProgress", "-g", group).output
            if re.search(r"Diff Total: 0\b", progress):
                break
            time.sleep(2)
        else:
            raise SystemExit(f"the Java consumer did not consume everything:\n{progress[-2000:]}")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        reader.join(5)
    end = crossing(curve, backlog)
    first = crossing(curve, 1)
    return JavaDrain(end - started, first - started, peak_rss)


# --- the run ---------------------------------------------------------------------------------------


def run(cluster: Cluster, args: argparse.Namespace) -> None:
    run_id = uuid.uuid4().hex[:8]
    topic = f"bench-drain-{run_id}"
    cluster.create_topic(topic, QUEUES)
    brokers = len(cluster.brokers)
    print(f"cluster {cluster.namesrv_addr}, topic {topic} ({QUEUES} queues x {brokers} brokers)")
    if args.warmup:
        # A fresh broker's pull path is not JIT-compiled yet: whoever drains first would pay for it.
        warm = f"bench-warmup-{run_id}"
        cluster.create_topic(warm, QUEUES)
        fill(cluster, warm, args.warmup, args.size, "python")
        run_ours(cluster.namesrv_addr, warm, f"bench-warmup-{run_id}", args.warmup)
        print(f"brokers warmed up: {args.warmup:,} messages stored and drained")
    took = fill(cluster, topic, args.backlog, args.size, args.fill)
    print(f"backlog: {args.backlog:,} x {args.size} B stored by the {args.fill} filler in {took:.1f} s\n")

    java = run_java(cluster, topic, f"bench-java-{run_id}", args.backlog)
    ours = run_ours(cluster.namesrv_addr, topic, f"bench-py-{run_id}", args.backlog)
    java_rate = args.backlog / java.seconds
    our_rate = args.backlog / ours["seconds"]
    print(f"  {'client':<30} {'msgs/s':>10} {'drain s':>8} {'to first s':>11} {'peak RSS':>9}")
    print(
        f"  {'Java benchmark.Consumer':<30} {java_rate:>10,.0f} {java.seconds:>8.2f} "
        f"{java.to_first:>11.2f} {java.peak_rss_kib / 1024:>7.0f} M"
    )
    print(
        f"  {'rocketmq-py PushConsumer':<30} {our_rate:>10,.0f} {ours['seconds']:>8.2f} "
        f"{ours['to_first']:>11.2f} {ours['peak_rss_kib'] / 1024:>7.0f} M"
    )
    print(f"  ratio ours/Java: {our_rate / java_rate:.2f}")
    if ours["consumed"] != args.backlog:
        print(f"  (ours consumed {ours['consumed']:,}: {ours['consumed'] - args.backlog:,} redeliveries)")

    if args.rss_backlog:
        rss_topic = f"bench-rss-{run_id}"
        cluster.create_topic(rss_topic, QUEUES)
        took = fill(cluster, rss_topic, args.rss_backlog, args.size, args.fill)
        print(f"\nRSS backlog: {args.rss_backlog:,} x {args.size} B stored in {took:.1f} s")
        big = run_ours(cluster.namesrv_addr, rss_topic, f"bench-rss-{run_id}", args.rss_backlog)
        print(
            f"  rocketmq-py draining {args.rss_backlog:,}: peak RSS {big['peak_rss_kib'] / 1024:.0f} MiB "
            f"(idle {big['rss_idle_kib'] / 1024:.0f} MiB, started {big['rss_started_kib'] / 1024:.0f} MiB), "
            f"{args.rss_backlog / big['seconds']:,.0f} msgs/s"
        )


def main() -> int:
    if sys.argv[1:2] == ["drain-child"]:
        namesrv, topic, group, count = sys.argv[2:6]
        print(json.dumps(trio.run(drain, namesrv, topic, group, int(count))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backlog", type=int, default=200_000)
    parser.add_argument(
        "--rss-backlog", type=int, default=200_000, help="0 to skip; the issue asks for 1000000"
    )
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=100_000, help="messages through the brokers first")
    parser.add_argument("--fill", choices=["java", "python"], default="java")
    args = parser.parse_args()
    if os.environ.get("ROCKETMQ_NAMESRV"):
        run(start_cluster(), args)
    else:
        with start_cluster(brokers=2) as cluster:
            run(cluster, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
