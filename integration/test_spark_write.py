"""The rocketmq sink on the real two-broker cluster: Spark writes, raw pulls (and the reader) read back.

Uses the run's one SparkSession (the ``spark`` fixture, local[2]). Topics have 8 queues on each
broker. Every test checks each written row arrives exactly once with its body, tags, keys and
properties, or that a refused send fails the Spark job with our typed error's text.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    MapType,
    StringType,
    StructField,
    StructType,
)

import spark_connector
from rocketmq_py import MessageExt
from rocketmq_py.producer._selectors import select_by_hash
from rocketmq_py.protocol import Message, MessageQueue
from rocketmq_py.testing import Cluster
from spark_connector._sink import deterministic_uniq_key

SCHEMA = StructType(
    [
        StructField("body", BinaryType()),
        StructField("tags", StringType()),
        StructField("keys", ArrayType(StringType())),
        StructField("properties", MapType(StringType(), StringType())),
    ]
)


@pytest.fixture(scope="module")
def rocketmq_format(spark: SparkSession) -> str:
    """Format ``rocketmq``, registered with the one obvious call."""
    spark_connector.register(spark)
    return "rocketmq"


def rows(n: int, prefix: str = "row") -> list[tuple[Any, ...]]:
    return [
        (
            f"{prefix}-{i}".encode(),
            f"Tag{i % 3}",
            [f"k{i}", f"order-{i % 7}"],
            {"seq": str(i), "source": "spark"},
        )
        for i in range(n)
    ]


def by_body(messages: list[MessageExt]) -> dict[bytes, MessageExt]:
    counts = Counter(m.body for m in messages)
    duplicates = {body: n for body, n in counts.items() if n > 1}
    assert not duplicates, f"delivered more than once: {list(duplicates)[:5]}"
    return {m.body: m for m in messages}


def read_topic(spark: SparkSession, fmt: str, cluster: Cluster, topic: str) -> list[Row]:
    return (
        spark.read.format(fmt)
        .option("namesrv", cluster.namesrv_addr)
        .option("topic", topic)
        .load()
        .select("topic", "msg_id", "tags", "keys", "body", "properties")
        .collect()
    )


def check_row(message: MessageExt, i: int, topic: str) -> None:
    assert message.topic == topic
    assert message.tags == f"Tag{i % 3}"
    assert message.keys == (f"k{i}", f"order-{i % 7}")
    assert message.properties["seq"] == str(i)
    assert message.properties["source"] == "spark"


def expected_keys(df: DataFrame, write_id: str) -> dict[bytes, str]:
    """body -> the deterministic UNIQ_KEY of its row: (partition, index in the partition)."""
    located = df.select(
        "body", F.spark_partition_id().alias("p"), F.monotonically_increasing_id().alias("id")
    ).collect()
    # monotonically_increasing_id is (partition << 33) + index within the partition
    return {r.body: deterministic_uniq_key(write_id, r.p, r.id & ((1 << 33) - 1)) for r in located}


async def test_batch_write_round_trip_with_deterministic_keys(
    spark: SparkSession,
    rocketmq_format: str,
    cluster: Cluster,
    create_topic: Callable[..., str],
    pull_all: Any,
) -> None:
    topic = create_topic(8, prefix="spark-w")
    n = 300
    df = spark.createDataFrame(rows(n), SCHEMA).repartition(3)
    df = df.localCheckpoint()  # a fixed partitioning, so the expected keys can be recomputed
    writer = (
        df.write.format(rocketmq_format)
        .mode("append")
        .option("namesrv", cluster.namesrv_addr)
        .option("topic", topic)
        .option("deterministicKeys", "true")
        .option("batchSize", "10")  # about 30 requests: both brokers take some
        .option("writeId", f"it-{topic}")
    )
    writer.save()

    stored = by_body(await pull_all(topic, expect=n))
    assert len(stored) == n
    keys = expected_keys(df, f"it-{topic}")
    for i in range(n):
        body = f"row-{i}".encode()
        check_row(stored[body], i, topic)
        assert stored[body].msg_id == keys[body]
    stores = Counter(m.store_host for m in stored.values())
    assert len(stores) == 2, f"both brokers take rows: {stores}"

    # The reader returns the same rows, columns and msgIds.
    read = read_topic(spark, rocketmq_format, cluster, topic)
    assert sorted(r.body for r in read) == sorted(stored)
    for r in read:
        i = int(r.properties["seq"])
        assert (r.topic, r.tags, list(r.keys), r.msg_id) == (
            topic,
            f"Tag{i % 3}",
            [f"k{i}", f"order-{i % 7}"],
            keys[r.body],
        )
        assert r.properties["source"] == "spark"

    # The same write again (a retried job): the same UNIQ_KEY for every row, so consumers can dedupe.
    writer.save()
    twice = await pull_all(topic, expect=2 * n)
    assert len(twice) == 2 * n
    ids: dict[bytes, set[str]] = {}
    for m in twice:
        ids.setdefault(m.body, set()).add(m.msg_id)
    assert all(ids[body] == {keys[body]} for body in ids)


async def test_a_namespace_writes_and_reads_the_wrapped_topic(
    spark: SparkSession,
    rocketmq_format: str,
    cluster: Cluster,
    create_topic: Callable[..., str],
    pull_all: Any,
) -> None:
    """Option ``namespace``: rows name the plain topic, the brokers store ``ns%topic``, the reader
    given the namespace reads it back and shows the plain name (as our clients and Java's do)."""
    wire = create_topic(2, prefix="sparkns%spark-ns")
    topic = wire.split("%", 1)[1]
    n = 40
    (
        spark.createDataFrame(rows(n, "ns"), SCHEMA)
        .write.format(rocketmq_format)
        .mode("append")
        .option("namesrv", cluster.namesrv_addr)
        .option("topic", topic)
        .option("namespace", "sparkns")
        .save()
    )
    stored = by_body(await pull_all(wire, expect=n))
    assert sorted(stored) == sorted(f"ns-{i}".encode() for i in range(n))
    assert {m.topic for m in stored.values()} == {wire}

    read = (
        spark.read.format(rocketmq_format)
        .option("namesrv", cluster.namesrv_addr)
        .option("topic", topic)
        .option("namespace", "sparkns")
        .load()
        .select("topic", "body")
        .collect()
    )
    assert sorted(r.body for r in read) == sorted(stored)
    assert {r.topic for r in read} == {topic}


@pytest.mark.direct_route(
    "a 5.x Proxy answers TRACE_ON=false unless configured: no record is written (test_proxy.py)"
)
async def test_enable_trace_writes_a_trace_record_per_send(
    spark: SparkSession,
    rocketmq_format: str,
    cluster: Cluster,
    create_topic: Callable[..., str],
    pull_all: Any,
) -> None:
    topic = create_topic(1, prefix="spark-trace")
    (
        spark.createDataFrame(rows(3, "traced"), SCHEMA)
        .coalesce(1)
        .write.format(rocketmq_format)
        .mode("append")
        .option("namesrv", cluster.namesrv_addr)
        .option("topic", topic)
        .option("producerGroup", "it-spark-trace-pg")
        .option("enableTrace", "true")
        .option("batchSize", "1")  # a batch send's one record is keyed by all its ids joined (as Java)
        .save()
    )
    stored = await pull_all(topic, expect=3)
    msg_id = stored[0].msg_id
    with trio.fail_after(60):  # the task flushed its records before it ended; the broker indexes them
        while True:
            output = (
                await trio.to_thread.run_sync(cluster.mqadmin, "queryMsgTraceById", "-i", msg_id)
            ).output
            if ["Pub", "it-spark-trace-pg"] in [line.split()[:2] for line in output.splitlines()]:
                break
            await trio.sleep(1)


async def test_sharding_key_rows_keep_their_queue_and_order(
    spark: SparkSession,
    rocketmq_format: str,
    cluster: Cluster,
    create_topic: Callable[..., str],
    pull_all: Any,
) -> None:
    topic = create_topic(8, prefix="spark-o")
    n = 400
    data = [(topic, f"{i % 4}:{i:05d}", f"order-{i % 4}", "OrderTag") for i in range(n)]
    df = spark.createDataFrame(data, "topic STRING, body STRING, sharding_key STRING, tags STRING").coalesce(
        1
    )
    df.write.format(rocketmq_format).mode("append").option("namesrv", cluster.namesrv_addr).save()

    stored = await pull_all(topic, expect=n)  # (broker, queue, offset) order
    assert len(stored) == n
    queues = sorted(
        {MessageQueue(topic, b, q) for b in ("broker-a", "broker-b") for q in range(8)}, key=_queue_order
    )
    for key in range(4):
        mine = [m for m in stored if m.body.startswith(f"{key}:".encode())]
        assert [m.body for m in mine] == [f"{key}:{i:05d}".encode() for i in range(key, n, 4)]
        home = select_by_hash(queues, Message(topic), f"order-{key}")
        assert {(m.store_host, m.queue_id) for m in mine} == {
            (_host(cluster, home.broker_name), home.queue_id)
        }
        assert {m.sharding_key for m in mine} == {f"order-{key}"}


def _queue_order(queue: MessageQueue) -> tuple[str, int]:
    return (queue.broker_name, queue.queue_id)


def _host(cluster: Cluster, broker_name: str) -> str:
    return cluster.broker_address(broker_name)


def _write_json(directory: Path, name: str, first: int, count: int) -> None:
    lines = [
        f'{{"body": "s-{i}", "tags": "Stream", "keys": ["sk{i}"], "properties": {{"n": "{i}"}}}}'
        for i in range(first, first + count)
    ]
    (directory / name).write_text("\n".join(lines) + "\n")


async def test_streaming_write_available_now_exactly_once_across_restarts(
    spark: SparkSession,
    rocketmq_format: str,
    cluster: Cluster,
    create_topic: Callable[..., str],
    pull_all: Any,
    tmp_path: Path,
) -> None:
    topic = create_topic(8, prefix="spark-s")
    source = tmp_path / "in"
    source.mkdir()
    _write_json(source, "a.json", 0, 150)
    _write_json(source, "b.json", 150, 150)
    schema = "body STRING, tags STRING, keys ARRAY<STRING>, properties MAP<STRING,STRING>"
    checkpoint = str(tmp_path / "checkpoint")

    def run_once() -> None:
        stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(str(source))
        query = (
            stream.writeStream.format(rocketmq_format)
            .option("namesrv", cluster.namesrv_addr)
            .option("topic", topic)
            .option("deterministicKeys", "true")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        assert query.exception() is None
        assert not query.isActive

    run_once()
    first = by_body(await pull_all(topic, expect=300))
    assert sorted(first) == sorted(f"s-{i}".encode() for i in range(300))
    for m in first.values():
        i = int(m.properties["n"])
        assert (m.tags, m.keys) == ("Stream", (f"sk{i}",))
    assert len({m.msg_id for m in first.values()}) == 300  # a key per row, across both batches

    _write_json(source, "c.json", 300, 100)
    run_once()  # resumes from the checkpoint: only the new file's rows are sent
    after = by_body(await pull_all(topic, expect=400, wait=5.0))
    assert sorted(after) == sorted(f"s-{i}".encode() for i in range(400))
    read = read_topic(spark, rocketmq_format, cluster, topic)
    assert sorted(r.body for r in read) == sorted(after)
    assert {r.body: r.msg_id for r in read} == {body: m.msg_id for body, m in after.items()}


def _failing_write(spark: SparkSession, fmt: str, namesrv: str, topic: str, body: bytes, **opts: str) -> str:
    df = spark.createDataFrame([(b"fine",), (body,)], "body BINARY").coalesce(1)
    writer = df.write.format(fmt).mode("append").option("namesrv", namesrv).option("topic", topic)
    for key, value in opts.items():
        writer = writer.option(key, value)
    with pytest.raises(Exception) as info:  # noqa: PT011 - Spark's wrapper class varies; the text matters
        writer.save()
    return str(info.value)


def test_an_oversized_body_fails_the_job_with_our_error(
    spark: SparkSession, rocketmq_format: str, cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(2, prefix="spark-f")
    text = _failing_write(spark, rocketmq_format, cluster.namesrv_addr, topic, b"x" * (4 * 1024 * 1024 + 1))
    assert "rocketmq_py.errors.MessageTooLarge" in text
    assert "above the maximum of 4194304 bytes" in text
    assert "rocketmq sink: sending row 1 of this task" in text


def test_a_body_the_broker_refuses_fails_the_job_with_the_broker_error(
    spark: SparkSession, rocketmq_format: str, cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(2, prefix="spark-f")
    body = os.urandom(5 * 1024 * 1024)  # random: zlib cannot bring it under the broker's 4 MiB
    text = _failing_write(
        spark, rocketmq_format, cluster.namesrv_addr, topic, body, maxMessageSize=str(8 * 1024 * 1024)
    )
    assert "rocketmq_py.errors.MessageIllegal" in text
    assert "broker answered code 13" in text


def test_a_missing_body_column_is_refused_before_any_task(
    spark: SparkSession, rocketmq_format: str, cluster: Cluster
) -> None:
    df = spark.createDataFrame([("x",)], "value STRING")
    with pytest.raises(Exception, match="needs a 'body' column"):
        df.write.format(rocketmq_format).mode("append").option("namesrv", cluster.namesrv_addr).option(
            "topic", "never-used"
        ).save()


@pytest.mark.direct_route(
    "normal and delay rows in one topic: a 5.x Proxy checks each message against the topic's one type"
)
async def test_delay_level_rows_go_through_the_brokers_schedule(
    spark: SparkSession,
    rocketmq_format: str,
    cluster: Cluster,
    create_topic: Callable[..., str],
    pull_all: Any,
) -> None:
    topic = create_topic(2, prefix="spark-d")
    data = [(f"late-{i}", 1 if i % 2 else None) for i in range(6)]  # level 1: one second
    df = spark.createDataFrame(data, "body STRING, delay_level INT").coalesce(1)
    df.write.format(rocketmq_format).mode("append").option("namesrv", cluster.namesrv_addr).option(
        "topic", topic
    ).save()
    stored = by_body(await pull_all(topic, expect=6, wait=30.0))
    assert sorted(stored) == sorted(f"late-{i}".encode() for i in range(6))
    for i in range(6):
        m = stored[f"late-{i}".encode()]
        if i % 2:  # re-stored from the broker's schedule topic, which records where it came from
            assert (m.properties["DELAY"], m.properties["REAL_TOPIC"]) == ("1", topic)
        else:
            assert "DELAY" not in m.properties


async def test_rows_naming_their_queue_go_there_in_order(
    spark: SparkSession,
    rocketmq_format: str,
    cluster: Cluster,
    create_topic: Callable[..., str],
    pull_all: Any,
) -> None:
    """``broker_name`` / ``queue_id`` (Kafka's ``partition`` column): pinned rows land in their
    queue in row order; rows with both null are spread by the producer as before (a batch of
    ``batchSize`` rows to a queue: 8 here, so that the 40 unpinned rows make five batches)."""
    topic = create_topic(4, prefix="spark-q")
    n = 120
    data = [
        (f"p{i:04d}", "broker-b", 2) if i % 3 else (f"f{i:04d}", None, None)  # every third row unpinned
        for i in range(n)
    ]
    df = spark.createDataFrame(data, "body STRING, broker_name STRING, queue_id INT").coalesce(1)
    df.write.format(rocketmq_format).mode("append").option("namesrv", cluster.namesrv_addr).option(
        "topic", topic
    ).option("batchSize", "8").save()
    stored = await pull_all(topic, expect=n)
    assert len(stored) == n
    pinned = [m for m in stored if m.body.startswith(b"p")]
    assert {(m.store_host, m.queue_id) for m in pinned} == {(_host(cluster, "broker-b"), 2)}
    assert [m.body for m in pinned] == [f"p{i:04d}".encode() for i in range(n) if i % 3]  # in row order
    free = {(m.store_host, m.queue_id) for m in stored if m.body.startswith(b"f")}
    assert len(free) > 1


async def test_a_read_dataframe_written_to_another_topic_keeps_its_queues(
    spark: SparkSession,
    rocketmq_format: str,
    cluster: Cluster,
    create_topic: Callable[..., str],
    pull_all: Any,
) -> None:
    """The reader's ``broker_name`` and ``queue_id`` columns are the sink's: a copy keeps each
    message in the same queue, as a Kafka-to-Kafka copy keeps ``partition``."""
    source = create_topic(4, prefix="spark-src")
    target = create_topic(4, prefix="spark-dst")
    (
        spark.createDataFrame([(f"m{i}",) for i in range(80)], "body STRING")
        .write.format(rocketmq_format)
        .mode("append")
        .option("namesrv", cluster.namesrv_addr)
        .option("topic", source)
        .save()
    )
    originals = {m.body: (m.store_host, m.queue_id) for m in await pull_all(source, expect=80)}
    read = (
        spark.read.format(rocketmq_format)
        .option("namesrv", cluster.namesrv_addr)
        .option("topic", source)
        .load()
    )
    read.select("body", "broker_name", "queue_id").write.format(rocketmq_format).mode("append").option(
        "namesrv", cluster.namesrv_addr
    ).option("topic", target).save()
    copies = {m.body: (m.store_host, m.queue_id) for m in await pull_all(target, expect=80)}
    assert copies == originals


def test_a_queue_the_topic_lacks_fails_the_job_naming_the_row(
    spark: SparkSession, rocketmq_format: str, cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(2, prefix="spark-q")
    df = spark.createDataFrame(
        [("ok", None, None), ("bad", "broker-a", 7)], "body STRING, broker_name STRING, queue_id INT"
    )
    with pytest.raises(Exception, match="has no writable queue broker-a/7") as info:
        df.coalesce(1).write.format(rocketmq_format).mode("append").option(
            "namesrv", cluster.namesrv_addr
        ).option("topic", topic).save()
    assert "rocketmq sink: sending row 1 of this task" in str(info.value)
