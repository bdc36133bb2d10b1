"""The ``rocketmq`` source and sink on a Spark standalone cluster: a master and two workers in their own
JVMs on 127.0.0.1 (``rocketmq_py.testing.SparkStandalone``), drivers started with ``spark-submit``.

Unlike the rest of the Spark tests (one ``local[2]`` session, driver and executors in one JVM), each
executor here is its own JVM on its own worker, with its own Python workers, so the source's plan,
its partitions and the sink's producers cross process boundaries as on a real cluster.

An application costs a driver JVM, an executor JVM per worker and their Python workers (about a
minute on CI's busy machine), so one application (``first_app``) runs the batch read, the stream's
first run and the write; only the stream's second run, which must be a new driver, has its own.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import trio

from integration._spark_remote import expected_partitions, produce, run_job
from rocketmq_py.testing import Cluster, SparkStandalone, worker_python
from spark_connector._sink import deterministic_uniq_key

FAULT = Path(__file__).with_name("_worker_fault")  # sitecustomize: kills a sink worker mid-task
QUEUES = 8
PullAll = Callable[..., Any]
READ_PARTITIONS = 4
WRITE_ROWS = 2000


@pytest.fixture(scope="module")
def standalone() -> Iterator[SparkStandalone]:
    with SparkStandalone(
        workers=2, worker_cores=1, worker_memory="1g", python=worker_python()
    ) as spark_cluster:
        yield spark_cluster


@dataclass
class FirstApp:
    """What the module's shared application was given and what each of its steps returned."""

    read_topic: str
    read_sent: list[str]
    read: dict[str, Any]
    stream_args: dict[str, Any]
    stream_first: list[str]
    stream: dict[str, Any]
    write_topics: tuple[str, str]
    write_id: str
    markers: Path


def new_topic(cluster: Cluster, prefix: str) -> str:
    topic = f"{prefix}-{uuid.uuid4().hex[:12]}"
    cluster.create_topic(topic, QUEUES)
    return topic


@pytest.fixture(scope="module")
def first_app(
    standalone: SparkStandalone, cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> FirstApp:
    """One spark-submit: the batch read, the stream's first run, then the write whose task is killed.

    The fault (``_worker_fault``) is armed for the whole application but fires only on the write
    topic ``topic_b``, so the read and the stream run as in an application of their own; the write
    comes last, after the Python worker it kills has served the others.
    """
    tmp = tmp_path_factory.mktemp("spark-cluster")
    read_topic = new_topic(cluster, "spark-sa")
    read_sent = produce(cluster, read_topic, 0, 800)
    stream_topic = new_topic(cluster, "spark-sa-s")
    stream_args: dict[str, Any] = {
        "namesrv": cluster.namesrv_addr,
        "topic": stream_topic,
        "out": str(tmp / "out"),
        "checkpoint": str(tmp / "checkpoint"),
    }
    stream_first = produce(cluster, stream_topic, 0, 300)
    topic_a, topic_b = new_topic(cluster, "spark-sa-wa"), new_topic(cluster, "spark-sa-wb")
    write_id, markers = f"it-{uuid.uuid4().hex}", tmp / "attempt"
    fault = {
        "spark.executorEnv.PYTHONPATH": str(FAULT),
        "spark.executorEnv.RMQ_IT_KILL": f"{topic_b}:200:{markers}",
    }
    steps = [
        ["read", {"namesrv": cluster.namesrv_addr, "topic": read_topic, "partitions": READ_PARTITIONS}],
        ["stream", {**stream_args, "max_per_batch": 100}],
        [
            "write",
            {
                "namesrv": cluster.namesrv_addr,
                "topic_a": topic_a,
                "topic_b": topic_b,
                "rows": WRITE_ROWS,
                "write_id": write_id,
            },
        ],
    ]
    read, stream, _ = submit(standalone, "steps", conf=fault, steps=steps)["results"]
    return FirstApp(
        read_topic, read_sent, read, stream_args, stream_first, stream, (topic_a, topic_b), write_id, markers
    )


def submit(
    standalone: SparkStandalone, command: str, conf: dict[str, str] | None = None, **args: Any
) -> dict[str, Any]:
    """Run ``_spark_job.py command`` with spark-submit on the standalone cluster; its JSON result."""
    settings = {
        **standalone.session_conf(),
        "spark.driver.memory": "512m",
        "spark.sql.session.timeZone": "UTC",
        "spark.task.maxFailures": "2",
        **(conf or {}),
    }
    launcher = [str(standalone.home / "bin" / "spark-submit"), "--master", standalone.master_url]
    for key, value in settings.items():
        launcher += ["--conf", f"{key}={value}"]
    return run_job(launcher, standalone.env, command, **args)


def test_batch_read_on_two_executor_jvms(first_app: FirstApp) -> None:
    topic, sent, result, partitions = (
        first_app.read_topic,
        first_app.read_sent,
        first_app.read,
        READ_PARTITIONS,
    )
    rows = result["rows"]
    assert Counter(r[0] for r in rows) == Counter(sent)  # every message exactly once
    assert sorted(r[4] for r in rows) == sorted(f"m{n}" for n in range(800))
    expected = expected_partitions(topic, QUEUES, partitions)
    for _, broker, queue_id, _, _, partition in rows:
        assert (broker, queue_id) in expected[partition]
    # The partitions ran in both executors, separate JVMs (not the driver), each with its own
    # Python workers.
    readers = result["readers"]
    assert sorted(r[0] for r in readers) == list(range(partitions))
    assert sum(r[3] for r in readers) == 800
    executors = {r[1] for r in readers}
    assert len(executors) == 2, readers
    assert 0 not in executors
    assert result["driver_pid"] not in executors
    python_workers = {(r[1], r[2]) for r in readers}
    assert len({pid for _, pid in python_workers}) >= 2


def test_available_now_stream_restarts_from_its_checkpoint(
    standalone: SparkStandalone, cluster: Cluster, first_app: FirstApp
) -> None:
    args, first, run1 = first_app.stream_args, first_app.stream_first, first_app.stream
    topic, out = args["topic"], args["out"]
    assert run1["rows"] == 300
    assert run1["batches"] >= 3  # admission control: maxRecordsPerBatch
    second = produce(cluster, topic, 300, 120)
    run2 = submit(standalone, "stream", max_per_batch=100, **args)  # a new driver, the same checkpoint
    assert run2["rows"] == 120  # only what arrived since

    table = pq.read_table(out)
    assert Counter(table.column("msg_id").to_pylist()) == Counter(first + second)  # no loss, no replay


def test_write_with_a_task_retry_leaves_no_duplicate_msg_id(first_app: FirstApp, pull_all: PullAll) -> None:
    (topic_a, topic_b), rows, write_id = first_app.write_topics, WRITE_ROWS, first_app.write_id
    # Partition 1's first attempt died after 200 of its rows were stored; Spark ran it again.
    markers = first_app.markers
    attempts = sorted(p.name.split(".", 1)[1] for p in markers.parent.glob(f"{markers.name}.*"))
    assert attempts == ["p1.a0", "p1.a1"]

    half = rows // 2
    stored_a = trio.run(pull_all, topic_a)
    stored_b = trio.run(pull_all, topic_b)
    assert len(stored_a) == half
    assert len(stored_b) >= half + 200  # the retry sent again what the first attempt had stored
    for partition, stored in ((0, stored_a), (1, stored_b)):
        expected = {
            deterministic_uniq_key(write_id, partition, i): f"row-{partition * half + i}".encode()
            for i in range(half)
        }
        # Every row is there under its deterministic msgId; a resent row has the same id and body,
        # so consumers that drop repeated msgIds see each row once.
        assert {m.msg_id for m in stored} == expected.keys()
        assert all(m.body == expected[m.msg_id] for m in stored)
