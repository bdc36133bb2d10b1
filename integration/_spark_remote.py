"""Helpers shared by the tests that drive Spark in another process (standalone cluster, Connect)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import trio

from rocketmq_py.consumer._allocate import allocate, sort_queues
from rocketmq_py.producer._producer import Producer
from rocketmq_py.protocol import Message, MessageQueue
from rocketmq_py.testing import Cluster

JOB = Path(__file__).with_name("_spark_job.py")
BROKERS = ("broker-a", "broker-b")


def run_job(
    launcher: Sequence[str],
    env: dict[str, str],
    command: str,
    *,
    job_options: Sequence[str] = (),
    **args: Any,
) -> dict[str, Any]:
    """Run ``_spark_job.py [job_options] command`` after ``launcher`` (spark-submit, or python); its JSON."""
    argv = [*launcher, str(JOB), *job_options, command, json.dumps(args)]
    env = {**env, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(launcher[:1])} {command} exited {done.returncode}:\n{done.stderr[-6000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def produce(cluster: Cluster, topic: str, start: int, count: int) -> list[str]:
    """Send bodies ``m<start>`` .. in batches of 16; returns the msgIds in order."""
    ids: list[str] = []

    async def run() -> None:
        # attempt_timeout=None: a retried attempt may be stored too, and the readers count exactly.
        async with Producer(
            "spark-remote-it", namesrv=cluster.namesrv_addr, attempt_timeout=None, send_timeout=30.0
        ) as producer:
            for i in range(start, start + count, 16):
                batch = [Message(topic, f"m{n}".encode()) for n in range(i, min(i + 16, start + count))]
                await producer.send_batch(batch)
                ids.extend(m.properties["UNIQ_KEY"] for m in batch)

    trio.run(run)
    return ids


def expected_partitions(
    topic: str, queues: int, partitions: int, strategy: str = "AVG"
) -> dict[int, set[tuple[str, int]]]:
    """The (broker, queue) pairs the source gives each partition: the strategy's allocation."""
    mq_all = sort_queues(MessageQueue(topic, b, q) for b in BROKERS for q in range(queues))
    cids = [f"spark-partition-{i:04d}" for i in range(partitions)]
    return {
        i: {(q.broker_name, q.queue_id) for q in allocate(strategy, "g", cid, mq_all, cids)}
        for i, cid in enumerate(cids)
    }
