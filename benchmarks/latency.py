"""Send -> consume latency at a light fixed rate: rocketmq-py and the Java push consumer, side by side.

One paced sender (ours, a trio ``Producer`` in this process) sends ``--rate`` messages/s to a topic
(``--queues`` queues on each broker) consumed by a new group: our ``PushConsumer`` (a child process
of its own) or the official Java ``DefaultMQPushConsumer`` (``java/LatencyConsumer.java``, compiled
with ``javac`` against the rocketmq-client jars of the Java benchmark tools, cached), each with its
client's defaults and a listener that does nothing but read the clock (see the modes below).

Latency = the consumer's wall clock when its listener is entered - the sender's wall clock just
before the send call (``time.time_ns()``, written in the body as "<sequence> <epoch ns>"): one host,
one clock, and the same definition on both sides. It covers the send, the broker storing and
dispatching the message, the long-polling pull being woken and answered, decoding and handing the
message to the listener. Each consumer keeps the latency of every counted message and writes them
to a file at the end; this script computes the percentiles of both the same way (nearest rank).

Pacing: message ``i`` is due at ``start + i / rate`` (absolute times: a late send does not shift
the ones after it); a pool of sender tasks sends what is due, so a slow acknowledgement does not
hold the schedule back. Each round prints how late the sends started against the schedule.

Two modes. ``--mode alternate`` (the default, as the other side-by-side benchmarks): each round
runs the Java consumer and ours one after the other, the order alternating between rounds, each
alone on a topic of its own; each meets only the sender, the brokers and its own costs.
``--mode together``: both consume the same messages at the same time (two groups on one topic), so
they see exactly the same sends through the same broker hiccups (GC, flush, page cache); the cost
is that each one's CPU delays the other, which on two shared cores reaches the tail (a
single-threaded process waits for a core behind a JVM's threads). Every run uses a new topic and
new groups and starts the processes afresh: a new group on a topic whose first messages are still
in memory would start from offset 0, and a fresh JVM each time keeps the runs independent. A run:

1. the consumer(s) start; wait until each owns every queue of the topic (``owned`` lines);
2. ``--warmup`` seconds of messages that are consumed but not counted (JIT, connections, the first
   pulls), then ``--seconds`` seconds of counted messages, all at ``--rate``;
3. wait until each consumed every counted message; the latencies are read from their files.

CPU per message: CPU seconds (user + system, all threads, ``/proc/<pid>/stat``) of each consumer
process between its "window start" line (first counted message consumed) and its "window end"
line (last one), divided by the counted messages.

The end prints the medians over the rounds of each client's p50 / p99 / p99.9 / max and CPU per
message, and the difference ours - Java (goal: p99 within 1 ms of Java's).

    python benchmarks/latency.py [--rate 500] [--seconds 30] [--rounds 3] [--warmup 5] [--queues 8]
                                 [--mode alternate|together]

A local one-broker cluster is started unless ROCKETMQ_NAMESRV names one; everything on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import trio
from _side_by_side import Line, Watched, median

from rocketmq_py import Message, MessageExt, Producer, PushConsumer, RocketMQError
from rocketmq_py.testing import Classpath, Cluster, cache_dir, resolve_bench, start_cluster
from rocketmq_py.testing._distribution import find_java, write_home_conf

HERE = Path(__file__).resolve().parent
JAVA_SOURCE = HERE / "java" / "LatencyConsumer.java"
JAVA_OPTS = ["-Xms128m", "-Xmx256m"]  # as the other Java consumer programs here
SENDERS = 8  # sends in flight at most: the schedule, not the acknowledgements, sets the rate
SEND_ATTEMPTS = 5  # a failed send is sent again (new timestamp), so that every sequence arrives
OWNED_POLL = 0.2  # seconds between the consumers' checks of their owned queues (both sides)
START_TIMEOUT = 120.0  # seconds for a consumer to own every queue (JVM start-up included)
DRAIN_TIMEOUT = 60.0  # seconds after the last send for both to have consumed everything


# --- Java programs (shared with idle_scale.py) ------------------------------------------------------


def javac() -> str:
    sibling = Path(find_java()).resolve().with_name("javac")
    found = str(sibling) if sibling.is_file() else shutil.which("javac")
    if not found:
        raise SystemExit("javac not found: the Java side needs a JDK, not only a JRE")
    return found


def compile_java(source: Path, client: Classpath) -> str:
    """Compile ``source`` (one class, named as the file) once per source and client, cached.

    Returns the classpath to run it with (the class directory, then the client's jars).
    """
    main = source.stem
    digest = hashlib.sha256(source.read_bytes() + f"{client.name}-{client.version}".encode()).hexdigest()[:12]
    out = cache_dir() / "bench-java" / f"{main.lower()}-{digest}"
    if not (out / f"{main}.class").is_file():
        partial = out.with_name(f"{out.name}.partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        argv = [javac(), "-nowarn", "-d", str(partial), "-cp", client.classpath, str(source)]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"javac {source.name} failed:\n{done.stdout}{done.stderr}")
        shutil.rmtree(out, ignore_errors=True)
        partial.rename(out)
        for stale in out.parent.glob(f"{main.lower()}-*"):  # builds of earlier versions of the source
            if stale != out and ".partial-" not in stale.name:
                shutil.rmtree(stale, ignore_errors=True)
    return f"{out}{os.pathsep}{client.classpath}"


def java_argv(classpath: str, main: str, home: Path, args: Sequence[str], opts: Sequence[str]) -> list[str]:
    """The command line of a Java program whose logs and state go under ``home``."""
    write_home_conf(home)
    return [
        find_java(),
        *opts,
        f"-Duser.home={home}",
        f"-Drocketmq.home.dir={home}",
        "-cp",
        classpath,
        main,
        *args,
    ]


# --- ours, in a child process ----------------------------------------------------------------------


async def consume(namesrv: str, group: str, topic: str, warm: int, total: int, out: str) -> None:
    """The twin of LatencyConsumer.java: the same lines, the same file."""
    counted = total - warm
    missing = -(2**63)
    latencies = array("q", [missing]) * counted
    seen = duplicates = 0
    done = trio.Event()

    async def listener(msgs: list[MessageExt]) -> None:
        nonlocal seen, duplicates
        now = time.time_ns()
        for msg in msgs:
            parts = msg.body.split(b" ")
            if len(parts) != 2:
                continue
            index = int(parts[0]) - warm
            if not 0 <= index < counted:
                continue
            if latencies[index] != missing:
                duplicates += 1
                continue
            latencies[index] = now - int(parts[1])
            seen += 1
            if seen == 1:
                print("window start", flush=True)
            if seen == counted:
                print("window end", flush=True)
                done.set()

    consumer = PushConsumer(group, namesrv=namesrv, listener=listener)
    consumer.subscribe(topic)
    async with consumer:
        print(f"started {group}", flush=True)
        last = -1
        while not done.is_set():
            owned = sum(1 for q in consumer.statistics() if q.queue.topic == topic)
            if owned != last:
                print(f"owned {owned}", flush=True)
                last = owned
            with trio.move_on_after(OWNED_POLL):
                await done.wait()
        await trio.Path(out).write_text("".join(f"{ns}\n" for ns in latencies))
        print(f"result {duplicates}", flush=True)
        await trio.sleep_forever()  # consuming (uncounted) until killed, as the Java side


# --- the sender -----------------------------------------------------------------------------------


@dataclass
class SendFigures:
    sent: int
    late_p50_ms: float
    late_p99_ms: float
    late_max_ms: float
    rtt_p50_ms: float
    rtt_p99_ms: float
    retries: int


async def send_paced(namesrv: str, topic: str, rate: float, total: int) -> SendFigures:
    """Send sequences 0 .. total-1, sequence ``i`` due ``i / rate`` s after the start."""
    late: list[float] = []
    rtt: list[float] = []
    retries = 0
    async with Producer(f"bench-lat-producer-{uuid.uuid4().hex[:6]}", namesrv=namesrv) as producer:
        await producer.send(Message(topic, b"connect"))  # route and connection; not counted
        due_send, due_receive = trio.open_memory_channel[tuple[int, float]](math.inf)

        async def sender(due: trio.MemoryReceiveChannel[tuple[int, float]]) -> None:
            nonlocal retries
            async with due:
                async for seq, at in due:
                    late.append((trio.current_time() - at) * 1000)
                    for attempt in range(SEND_ATTEMPTS):
                        started = time.perf_counter()
                        try:
                            await producer.send(Message(topic, f"{seq} {time.time_ns()}".encode()))
                        except RocketMQError:
                            if attempt == SEND_ATTEMPTS - 1:
                                raise
                            retries += 1
                        else:
                            rtt.append((time.perf_counter() - started) * 1000)
                            break

        async with trio.open_nursery() as nursery:
            for _ in range(SENDERS):
                nursery.start_soon(sender, due_receive.clone())
            await due_receive.aclose()
            async with due_send:
                start = trio.current_time() + 0.01
                for seq in range(total):
                    at = start + seq / rate
                    await trio.sleep_until(at)
                    due_send.send_nowait((seq, at))
    return SendFigures(
        total,
        percentile(late, 0.5),
        percentile(late, 0.99),
        max(late),
        percentile(rtt, 0.5),
        percentile(rtt, 0.99),
        retries,
    )


# --- figures --------------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest rank: the smallest value with at least ``q`` of all at or below it."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@dataclass
class Figures:
    """One consumer's figures in one round (latencies in ms)."""

    count: int
    p50: float
    p90: float
    p99: float
    p999: float
    max: float
    mean: float
    cpu_us: float  # CPU per counted message
    duplicates: int

    @classmethod
    def of(cls, latencies_ns: Sequence[int], start: Line, end: Line, duplicates: int) -> Figures:
        ms = sorted(ns / 1e6 for ns in latencies_ns)
        return cls(
            len(ms),
            percentile(ms, 0.5),
            percentile(ms, 0.9),
            percentile(ms, 0.99),
            percentile(ms, 0.999),
            ms[-1],
            sum(ms) / len(ms),
            (end.cpu - start.cpu) / len(ms) * 1e6,
            duplicates,
        )


HEADER = (
    f"    {'client':<6} {'msgs':>7} {'p50 ms':>7} {'p90 ms':>7} {'p99 ms':>7} {'p99.9 ms':>9}"
    f" {'max ms':>7} {'mean ms':>8} {'CPU µs/m':>9} {'dups':>5}"
)


def row(side: str, f: Figures) -> str:
    return (
        f"    {side:<6} {f.count:>7,} {f.p50:>7.2f} {f.p90:>7.2f} {f.p99:>7.2f} {f.p999:>9.2f}"
        f" {f.max:>7.2f} {f.mean:>8.2f} {f.cpu_us:>9.1f} {f.duplicates:>5}"
    )


# --- the run ---------------------------------------------------------------------------------------


@dataclass
class Consumer:
    side: str
    watched: Watched
    out: Path

    def figures(self, timeout: float) -> Figures:
        start = self.watched.wait_for(r"^window start", timeout)
        end = self.watched.wait_for(r"^window end", timeout)
        result = self.watched.wait_for(r"^result ", 30)
        latencies = [int(v) for v in self.out.read_text().split()]
        missing = sum(1 for v in latencies if v == -(2**63))
        if missing:
            raise SystemExit(f"{self.side}: {missing} counted messages were never consumed")
        return Figures.of(latencies, start, end, int(result.text.split()[1]))


def start_consumer(
    side: str, cluster: Cluster, topic: str, group: str, warm: int, total: int, work: Path, java_cp: str
) -> Consumer:
    out = work / f"{side}-latencies.txt"
    args = [cluster.namesrv_addr, group, topic, str(warm), str(total), str(out)]
    if side == "ours":
        return Consumer(side, Watched([sys.executable, __file__, "consumer-child", *args]), out)
    home = work / f"{side}-home"
    argv = java_argv(java_cp, JAVA_SOURCE.stem, home, args, JAVA_OPTS)
    return Consumer(side, Watched(argv, env=dict(os.environ, ROCKETMQ_HOME=str(home)), cwd=home), out)


def one_round(
    cluster: Cluster,
    args: argparse.Namespace,
    r: int,
    run_id: str,
    java_cp: str,
    work: Path,
    order: list[str],
) -> tuple[dict[str, Figures], SendFigures]:
    """The consumers of ``order`` (started in that order) on one new topic, at the same time."""
    label = f"{r}-{'-'.join(order)}"
    topic = f"bench-lat-{run_id}-{label}"
    cluster.create_topic(topic, args.queues)
    warm = round(args.warmup * args.rate)
    total = warm + round(args.seconds * args.rate)
    round_dir = work / f"round-{label}"
    round_dir.mkdir()
    consumers: list[Consumer] = []
    try:
        for side in order:
            group = f"bench-lat-{side}-{run_id}-{r}"
            consumers.append(start_consumer(side, cluster, topic, group, warm, total, round_dir, java_cp))
        queues = args.queues * len(cluster.brokers)
        for c in consumers:
            c.watched.wait_for(rf"^owned {queues}\b", START_TIMEOUT)
        sent = trio.run(send_paced, cluster.namesrv_addr, topic, args.rate, total)
        figures = {c.side: c.figures(DRAIN_TIMEOUT) for c in consumers}
    finally:
        for c in consumers:
            c.watched.stop()
    alone = "" if len(order) > 1 else f", {order[0]} alone"
    print(f"round {r + 1}: topic {topic}, {queues} queues, {order[0]} started first{alone}")
    print(HEADER)
    for side in ("java", "ours"):
        if side in figures:
            print(row(side, figures[side]))
    print(
        f"    sender: {sent.sent:,} sent ({warm:,} warm-up), start behind schedule p50 {sent.late_p50_ms:.2f}"
        f" / p99 {sent.late_p99_ms:.2f} / max {sent.late_max_ms:.2f} ms, send RTT p50 {sent.rtt_p50_ms:.2f}"
        f" / p99 {sent.rtt_p99_ms:.2f} ms, {sent.retries} retries",
        flush=True,
    )
    return figures, sent


def run(cluster: Cluster, args: argparse.Namespace) -> None:
    run_id = uuid.uuid4().hex[:8]
    java_cp = compile_java(JAVA_SOURCE, resolve_bench(cluster.version))
    print(
        f"cluster {cluster.namesrv_addr} (RocketMQ {cluster.version}, {len(cluster.brokers)} broker(s));"
        f" {args.rate:g} msg/s, {args.warmup:g} s warm-up + {args.seconds:g} s counted, {args.rounds} rounds,"
        f" consumers {'at the same time' if args.mode == 'together' else 'one at a time, alternating'};"
        f" Java: rocketmq-client {resolve_bench(cluster.version).version}, {' '.join(JAVA_OPTS)}\n"
    )
    results: dict[str, list[Figures]] = {"java": [], "ours": []}
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
        for r in range(args.rounds):
            order = ["java", "ours"] if r % 2 == 0 else ["ours", "java"]
            groups = [order] if args.mode == "together" else [[side] for side in order]
            for sides in groups:
                figures, _ = one_round(cluster, args, r, run_id, java_cp, Path(tmp), sides)
                for side, f in figures.items():
                    results[side].append(f)
    print(f"\nmedians over {args.rounds} rounds:")
    print(HEADER)
    meds: dict[str, Figures] = {}
    for side, fs in results.items():
        meds[side] = Figures(
            count=round(median([f.count for f in fs])),
            p50=median([f.p50 for f in fs]),
            p90=median([f.p90 for f in fs]),
            p99=median([f.p99 for f in fs]),
            p999=median([f.p999 for f in fs]),
            max=median([f.max for f in fs]),
            mean=median([f.mean for f in fs]),
            cpu_us=median([f.cpu_us for f in fs]),
            duplicates=sum(f.duplicates for f in fs),
        )
        print(row(side, meds[side]))
    ours, java = meds["ours"], meds["java"]
    d50, d99 = ours.p50 - java.p50, ours.p99 - java.p99
    print(
        f"  ours - Java: p50 {d50:+.2f} ms, p99 {d99:+.2f} ms, p99.9 {ours.p999 - java.p999:+.2f} ms;"
        f" CPU per message ours/Java {ours.cpu_us / java.cpu_us:.2f}"
    )
    print(f"  goal, p99 within 1 ms of Java's: {'met' if d99 <= 1.0 else 'missed'} ({d99:+.2f} ms)")


def main() -> int:
    if sys.argv[1:2] == ["consumer-child"]:
        namesrv, group, topic, warm, total, out = sys.argv[2:8]
        trio.run(consume, namesrv, group, topic, int(warm), int(total), out)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=500.0, help="messages per second")
    parser.add_argument("--seconds", type=float, default=30.0, help="counted seconds per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=float, default=5.0, help="uncounted seconds before each round")
    parser.add_argument("--queues", type=int, default=8, help="queues per broker of each round's topic")
    parser.add_argument(
        "--mode",
        choices=["alternate", "together"],
        default="alternate",
        help="each consumer alone, Java and ours in turn (default), or both on the same messages",
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
