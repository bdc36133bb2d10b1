"""A consumer as a production service: ``/metrics``, ``/healthz`` and ``/lag`` on one HTTP port.

    pip install 'rocketmq-py[otel]' opentelemetry-sdk opentelemetry-exporter-prometheus
    python examples/consumer_service.py [--port 8080] [--topic orders] [--group order-workers] [--send 100]

A PushConsumer, as a Kubernetes Deployment would run it, serving on ``http://127.0.0.1:<port>``:

- ``/metrics``: RocketMQ's client metrics (:class:`rocketmq_py.otel.OpenTelemetryMetrics`, through
  the OpenTelemetry Prometheus exporter), for Prometheus to scrape;
- ``/healthz``: ``consumer.health()``: 200 with its JSON when ``ok``, 503 with its reasons when not,
  for a readiness probe; from what the client knows, no request to the cluster;
- ``/lag``: ``await consumer.lag()``: per owned queue, the broker's max offset, the committed and
  consumed offsets, the messages behind and the age of the oldest; asks the brokers.

SIGTERM (what Kubernetes sends) or Ctrl-C stops it: the consumer commits its offsets and leaves its
group before the process exits, so the other members take its queues at once. ``--send N`` first
sends N messages to the topic, so that there is something to consume.

Uses the cluster named by ROCKETMQ_NAMESRV (``host:port``), or starts a local two-broker cluster
(Apache RocketMQ jars from Maven Central) and stops it at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import trio
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from rocketmq_py import ConsumeStatus, Message, MessageExt, Producer, PushConsumer
from rocketmq_py.otel import OpenTelemetryMetrics
from rocketmq_py.testing import start_cluster


def serve(consumer: PushConsumer, token: trio.lowlevel.TrioToken, port: int) -> ThreadingHTTPServer:
    """Start the HTTP server in a thread of its own; its handlers call into the consumer's trio
    thread through ``token``."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/metrics":
                self.answer(200, generate_latest(), CONTENT_TYPE_LATEST)
            elif self.path == "/healthz":
                health = trio.from_thread.run_sync(consumer.health, trio_token=token)
                body = {"ok": health.ok, "reasons": list(health.reasons), "warnings": list(health.warnings)}
                self.json(200 if health.ok else 503, body)
            elif self.path == "/lag":
                queues = trio.from_thread.run(consumer.lag, trio_token=token)
                rows = [
                    {
                        "topic": q.queue.topic,
                        "broker_name": q.queue.broker_name,
                        "queue_id": q.queue.queue_id,
                        "max_offset": q.max_offset,
                        "committed": q.committed,
                        "behind": q.behind,
                        "oldest_age": q.oldest_age,
                    }
                    for q in queues
                ]
                self.json(200, {"behind": sum(q.behind for q in queues), "queues": rows})
            else:
                self.json(404, {"error": f"no {self.path}"})

        def json(self, status: int, body: Any) -> None:
            self.answer(status, json.dumps(body).encode(), "application/json")

        def answer(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # a probe every few seconds is no news

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()
    return server


async def run(namesrv: str, topic: str, group: str, port: int, send: int) -> int:
    provider = MeterProvider(metric_readers=[PrometheusMetricReader()])
    metrics = OpenTelemetryMetrics(meter_provider=provider)
    consumed = 0

    async def listener(messages: list[MessageExt]) -> ConsumeStatus:
        nonlocal consumed
        consumed += len(messages)  # the work of the service goes here
        return ConsumeStatus.CONSUME_SUCCESS

    if send:
        async with Producer(f"{group}-producer", namesrv=namesrv, hooks=[metrics]) as producer:
            for n in range(send):
                await producer.send(Message(topic, f"order {n}".encode()))
        print(f"SENT {send}", flush=True)
    consumer = PushConsumer(
        group,
        namesrv=namesrv,
        listener=listener,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        hooks=[metrics],
    )
    consumer.subscribe(topic)
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with consumer:
            server = serve(consumer, trio.lowlevel.current_trio_token(), port)
            print(f"serving http://127.0.0.1:{server.server_port} (/metrics /healthz /lag)", flush=True)
            try:
                async for _ in signals:
                    break
            finally:
                server.shutdown()  # no handler calls into trio while the consumer stops
                server.server_close()
    provider.shutdown()
    print(f"STOPPED after consuming {consumed}", flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8080, help="the HTTP port on 127.0.0.1 (0: any free one)")
    parser.add_argument("--topic", default=None, help="a topic that exists (default: a new one)")
    parser.add_argument("--group", default=None, help="the consumer group (default: a new one)")
    parser.add_argument("--send", type=int, default=0, help="messages to send to the topic first")
    args = parser.parse_args()
    group = args.group or f"service-example-{uuid.uuid4().hex[:6]}"
    namesrv = os.environ.get("ROCKETMQ_NAMESRV")
    if namesrv:
        return trio.run(run, namesrv, args.topic or "service-example", group, args.port, args.send)
    with start_cluster(brokers=2) as cluster:
        topic = args.topic or f"service-example-{uuid.uuid4().hex[:6]}"
        if args.topic is None:
            cluster.create_topic(topic, 4)
        return trio.run(run, cluster.namesrv_addr, topic, group, args.port, args.send or 100)


if __name__ == "__main__":
    sys.exit(main())
