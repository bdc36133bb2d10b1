"""Spark read rate: the ``rocketmq`` data source in local[2] vs the raw client on the same ranges and cores.

A backlog of ``--count`` messages (``--size`` B bodies, tags and a key each) is stored first in one
topic with ``--queues`` queues on each broker, with batch sends. Then, one timed run each, after a
warm-up of both paths on a small topic (Python worker start-up, broker and JIT warm-up):

- **Spark**: ``spark.read.format("rocketmq")...load()`` written to the ``noop`` sink
  (``df.write.format("noop").mode("overwrite").save()``): every row is materialised with all its
  columns (Spark tells a Python data source nothing of the columns a query uses, so even a
  ``count()`` gets all of them unless a schema names fewer: ``--columns``). One Spark partition per queue,
  two tasks at a time (local[2]). Timed on the driver around ``save()``: planning (route, min/max
  offsets) included.
- **Raw client**: two processes, each pulling half of the queues (all its queues concurrently, one
  pull in flight per queue, as many messages a pull as the reader asks for) with ``RemotingApi.pull_message`` and
  ``decode_messages``. Each process times its own work (imports and interpreter start-up
  excluded); the slower one counts.

Prints rows/s for both and the ratio Spark/raw (the goal is >= 0.9), and, to tell the source's
own cost from Spark's, the rate of the source's ``read()`` iterated in two processes without Spark.
After one untimed round on the full topic, the three are timed in ``--rounds`` rounds (default 3),
their order rotating from round to round;
each round's ratio is printed, and the medians. On a 2-core machine the brokers share the cores
with the reader, so single runs move by a third.

    python benchmarks/spark_read.py [--count 1000000] [--size 128] [--queues 4] [--rounds 3] [--namesrv host:port]
        [--columns queue_offset,body]

``--columns`` reads only those columns: the Spark side with ``.schema(...)`` naming them (the source
builds only what a schema names) and the ``read()`` path with a reader made for that schema; the
raw client is unchanged (it decodes whole messages either way).

``--scaling`` measures instead how the source scales out: a Spark standalone cluster on 127.0.0.1
(``rocketmq_py.testing.SparkStandalone``: a master and two workers of one core each, each executor
its own JVM) reads the backlog into the noop sink from a driver given one core (one executor, on
one worker) or two (two executors, on both workers), in alternating rounds, each from a new driver
process after a warm-up read. Prints every round, the median rows/s of each and their ratio (the
goal is >= 1.8). On a 2-core machine the brokers and the driver share the two cores with the
executors, so the second worker cannot bring a whole core.

A local two-broker cluster is started unless ``--namesrv`` (or ROCKETMQ_NAMESRV) names one.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from typing import Any

import trio

from rocketmq_py import Message, Producer
from rocketmq_py._client._api import RemotingApi
from rocketmq_py._transport import ConnectionPool
from rocketmq_py.protocol import (
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    ResponseCode,
    decode_messages,
    from_ext_fields,
)
from rocketmq_py.testing import SparkStandalone, loopback_conf, start_cluster, topic_route
from spark_connector._options import DEFAULT_PULL_BATCH_SIZE

PULL_BATCH = DEFAULT_PULL_BATCH_SIZE  # the reader's default pullBatchSize
RAW_PROCESSES = 2  # the cores local[2] runs on
WARMUP = 20_000


@dataclass(frozen=True)
class QueueRange:
    broker_name: str
    address: str
    queue_id: int
    start: int
    end: int


# --- the backlog -----------------------------------------------------------------------------------


async def fill(namesrv: str, topic: str, count: int, size: int) -> None:
    body = os.urandom(size // 2 + 1).hex().encode()[:size]
    left = count
    async with Producer("bench-spark-fill", namesrv=namesrv) as producer:

        async def sender() -> None:
            nonlocal left
            while left > 0:
                n = min(128, left)
                first = count - left
                left -= n
                batch = [
                    Message(topic, body, tags=f"Tag{i % 4}", keys=[f"k{i}"]) for i in range(first, first + n)
                ]
                await producer.send_batch(batch)

        async with trio.open_nursery() as nursery:
            for _ in range(8):
                nursery.start_soon(sender)


async def plan(namesrv: str, topic: str) -> list[QueueRange]:
    """Every queue of ``topic`` with its ``[min, max)`` offsets, in (broker, queue) order."""
    route = topic_route(namesrv, topic)
    if route is None:
        raise SystemExit(f"no route for {topic}")
    masters = {b.broker_name: b.broker_addrs[0] for b in route.broker_datas if 0 in b.broker_addrs}
    ranges = []
    async with ConnectionPool() as pool:
        api = RemotingApi(pool, timeout=10)
        for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
            address = masters[qd.broker_name]
            for queue_id in range(qd.read_queue_nums):
                low = await api.get_min_offset(address, topic, queue_id, qd.broker_name)
                high = await api.get_max_offset(address, topic, queue_id, qd.broker_name)
                ranges.append(QueueRange(qd.broker_name, address, queue_id, low, high))
    return ranges


# --- the raw client, in child processes ------------------------------------------------------------


async def pull_ranges(topic: str, ranges: list[QueueRange]) -> dict[str, int]:
    rows = body_bytes = 0

    async def pull_queue(api: RemotingApi, r: QueueRange) -> None:
        nonlocal rows, body_bytes
        offset = r.start
        while offset < r.end:
            header = PullMessageRequestHeader(
                consumer_group="bench-spark-raw",
                topic=topic,
                queue_id=r.queue_id,
                queue_offset=offset,
                max_msg_nums=min(PULL_BATCH, r.end - offset),
                sys_flag=0x4,  # subscription in the request; no commit, no suspend (as the reader)
                commit_offset=0,
                suspend_timeout_millis=0,
                sub_version=0,
                subscription="*",
                expression_type="TAG",
                broker_name=r.broker_name,
            )
            reply = await api.pull_message(r.address, header, timeout=10)
            if reply.code != ResponseCode.SUCCESS:
                raise SystemExit(f"pull {r} at {offset}: code {reply.code} {reply.remark}")
            msgs = [m for m in decode_messages(reply.body) if m.queue_offset < r.end]
            rows += len(msgs)
            body_bytes += sum(len(m.body) for m in msgs)
            offset = from_ext_fields(PullMessageResponseHeader, reply.ext_fields).next_begin_offset

    async with ConnectionPool() as pool:
        api = RemotingApi(pool, timeout=10)
        async with trio.open_nursery() as nursery:
            for r in ranges:
                nursery.start_soon(pull_queue, api, r)
    return {"rows": rows, "body_bytes": body_bytes}


def run_raw(topic: str, ranges: list[QueueRange]) -> tuple[int, float]:
    """Pull ``ranges`` in RAW_PROCESSES child processes (queues dealt round-robin); (rows, seconds)."""
    shares = [ranges[i::RAW_PROCESSES] for i in range(RAW_PROCESSES)]
    return _children(
        [
            [sys.executable, __file__, "raw-child", topic, json.dumps([r.__dict__ for r in share])]
            for share in shares
        ]
    )


# --- the reader's read() without Spark, in child processes ----------------------------------------


def read_partitions(path: str) -> dict[str, int]:
    """Iterate ``reader.read(p)`` over the pickled (reader, partitions) in ``path``."""
    with open(path, "rb") as f:
        reader, partitions = pickle.load(f)
    rows = 0
    for partition in partitions:
        for batch in reader.read(partition):
            rows += batch.num_rows
    return {"rows": rows}


def read_schema(columns: str | None) -> Any:
    """The StructType of ``--columns`` (a comma list; None: all columns), checked as the source checks it."""
    from pyspark.sql.types import StructType

    from spark_connector import SPARK_SCHEMA
    from spark_connector._schema import parse_read_schema

    if not columns:
        return SPARK_SCHEMA
    names = [name.strip() for name in columns.split(",") if name.strip()]
    unknown = [name for name in names if name not in SPARK_SCHEMA.fieldNames()]
    if unknown:
        raise SystemExit(f"--columns: not columns of the source: {', '.join(unknown)}")
    schema = StructType([SPARK_SCHEMA[name] for name in names])
    parse_read_schema(schema)  # a column twice fails here, not in the middle of a run
    return schema


def run_read_only(namesrv: str, topic: str, schema: Any) -> tuple[int, float]:
    """The data source's own ``read()`` (pull, decode, Arrow batches) in RAW_PROCESSES processes."""
    from spark_connector import RocketMQDataSource

    reader = RocketMQDataSource({"namesrv": namesrv, "topic": topic}).reader(schema)
    partitions = list(reader.partitions())
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i in range(RAW_PROCESSES):
            paths.append(os.path.join(tmp, f"share{i}.pickle"))
            with open(paths[-1], "wb") as f:
                pickle.dump((reader, partitions[i::RAW_PROCESSES]), f)
        return _children([[sys.executable, __file__, "read-child", path] for path in paths])


def _children(commands: list[list[str]]) -> tuple[int, float]:
    """Run the commands at once; (sum of the rows they report, seconds of the slowest one's work).

    Each child times its own work (after its imports), so interpreter start-up does not count.
    """
    children = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for command in commands]
    outputs = [child.communicate()[0] for child in children]
    if any(child.returncode for child in children):
        raise SystemExit("a benchmark child process failed")
    reports = [json.loads(out.splitlines()[-1]) for out in outputs]
    return sum(r["rows"] for r in reports), max(r["seconds"] for r in reports)


def _timed(fn: Any, *args: Any) -> dict[str, Any]:
    started = time.perf_counter()
    report: dict[str, Any] = fn(*args)
    report["seconds"] = time.perf_counter() - started
    return report


# --- Spark -----------------------------------------------------------------------------------------


def spark_session(master: str = "local[2]", conf: dict[str, str] | None = None) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import spark_connector

    builder = SparkSession.builder.master(master).appName("rocketmq-spark-read-bench")
    for key, value in {**loopback_conf(), "spark.driver.memory": "2g", **(conf or {})}.items():
        builder = builder.config(key, value)  # loopback_conf: SPARK_LOCAL_IP, driver on 127.0.0.1
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark_connector.register(spark)
    return spark


def run_spark(spark: Any, namesrv: str, topic: str, expected: int, schema: Any = None) -> float:
    """Read the whole topic into the noop sink; returns the seconds of that write (then checks the count).

    With ``schema`` (a StructType of some of the source's columns) the read names it, so the source
    builds only those columns.
    """
    reader = spark.read.format("rocketmq").option("namesrv", namesrv).option("topic", topic)
    if schema is not None:
        reader = reader.schema(schema)
    df = reader.load()
    started = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    seconds = time.perf_counter() - started
    counted = df.count()
    if counted != expected:
        raise SystemExit(f"Spark read {counted} rows of {topic}, expected {expected}")
    return seconds


# --- the run ---------------------------------------------------------------------------------------


def run(namesrv: str, cluster: Any, args: argparse.Namespace) -> None:
    schema = read_schema(args.columns)  # before the backlog: a bad --columns fails at once
    columns = ", ".join(schema.fieldNames()) if args.columns else "all columns"
    run_id = uuid.uuid4().hex[:8]
    topic, warm = f"bench-spark-{run_id}", f"bench-spark-warm-{run_id}"
    for name in (topic, warm):
        cluster.create_topic(name, args.queues)
    started = time.perf_counter()
    trio.run(fill, namesrv, warm, WARMUP, args.size)
    trio.run(fill, namesrv, topic, args.count, args.size)
    print(f"backlog: {args.count:,} x {args.size} B stored in {time.perf_counter() - started:.1f} s")
    ranges = trio.run(plan, namesrv, topic)
    total = sum(r.end - r.start for r in ranges)
    if total != args.count:
        raise SystemExit(f"the topic holds {total} messages, expected {args.count}")
    print(f"topic {topic}: {len(ranges)} queues, {total:,} messages")

    spark = spark_session()
    rounds: list[dict[str, float]] = []
    try:
        run_spark(spark, namesrv, warm, WARMUP, schema)
        run_raw(warm, trio.run(plan, namesrv, warm))
        print("warmed up both paths on a 20,000-message topic")
        # One untimed round on the full topic first: the first full reads ran up to 40% slower
        # than later ones (the brokers' JIT and page cache were still warming up).
        for round_no in range(-1, args.rounds):
            # The order rotates, so no path always runs first (page cache, broker JIT, GC state).
            rates: dict[str, float] = {}
            paths = ["raw", "spark", "read"]
            for path in paths[round_no % 3 :] + paths[: round_no % 3]:
                if path == "raw":
                    rows, seconds = run_raw(topic, ranges)
                elif path == "spark":
                    rows, seconds = total, run_spark(spark, namesrv, topic, total, schema)
                else:
                    rows, seconds = run_read_only(namesrv, topic, schema)
                if rows != total:
                    raise SystemExit(f"{path} returned {rows} rows, expected {total}")
                rates[path] = total / seconds
            if round_no < 0:
                print("  untimed full round done")
                continue
            rounds.append(rates)
            print(
                f"  round {round_no + 1}: raw {rates['raw']:,.0f}, Spark {rates['spark']:,.0f}, "
                f"read() {rates['read']:,.0f} rows/s; Spark/raw {rates['spark'] / rates['raw']:.2f}"
            )
    finally:
        spark.stop()
    raw_rate = statistics.median(r["raw"] for r in rounds)
    spark_rate = statistics.median(r["spark"] for r in rounds)
    read_rate = statistics.median(r["read"] for r in rounds)
    ratios = sorted(r["spark"] / r["raw"] for r in rounds)
    print(f"  {'reader (median of ' + str(len(rounds)) + ' rounds)':<58} {'rows/s':>10}")
    print(f"  {'raw client: 2 processes, pull_message + decode_messages':<58} {raw_rate:>10,.0f}")
    spark_label = f"Spark local[2]: rocketmq source -> noop sink ({columns})"
    print(f"  {spark_label:<58} {spark_rate:>10,.0f}")
    read_label = f"rocketmq source's read() alone: 2 processes, no Spark ({columns})"
    print(f"  {read_label:<58} {read_rate:>10,.0f}")
    print(
        f"  ratio Spark/raw: {statistics.median(ratios):.2f} median, per round "
        f"{', '.join(f'{r:.2f}' for r in ratios)} (goal >= 0.9)"
    )


# --- scaling on a standalone cluster: one worker vs two ---------------------------------------------


def scaling_child(
    master: str, cores: int, namesrv: str, warm: str, topic: str, expected: int
) -> dict[str, Any]:
    """A driver on the standalone cluster with ``cores`` executor cores (1 core per worker)."""
    spark = spark_session(
        master,
        {
            "spark.cores.max": str(cores),
            "spark.executor.cores": "1",
            "spark.executor.memory": "1g",
            "spark.driver.memory": "1g",
        },
    )
    try:
        run_spark(spark, namesrv, warm, WARMUP)  # the executors' Python workers start here
        before = _cpu_ticks()
        seconds = run_spark(spark, namesrv, topic, expected)
        busy, total = (after - first for after, first in zip(_cpu_ticks(), before, strict=True))
        executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1  # minus the driver
    finally:
        spark.stop()
    return {"seconds": seconds, "executors": executors, "busy": busy / total if total else 0.0}


def _cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine so far, from /proc/stat (Linux)."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def run_scaling(namesrv: str, cluster: Any, args: argparse.Namespace) -> None:
    """Read rows/s with one worker and with two, rounds alternating; prints each round and the medians."""
    run_id = uuid.uuid4().hex[:8]
    topic, warm = f"bench-spark-sa-{run_id}", f"bench-spark-sa-warm-{run_id}"
    for name in (topic, warm):
        cluster.create_topic(name, args.queues)
    trio.run(fill, namesrv, warm, WARMUP, args.size)
    trio.run(fill, namesrv, topic, args.count, args.size)
    print(f"backlog: {args.count:,} x {args.size} B in {topic} ({2 * args.queues} queues)")
    rates: dict[int, list[float]] = {1: [], 2: []}
    with SparkStandalone(workers=2, worker_cores=1, worker_memory="1500m") as spark_cluster:
        # Round 0 is untimed (broker JIT and page cache); then 1 2, 2 1, 1 2, ... so neither goes first.
        for round_no in range(args.rounds + 1):
            order = (1, 2) if round_no % 2 == 0 else (2, 1)
            for workers in order:
                child = [sys.executable, __file__, "scaling-child", spark_cluster.master_url, str(workers)]
                child += [namesrv, warm, topic, str(args.count)]
                done = subprocess.run(
                    child, env=spark_cluster.env, capture_output=True, text=True, check=False
                )
                if done.returncode:
                    raise SystemExit(f"scaling child failed:\n{done.stderr[-4000:]}")
                report = json.loads(done.stdout.splitlines()[-1])
                if report["executors"] != workers:
                    raise SystemExit(f"expected {workers} executor(s), the driver saw {report['executors']}")
                rate = args.count / report["seconds"]
                if round_no:
                    rates[workers].append(rate)
                print(
                    f"  round {round_no or 'warm-up'}: {workers} worker(s) {rate:>10,.0f} rows/s, "
                    f"machine CPU busy {report['busy']:.0%} of {os.cpu_count()} cores during the read",
                    flush=True,
                )
    one, two = statistics.median(rates[1]), statistics.median(rates[2])
    ratios = [b / a for a, b in zip(rates[1], rates[2], strict=True)]
    print(
        f"  Spark standalone, 1 worker (1 core, 1 executor JVM):  {one:>10,.0f} rows/s (median of {len(rates[1])})"
    )
    print(
        f"  Spark standalone, 2 workers (2 executor JVMs):        {two:>10,.0f} rows/s (median of {len(rates[2])})"
    )
    print(
        f"  scaling 2 workers / 1 worker: {two / one:.2f} (median rates), per round "
        f"{', '.join(f'{r:.2f}' for r in ratios)} (goal >= 1.8)"
    )


def main() -> int:
    if sys.argv[1:2] == ["raw-child"]:
        topic, encoded = sys.argv[2], sys.argv[3]
        share = [QueueRange(**item) for item in json.loads(encoded)]
        print(json.dumps(_timed(trio.run, pull_ranges, topic, share)))
        return 0
    if sys.argv[1:2] == ["read-child"]:
        print(json.dumps(_timed(read_partitions, sys.argv[2])))
        return 0
    if sys.argv[1:2] == ["scaling-child"]:
        master, cores, namesrv, warm, topic, expected = sys.argv[2:8]
        print(json.dumps(scaling_child(master, int(cores), namesrv, warm, topic, int(expected))))
        return 0
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--queues", type=int, default=4, help="queues on each broker")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds of the three paths")
    parser.add_argument("--namesrv", default=os.environ.get("ROCKETMQ_NAMESRV"))
    parser.add_argument(
        "--columns",
        help="comma list, e.g. queue_offset,body: Spark and read() read with a schema of only these",
    )
    parser.add_argument(
        "--scaling",
        action="store_true",
        help="instead: a Spark standalone cluster (2 workers), read rows/s with 1 worker vs 2",
    )
    args = parser.parse_args()
    body = run_scaling if args.scaling else run
    if args.namesrv:
        os.environ["ROCKETMQ_NAMESRV"] = args.namesrv
        body(args.namesrv, start_cluster(), args)
    else:
        with start_cluster(brokers=2) as cluster:
            body(cluster.namesrv_addr, cluster, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
