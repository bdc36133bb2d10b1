"""Push-consumer drain rate: rocketmq-py and the official Java benchmark Consumer, same cluster, alternating rounds.

A backlog of ``--backlog`` messages (128 B) is stored first in one topic (8 queues on each broker),
by the Java benchmark ``Producer`` (``--fill java``, the default) or our batch sends (``--fill
python``, much faster for big backlogs). Then, in each of ``--rounds`` rounds (the order alternating), two new groups drain
it from the first offset, one after the other, with each client's defaults (20 consume threads / tasks, one message a listener
call, and a listener that counts the messages and notes the born-to-consume time, as the Java tool's
does): the Java ``benchmark.Consumer`` and our ``PushConsumer`` (in a child process of its own), and
as a third column ``aio`` our :mod:`rocketmq_py.aio` ``PushConsumer`` with an asyncio listener;
``--sides ours,pop`` puts POP consumption (``client_rebalance=False``, the group set to POP mode
with ``mqadmin setConsumeMode``) beside the client-rebalance consumer, with the redeliveries
(messages consumed twice) of each drain; ``javapop`` is the Java client's POP consumer
(``integration/java/PopConsumer.java``, timed from its start to its ``backlog``-th distinct message).
Before that, ``--warmup`` messages are stored and drained on another topic, so that neither client
meets a broker whose pull path is not JIT-compiled yet. A drain is timed from "consumer started"
to the last message consumed:

- ours: from entering ``async with`` (start-up included) to the listener seeing the last message;
- Java: from its ``Consumer Started.`` line to the moment its count reached the backlog. The tool
  prints no count, only ``Consume TPS`` = (count(t) - count(t - 9 s)) / 9 s, once a second from a
  list of one-second snapshots. Once it prints 0 the count stood at the backlog 9 s earlier, and
  walking back from there recovers the count at every snapshot; the end is interpolated within
  its second. Completeness is then checked with ``mqadmin consumerProgress`` (Diff Total 0).

CPU per message: CPU seconds (user + system, all threads, from ``/proc``) of the client over its
drain, sampled by this script when the lines that open and close the drain arrive (ours prints
"start" and "done"; Java's is interpolated at the end found above between its one-second lines),
divided by the backlog; and the brokers' CPU per message over the same stretch. The end prints the
medians and the median of the per-round ratios.

Last, our peak RSS (``ru_maxrss`` of the child) while draining ``--rss-backlog`` messages (1M in
the issue; smaller by default for quick runs) from another topic.

    python benchmarks/consumer.py [--rounds 3] [--backlog 200000] [--rss-backlog 200000] [--fill java|python]
                                  [--warmup 100000] [--size 128]

A local two-broker cluster is started unless ROCKETMQ_NAMESRV names one.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import re
import resource
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio
from _side_by_side import Line, Watched, median, peak_rss_mib, ratio_line, write_results

from rocketmq_py import Message, MessageExt, Producer, PushConsumer
from rocketmq_py.testing import Cluster, resolve_bench, run_java_bench, start_cluster
from rocketmq_py.testing._distribution import find_java, write_home_conf
from rocketmq_py.testing._tools import BENCH_MAIN_CLASSES

QUEUES = 8  # per broker
# Our sides: how the drain child runs (metrics: the trio API with an OpenTelemetryMetrics hook).
API = {"ours": "trio", "aio": "asyncio", "pop": "pop", "metrics": "metrics"}
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
        found = re.search(r"Send Failed: (\d+)", out.output.splitlines()[-1])
        if found is None:
            raise SystemExit(f"the Java producer printed no total:\n{out.output[-2000:]}")
        failed = int(found.group(1))
        if failed:  # a cold broker times a few sends out: ours store that many more (a timed-out
            # send may be stored too; a drain counts `count` messages, extra ones are not waited for)
            print(f"(the Java filler failed {failed} sends; stored {failed} more with ours)")
            trio.run(fill_python, cluster.namesrv_addr, topic, failed, size)
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


async def drain(
    namesrv: str, topic: str, group: str, count: int, pop: bool = False, metrics: bool = False
) -> dict[str, Any]:
    """Drain ``count`` messages; with ``pop``, ``count`` distinct ones (by message id: the broker
    redelivers what is not acked in time, and redeliveries are counted, not waited for).

    The push drain's listener does what the Java tool's does per message (a count, and the born-to-
    consume time); that every message came once is checked after the drain, outside the timed
    stretch: the group is then 0 behind on every queue (``PushConsumer.lag()``), or ``behind`` says
    by how much.
    """
    consumed = 0
    seen: set[str] = set()
    first = last = 0.0
    born_to_consume_ms = 0.0
    done = trio.Event()

    async def listener(msgs: list[MessageExt]) -> None:
        nonlocal consumed, first, last, born_to_consume_ms
        if not consumed:
            first = time.perf_counter()
        consumed += len(msgs)
        if pop:
            seen.update(m.msg_id for m in msgs)
            complete = len(seen) >= count
        else:
            born_to_consume_ms = max(born_to_consume_ms, time.time() * 1000 - msgs[-1].born_timestamp)
            complete = consumed >= count
        if complete and not done.is_set():
            last = time.perf_counter()
            done.set()

    consumer = PushConsumer(
        group,
        namesrv=namesrv,
        listener=listener,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        client_rebalance=not pop,  # pop: the broker assigns queues, messages come by POP_MESSAGE
        hooks=metrics_hooks() if metrics else (),
    )
    consumer.subscribe(topic)
    rss_idle = vm_rss_kib()
    print("start", flush=True)  # the parent samples our CPU at this line and at "done"
    started = time.perf_counter()  # start-up counts (Java's is before its "Consumer Started.")
    behind = 0
    async with consumer:
        rss_started = vm_rss_kib()
        await done.wait()
        print("done", flush=True)
        if not pop:  # the last calls settle their offsets a moment after the listener returns
            with trio.move_on_after(10):
                while behind := sum(q.behind for q in await consumer.lag()):  # noqa: ASYNC110 - the brokers' answer
                    await trio.sleep(0.1)
    return {
        "consumed": consumed,
        "duplicates": consumed - len(seen) if pop else 0,
        "behind": behind,
        "seconds": last - started,
        "to_first": first - started,
        "rss_idle_kib": rss_idle,
        "rss_started_kib": rss_started,
        "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,  # KiB on Linux
    }


def metrics_hooks() -> list[Any]:
    """An OpenTelemetryMetrics on an SDK meter provider whose reader never collects during the run."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from rocketmq_py.otel import OpenTelemetryMetrics

    return [OpenTelemetryMetrics(meter_provider=MeterProvider(metric_readers=[InMemoryMetricReader()]))]


async def aio_drain(namesrv: str, topic: str, group: str, count: int) -> dict[str, Any]:
    """The same drain on asyncio: :mod:`rocketmq_py.aio` with an asyncio listener (the asyncio column)."""
    from rocketmq_py import aio

    consumed = 0
    first = last = 0.0
    done = asyncio.Event()

    async def listener(msgs: list[MessageExt]) -> None:
        nonlocal consumed, first, last
        if not consumed:
            first = time.perf_counter()
        consumed += len(msgs)
        if consumed >= count and not done.is_set():
            last = time.perf_counter()
            done.set()

    consumer = aio.PushConsumer(
        group, namesrv=namesrv, listener=listener, consume_from_where="CONSUME_FROM_FIRST_OFFSET"
    )
    consumer.subscribe(topic)
    rss_idle = vm_rss_kib()
    print("start", flush=True)
    started = time.perf_counter()
    async with consumer:
        rss_started = vm_rss_kib()
        await done.wait()
        print("done", flush=True)
    return {
        "consumed": consumed,
        "seconds": last - started,
        "to_first": first - started,
        "rss_idle_kib": rss_idle,
        "rss_started_kib": rss_started,
        "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }


def run_ours(namesrv: str, topic: str, group: str, count: int, api: str = "trio") -> dict[str, Any]:
    child = Watched([sys.executable, __file__, "drain-child", namesrv, topic, group, str(count), api])
    try:
        start = child.wait_for(r"^start", 60)
        done = child.wait_for(r"^done", count / 1000 + 120)
        result: dict[str, Any] = json.loads(child.wait_for(r"^\{", 60).text)
    finally:
        child.stop()
    result["cpu_us"] = (done.cpu - start.cpu) / count * 1e6
    result["broker_cpu_us"] = (done.broker_cpu - start.broker_cpu) / count * 1e6
    return result


# --- the Java benchmark Consumer ------------------------------------------------------------------


@dataclass
class JavaDrain:
    seconds: float
    to_first: float
    peak_rss_kib: int
    cpu_us: float
    broker_cpu_us: float


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
    java = Watched(argv, env=dict(os.environ, ROCKETMQ_HOME=str(home)))
    peak_rss = 0
    try:
        deadline = time.perf_counter() + backlog / 1000 + 120
        while True:
            ticks = [
                (ln.at, int(m.group(1)))
                for ln in java.lines
                if (m := re.search(r"Consume TPS: (\d+)", ln.text))
            ]
            if any(tps == 0 and i > 0 and ticks[i - 1][1] > 0 for i, (_, tps) in enumerate(ticks)):
                break
            if java.proc.poll() is not None or time.perf_counter() > deadline:
                raise SystemExit("the Java consumer stopped or stalled:\n" + java.tail())
            time.sleep(0.2)
        started_line = next(ln for ln in java.lines if "Consumer Started." in ln.text)
        started = started_line.at
        curve = java_count_curve(ticks, backlog)
        peak_rss = int(peak_rss_mib(java.proc.pid) * 1024)
        # Completeness: the group's committed offsets (persisted every 5 s) reach the backlog.
        for _ in range(10):
            progress = cluster.mqadmin("consumerProgress", "-g", group).output
            if re.search(r"Diff Total: 0\b", progress):
                break
            time.sleep(2)
        else:
            raise SystemExit(f"the Java consumer did not consume everything:\n{progress[-2000:]}")
    finally:
        java.stop()
    end = crossing(curve, backlog)
    first = crossing(curve, 1)
    cpu_end, broker_end = cpu_at(java.lines, end)
    return JavaDrain(
        end - started,
        first - started,
        peak_rss,
        (cpu_end - started_line.cpu) / backlog * 1e6,
        (broker_end - started_line.broker_cpu) / backlog * 1e6,
    )


JAVA_POP_CONSUMER = Path(__file__).parent.parent / "integration" / "java" / "PopConsumer.java"


def run_java_pop(cluster: Cluster, topic: str, group: str, backlog: int) -> dict[str, Any]:
    """The Java client's POP consumer (``setClientRebalance(false)``) draining the backlog.

    Timed from its ``READY`` line (after ``consumer.start()``; the JVM compiling the single-file
    program is not counted) to its ``DONE`` line (``backlog`` distinct message ids seen).
    """
    home = Path(tempfile.mkdtemp(prefix="bench-java-pop-"))
    write_home_conf(home)
    argv = [
        find_java(),
        *_JAVA_OPTS,
        f"-Duser.home={home}",
        f"-Drocketmq.home.dir={home}",
        "-cp",
        resolve_bench(cluster.version).classpath,
        str(JAVA_POP_CONSUMER),
        *(cluster.namesrv_addr, group, topic, str(home / "consumed.txt"), str(home / "stop"), str(backlog)),
    ]
    java = Watched(argv, env=dict(os.environ, ROCKETMQ_HOME=str(home)))
    try:
        ready = java.wait_for(r"^READY", 120)
        first = java.wait_for(r"^FIRST", 60)
        done = java.wait_for(r"^DONE", backlog / 100 + 120)
        peak_rss = int(peak_rss_mib(java.proc.pid) * 1024)
    finally:
        (home / "stop").touch()
        java.stop()
    deliveries = int(done.text.split()[2])
    return {
        "consumed": deliveries,
        "duplicates": deliveries - backlog,
        "seconds": done.at - ready.at,
        "to_first": first.at - ready.at,
        "cpu_us": (done.cpu - ready.cpu) / backlog * 1e6,
        "broker_cpu_us": (done.broker_cpu - ready.broker_cpu) / backlog * 1e6,
        "peak_rss_kib": peak_rss,
    }


def cpu_at(lines: list[Line], when: float) -> tuple[float, float]:
    """(client, broker) CPU seconds at ``when``, interpolated between the samples around it."""
    before = [ln for ln in lines if ln.at <= when]
    after = [ln for ln in lines if ln.at >= when]
    if not before or not after:
        last = (before or after)[-1]
        return last.cpu, last.broker_cpu
    a, b = before[-1], after[0]
    share = 0.0 if b.at == a.at else (when - a.at) / (b.at - a.at)
    return a.cpu + share * (b.cpu - a.cpu), a.broker_cpu + share * (b.broker_cpu - a.broker_cpu)


# --- the run ---------------------------------------------------------------------------------------


def _row(side: str, f: tuple[float, ...]) -> str:
    return (
        f"    {side:<6} {f[0]:>10,.0f} {f[1]:>8.2f} {f[2]:>11.2f} {f[3]:>9.1f} {f[4]:>10.1f} {f[5]:>7.0f} M"
    )


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

    header = f"    {'client':<6} {'msgs/s':>10} {'drain s':>8} {'to first s':>11} {'CPU µs/m':>9} {'broker µs':>10} {'peak RSS':>9}"
    sides = args.sides.split(",")
    rows: dict[str, list[tuple[float, float, float, float, float, float]]] = {side: [] for side in sides}
    duplicates: dict[str, list[int]] = {side: [] for side in sides}
    results: list[dict[str, object]] = []
    for r in range(args.rounds):
        print(f"round {r + 1} (fresh groups, the whole backlog from its first offset):")
        print(header)
        for side in sides if r % 2 == 0 else sides[::-1]:
            group = f"bench-{side}-{run_id}-{r}"
            if side == "java":
                j = run_java(cluster, topic, group, args.backlog)
                row = (
                    args.backlog / j.seconds,
                    j.seconds,
                    j.to_first,
                    j.cpu_us,
                    j.broker_cpu_us,
                    j.peak_rss_kib / 1024,
                )
            else:
                if side in ("pop", "javapop"):  # the group in POP mode on every broker before it starts
                    cluster.mqadmin(
                        "setConsumeMode",
                        "-c",
                        "DefaultCluster",
                        "-g",
                        group,
                        "-t",
                        topic,
                        "-m",
                        "POP",
                        "-q",
                        "8",
                    ).check()
                if side == "javapop":
                    o = run_java_pop(cluster, topic, group, args.backlog)
                else:
                    o = run_ours(cluster.namesrv_addr, topic, group, args.backlog, API[side])
                row = (
                    args.backlog / o["seconds"],
                    o["seconds"],
                    o["to_first"],
                    o["cpu_us"],
                    o["broker_cpu_us"],
                    o["peak_rss_kib"] / 1024,
                )
                redelivered = o.get("duplicates", o["consumed"] - args.backlog)
                if redelivered:
                    print(f"    ({side} consumed {o['consumed']:,}: {redelivered:,} redeliveries)")
                duplicates[side].append(redelivered)
                if o.get("behind"):  # not a drain of the whole backlog: the figure is wrong
                    print(f"    ({side}: {o['behind']:,} messages still behind after its drain)")
            rows[side].append(row)
            result: dict[str, object] = {
                "case": "drain",
                "side": side,
                "round": r + 1,
                "rate": row[0],
                "cpu_us": row[3],
            }
            if duplicates.get(side) and len(duplicates[side]) == r + 1:
                result["duplicates"] = duplicates[side][-1]
            results.append(result)
            print(_row(side, row), flush=True)
    write_results(args.json, "consumer", results)
    print("\nmedians:")
    print(header)
    for side, figures in rows.items():
        print(_row(side, tuple(median([f[i] for f in figures]) for i in range(6))))
    java, ours, aio = rows.get("java"), rows.get("ours"), rows.get("aio")
    if java and ours:
        print("  " + ratio_line("drain rate", [f[0] for f in ours], [f[0] for f in java]))
        print("  " + ratio_line("CPU per message", [f[3] for f in ours], [f[3] for f in java]))
    if aio and ours:
        print("  " + ratio_line("drain rate", [f[0] for f in aio], [f[0] for f in ours], "asyncio/trio"))
        print("  " + ratio_line("CPU per message", [f[3] for f in aio], [f[3] for f in ours], "asyncio/trio"))
    pop, javapop = rows.get("pop"), rows.get("javapop")
    if pop and javapop:
        print("  " + ratio_line("POP drain rate", [f[0] for f in pop], [f[0] for f in javapop]))
        print("  " + ratio_line("POP CPU per message", [f[3] for f in pop], [f[3] for f in javapop]))
    if pop and ours:
        print(
            "  " + ratio_line("drain rate", [f[0] for f in pop], [f[0] for f in ours], "POP/client rebalance")
        )
        print(
            "  "
            + ratio_line("CPU per message", [f[3] for f in pop], [f[3] for f in ours], "POP/client rebalance")
        )
    if (measured := rows.get("metrics")) and ours:
        print("  " + ratio_line("drain rate", [f[0] for f in measured], [f[0] for f in ours], "metrics/trio"))
        print(
            "  "
            + ratio_line("CPU per message", [f[3] for f in measured], [f[3] for f in ours], "metrics/trio")
        )
    for side, counts in duplicates.items():
        if counts:
            print(f"  {side} redeliveries per round: {counts}")

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
        namesrv, topic, group, count, api = sys.argv[2:7]
        if api == "asyncio":
            print(json.dumps(asyncio.run(aio_drain(namesrv, topic, group, int(count)))))
        else:
            print(
                json.dumps(trio.run(drain, namesrv, topic, group, int(count), api == "pop", api == "metrics"))
            )
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backlog", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3, help="drains of the backlog by each client")
    parser.add_argument(
        "--rss-backlog", type=int, default=200_000, help="0 to skip; the issue asks for 1000000"
    )
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=100_000, help="messages through the brokers first")
    parser.add_argument("--fill", choices=["java", "python"], default="java")
    parser.add_argument("--json", help="also write every round's figures here (for benchmarks/plot.py)")
    parser.add_argument(
        "--sides",
        default="java,ours,aio",
        help="comma-separated, in round order: java, ours (the trio API), aio (rocketmq_py.aio on asyncio), "
        "pop (ours with client_rebalance=False, the group in POP mode), javapop (the Java client's POP "
        "consumer, integration/java/PopConsumer.java), metrics (ours with an OpenTelemetryMetrics hook)",
    )
    args = parser.parse_args()
    if os.environ.get("ROCKETMQ_NAMESRV"):
        run(start_cluster(), args)
    else:
        with start_cluster(brokers=2) as cluster:
            run(cluster, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
