"""``examples/prometheus_metrics.py`` against the real cluster, scraped over HTTP as Prometheus would.

The example sends and consumes with one :class:`rocketmq_py.otel.OpenTelemetryMetrics` and serves
``/metrics`` through the OpenTelemetry Prometheus exporter on 127.0.0.1; the test reads it after the
traffic: every metric under RocketMQ's name, with counts equal to what was sent and consumed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rocketmq_py.testing import Cluster

pytest.importorskip("opentelemetry.exporter.prometheus")
from prometheus_client.parser import text_string_to_metric_families

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "prometheus_metrics.py"
COUNT = 40


def scrape(port: int) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    """Family name -> its samples (name, labels, value), from one GET of /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return {
        family.name: [(s.name, dict(s.labels), s.value) for s in family.samples]
        for family in text_string_to_metric_families(text)
    }


@pytest.fixture
def example(
    cluster: Cluster, create_topic: Callable[..., str]
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    topic = create_topic(4)
    env = dict(os.environ, ROCKETMQ_NAMESRV=cluster.namesrv_addr)
    argv = [
        sys.executable,
        str(EXAMPLE),
        "--port",
        "0",
        "--count",
        str(COUNT),
        "--hold",
        "120",
        "--topic",
        topic,
    ]
    with subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        try:
            yield proc, topic
        finally:
            proc.kill()


def test_the_prometheus_example_serves_every_metric_with_the_traffics_counts(
    example: tuple[subprocess.Popen[str], str],
) -> None:
    proc, topic = example
    assert proc.stdout is not None
    port = None
    lines: list[str] = []
    deadline = time.monotonic() + 180
    for line in proc.stdout:  # the example's own prints, until it consumed everything
        lines.append(line)
        if (found := re.match(r"serving http://127\.0\.0\.1:(\d+)/metrics", line)) is not None:
            port = int(found.group(1))
        if line.startswith("CONSUMED") or time.monotonic() > deadline:
            break
    assert port is not None, "".join(lines)
    assert lines[-1].strip() == f"CONSUMED {COUNT}", "".join(lines)

    families = scrape(port)

    def samples(family: str, suffix: str, **labels: str) -> list[float]:
        assert family in families, sorted(families)
        return [
            value
            for name, have, value in families[family]
            if name == family + suffix and all(have.get(k) == v for k, v in labels.items())
        ]

    # Histograms in ms: OpenTelemetry's Prometheus mapping adds the unit to the family's name.
    assert samples(
        "rocketmq_send_cost_time_milliseconds", "_count", topic=topic, invocation_status="success"
    ) == [COUNT]
    assert samples("rocketmq_send_cost_time_milliseconds", "_count", invocation_status="failure") == []
    buckets = {
        labels["le"]
        for name, labels, _ in families["rocketmq_send_cost_time_milliseconds"]
        if name.endswith("_bucket")
    }
    assert buckets == {"1.0", "5.0", "10.0", "20.0", "50.0", "200.0", "500.0", "+Inf"}
    assert samples(
        "rocketmq_process_time_milliseconds", "_count", topic=topic, invocation_status="success"
    ) == [COUNT]
    assert samples("rocketmq_await_time_milliseconds", "_count", topic=topic) == [COUNT]
    (send_sum,) = samples("rocketmq_send_cost_time_milliseconds", "_sum", topic=topic)
    assert 0 < send_sum < COUNT * 3000  # each under the send timeout
    for labels in (
        {name: value for name, value in have.items()}
        for _, have, _ in families["rocketmq_process_time_milliseconds"]
        if have.get("topic") == topic
    ):
        assert labels["consumer_group"].startswith("metrics-example-")
        assert "@" in labels["client_id"]

    # The gauges, per topic of the consumer (its retry topic too): nothing left behind.
    assert samples("rocketmq_consumer_cached_messages", "", topic=topic) == [0]
    assert samples("rocketmq_consumer_cached_bytes", "", topic=topic) == [0]
    assert samples("rocketmq_consumer_ready_messages", "", topic=topic) == [0]
    assert samples("rocketmq_consumer_lag_latency_milliseconds", "", topic=topic) == [0]
    inflight = samples("rocketmq_consumer_inflight_messages", "", topic=topic)
    assert len(inflight) == 1
    assert 0 <= inflight[0] <= COUNT  # committed every 5 s: the last ones may not be yet
