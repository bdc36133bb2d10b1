"""Streaming reads of ``format("rocketmq")`` against the real cluster (the run's one SparkSession).

A ``Trigger.AvailableNow`` query with ``maxRecordsPerBatch`` reads a filled topic in bounded
micro-batches, every message exactly once; restarted on the same checkpoint after more messages
arrive, it reads only those; with ``commitToGroup`` the group's stored offsets follow the query.
``maxRecordsPerBatch`` splits a batch over the queues by their backlog and the progress reports
the latest offsets; ``minOffsetsPerTrigger`` holds batches back until enough records are new or
``maxTriggerDelay`` has passed.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import uuid
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import trio
from pyspark.sql import DataFrame, SparkSession

import spark_connector
from integration._spark_streams import drain_available_now, start_stream
from rocketmq_py._client._api import RemotingApi
from rocketmq_py._transport import ConnectionPool
from rocketmq_py.producer._producer import Producer
from rocketmq_py.protocol import Message, MessageQueue
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
    query = drain_available_now(stream, checkpoint, collect)
    assert not query.isActive
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


def produce_to(cluster: Cluster, topic: str, counts: dict[tuple[str, int], int], prefix: str = "q") -> None:
    """Send ``counts[(broker, queue_id)]`` messages to each of those queues."""

    async def run() -> None:
        async with Producer("spark-stream-it", namesrv=cluster.namesrv_addr) as producer:
            for (broker, queue_id), n in counts.items():
                queue = MessageQueue(topic, broker, queue_id)
                for i in range(n):
                    await producer.send(
                        Message(topic, f"{prefix}-{broker}-{queue_id}-{i}".encode()), queue=queue
                    )

    trio.run(run)


def _offsets(value: Any) -> dict[str, int]:
    """An offset of the progress (a JSON string or already a dict)."""
    return {str(k): int(v) for k, v in (json.loads(value) if isinstance(value, str) else value).items()}


def test_max_records_per_batch_follows_the_backlogs_and_the_progress_shows_the_latest(
    spark: SparkSession, cluster: Cluster, tmp_path: Path, create_topic: Any
) -> None:
    """Backlogs of 90 and 10 with ``maxRecordsPerBatch=20``: each batch reads 18 and 2 (Kafka's
    ``maxOffsetsPerTrigger`` split), not 10 and 10; each progress reports the latest offsets (the
    availableNow target) next to the batch's end, so the query's backlog shows."""
    spark_connector.register(spark)
    topic = create_topic(2, prefix="spark-share")
    produce_to(cluster, topic, {("broker-a", 0): 90, ("broker-a", 1): 10})
    per_batch: list[Counter[tuple[str, int]]] = []

    def collect(df: DataFrame, batch_id: int) -> None:
        found = Counter(
            (r["broker_name"], r["queue_id"]) for r in df.select("broker_name", "queue_id").collect()
        )
        if found:
            per_batch.append(found)

    stream = (
        spark.readStream.format("rocketmq")
        .option("namesrv", cluster.namesrv_addr)
        .option("topic", topic)
        .option("startingOffsets", "earliest")
        .option("maxRecordsPerBatch", "20")
        .load()
    )
    query = drain_available_now(stream, tmp_path / "checkpoint", collect)
    assert per_batch == [Counter({("broker-a", 0): 18, ("broker-a", 1): 2})] * 5
    a0, a1 = f"{topic}/broker-a/0", f"{topic}/broker-a/1"
    progress = [p for p in query.recentProgress if p["numInputRows"] > 0]
    first = progress[0]["sources"][0]
    assert _offsets(first["endOffset"])[a0] == 18
    assert _offsets(first["latestOffset"])[a0] == 90  # 72 records behind after the first batch
    assert _offsets(first["latestOffset"])[a1] == 10
    last = progress[-1]["sources"][0]
    assert _offsets(last["endOffset"])[a0] == _offsets(last["latestOffset"])[a0] == 90


def _batch_starts(query: Any) -> list[tuple[float, int]]:
    """(start, rows) of each batch that read rows, from the query's progress: a trigger's timestamp
    is when it began, just before it asked the source for its latest offsets (where the source
    holds a batch back), unlike the moment the batch's sink ran, which comes after its work."""
    found = [
        (datetime.fromisoformat(p.timestamp.replace("Z", "+00:00")).timestamp(), p.numInputRows)
        for p in query.recentProgress
        if p.numInputRows
    ]
    return sorted(found)


def test_min_offsets_per_trigger_holds_batches_until_enough_records_or_the_delay(
    spark: SparkSession, cluster: Cluster, tmp_path: Path, create_topic: Any
) -> None:
    """A running query (processing-time trigger, 0.5 s): the first batch goes at once; then 10 new
    records wait (30 needed, 20 s delay); 25 more make a batch; a last few wait out the delay.

    The waits are judged on the batches' start times from the query's progress, not on when each
    batch's sink ran: a batch held back for the delay starts at least the delay after the last one
    that read rows (the source's own rule, with its clock)."""
    spark_connector.register(spark)
    topic = create_topic(1, prefix="spark-min")
    produce_to(cluster, topic, {("broker-a", 0): 5}, prefix="first")
    rows_seen: list[int] = []
    lock = threading.Lock()

    def collect(df: DataFrame, batch_id: int) -> None:
        rows = df.count()
        if rows:
            with lock:
                rows_seen.append(rows)

    def wait_for(count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with lock:
                if len(rows_seen) >= count:
                    return
            assert query.exception() is None
            time.sleep(0.2)
        raise AssertionError(f"{count} batches with rows expected within {timeout} s, got {rows_seen}")

    delay = 20.0
    stream = (
        spark.readStream.format("rocketmq")
        .option("namesrv", cluster.namesrv_addr)
        .option("topic", topic)
        .option("startingOffsets", "earliest")
        .option("minOffsetsPerTrigger", "30")
        .option("maxTriggerDelay", f"{int(delay)}s")
        .load()
    )
    query = start_stream(
        lambda: (
            stream.writeStream.foreachBatch(collect)
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(processingTime="500 milliseconds")
            .start()
        )
    )
    try:
        wait_for(1, 120)
        assert rows_seen == [5]  # the first batch does not wait for the minimum
        produce_to(cluster, topic, {("broker-a", 0): 10}, prefix="few")
        time.sleep(5)
        assert rows_seen == [5]  # 10 new of 30, and the delay not over: held back
        produce_to(cluster, topic, {("broker-a", 0): 25}, prefix="enough")
        wait_for(2, 60)
        if sum(rows_seen) < 40:  # the last records of the 25 arrived after the batch: they wait out the delay
            wait_for(3, delay + 60)
        produce_to(cluster, topic, {("broker-a", 0): 3}, prefix="late")
        wait_for(len(rows_seen) + 1, delay + 60)
        assert rows_seen[-1] == 3
    finally:
        query.stop()
    assert sum(rows_seen) == 43
    starts = _batch_starts(query)
    assert [rows for _, rows in starts] == rows_seen
    assert rows_seen[1] >= 30
    assert starts[1][0] - starts[0][0] < delay  # went for the records, not the delay
    for (before, _), (after, rows) in itertools.pairwise(starts[1:]):
        assert after - before >= delay - 1, (rows, after - before)  # held back for the delay


def test_assign_and_min_partitions_in_a_stream(
    spark: SparkSession, cluster: Cluster, tmp_path: Path, create_topic: Any
) -> None:
    """A stream of two assigned queues reads those only, each micro-batch in at least
    ``minPartitions`` partitions, cut by offset range."""
    spark_connector.register(spark)
    topic = create_topic(4, prefix="spark-assign")
    produce_to(cluster, topic, {("broker-a", 1): 30, ("broker-b", 2): 10, ("broker-a", 0): 7})
    batches: list[tuple[int, Counter[tuple[str, int]]]] = []

    def collect(df: DataFrame, batch_id: int) -> None:
        found = Counter(
            (r["broker_name"], r["queue_id"]) for r in df.select("broker_name", "queue_id").collect()
        )
        if found:
            batches.append((df.rdd.getNumPartitions(), found))

    stream = (
        spark.readStream.format("rocketmq")
        .option("namesrv", cluster.namesrv_addr)
        .option("assign", json.dumps({topic: {"broker-a": [1], "broker-b": [2]}}))
        .option("startingOffsets", "earliest")
        .option("minPartitions", "4")
        .load()
    )
    drain_available_now(stream, tmp_path / "checkpoint", collect)
    assert sum((found for _, found in batches), Counter()) == Counter(
        {("broker-a", 1): 30, ("broker-b", 2): 10}
    )
    assert all(partitions >= 4 for partitions, _ in batches)
