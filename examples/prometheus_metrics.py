"""RocketMQ's client metrics for Prometheus: ``/metrics`` served by the OpenTelemetry Prometheus exporter.

    pip install 'rocketmq-py[otel]' opentelemetry-sdk opentelemetry-exporter-prometheus
    python examples/prometheus_metrics.py [--port 9464] [--count 100] [--hold 30]

Sends ``--count`` messages with a Producer and consumes them with a PushConsumer, both given one
:class:`rocketmq_py.otel.OpenTelemetryMetrics`, while ``http://127.0.0.1:<port>/metrics`` serves
what they recorded: ``rocketmq_send_cost_time``, ``rocketmq_process_time``, ``rocketmq_await_time``
(histograms in ms: the exporter names their series ``..._milliseconds_bucket``, ``_sum`` and
``_count``, as OpenTelemetry's Prometheus mapping does) and the consumer's gauges
(``rocketmq_consumer_cached_messages``, ``rocketmq_consumer_lag_latency_milliseconds``, ...).
It prints ``CONSUMED <n>`` once every message was consumed, then keeps serving (and consuming)
for ``--hold`` seconds, so that Prometheus, or curl, can scrape it.

Uses the cluster named by ROCKETMQ_NAMESRV (``host:port``), or starts a local two-broker cluster
(Apache RocketMQ jars from Maven Central) and stops it at the end.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid

import trio
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import start_http_server

from rocketmq_py import ConsumeStatus, Message, MessageExt, Producer, PushConsumer
from rocketmq_py.otel import OpenTelemetryMetrics
from rocketmq_py.testing import start_cluster


async def run(namesrv: str, topic: str, count: int, hold: float) -> int:
    # The exporter is a reader of the meter provider; prometheus_client serves what it collects.
    provider = MeterProvider(metric_readers=[PrometheusMetricReader()])
    metrics = OpenTelemetryMetrics(meter_provider=provider)
    consumed = 0
    everything = trio.Event()

    async def listener(messages: list[MessageExt]) -> ConsumeStatus:
        nonlocal consumed
        consumed += len(messages)
        if consumed >= count:
            everything.set()
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        f"metrics-example-{uuid.uuid4().hex[:6]}",
        namesrv=namesrv,
        listener=listener,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        hooks=[metrics],
    )
    consumer.subscribe(topic)
    async with consumer, Producer("metrics-example-producer", namesrv=namesrv, hooks=[metrics]) as producer:
        for n in range(count):
            await producer.send(Message(topic, f"order {n}".encode()))
        with trio.move_on_after(120):
            await everything.wait()
        print(f"CONSUMED {consumed}", flush=True)
        await trio.sleep(hold)
    provider.shutdown()
    return 0 if consumed >= count else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=9464, help="the port of /metrics on 127.0.0.1")
    parser.add_argument("--count", type=int, default=100, help="messages to send and consume")
    parser.add_argument("--hold", type=float, default=30.0, help="seconds to keep serving after")
    parser.add_argument("--topic", default=None, help="a topic that exists (default: a new one)")
    args = parser.parse_args()
    server, thread = start_http_server(args.port, addr="127.0.0.1")
    print(f"serving http://127.0.0.1:{server.server_port}/metrics", flush=True)
    try:
        namesrv = os.environ.get("ROCKETMQ_NAMESRV")
        if namesrv:
            topic = args.topic or "metrics-example"
            return trio.run(run, namesrv, topic, args.count, args.hold)
        with start_cluster(brokers=2) as cluster:
            topic = args.topic or f"metrics-example-{uuid.uuid4().hex[:6]}"
            if args.topic is None:
                cluster.create_topic(topic, 4)
            return trio.run(run, cluster.namesrv_addr, topic, args.count, args.hold)
    finally:
        server.shutdown()
        thread.join()


if __name__ == "__main__":
    sys.exit(main())
