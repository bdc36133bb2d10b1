"""Spark read side by side: Spark's built-in Kafka source vs our ``rocketmq`` source, same data, same session.

The same backlog is stored in both brokers: ``--count`` records of ``--size`` B (one body for all,
a key each; RocketMQ's also have a tag) in 16 partitions of one Kafka topic and in 16 queues of one
RocketMQ topic (8 on each of two brokers, as ``spark_read.py --queues 8``). The brokers:

- **RocketMQ**: a local cluster of a NameServer and two brokers (``rocketmq_py.testing``), filled with
  ``spark_read.fill`` (batch sends from this process).
- **Kafka** 4.1.1: one KRaft node, broker and controller in one JVM (``-Xmx1g``), from the Maven
  Central jars (``_kafka_node.py``), filled through Spark's own Kafka sink from a generated DataFrame
  (``partition`` = row number mod 16, so the partitions are even). Spark's Kafka connector is
  ``spark-sql-kafka-0-10_2.13`` 4.2.0 (Maven Central has no 4.3.0; it runs on Spark 4.3), handed to
  ``spark.jars`` without the jars pyspark ships already.

One SparkSession (``local[2]``, 1 GiB driver, workers on this Python) reads each into the ``noop``
sink (``df.write.format("noop").mode("overwrite").save()``), timed on the driver around ``save()``
(planning included: offsets are looked up then), with an ``observe`` count checking every row came:

- ``kafka``: ``format("kafka")`` with ``subscribe``, earliest to latest, defaults otherwise;
- ``kafka-tuned``: the same with ``kafka.fetch.max.wait.ms=10``;
- ``rocketmq``: ``format("rocketmq")``, brokers as configured by default (a pull answers at most 32
  messages, 256 KiB: MessageStoreConfig ``maxTransferCountOnMessageInMemory`` /
  ``maxTransferBytesOnMessageInMemory``);
- ``rocketmq-tuned``: the same with those caps raised on the brokers to 1024 messages and 4 MiB for
  the run (``mqadmin updateBrokerConfig``'s request; set back after it): a setting of the brokers,
  where Kafka's tuning is the reader's;

each with all columns and with the value alone (``--columns all|body|both``, default both): Kafka
``.select("value")``, ours ``.schema("body BINARY")`` (our source builds only what a schema names;
Spark's prunes its own columns).

**The sinks** (``--sink ROWS``, default 1,000,000; 0: none): each round also writes ``ROWS`` rows of a
key (``k<n>``) and one ``--size`` B value, generated in two Spark partitions (a task per core), with
Spark's Kafka sink (key and value; its producer's defaults) and with ours (the key as the message's
``keys``, the value as its ``body``; the sink's defaults), into a topic of their own (16 partitions /
queues), timed the same way, the other broker frozen. The ratio printed is rocketmq/kafka.

**Each broker alone.** While a reader runs, the other broker's JVMs are frozen with SIGSTOP (all of
the RocketMQ cluster's JVMs, as the kit's ``pause_broker`` does for one broker, or the Kafka JVM)
and thawed with SIGCONT after it, so they take no CPU; restarting clusters between runs would take
minutes. A run never keeps them frozen long (a RocketMQ NameServer drops a broker silent for
120 s; Kafka's broker session timeout is raised to 10 minutes). After a thaw the next run waits
for that broker to serve the topic again (a RocketMQ route with both brokers; a Kafka Metadata answer
with a leader for every partition), polled, never slept.

**CPU per million rows**, from ``/proc`` snapshots at the start and end of each run: the Python
workers (every descendant of the Spark JVM: the ``pyspark.daemon`` and the workers it forks; a
worker that exited in between counts through its parent's ``cutime``), the Spark JVM itself (the
driver, which runs the tasks in local mode) and the broker JVMs of the side read.

After one untimed round of every run (Python workers, JIT, page cache), ``--rounds`` rounds
(default 3) of all runs, the readers' order rotating each round. Prints every run, the medians per
reader and column set, and the median of the per-round ratios of each of ours (rocketmq,
rocketmq-tuned) to each of Kafka's (kafka, kafka-tuned); ``--json PATH`` writes every run (``_side_by_side.write_results`` rows).
Run it on an otherwise idle machine: on 2 cores Spark's two tasks and the broker share the CPU.

    python benchmarks/spark_vs_kafka.py [--count 1000000] [--size 128] [--rounds 3]
        [--columns all|body|both] [--sink ROWS] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio
from _kafka_node import KafkaNode
from _side_by_side import jvm_pids, median, write_results
from spark_read import fill, spark_session

from rocketmq_py.protocol import RequestCode
from rocketmq_py.testing import LocalCluster, topic_route
from rocketmq_py.testing._cluster import _call
from rocketmq_py.testing._distribution import Classpath, resolve_maven
from rocketmq_py.testing._processes import marker_for

SPARK_KAFKA = ["org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"]
PARTITIONS = 16  # Kafka partitions; RocketMQ: QUEUES_PER_BROKER on each of BROKERS
BROKERS, QUEUES_PER_BROKER = 2, 8
READERS = ("kafka", "kafka-tuned", "rocketmq", "rocketmq-tuned")
COLUMN_SETS = {"all": "all columns", "body": "value only", "sink": "sink"}
#: The sides of ``--sink``: Spark's Kafka sink and ours (what the write side of a side is called).
WRITERS = ("kafka", "rocketmq")
OURS, THEIRS = ("rocketmq", "rocketmq-tuned"), ("kafka", "kafka-tuned")
#: The brokers' reply caps for ``rocketmq-tuned`` (MessageStoreConfig's, 32 messages and 256 KiB by
#: default), set at runtime with UPDATE_BROKER_CONFIG as ``mqadmin updateBrokerConfig`` does, and
#: set back to what they were after each of its runs.
TUNED_CAPS = {"maxTransferCountOnMessageInMemory": "1024", "maxTransferBytesOnMessageInMemory": str(4 << 20)}
READY_TIMEOUT = 60.0
_TICK = os.sysconf("SC_CLK_TCK")


# --- CPU from /proc -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProcCpu:
    """One process in a snapshot of /proc: CPU seconds of its own threads and of its reaped children."""

    ppid: int
    start: int  # start time in ticks: tells a reused pid apart
    own: float  # utime + stime
    reaped: float  # cutime + cstime: children it has waited for


Snapshot = Mapping[int, ProcCpu]


def parse_stat(text: str) -> ProcCpu:
    """A ``/proc/<pid>/stat`` line (the command name may hold spaces and parentheses)."""
    fields = text.rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])  # fields 14-17 of proc(5)
    return ProcCpu(int(fields[1]), int(fields[19]), (utime + stime) / _TICK, (cutime + cstime) / _TICK)


def snapshot() -> dict[int, ProcCpu]:
    """Every process of the machine now."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                found[int(entry.name)] = parse_stat((entry / "stat").read_text())
    return found


def descendants(root: int, procs: Snapshot) -> set[int]:
    """The pids below ``root`` in ``procs`` (children, their children, ...)."""
    children: dict[int, list[int]] = {}
    for pid, proc in procs.items():
        children.setdefault(proc.ppid, []).append(pid)
    found: set[int] = set()
    todo = list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, ()))
    return found


def tree_cpu(root: int, before: Snapshot, after: Snapshot) -> tuple[float, float]:
    """(``root``'s own CPU seconds, all its descendants' CPU seconds) between two snapshots.

    A descendant alive at the end counts its own and its reaped children's CPU since the start (all
    of it when it was born in between). One that ended in between is in its parent's ``cutime`` with
    all its life's CPU (the root's reaped CPU is counted with the descendants): its CPU before the
    start is taken off again.
    """

    def same(pid: int) -> bool:
        return pid in before and pid in after and before[pid].start == after[pid].start

    own = after[root].own - before[root].own
    below = after[root].reaped - before[root].reaped
    for pid in descendants(root, after):
        p = after[pid]
        below += p.own + p.reaped - ((before[pid].own + before[pid].reaped) if same(pid) else 0.0)
    for pid in descendants(root, before):
        if not same(pid):
            below -= before[pid].own + before[pid].reaped
    return own, below


def jvms_cpu(pids: Sequence[int], before: Snapshot, after: Snapshot) -> float:
    """CPU seconds of long-lived processes (the brokers) between two snapshots."""
    return sum(
        after[p].own + after[p].reaped - before[p].own - before[p].reaped
        for p in pids
        if p in before and p in after
    )


# --- the results ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Run:
    """One timed read: ``rows`` in ``seconds``, and the CPU seconds of each party."""

    reader: str
    columns: str  # a key of COLUMN_SETS
    round: int  # 0: the untimed warm-up round
    rows: int
    seconds: float
    python_cpu: float
    jvm_cpu: float
    broker_cpu: float
    frozen_cpu: float  # the other side's JVMs, frozen: ~0 shows the broker read was alone

    @property
    def rate(self) -> float:
        return self.rows / self.seconds

    def per_million(self, cpu: float) -> float:
        return cpu / self.rows * 1e6

    def line(self) -> str:
        return (
            f"  {self.reader:<12} {COLUMN_SETS[self.columns]:<12} {self.rate:>10,.0f} rows/s   CPU s per 1M rows: "
            f"python {self.per_million(self.python_cpu):6.2f}, Spark JVM {self.per_million(self.jvm_cpu):6.2f}, "
            f"broker {self.per_million(self.broker_cpu):6.2f} (frozen side {self.frozen_cpu:.2f} s)"
        )

    def row(self) -> dict[str, object]:
        """A row for ``_side_by_side.write_results``: ``cpu_us`` is Python workers + Spark JVM per row."""
        return {
            "case": "spark write" if self.columns == "sink" else f"spark read, {COLUMN_SETS[self.columns]}",
            "side": self.reader,
            "round": self.round,
            "rate": round(self.rate, 1),
            "cpu_us": round((self.python_cpu + self.jvm_cpu) / self.rows * 1e6, 2),
            "python_cpu_s_per_m": round(self.per_million(self.python_cpu), 3),
            "jvm_cpu_s_per_m": round(self.per_million(self.jvm_cpu), 3),
            "broker_cpu_s_per_m": round(self.per_million(self.broker_cpu), 3),
            "frozen_side_cpu_s": round(self.frozen_cpu, 3),
            "rows": self.rows,
            "seconds": round(self.seconds, 3),
        }


def round_order(readers: Sequence[str], round_no: int) -> list[str]:
    """``readers`` rotated by ``round_no``, so that no reader always goes first."""
    shift = round_no % len(readers)
    return [*readers[shift:], *readers[:shift]]


def ratios(runs: Sequence[Run], ours: str, theirs: str, columns: str) -> list[float]:
    """Per timed round, ours/theirs rows/s for one column set (rounds where both ran)."""
    rates = {(r.reader, r.round): r.rate for r in runs if r.columns == columns and r.round > 0}
    rounds = sorted({rnd for _, rnd in rates})
    return [
        rates[ours, rnd] / rates[theirs, rnd]
        for rnd in rounds
        if (ours, rnd) in rates and (theirs, rnd) in rates
    ]


def summary(runs: Sequence[Run], columns: Sequence[str]) -> list[str]:
    """Median lines per reader and column set, then the ratio lines."""
    timed = [r for r in runs if r.round > 0]
    lines = [
        f"  {'median of ' + str(len({r.round for r in timed})) + ' rounds':<25} {'rows/s':>10}   CPU s per 1M rows: python / Spark JVM / broker"
    ]
    for cols in columns:
        for reader in READERS:
            mine = [r for r in timed if r.reader == reader and r.columns == cols]
            if not mine:
                continue
            cpu = [
                median([r.per_million(getattr(r, f)) for r in mine])
                for f in ("python_cpu", "jvm_cpu", "broker_cpu")
            ]
            lines.append(
                f"  {reader + ', ' + COLUMN_SETS[cols]:<25} {median([r.rate for r in mine]):>10,.0f}   "
                + " / ".join(f"{c:.2f}" for c in cpu)
            )
    for cols in columns:
        for ours in OURS:
            for theirs in THEIRS:
                found = ratios(runs, ours, theirs, cols)
                if found:
                    lines.append(
                        f"  {COLUMN_SETS[cols]}: median ratio {ours}/{theirs} {median(found):.2f} "
                        f"(per round {', '.join(f'{r:.2f}' for r in found)})"
                    )
    return lines


# --- Spark ------------------------------------------------------------------------------------------


def artifact_name(jar: str) -> str:
    """``kafka-clients`` of ``kafka-clients-3.9.2.jar``: the file name without its version."""
    return re.sub(r"-\d[A-Za-z0-9.]*(-[A-Za-z0-9.]+)?\.jar$", "", Path(jar).name)


def missing_jars(wanted: Sequence[str], shipped: Sequence[str]) -> list[str]:
    """The jars of ``wanted`` whose artifact is not among ``shipped`` (Spark's own win, whatever their version)."""
    have = {artifact_name(j) for j in shipped}
    return sorted(j for j in wanted if artifact_name(j) not in have)


def connector_jars() -> list[str]:
    """Spark's Kafka connector and what it needs that pyspark does not ship."""
    import pyspark

    connector: Classpath = resolve_maven("spark-sql-kafka", SPARK_KAFKA)
    shipped = [p.name for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")]
    return missing_jars([str(p) for p in connector.lib.glob("*.jar")], shipped)


def reader_frame(spark: Any, reader: str, columns: str, bootstrap: str, namesrv: str, topic: str) -> Any:
    if reader in OURS:
        load = spark.read.format("rocketmq").option("namesrv", namesrv).option("topic", topic)
        return (load.schema("body BINARY") if columns == "body" else load).load()
    load = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
    )
    if reader == "kafka-tuned":
        load = load.option("kafka.fetch.max.wait.ms", "10")
    df = load.load()
    return df.select("value") if columns == "body" else df


def fill_kafka(spark: Any, bootstrap: str, topic: str, count: int, size: int) -> None:
    """``count`` records through Spark's Kafka sink: a key each, one ``size`` B value, partition = id % 16."""
    from pyspark.sql import functions as F

    value = os.urandom(size // 2 + 1).hex().encode()[:size]  # as spark_read.fill's body
    df = spark.range(count, numPartitions=2).select(
        (F.col("id") % PARTITIONS).cast("int").alias("partition"),
        F.concat(F.lit("k"), F.col("id").cast("string")).cast("binary").alias("key"),
        F.lit(value).alias("value"),
    )
    df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic).option(
        "kafka.linger.ms", "5"
    ).save()


def sink_frame(spark: Any, count: int, size: int) -> Any:
    """What ``--sink`` writes: ``count`` rows of a key (``k<n>``) and one ``size`` B value, in two
    Spark partitions (one task per core of ``local[2]``)."""
    from pyspark.sql import functions as F

    value = os.urandom(size // 2 + 1).hex().encode()[:size]
    return spark.range(count, numPartitions=2).select(
        F.concat(F.lit("k"), F.col("id").cast("string")).alias("key"), F.lit(value).alias("value")
    )


def sink_columns(df: Any, writer: str) -> Any:
    """:func:`sink_frame`'s rows as ``writer``'s sink takes them: Kafka's key and value, or our
    message's key (``keys``) and ``body``."""
    from pyspark.sql import functions as F

    if writer == "kafka":
        return df.select(F.col("key").cast("binary").alias("key"), "value")
    return df.select(F.col("key").alias("keys"), F.col("value").alias("body"))


def write_frame(df: Any, writer: str, bootstrap: str, namesrv: str, topic: str) -> None:
    """``df`` (:func:`sink_columns`) written to ``topic`` by ``writer``'s sink with its defaults."""
    if writer == "kafka":
        df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic).save()
    else:
        df.write.format("rocketmq").option("namesrv", namesrv).option("topic", topic).mode("append").save()


# --- freezing the other side -----------------------------------------------------------------------


def signal_all(pids: Sequence[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


@contextlib.contextmanager
def frozen(pids: Sequence[int]) -> Iterator[None]:
    """``pids`` stopped (SIGSTOP) for the block, continued after it whatever happens."""
    signal_all(pids, signal.SIGSTOP)
    try:
        yield
    finally:
        signal_all(pids, signal.SIGCONT)


def broker_settings(address: str, names: Iterable[str]) -> dict[str, str]:
    """The broker's current values of ``names`` (GET_BROKER_CONFIG: its properties as text)."""
    code, reply = _call(address, RequestCode.GET_BROKER_CONFIG, timeout=10.0)
    if code != 0:
        raise SystemExit(f"getBrokerConfig on {address} failed: {code} {reply!r}")
    found = dict(line.split("=", 1) for line in reply.decode().splitlines() if "=" in line)
    return {name: found[name] for name in names}


def update_broker(address: str, settings: Mapping[str, str]) -> None:
    body = "".join(f"{name}={value}\n" for name, value in settings.items()).encode()
    code, reply = _call(address, RequestCode.UPDATE_BROKER_CONFIG, body=body, timeout=10.0)
    if code != 0:
        raise SystemExit(f"updateBrokerConfig on {address} failed: {code} {reply!r}")


@contextlib.contextmanager
def broker_caps(cluster: LocalCluster, caps: Mapping[str, str]) -> Iterator[None]:
    """Every broker with ``caps`` for the block, and what it had before after it."""
    before = {b.address: broker_settings(b.address, caps) for b in cluster.brokers}
    for address in before:
        update_broker(address, caps)
    try:
        yield
    finally:
        for address, settings in before.items():
            update_broker(address, settings)


def wait_route(namesrv: str, topic: str) -> None:
    """Until the NameServer routes ``topic`` to both brokers (after a thaw)."""
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        route = topic_route(namesrv, topic)
        if route is not None and len({q.broker_name for q in route.queue_datas}) == BROKERS:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"no route to {BROKERS} brokers for {topic} within {READY_TIMEOUT:g} s")
        time.sleep(0.1)


# --- the run ----------------------------------------------------------------------------------------


@dataclass
class Bench:
    spark: Any
    spark_pid: int
    cluster: LocalCluster
    rocketmq_pids: list[int]
    kafka: KafkaNode
    topic: str
    count: int
    size: int = 128
    sink_topic: str = ""
    sink_count: int = 0

    def write(self, writer: str, round_no: int) -> Run:
        """One timed write of :func:`sink_frame` by ``writer``'s sink, the other side frozen."""
        # No observe() here: Spark does not deliver an observation of a write to the Kafka sink
        # (Observation.get waits for ever); the rows are generated, and a failed send fails the job.
        df = sink_columns(sink_frame(self.spark, self.sink_count, self.size), writer)
        return self._timed(
            writer,
            "sink",
            round_no,
            self.sink_topic,
            lambda: write_frame(df, writer, self.kafka.bootstrap, self.cluster.namesrv_addr, self.sink_topic),
            rows=lambda: self.sink_count,
        )

    def run(self, reader: str, columns: str, round_no: int) -> Run:
        """One timed read of the backlog by ``reader`` into the noop sink, the other side frozen."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        seen = Observation(f"rows_{uuid.uuid4().hex[:8]}")
        df = reader_frame(
            self.spark, reader, columns, self.kafka.bootstrap, self.cluster.namesrv_addr, self.topic
        )
        df = df.observe(seen, F.count(F.lit(1)).alias("rows"))
        done = self._timed(
            reader,
            columns,
            round_no,
            self.topic,
            lambda: df.write.format("noop").mode("overwrite").save(),
            rows=lambda: int(seen.get["rows"]),
            caps=TUNED_CAPS if reader == "rocketmq-tuned" else None,
        )
        if done.rows != self.count:
            raise SystemExit(f"{reader} ({columns}) read {done.rows} rows, expected {self.count}")
        return done

    def _timed(
        self,
        side: str,
        columns: str,
        round_no: int,
        topic: str,
        action: Callable[[], object],
        *,
        rows: Callable[[], int],
        caps: Mapping[str, str] | None = None,
    ) -> Run:
        """``action()`` timed, with the CPU of the Python workers, the Spark JVM, ``side``'s broker
        JVMs (ready for ``topic`` first; with ``caps`` for the time) and the other side's, frozen."""
        ours = side in OURS
        brokers = self.rocketmq_pids if ours else [self.kafka.pid]
        others = [self.kafka.pid] if ours else self.rocketmq_pids
        if ours:
            wait_route(self.cluster.namesrv_addr, topic)
        else:
            self.kafka.wait_ready(topic)
        with broker_caps(self.cluster, caps) if caps else contextlib.nullcontext(), frozen(others):
            before = snapshot()
            started = time.perf_counter()
            action()
            seconds = time.perf_counter() - started
            after = snapshot()
        jvm, python = tree_cpu(self.spark_pid, before, after)
        return Run(
            side,
            columns,
            round_no,
            rows(),
            seconds,
            python,
            jvm,
            jvms_cpu(brokers, before, after),
            jvms_cpu(others, before, after),
        )


def run(args: argparse.Namespace) -> None:
    columns = ["all", "body"] if args.columns == "both" else [args.columns]
    jars = connector_jars()  # before any broker starts: a resolution failure fails at once
    print(f"Spark's Kafka connector: {', '.join(Path(j).name for j in jars)}")
    topic = f"bench-svk-{uuid.uuid4().hex[:8]}"
    runs: list[Run] = []
    # A LocalCluster of our own, never ROCKETMQ_NAMESRV's: only JVMs this run started are ever frozen.
    cluster = LocalCluster(BROKERS).start()
    with cluster, KafkaNode(PARTITIONS) as kafka:
        rocketmq_pids = jvm_pids("org.apache.rocketmq", marker_for(cluster.cluster_id))
        if len(rocketmq_pids) != 1 + BROKERS:
            raise SystemExit(f"expected a NameServer and {BROKERS} brokers, found JVMs {rocketmq_pids}")
        print(
            f"RocketMQ {cluster.namesrv_addr} (JVMs {rocketmq_pids}); Kafka {kafka.bootstrap} (JVM {kafka.pid})"
        )
        started = time.perf_counter()
        cluster.create_topic(topic, QUEUES_PER_BROKER)
        with frozen([kafka.pid]):
            trio.run(fill, cluster.namesrv_addr, topic, args.count, args.size)
        print(f"RocketMQ: {args.count:,} x {args.size} B stored in {time.perf_counter() - started:.1f} s")
        spark = spark_session("local[2]", {"spark.jars": ",".join(jars), "spark.driver.memory": "1g"})
        try:
            spark_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
            started = time.perf_counter()
            kafka.create_topic(topic)
            with frozen(rocketmq_pids):
                fill_kafka(spark, kafka.bootstrap, topic, args.count, args.size)
            print(f"Kafka: {args.count:,} x {args.size} B stored in {time.perf_counter() - started:.1f} s")
            sink_topic = f"{topic}-sink"
            if args.sink:
                cluster.create_topic(sink_topic, QUEUES_PER_BROKER)
                kafka.create_topic(sink_topic)
            bench = Bench(
                spark,
                spark_pid,
                cluster,
                rocketmq_pids,
                kafka,
                topic,
                args.count,
                args.size,
                sink_topic,
                args.sink,
            )
            for round_no in range(args.rounds + 1):
                print("round", round_no if round_no else "0 (untimed warm-up)", flush=True)
                timed: list[Run] = []
                for reader in round_order(READERS, round_no):
                    for cols in columns:
                        timed.append(bench.run(reader, cols, round_no))
                        print(timed[-1].line(), flush=True)
                for writer in round_order(WRITERS, round_no) if args.sink else ():
                    timed.append(bench.write(writer, round_no))
                    print(timed[-1].line(), flush=True)
                if round_no:
                    runs.extend(timed)
        finally:
            spark.stop()
    print("\n".join(summary(runs, [*columns, *(["sink"] if args.sink else [])])))
    write_results(args.json, "spark-vs-kafka", [r.row() for r in runs])


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (see the module's docstring)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds, after one untimed")
    parser.add_argument("--columns", choices=("all", "body", "both"), default="both")
    parser.add_argument("--json", help="write every timed run there")
    parser.add_argument(
        "--sink",
        type=int,
        default=1_000_000,
        metavar="ROWS",
        help="also write this many rows (a key and a --size B value each) with each sink per round (0: none)",
    )
    return parser.parse_args(argv)


def main() -> int:
    run(parse_args())
    return 0


if __name__ == "__main__":
    sys.exit(main())
