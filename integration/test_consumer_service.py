"""``examples/consumer_service.py`` against the real cluster, probed over HTTP as Kubernetes and
Prometheus would: ``/healthz`` answers 200 once the consumer is ready, ``/lag`` comes to nothing
behind once it consumed what was sent, ``/metrics`` counts each message, and SIGTERM ends it with
its offsets committed and the group left (the brokers list no member)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from rocketmq_py.admin import Admin
from rocketmq_py.testing import Cluster

pytest.importorskip("opentelemetry.exporter.prometheus")
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.direct_route(
    "the test's Admin asks the brokers for the group's members (docs/proxy.md)"
)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "consumer_service.py"
COUNT = 30


def get(port: int, path: str) -> tuple[int, bytes]:
    """One GET: the status and body, an error status included."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def poll(port: int, path: str, done: Callable[[int, Any], bool], timeout: float = 90) -> tuple[int, Any]:
    """GET ``path`` (JSON) every half second until ``done(status, body)``, that answer; fails with
    the last answer when ``timeout`` seconds pass first."""
    deadline = time.monotonic() + timeout
    while True:
        status, body = get(port, path)
        answer = json.loads(body)
        if done(status, answer):
            return status, answer
        assert time.monotonic() < deadline, f"{path} after {timeout} s: {status} {answer}"
        time.sleep(0.5)


@pytest.fixture
def service(
    cluster: Cluster, create_topic: Callable[..., str]
) -> Iterator[tuple[subprocess.Popen[str], str, str]]:
    topic = create_topic(4)
    group = f"it-service-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, ROCKETMQ_NAMESRV=cluster.namesrv_addr)
    argv = [
        sys.executable,
        str(EXAMPLE),
        "--port",
        "0",
        "--topic",
        topic,
        "--group",
        group,
        "--send",
        str(COUNT),
    ]
    with subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        try:
            yield proc, topic, group
        finally:
            proc.kill()


def test_the_service_probes_and_stops_as_kubernetes_expects(
    cluster: Cluster, service: tuple[subprocess.Popen[str], str, str]
) -> None:
    proc, topic, group = service
    assert proc.stdout is not None
    lines: list[str] = []
    port = None
    for line in proc.stdout:  # SENT, then serving on the port
        lines.append(line)
        if (found := re.match(r"serving http://127\.0\.0\.1:(\d+) ", line)) is not None:
            port = int(found.group(1))
            break
    assert port is not None, "".join(lines)
    assert lines[0].strip() == f"SENT {COUNT}", "".join(lines)

    # Ready, and nothing behind once every message was consumed and committed.
    status, health = poll(port, "/healthz", lambda s, _: s == 200)
    assert (status, health["ok"], health["reasons"]) == (200, True, []), health

    # Consumed and committed (the periodic commit, every 5 s); the group's retry topic is owned
    # too, one queue on each broker.
    def settled(status: int, body: Any) -> bool:
        mine = [q for q in body["queues"] if q["topic"] == topic]
        return (
            status == 200
            and body["behind"] == 0
            and len(mine) == 8
            and all(q["max_offset"] == q["committed"] for q in mine)
        )

    _, lag = poll(port, "/lag", settled)
    assert lag["behind"] == 0, lag
    assert {(q["broker_name"], q["queue_id"]) for q in lag["queues"] if q["topic"] == topic} == {
        (b.name, n) for b in cluster.brokers for n in range(4)
    }
    assert all(q["max_offset"] == q["committed"] for q in lag["queues"] if q["topic"] == topic), lag
    assert sum(q["max_offset"] for q in lag["queues"] if q["topic"] == topic) == COUNT

    # Each message counted under RocketMQ's names.
    status, text = get(port, "/metrics")
    assert status == 200
    counts = {
        (sample.name, sample.labels.get("topic")): sample.value
        for family in text_string_to_metric_families(text.decode())
        for sample in family.samples
        if sample.name.endswith("_count") and sample.labels.get("invocation_status", "success") == "success"
    }
    assert counts[("rocketmq_send_cost_time_milliseconds_count", topic)] == COUNT
    assert counts[("rocketmq_process_time_milliseconds_count", topic)] == COUNT
    assert get(port, "/nothing-here")[0] == 404

    # SIGTERM: the consumer stops, commits and leaves its group; the process ends by itself.
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, rest
    assert rest.strip().splitlines()[-1] == f"STOPPED after consuming {COUNT}", rest

    async def members() -> int:
        async with Admin(**cluster.client_options()) as admin:
            return len((await admin.group_members(group)).members)

    assert trio.run(members) == 0
