"""The ``rocketmq`` source and sink through Spark Connect: a Connect server started from pyspark's own
distribution (``rocketmq_py.testing.SparkConnectServer``, 127.0.0.1) and clients built with
``SparkSession.builder.remote(...)`` in another process, as a Connect user's program runs.

The client registers the data source (``spark_connector.register``): the class is sent to the
server, whose Python workers plan and read (they need rocketmq-py installed, as executors do).
What Connect does not offer is Spark's, not ours: there is no ``df.rdd`` and no ``sparkContext``.
"""

from __future__ import annotations

import sys
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import trio

from integration._spark_remote import expected_partitions, produce, run_job
from rocketmq_py.testing import Cluster, SparkConnectServer, worker_python
from spark_connector._sink import deterministic_uniq_key

QUEUES = 8
PullAll = Callable[..., Any]


@pytest.fixture(scope="module")
def connect() -> Iterator[SparkConnectServer]:
    with SparkConnectServer(cores=2, memory="1g", python=worker_python()) as server:
        yield server


def remote(server: SparkConnectServer, command: str, **args: Any) -> dict[str, Any]:
    """Run ``_spark_job.py command`` as a Spark Connect client of ``server``; its JSON result."""
    return run_job([sys.executable], server.env, command, job_options=["--remote", server.url], **args)


def test_read_through_connect(
    connect: SparkConnectServer, cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(QUEUES, prefix="spark-c")
    sent = produce(cluster, topic, 0, 300)
    result = remote(connect, "read", namesrv=cluster.namesrv_addr, topic=topic, partitions=3)
    rows = result["rows"]
    assert Counter(r[0] for r in rows) == Counter(sent)  # every message exactly once
    assert sorted(r[4] for r in rows) == sorted(f"m{n}" for n in range(300))
    expected = expected_partitions(topic, QUEUES, 3)
    for _, broker, queue_id, _, _, partition in rows:
        assert (broker, queue_id) in expected[partition]


def test_stream_through_connect_restarts_from_its_checkpoint(
    connect: SparkConnectServer, cluster: Cluster, create_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = create_topic(QUEUES, prefix="spark-c-s")
    args = {
        "namesrv": cluster.namesrv_addr,
        "topic": topic,
        "out": str(tmp_path / "out"),
        "checkpoint": str(tmp_path / "checkpoint"),
        "max_per_batch": 50,
    }
    first = produce(cluster, topic, 0, 120)
    assert remote(connect, "stream", **args)["rows"] == 120
    second = produce(cluster, topic, 120, 40)
    assert remote(connect, "stream", **args)["rows"] == 40  # a new client session, the same checkpoint
    table = pq.read_table(tmp_path / "out")
    assert Counter(table.column("msg_id").to_pylist()) == Counter(first + second)


def test_write_through_connect(
    connect: SparkConnectServer, cluster: Cluster, create_topic: Callable[..., str], pull_all: PullAll
) -> None:
    topic_a, topic_b = create_topic(QUEUES, prefix="spark-c-wa"), create_topic(QUEUES, prefix="spark-c-wb")
    write_id = f"it-{uuid.uuid4().hex}"
    remote(
        connect,
        "write",
        namesrv=cluster.namesrv_addr,
        topic_a=topic_a,
        topic_b=topic_b,
        rows=400,
        write_id=write_id,
    )
    for partition, topic in enumerate((topic_a, topic_b)):
        stored = trio.run(pull_all, topic)
        expected = {
            deterministic_uniq_key(write_id, partition, i): f"row-{partition * 200 + i}".encode()
            for i in range(200)
        }
        assert {m.msg_id: m.body for m in stored} == expected
        assert len(stored) == 200
