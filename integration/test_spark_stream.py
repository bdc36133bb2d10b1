"""Streaming reads of ``format("rocketmq")`` against the real cluster (the run's one SparkSession).

A ``Trigger.AvailableNow`` query with ``maxRecordsPerBatch`` reads a filled topic in bounded
micro-batches, every message exactly once; restarted on the same checkpoint after more messages
arrive, it reads only those; with ``commitToGroup`` the group's stored offsets follow the query.
"""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import trio
from pyspark.sql import DataFrame, SparkSession

import spark_connector
from integration._spark_streams import start_stream
from rocketmq_py._client._api import RemotingApi
from rocketmq_py._transport import ConnectionPool
from rocketmq_py.producer._producer import Producer
from rocketmq_py.protocol import Message
from rocketmq_py.testing import Cluster

QUEUES = 8
MAX_PER_BATCH = 12


def produce(cluster: Cluster, topic: str, start: int, count: int) -> list[str]:
    ids: list[str] = []

    async def run() -> None:
        async with Producer("spark-stream-it", namesrv=cluster.namesrv_addr) as producer:
            for i in range(start, start + count):
                ids.append((await producer.send(Message(topic, f"m{i}".encode(), tags="S"))).msg_id)

    trio.run(run)
    return ids


Row = tuple[str, str, int, int]  # msg_id, broker, queue id, queue offset


def run_available_now(
    spark: SparkSession, cluster: Cluster, topic: str, checkpoint: Path, group: str
) -> list[tuple[int, list[Row]]]:
    """Run the query to completion; returns (batch id, rows) per non-empty micro-batch."""
    batches: list[tuple[int, list[Row]]] = []

    def collect(df: DataFrame, batch_id: int) -> None:
        rows = [
            (r["msg_id"], r["broker_name"], r["queue_id"], r["queue_offset"])
            for r in df.select("msg_id", "broker_name", "queue_id", "queue_offset").collect()
        ]
        if rows:
            batches.append((batch_id, rows))

    stream = (
        spark.readStream.format("rocketmq")
        .option("namesrv", cluster.namesrv_addr)
        .option("topic", topic)
        .option("startingOffsets", "earliest")
        .option("maxRecordsPerBatch", str(MAX_PER_BATCH))
        .option("commitToGroup", group)
        .load()
    )
    query = start_stream(
        lambda: (
            stream.writeStream.foreachBatch(collect)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
    )
    query.awaitTermination(timeout=300)
    assert not query.isActive
    assert query.exception() is None
    return batches


def group_offsets(cluster: Cluster, topic: str, group: str) -> dict[tuple[str, int], int]:
    async def run() -> dict[tuple[str, int], int]:
        async with ConnectionPool() as pool:
            api = RemotingApi(pool, timeout=10)
            found = {}
            for broker in ("broker-a", "broker-b"):
                address = cluster.broker_address(broker)
                for q in range(QUEUES):
                    found[(broker, q)] = await api.query_consumer_offset(address, group, topic, q, broker)
            return found

    return trio.run(run)


def ends(batches: list[tuple[int, list[Row]]]) -> dict[tuple[str, int], int]:
    """Per queue, the offset after the last message of ``batches`` (0 when none was read)."""
    found = {(b, q): 0 for b in ("broker-a", "broker-b") for q in range(QUEUES)}
    for _, rows in batches:
        for _, broker, queue_id, offset in rows:
            found[(broker, queue_id)] = max(found[(broker, queue_id)], offset + 1)
    return found


def test_available_now_bounded_batches_restart_and_group_offsets(
    spark: SparkSession, cluster: Cluster, tmp_path: Path, create_topic: Any
) -> None:
    spark_connector.register(spark)
    topic = create_topic(QUEUES, prefix="spark-s")
    group = f"spark-s-group-{uuid.uuid4().hex[:8]}"
    first = produce(cluster, topic, 0, 50)
    checkpoint = tmp_path / "checkpoint"

    batches = run_available_now(spark, cluster, topic, checkpoint, group)
    seen = [row[0] for _, rows in batches for row in rows]
    assert Counter(seen) == Counter(first)  # every message exactly once
    assert all(len(rows) <= MAX_PER_BATCH for _, rows in batches)
    assert len(batches) == -(-50 // MAX_PER_BATCH)  # admission control, not one big batch
    # Spark commits a batch to the source when it plans the next one with data, so the group's
    # offsets are those at the end of the second-to-last batch (Spark's Kafka source commits alike).
    assert group_offsets(cluster, topic, group) == ends(batches[:-1])

    second = produce(cluster, topic, 50, 20)
    again = run_available_now(spark, cluster, topic, checkpoint, group)
    assert Counter(row[0] for _, rows in again for row in rows) == Counter(second)  # only the new ones
    assert min(batch_id for batch_id, _ in again) > max(batch_id for batch_id, _ in batches)
    assert all(len(rows) <= MAX_PER_BATCH for _, rows in again)
    assert group_offsets(cluster, topic, group) == ends(batches + again[:-1])
