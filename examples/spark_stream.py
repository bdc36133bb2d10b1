"""Stream one RocketMQ topic into another with Spark Structured Streaming and the ``rocketmq`` source/sink.

    python examples/spark_stream.py

Uses the cluster named by ROCKETMQ_NAMESRV, or starts a local two-broker cluster. Stores 1,000
messages in a source topic, then runs a query that upper-cases each body and writes it to a
second topic, with ``trigger(availableNow=True)`` and ``maxRecordsPerBatch=300`` (so it reads
what exists in micro-batches of at most 300 rows and stops). Then stores 500 more messages and
runs the query again from the same checkpoint: it reads only the new ones. The sink's
``deterministicKeys`` gives each output row a msgId derived from (query, batch, partition, row),
so a replayed batch would send the same ids again. Last, a batch read counts the output topic.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import trio

from rocketmq_py import Message, Producer
from rocketmq_py.testing import start_cluster


async def fill(namesrv: str, topic: str, first: int, count: int) -> None:
    numbers = iter(range(first, first + count))
    async with Producer("example-stream-fill", namesrv=namesrv) as producer:

        async def sender() -> None:
            for i in numbers:
                await producer.send(Message(topic, f"event {i}".encode(), tags="Event", keys=[f"e{i}"]))

        async with trio.open_nursery() as nursery:
            for _ in range(16):
                nursery.start_soon(sender)


def run_query(spark: object, namesrv: str, source: str, sink: str, checkpoint: str) -> list[int]:
    """One availableNow run of the query; returns the rows of each micro-batch it ran."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    assert isinstance(spark, SparkSession)
    stream = (
        spark.readStream.format("rocketmq")
        .option("namesrv", namesrv)
        .option("topic", source)
        .option("startingOffsets", "earliest")  # for a new checkpoint only; a restart resumes
        .option("maxRecordsPerBatch", "300")
        .load()
    )
    query = (
        stream.select(F.upper(F.col("body").cast("string")).alias("body"), "tags", "keys")
        .writeStream.format("rocketmq")
        .option("namesrv", namesrv)
        .option("topic", sink)
        .option("deterministicKeys", "true")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


def main() -> int:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Spark's Python workers need this venv
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no traffic off loopback
    from pyspark.sql import SparkSession

    import spark_connector

    with start_cluster(brokers=2) as cluster, tempfile.TemporaryDirectory() as workdir:
        namesrv = cluster.namesrv_addr
        stamp = int(time.time())
        source, sink = f"StreamSource{stamp}", f"StreamSink{stamp}"
        cluster.create_topic(source, queues=4)
        cluster.create_topic(sink, queues=4)
        trio.run(fill, namesrv, source, 0, 1000)
        print(f"stored 1000 messages in {source}")

        spark = (
            SparkSession.builder.master("local[2]")
            # Stay on loopback: the driver and its block manager bind to 127.0.0.1 (with SPARK_LOCAL_IP).
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .appName("rocketmq-stream")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "4")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        try:
            spark_connector.register(spark)
            checkpoint = os.path.join(workdir, "checkpoint")
            print(f"first run, micro-batch sizes: {run_query(spark, namesrv, source, sink, checkpoint)}")
            trio.run(fill, namesrv, source, 1000, 500)
            print("stored 500 more messages")
            print(
                f"second run (resumed), micro-batch sizes: {run_query(spark, namesrv, source, sink, checkpoint)}"
            )
            out = spark.read.format("rocketmq").option("namesrv", namesrv).option("topic", sink).load()
            rows, ids = out.count(), out.select("msg_id").distinct().count()
            print(f"{sink} holds {rows} messages with {ids} distinct msgIds")
            out.selectExpr("CAST(body AS STRING) AS body", "msg_id").show(3, False)
        finally:
            spark.stop()
        return 0 if rows == 1500 == ids else 1


if __name__ == "__main__":
    sys.exit(main())
