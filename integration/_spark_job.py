"""A Spark driver program for the multi-JVM tests: ``spark-submit`` it, or run it with ``--remote``.

    spark-submit --master spark://127.0.0.1:P integration/_spark_job.py read '{"namesrv": ...}'
    python integration/_spark_job.py --remote sc://127.0.0.1:P read '{"namesrv": ...}'

Each command prints one JSON line (the last line of its output) with what the test checks.

- ``read``: the topic read in ``partitions`` partitions (option ``numPartitions``, strategy
  ``strategy``): every row's id and position with its Spark partition, and, per partition, the
  process ids of the executor JVM and of the Python worker that read it.
- ``stream``: a ``Trigger.AvailableNow`` query from the topic into parquet files (``out``) with
  checkpoint ``checkpoint``; run again on the same checkpoint, it continues where it stopped.
- ``write``: ``rows`` rows in two partitions written with ``deterministicKeys`` and ``writeId``;
  partition 0 goes to ``topic_a``, partition 1 to ``topic_b`` (``_worker_fault`` kills a Python
  worker in the middle of it when the test asks).
- ``steps``: ``{"steps": [[command, args], ...]}``, the commands one after the other in this one
  application (one driver, one set of executors); its JSON has their results, in order. Each
  application costs a driver JVM, an executor JVM per worker and their Python workers: about a
  minute on a busy two-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def _executor_jvm() -> int:
    """The pid of the executor JVM above this Python worker (0 when there is none: a local driver)."""
    pid = os.getpid()
    for _ in range(6):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return 0
        if b"CoarseGrainedExecutorBackend" in cmdline or b"SparkConnectServer" in cmdline:
            return pid
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the parent's pid
        if pid <= 1:
            return 0
    return 0


def _read(spark: Any, args: dict[str, Any]) -> dict[str, Any]:
    from pyspark.sql import functions as F

    df = (
        spark.read.format("rocketmq")
        .option("namesrv", args["namesrv"])
        .option("topic", args["topic"])
        .option("numPartitions", str(args["partitions"]))
        .option("allocateStrategy", args.get("strategy", "AVG"))
        .load()
    )
    rows = [
        [r["msg_id"], r["broker_name"], r["queue_id"], r["queue_offset"], r["body"].decode(), r["p"]]
        for r in df.select(
            "msg_id", "broker_name", "queue_id", "queue_offset", "body", F.spark_partition_id().alias("p")
        ).collect()
    ]
    readers: list[list[int]] = []
    if not args.get("remote"):

        def where(index: int, it: Iterator[Any]) -> Iterator[list[int]]:
            yield [index, _executor_jvm(), os.getpid(), sum(1 for _ in it)]

        readers = df.rdd.mapPartitionsWithIndex(where).collect()
    return {"rows": rows, "readers": readers, "driver_pid": os.getpid()}


def _stream(spark: Any, args: dict[str, Any]) -> dict[str, Any]:
    stream = (
        spark.readStream.format("rocketmq")
        .option("namesrv", args["namesrv"])
        .option("topic", args["topic"])
        .option("startingOffsets", "earliest")
        .option("maxRecordsPerBatch", str(args.get("max_per_batch", 100)))
        .load()
        .select("msg_id", "broker_name", "queue_id", "queue_offset", "body")
    )
    query = (
        stream.writeStream.format("parquet")
        .option("path", args["out"])
        .option("checkpointLocation", args["checkpoint"])
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    error = query.exception()
    if error is not None:
        raise RuntimeError(f"the streaming query failed: {error}")
    # Classic sessions give dicts, Spark Connect gives StreamingQueryProgress objects.
    counts = [int(getattr(p, "numInputRows", None) or p["numInputRows"] or 0) for p in query.recentProgress]
    return {"batches": sum(1 for n in counts if n), "rows": sum(counts)}


def _write(spark: Any, args: dict[str, Any]) -> dict[str, Any]:
    from pyspark.sql import functions as F

    half = int(args["rows"]) // 2
    df = spark.range(0, 2 * half, 1, 2).select(
        F.when(F.col("id") < half, F.lit(args["topic_a"])).otherwise(F.lit(args["topic_b"])).alias("topic"),
        F.concat(F.lit("row-"), F.col("id").cast("string")).cast("binary").alias("body"),
        F.concat(F.lit("k"), F.col("id").cast("string")).alias("keys"),
    )
    (
        df.write.format("rocketmq")
        .option("namesrv", args["namesrv"])
        .option("deterministicKeys", "true")
        .option("writeId", args["write_id"])
        .option("batchSize", "16")
        .option("maxInFlight", "2")
        .mode("append")
        .save()
    )
    return {}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--remote", default=None, help="a Spark Connect URL (sc://host:port)")
    parser.add_argument("command", choices=["read", "stream", "write", "steps"])
    parser.add_argument("args", help="the command's arguments as one JSON object")
    ns = parser.parse_args()
    args = json.loads(ns.args)
    from pyspark.sql import SparkSession

    import spark_connector

    if ns.remote:
        spark = SparkSession.builder.remote(ns.remote).getOrCreate()
        args["remote"] = True
    else:
        spark = SparkSession.builder.appName(f"rocketmq-py {ns.command}").getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
    spark_connector.register(spark)
    started = time.monotonic()
    commands = {"read": _read, "stream": _stream, "write": _write}
    if ns.command == "steps":
        results = []
        for command, step_args in args["steps"]:
            step_started = time.monotonic()
            step = commands[command](spark, {**step_args, "remote": args.get("remote", False)})
            step["seconds"] = time.monotonic() - step_started
            results.append(step)
        result: dict[str, Any] = {"results": results}
    else:
        result = commands[ns.command](spark, args)
    result["seconds"] = time.monotonic() - started
    spark.stop()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
