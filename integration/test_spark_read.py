"""Batch reads of ``format("rocketmq")`` against the real cluster, through the run's one SparkSession.

One topic with 8 queues on each of the two brokers is filled once for the module, in two phases
separated by a pause (for the timestamp tests). Every test reads it with different options and
checks the rows against what the producer was told and what raw PULL_MESSAGE requests return.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import trio
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import spark_connector
from rocketmq_py.consumer._allocate import allocate, sort_queues
from rocketmq_py.producer._producer import Producer
from rocketmq_py.protocol import Message, MessageQueue
from rocketmq_py.testing import Cluster, LocalCluster
from spark_connector._metadata import queue_states, run_with_api
from spark_connector._options import parse_read_options

QUEUES = 8  # per broker
PHASE = 120  # messages per phase
BROKERS = ("broker-a", "broker-b")


@dataclass(frozen=True)
class Sent:
    msg_id: str
    broker: str
    queue_id: int
    queue_offset: int
    body: bytes
    tag: str
    keys: tuple[str, ...]
    phase: int


@dataclass(frozen=True)
class Filled:
    topic: str
    sent: tuple[Sent, ...]
    boundary_ms: int  # every phase-0 message was stored before it, every phase-1 message after


@pytest.fixture(scope="module")
def filled(cluster: Cluster) -> Filled:
    topic = f"spark-r-{uuid.uuid4().hex[:10]}"
    cluster.create_topic(topic, QUEUES)
    sent: list[Sent] = []

    async def produce(phase: int) -> None:
        # Each message stored once: an attempt abandoned after the default attempt_timeout (1 s) and
        # retried may be stored too (CI: body-0 twice, 241 rows of 240 sent).
        async with Producer(
            "spark-read-it", namesrv=cluster.namesrv_addr, attempt_timeout=None, send_timeout=30.0
        ) as producer:
            for i in range(PHASE):
                n = phase * PHASE + i
                msg = Message(topic, f"body-{n}".encode(), tags=f"T{n % 3}", keys=[f"k{n}", f"odd{n % 2}"])
                r = await producer.send(msg)
                sent.append(
                    Sent(
                        r.msg_id,
                        r.queue.broker_name,
                        r.queue.queue_id,
                        r.queue_offset,
                        msg.body,
                        f"T{n % 3}",
                        (f"k{n}", f"odd{n % 2}"),
                        phase,
                    )
                )

    trio.run(produce, 0)
    time.sleep(1.0)
    boundary = int(time.time() * 1000)
    time.sleep(1.0)
    trio.run(produce, 1)
    return Filled(topic, tuple(sent), boundary)


@pytest.fixture(scope="module")
def fmt(spark: SparkSession) -> str:
    spark_connector.register(spark)
    return "rocketmq"


def read(spark: SparkSession, fmt: str, cluster: Cluster, topic: str, **options: str) -> DataFrame:
    reader = spark.read.format(fmt).option("namesrv", cluster.namesrv_addr).option("topic", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def ids(rows: list[Any]) -> Counter[str]:
    return Counter(r["msg_id"] for r in rows)


def test_reads_exactly_the_produced_messages(
    spark: SparkSession, fmt: str, cluster: Cluster, filled: Filled, pull_all: Any
) -> None:
    df = read(spark, fmt, cluster, filled.topic)
    assert df.schema == spark_connector.SPARK_SCHEMA
    rows = df.collect()
    assert ids(rows) == Counter(s.msg_id for s in filled.sent)  # every message once
    by_id = {r["msg_id"]: r for r in rows}
    for s in filled.sent:
        row = by_id[s.msg_id]
        assert (row["topic"], row["broker_name"], row["queue_id"], row["queue_offset"]) == (
            filled.topic,
            s.broker,
            s.queue_id,
            s.queue_offset,
        )
        assert row["body"] == s.body
        assert row["tags"] == s.tag
        assert tuple(row["keys"]) == s.keys
        assert row["properties"]["UNIQ_KEY"] == s.msg_id
        assert row["store_host"] == cluster.broker_address(s.broker)
        assert row["reconsume_times"] == 0
        assert row["sys_flag"] == 0
    # The other columns equal what raw PULL_MESSAGE requests decode.
    raw = {m.msg_id: m for m in trio.run(pull_all, filled.topic)}
    assert raw.keys() == by_id.keys()
    for msg_id, m in raw.items():
        row = by_id[msg_id]
        assert row["offset_msg_id"] == m.offset_msg_id
        assert row["born_host"] == m.born_host
        assert int(row["born_timestamp"].timestamp() * 1000) == m.born_timestamp  # session time zone is UTC
        assert int(row["store_timestamp"].timestamp() * 1000) == m.store_timestamp


def _queues_by_partition(df: DataFrame) -> dict[int, set[tuple[str, int]]]:
    found: dict[int, set[tuple[str, int]]] = defaultdict(set)
    for r in df.select(F.spark_partition_id().alias("p"), "broker_name", "queue_id").distinct().collect():
        found[r["p"]].add((r["broker_name"], r["queue_id"]))
    return dict(found)


@pytest.mark.parametrize(("strategy", "partitions"), [("AVG", 3), ("AVG_BY_CIRCLE", 5)])
def test_partitions_follow_the_allocation_strategy(
    spark: SparkSession, fmt: str, cluster: Cluster, filled: Filled, strategy: str, partitions: int
) -> None:
    df = read(spark, fmt, cluster, filled.topic, numPartitions=str(partitions), allocateStrategy=strategy)
    assert df.rdd.getNumPartitions() == partitions
    mq_all = sort_queues(MessageQueue(filled.topic, b, q) for b in BROKERS for q in range(QUEUES))
    cids = [f"spark-partition-{i:04d}" for i in range(partitions)]
    expected = {
        i: {(q.broker_name, q.queue_id) for q in allocate(strategy, "g", cid, mq_all, cids)}
        for i, cid in enumerate(cids)
    }
    used = {(s.broker, s.queue_id) for s in filled.sent}
    got = _queues_by_partition(df)
    assert got == {i: qs & used for i, qs in expected.items() if qs & used}
    assert df.count() == len(filled.sent)


def test_max_records_per_partition_splits_ranges(
    spark: SparkSession, fmt: str, cluster: Cluster, filled: Filled
) -> None:
    limit = 7
    df = read(spark, fmt, cluster, filled.topic, numPartitions="2", maxRecordsPerPartition=str(limit))
    per_queue = Counter((s.broker, s.queue_id) for s in filled.sent)
    mq_all = sort_queues(MessageQueue(filled.topic, b, q) for b in BROKERS for q in range(QUEUES))
    cids = ["spark-partition-0000", "spark-partition-0001"]
    per_cid = [
        max(
            1,
            -(
                -sum(per_queue[(q.broker_name, q.queue_id)] for q in allocate("AVG", "g", cid, mq_all, cids))
                // limit
            ),
        )
        for cid in cids
    ]
    expected_partitions = sum(per_cid)
    assert df.rdd.getNumPartitions() == expected_partitions
    sizes = df.groupBy(F.spark_partition_id().alias("p")).count().collect()
    assert max(r["count"] for r in sizes) <= limit
    rows = df.select("msg_id", "broker_name", "queue_id").collect()
    assert ids(rows) == Counter(s.msg_id for s in filled.sent)
    # The first consumer id's partitions come first and read only broker-a (AVG gives it queues 0-7 of
    # broker-a); the second's read only broker-b. Their counts follow each broker's message count.
    brokers_by_partition = {
        (r["p"] < per_cid[0], r["broker_name"])
        for r in df.select(F.spark_partition_id().alias("p"), "broker_name").collect()
    }
    assert brokers_by_partition == {(True, "broker-a"), (False, "broker-b")}


def test_min_partitions_cuts_the_queues_by_offset_range(
    spark: SparkSession, fmt: str, cluster: Cluster, filled: Filled
) -> None:
    """``minPartitions=40`` over 16 queues: 40 partitions, each queue's offsets in even pieces, every
    message once; with ``numPartitions=2`` each piece still reads one consumer's queues only."""
    df = read(spark, fmt, cluster, filled.topic, minPartitions="40")
    assert df.rdd.getNumPartitions() == 40
    rows = df.select("msg_id").collect()
    assert ids(rows) == Counter(s.msg_id for s in filled.sent)
    sizes = [r["count"] for r in df.groupBy(F.spark_partition_id().alias("p")).count().collect()]
    assert len(sizes) == 40  # every partition reads something
    two = read(spark, fmt, cluster, filled.topic, numPartitions="2", minPartitions="5")
    assert two.rdd.getNumPartitions() == 5
    brokers: defaultdict[int, set[str]] = defaultdict(set)
    for r in two.select(F.spark_partition_id().alias("p"), "broker_name").collect():
        brokers[r["p"]].add(r["broker_name"])
    assert all(len(names) == 1 for names in brokers.values())  # AVG: consumer 0 broker-a, 1 broker-b
    assert two.count() == len(filled.sent)


def test_assign_reads_only_the_named_queues(
    spark: SparkSession, fmt: str, cluster: Cluster, filled: Filled
) -> None:
    named = {("broker-a", 0), ("broker-a", 2), ("broker-b", 5)}
    assign = json.dumps({filled.topic: {"broker-a": [0, 2], "broker-b": [5]}})
    reader = spark.read.format(fmt).option("namesrv", cluster.namesrv_addr).option("assign", assign)
    rows = reader.load().select("msg_id", "broker_name", "queue_id").collect()
    assert ids(rows) == Counter(s.msg_id for s in filled.sent if (s.broker, s.queue_id) in named)
    missing = json.dumps({filled.topic: {"broker-a": [0, 99]}})
    with pytest.raises(Exception, match="assign") as info:
        spark.read.format(fmt).option("namesrv", cluster.namesrv_addr).option(
            "assign", missing
        ).load().collect()
    assert "SparkOptionError" in str(info.value)
    assert f"{filled.topic}/broker-a/99" in str(info.value)
    with pytest.raises(Exception, match="give exactly one of"):
        reader.option("topic", filled.topic).load().collect()


def test_timestamp_range(spark: SparkSession, fmt: str, cluster: Cluster, filled: Filled) -> None:
    late = read(spark, fmt, cluster, filled.topic, startingTimestamp=str(filled.boundary_ms)).collect()
    assert ids(late) == Counter(s.msg_id for s in filled.sent if s.phase == 1)
    early = read(spark, fmt, cluster, filled.topic, endingTimestamp=str(filled.boundary_ms)).collect()
    assert ids(early) == Counter(s.msg_id for s in filled.sent if s.phase == 0)
    # After every message: no queue matches. By default each starts at its latest offset, the
    # broker's own answer, so nothing is read (a 4.x broker's answer is each queue's last message:
    # the connector's correction makes it the max offset); with "error", as Kafka's default, the
    # query fails naming the queues.
    future = int(time.time() * 1000) + 3_600_000
    assert read(spark, fmt, cluster, filled.topic, startingTimestamp=str(future)).collect() == []
    with pytest.raises(Exception, match="NoOffsetForTimestampError") as info:
        read(
            spark,
            fmt,
            cluster,
            filled.topic,
            startingTimestamp=str(future),
            startingOffsetsByTimestampStrategy="error",
        ).collect()
    assert f"{filled.topic}/broker-a/0 (at or after {future})" in str(info.value)


def _times(topic: str, times: dict[tuple[str, int], int]) -> str:
    """``startingOffsetsByTimestamp`` JSON: ``{topic: {broker: {queueId: ms}}}``."""
    by_broker: dict[str, dict[str, int]] = defaultdict(dict)
    for (broker, queue_id), ms in times.items():
        by_broker[broker][str(queue_id)] = ms
    return json.dumps({topic: by_broker})


def test_offsets_by_timestamp_win_for_their_queues(
    spark: SparkSession, fmt: str, cluster: Cluster, filled: Filled
) -> None:
    """``startingOffsetsByTimestamp`` starts the queues it names by time; ``startingOffsets`` rules
    the others (Kafka's precedence); ``endingOffsetsByTimestamp`` ends its queues by time."""
    timed = {("broker-a", 0): filled.boundary_ms, ("broker-b", 3): filled.boundary_ms}
    rows = read(
        spark,
        fmt,
        cluster,
        filled.topic,
        startingOffsetsByTimestamp=_times(filled.topic, timed),
        startingOffsets="latest",  # every other queue: nothing
    ).collect()
    assert ids(rows) == Counter(
        s.msg_id for s in filled.sent if (s.broker, s.queue_id) in timed and s.phase == 1
    )

    ended = read(
        spark,
        fmt,
        cluster,
        filled.topic,
        endingOffsetsByTimestamp=_times(filled.topic, {("broker-b", 1): filled.boundary_ms}),
    ).collect()
    assert ids(ended) == Counter(
        s.msg_id for s in filled.sent if (s.broker, s.queue_id) != ("broker-b", 1) or s.phase == 0
    )


def test_the_global_time_wins_over_the_offset_options(
    spark: SparkSession, fmt: str, cluster: Cluster, filled: Filled
) -> None:
    rows = read(
        spark,
        fmt,
        cluster,
        filled.topic,
        startingTimestamp=str(filled.boundary_ms),
        startingOffsetsByTimestamp=_times(filled.topic, {("broker-a", 0): 0}),
        startingOffsets="earliest",
    ).collect()
    assert ids(rows) == Counter(s.msg_id for s in filled.sent if s.phase == 1)


def test_a_queue_time_no_message_matches(
    spark: SparkSession, fmt: str, cluster: Cluster, filled: Filled
) -> None:
    future = int(time.time() * 1000) + 3_600_000
    spec = _times(filled.topic, {("broker-b", 2): future, ("broker-a", 1): filled.boundary_ms})
    with pytest.raises(Exception, match="NoOffsetForTimestampError") as info:
        read(
            spark,
            fmt,
            cluster,
            filled.topic,
            startingOffsetsByTimestamp=spec,
            startingOffsetsByTimestampStrategy="error",
        ).collect()
    assert f"{filled.topic}/broker-b/2" in str(info.value)
    assert f"{filled.topic}/broker-a/1" not in str(info.value)
    rows = read(spark, fmt, cluster, filled.topic, startingOffsetsByTimestamp=spec).collect()  # latest
    assert ids(rows) == Counter(
        s.msg_id
        for s in filled.sent
        if (s.broker, s.queue_id) != ("broker-b", 2)
        and ((s.broker, s.queue_id) != ("broker-a", 1) or s.phase == 1)
    )


def test_filters_narrow_the_read(spark: SparkSession, fmt: str, cluster: Cluster, filled: Filled) -> None:
    df = read(spark, fmt, cluster, filled.topic)
    boundary = F.lit(filled.boundary_ms / 1000).cast("timestamp")
    picked = df.where(
        (F.col("broker_name") == "broker-b") & (F.col("queue_id").isin(1, 2)) & (F.col("queue_offset") >= 3)
    ).where(F.col("store_timestamp") >= boundary)
    expected = {
        s.msg_id
        for s in filled.sent
        if s.broker == "broker-b" and s.queue_id in (1, 2) and s.queue_offset >= 3 and s.phase == 1
    }
    assert {r["msg_id"] for r in picked.collect()} == expected
    # The source took the queue and offset predicates: Spark's own Filter keeps only the timestamp one.
    spark_filter = picked._jdf.queryExecution().executedPlan().toString().split("BatchScan")[0]
    assert re.search(r"store_timestamp#\d+ >= ", spark_filter)
    assert not re.search(r"queue_offset#\d+L? >= 3|broker_name#\d+ = broker-b|queue_id#\d+ IN", spark_filter)


@pytest.mark.parametrize(
    "source",
    [spark_connector.RocketMQDataSource, spark_connector.RocketMQPushdownDataSource],
    ids=["RocketMQDataSource", "RocketMQPushdownDataSource"],
)
def test_a_plain_registration_reads_the_same_with_pushdown_on_or_off(
    spark: SparkSession, fmt: str, cluster: Cluster, filled: Filled, source: type[Any]
) -> None:
    """``spark.dataSource.register(source)`` alone: the session's pushdown setting decides, never the class.

    With ``spark.sql.python.filterPushdown.enabled`` off (pyspark's default) the read pulls whole
    ranges and Spark filters the rows; with it on the source takes the queue and offset predicates.
    The rows are the same.
    """
    boundary = F.lit(filled.boundary_ms / 1000).cast("timestamp")
    expected = {
        s.msg_id
        for s in filled.sent
        if s.broker == "broker-b" and s.queue_id in (1, 2) and s.queue_offset >= 3 and s.phase == 1
    }
    rows: dict[bool, list[Any]] = {}
    try:
        spark.dataSource.register(source)  # the plain PySpark way: no spark_connector.register
        for pushdown in (False, True):
            spark.conf.set(spark_connector.PUSHDOWN_CONF, str(pushdown).lower())
            picked = (
                read(spark, fmt, cluster, filled.topic)
                .where(
                    (F.col("broker_name") == "broker-b")
                    & (F.col("queue_id").isin(1, 2))
                    & (F.col("queue_offset") >= 3)
                )
                .where(F.col("store_timestamp") >= boundary)
            )
            rows[pushdown] = sorted(picked.collect(), key=lambda r: (r["queue_id"], r["queue_offset"]))
            spark_filter = picked._jdf.queryExecution().executedPlan().toString().split("BatchScan")[0]
            queue_predicates = re.findall(
                r"queue_offset#\d+L? >= 3|broker_name#\d+ = broker-b|queue_id#\d+ IN", spark_filter
            )
            assert len(queue_predicates) == (0 if pushdown else 3), spark_filter
    finally:
        spark_connector.register(spark)  # as the module's other tests expect it
    assert {r["msg_id"] for r in rows[False]} == expected
    assert rows[True] == rows[False]


def test_sub_expression(spark: SparkSession, fmt: str, cluster: Cluster, filled: Filled) -> None:
    rows = read(spark, fmt, cluster, filled.topic, subExpression="T0 || T2").collect()
    assert ids(rows) == Counter(s.msg_id for s in filled.sent if s.tag in ("T0", "T2"))


def test_json_offsets(spark: SparkSession, fmt: str, cluster: Cluster, filled: Filled) -> None:
    start = f'{{"{filled.topic}": {{"broker-a": {{"0": 2, "1": -1}}}}}}'
    end = f'{{"{filled.topic}": {{"broker-a": {{"0": 5}}, "broker-b": {{"0": 1}}}}}}'
    rows = read(spark, fmt, cluster, filled.topic, startingOffsets=start, endingOffsets=end).collect()

    def wanted(s: Sent) -> bool:
        if (s.broker, s.queue_id) == ("broker-a", 0):
            return 2 <= s.queue_offset < 5
        if (s.broker, s.queue_id) == ("broker-a", 1):
            return False
        if (s.broker, s.queue_id) == ("broker-b", 0):
            return s.queue_offset < 1
        return True

    assert ids(rows) == Counter(s.msg_id for s in filled.sent if wanted(s))


def test_bad_option_is_named(spark: SparkSession, fmt: str, cluster: Cluster, filled: Filled) -> None:
    with pytest.raises(Exception, match="numPartitions") as info:
        read(spark, fmt, cluster, filled.topic, numPartitions="many").collect()
    assert "SparkOptionError" in str(info.value)


def test_a_schema_picks_the_columns(spark: SparkSession, fmt: str, cluster: Cluster, filled: Filled) -> None:
    """``.schema(...)`` with some columns: those, in its order, with the full read's values."""

    def reader() -> Any:
        return spark.read.format(fmt).option("namesrv", cluster.namesrv_addr).option("topic", filled.topic)

    df = reader().schema("queue_offset BIGINT, body BINARY, broker_name STRING").load()
    assert df.columns == ["queue_offset", "body", "broker_name"]
    rows = df.collect()
    assert Counter((r["broker_name"], r["queue_offset"], r["body"]) for r in rows) == Counter(
        (s.broker, s.queue_offset, s.body) for s in filled.sent
    )
    with pytest.raises(Exception, match="queue_offset BIGINT") as info:
        reader().schema("queue_offset INT").load().collect()
    assert "SparkSchemaError" in str(info.value)


# --- failOnDataLoss: a dedicated one-broker cluster whose oldest commit-log files are deleted ----------

# Small commit-log files, kept for 0 hours: `mqadmin deleteExpiredCommitLog` then deletes every full
# file on the broker's next clean-up pass (the first one runs 60 s after start), and the consume
# queue's minimum offset moves up with it, exactly as when retention expires on a real broker.
_LOSSY_BROKER = {
    "mappedFileSizeCommitLog": str(64 * 1024),
    "fileReservedTime": "0",
    "cleanResourceInterval": "1000",
    "deleteCommitLogFilesInterval": "10",
    "destroyMapedFileIntervalForcibly": "1000",
}


@dataclass(frozen=True)
class Lossy:
    namesrv: str
    topic: str
    min_offset: int
    max_offset: int
    #: The queue's minimum now: the broker keeps deleting expired files, one per clean-up pass.
    current_min: Callable[[], int]


class _LossyCluster:
    """A one-broker cluster that deletes its commit-log files as soon as it may, filled in a thread.

    A broker's first clean-up pass comes 60 s after it starts (the store's fixed initial delay), so
    it is started as the module begins and that minute passes during the other reads.
    """

    def __init__(self, version: str) -> None:
        self.version = version
        self.own: LocalCluster | None = None
        self.topic = f"spark-loss-{uuid.uuid4().hex[:8]}"
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._start, name="lossy-cluster", daemon=True)
        self.thread.start()

    def _start(self) -> None:
        try:
            self.own = LocalCluster(1, version=self.version, broker_config=_LOSSY_BROKER).start()
            self.own.create_topic(self.topic, 1)

            async def produce() -> None:
                assert self.own is not None
                async with Producer("spark-loss-it", namesrv=self.own.namesrv_addr) as producer:
                    for _ in range(300):
                        await producer.send(Message(self.topic, b"x" * 1000))

            trio.run(produce)
            self.own.mqadmin("deleteExpiredCommitLog", "-c", "DefaultCluster").check()
        except BaseException as exc:  # re-raised in the test that needs the cluster
            self.error = exc

    def ready(self) -> LocalCluster:
        self.thread.join(timeout=300)
        if self.error is not None:
            raise self.error
        assert self.own is not None, "the lossy cluster did not start within 300 s"
        return self.own

    def stop(self) -> None:
        self.thread.join(timeout=300)
        if self.own is not None:
            self.own.stop()


@pytest.fixture(scope="module", autouse=True)
def _lossy_cluster(request: pytest.FixtureRequest, cluster: Cluster) -> Iterator[_LossyCluster | None]:
    """Start the lossy cluster as the module begins, when a selected test will read it."""
    if not any("lossy" in getattr(item, "fixturenames", ()) for item in request.session.items):
        yield None
        return
    starting = _LossyCluster(cluster.version)
    yield starting
    starting.stop()


@pytest.fixture(scope="module")
def lossy(_lossy_cluster: _LossyCluster | None) -> Lossy:
    assert _lossy_cluster is not None
    own, topic = _lossy_cluster.ready(), _lossy_cluster.topic
    options = parse_read_options({"namesrv": own.namesrv_addr, "topic": topic}, streaming=False)

    async def bounds(api: Any) -> Any:
        return (await queue_states(api, options, [topic]))[0]

    deadline = time.monotonic() + 180
    state = run_with_api(options, bounds)
    while state.min_offset == 0 and time.monotonic() < deadline:
        time.sleep(2)
        state = run_with_api(options, bounds)
    assert state.min_offset > 0, "the broker did not delete its expired commit-log files"
    return Lossy(
        own.namesrv_addr,
        topic,
        state.min_offset,
        state.max_offset,
        lambda: int(run_with_api(options, bounds).min_offset),
    )


def test_fail_on_data_loss(spark: SparkSession, fmt: str, lossy: Lossy) -> None:
    start = f'{{"{lossy.topic}": {{"broker-a": {{"0": 0}}}}}}'
    df = (
        spark.read.format(fmt)
        .option("namesrv", lossy.namesrv)
        .option("topic", lossy.topic)
        .option("startingOffsets", start)
        .load()
    )
    with pytest.raises(Exception, match="DataLossError") as info:
        df.collect()
    assert f"{lossy.topic}/broker-a/0: offset 0 requested" in str(info.value)


def test_skip_data_loss(spark: SparkSession, fmt: str, lossy: Lossy) -> None:
    start = f'{{"{lossy.topic}": {{"broker-a": {{"0": 0}}}}}}'
    rows = (
        spark.read.format(fmt)
        .option("namesrv", lossy.namesrv)
        .option("topic", lossy.topic)
        .option("startingOffsets", start)
        .option("failOnDataLoss", "false")
        .load()
        .select("queue_offset")
        .collect()
    )
    offsets = sorted(r["queue_offset"] for r in rows)
    # Every offset still stored, from wherever the minimum was when the queue was read, to the end.
    assert offsets == list(range(offsets[0], lossy.max_offset))
    assert lossy.min_offset <= offsets[0] <= lossy.current_min()


def _pyspark_file(_: Any) -> str:
    import pyspark

    return str(pyspark.__file__)


def test_python_workers_import_the_installed_pyspark(spark: SparkSession) -> None:
    """The run's session gives its workers :func:`rocketmq_py.testing.worker_python`: they import
    pyspark from the installed package (compiled), not from Spark's zip (compiled at each start,
    0.9 CPU-s, inside Spark's fixed 10 s for a stream's source runner to connect back)."""
    [path] = spark.sparkContext.parallelize([0], 1).map(_pyspark_file).collect()
    assert ".zip" not in path, path
