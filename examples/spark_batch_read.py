"""Read a RocketMQ topic as a Spark DataFrame (and write one back), with the ``rocketmq`` data source.

    python examples/spark_batch_read.py

Uses the cluster named by ROCKETMQ_NAMESRV, or starts a local two-broker cluster. Stores 2,000
messages in a topic with 4 queues on each broker, then in a local[2] SparkSession:

* reads the whole topic in 3 Spark partitions, each playing one consumer of the averagely
  allocation strategy, and counts rows per partition and queue;
* filters on tags and on ``queue_id`` (the filter on queue_id narrows the ranges pulled);
* writes the upper-cased ``TagA`` rows to a second topic with the sink, and reads that back.
"""

from __future__ import annotations

import os
import sys
import time

import trio

from rocketmq_py import Message, Producer
from rocketmq_py.testing import start_cluster

COUNT = 2_000


async def fill(namesrv: str, topic: str) -> None:
    """Single sends, 16 in flight."""
    numbers = iter(range(COUNT))
    async with Producer("example-fill", namesrv=namesrv) as producer:

        async def sender() -> None:
            for i in numbers:
                tags = "TagA" if i % 4 == 0 else "TagB"
                await producer.send(Message(topic, f"message {i}".encode(), tags=tags, keys=[f"k{i}"]))

        async with trio.open_nursery() as nursery:
            for _ in range(16):
                nursery.start_soon(sender)


def run_spark(namesrv: str, topic: str, copy_topic: str) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Spark's Python workers need this venv
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no traffic off loopback
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import spark_connector

    spark = (
        SparkSession.builder.master("local[2]")
        # Stay on loopback: the driver and its block manager bind to 127.0.0.1 (with SPARK_LOCAL_IP).
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .appName("rocketmq-batch-read")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        spark_connector.register(spark)
        df = (
            spark.read.format("rocketmq")
            .option("namesrv", namesrv)
            .option("topic", topic)
            .option("numPartitions", "3")
            .load()
        )
        df.printSchema()
        print(f"{df.count()} rows in {df.rdd.getNumPartitions()} Spark partitions:")
        (
            df.groupBy(F.spark_partition_id().alias("spark_partition"), "broker_name", "queue_id")
            .count()
            .orderBy("spark_partition", "broker_name", "queue_id")
            .show(50)
        )
        print("The first rows:")
        df.select(
            "broker_name", "queue_id", "queue_offset", "msg_id", "tags", "keys", F.col("body").cast("string")
        ).show(5, False)

        tag_a = df.where(F.col("tags") == "TagA")
        print(f"TagA rows: {tag_a.count()}; rows of queues 0 and 1: {df.where('queue_id < 2').count()}")

        (
            tag_a.select(F.upper(F.col("body").cast("string")).alias("body"), "tags", "keys")
            .write.format("rocketmq")
            .mode("append")
            .option("namesrv", namesrv)
            .option("topic", copy_topic)
            .save()
        )
        copied = spark.read.format("rocketmq").option("namesrv", namesrv).option("topic", copy_topic).load()
        print(f"wrote {copied.count()} upper-cased rows to {copy_topic}:")
        copied.select(F.col("body").cast("string").alias("body"), "tags", "keys").show(3, False)
    finally:
        spark.stop()


def main() -> int:
    with start_cluster(brokers=2) as cluster:
        stamp = int(time.time())
        topic, copy_topic = f"SparkReadExample{stamp}", f"SparkReadExampleCopy{stamp}"
        cluster.create_topic(topic, queues=4)
        cluster.create_topic(copy_topic, queues=4)
        trio.run(fill, cluster.namesrv_addr, topic)
        print(f"stored {COUNT} messages in {topic}")
        run_spark(cluster.namesrv_addr, topic, copy_topic)
    return 0


if __name__ == "__main__":
    sys.exit(main())
