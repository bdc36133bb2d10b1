"""OpenTelemetryMetrics against fake brokers: RocketMQ's client metric names, units, labels and
buckets, counts equal to what was sent and consumed, and the consumer's cache and lag gauges.

The real-broker twin is ``integration/test_metrics.py`` (the Prometheus example scraped over HTTP).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader, NumberDataPoint

from rocketmq_py.consumer._push import ConsumeStatus, PushConsumer
from rocketmq_py.otel import OpenTelemetryMetrics
from rocketmq_py.producer._producer import Producer
from rocketmq_py.protocol import Message, MessageExt

if TYPE_CHECKING:
    from conftest import Cluster

MakeConsumer = Callable[..., PushConsumer]


@pytest.fixture
def reader() -> Iterator[InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    yield reader
    reader.shutdown()


@pytest.fixture
def metrics(reader: InMemoryMetricReader) -> OpenTelemetryMetrics:
    return OpenTelemetryMetrics(meter_provider=MeterProvider(metric_readers=[reader]))


def collect(reader: InMemoryMetricReader) -> dict[str, Any]:
    """Metric name -> (unit, its data points), from one collection."""
    data = reader.get_metrics_data()
    assert data is not None
    found: dict[str, Any] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            assert scope.scope.name == "rocketmq_py"
            for metric in scope.metrics:
                found[metric.name] = (metric.unit, list(metric.data.data_points))
    return found


def histogram(points: list[Any]) -> dict[frozenset[tuple[str, Any]], HistogramDataPoint]:
    return {frozenset(p.attributes.items()): p for p in points}


async def test_send_and_consume_times_count_every_message_under_rocketmqs_names(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    metrics: OpenTelemetryMetrics,
    reader: InMemoryMetricReader,
    autojump_clock: trio.testing.MockClock,
) -> None:
    calls = 0

    async def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        nonlocal calls
        calls += 1
        await trio.sleep(0.003)  # 3 ms of listener time, on the virtual clock
        # The first delivery of one message fails: it comes back through the retry topic.
        if msgs[0].body == b"m-0" and msgs[0].reconsume_times == 0:
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.CONSUME_SUCCESS

    async with (
        make_consumer(listener=listener, hooks=[metrics]) as consumer,
        Producer("pg-metrics", namesrv=cluster.namesrv.address, hooks=[metrics]) as producer,
    ):
        for n in range(5):
            await producer.send(Message(cluster.topic, f"m-{n}".encode()))
        await cluster.wait_until(lambda: consumer.consumed == 5)
        client_id, producer_id = consumer.client_id, producer.client_id

    found = collect(reader)
    unit, points = found["rocketmq_send_cost_time"]
    assert unit == "ms"
    (send,) = points
    assert dict(send.attributes) == {
        "topic": cluster.topic,
        "client_id": producer_id,
        "invocation_status": "success",
    }
    assert send.count == 5
    assert send.explicit_bounds == (1.0, 5.0, 10.0, 20.0, 50.0, 200.0, 500.0)

    unit, points = found["rocketmq_process_time"]
    assert unit == "ms"
    process = histogram(points)
    labels = {"topic": cluster.topic, "consumer_group": cluster.group, "client_id": client_id}
    ok = process[frozenset({**labels, "invocation_status": "success"}.items())]
    failed = process[frozenset({**labels, "invocation_status": "failure"}.items())]
    assert (ok.count, failed.count) == (5, 1)  # m-0 failed once, then came back from the retry topic
    assert ok.explicit_bounds == (1.0, 5.0, 10.0, 100.0, 10000.0, 60000.0)
    assert ok.min >= 3.0
    assert ok.bucket_counts[1] == 5  # 3 ms: in (1, 5]

    unit, points = found["rocketmq_await_time"]
    assert unit == "ms"
    (waited,) = points
    assert dict(waited.attributes) == labels
    assert waited.count == 6  # every listener call's message
    assert waited.explicit_bounds == (1.0, 5.0, 20.0, 100.0, 1000.0, 5000.0, 10000.0)
    assert calls == 6


async def test_the_await_time_is_the_wait_behind_a_slow_listener(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    metrics: OpenTelemetryMetrics,
    reader: InMemoryMetricReader,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """One worker, a listener of 100 ms: the third message of one pull waited ~200 ms in the cache."""

    async def listener(msgs: list[MessageExt]) -> None:
        await trio.sleep(0.1)

    queue = cluster.queues()[0]
    cluster.put(queue, 3)
    async with make_consumer(listener=listener, hooks=[metrics], consume_concurrency=1) as consumer:
        await cluster.wait_until(lambda: consumer.consumed == 3)
    (_, points) = collect(reader)["rocketmq_await_time"]
    (waited,) = points
    assert waited.count == 3
    assert waited.min < 1.0  # the first: straight to the worker
    assert 199.0 <= waited.max < 201.0


async def test_orderly_and_failed_sends_are_recorded(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    metrics: OpenTelemetryMetrics,
    reader: InMemoryMetricReader,
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def listener(msgs: list[MessageExt]) -> None:
        await trio.sleep(0.05)

    queue = cluster.queues()[1]
    cluster.put(queue, 2)
    async with make_consumer(listener=listener, hooks=[metrics], orderly=True) as consumer:
        await cluster.wait_until(lambda: consumer.consumed == 2)
    found = collect(reader)
    (_, process) = found["rocketmq_process_time"]
    assert sum(p.count for p in process) == 2
    (_, waited) = found["rocketmq_await_time"]
    (point,) = waited
    assert point.count == 2
    assert 49.0 <= point.max < 51.0  # the second waited for the first's call

    # A send the broker refuses is a failure of its attempt.
    from rocketmq_py.errors import RocketMQError
    from rocketmq_py.protocol import RequestCode, ResponseCode

    for fb in cluster.brokers:
        fb.on_reply(RequestCode.SEND_MESSAGE_V2, ResponseCode.NO_PERMISSION, remark="no")
    async with Producer(
        "pg-fail", namesrv=cluster.namesrv.address, hooks=[metrics], retry_times=0
    ) as producer:
        with pytest.raises(RocketMQError):
            await producer.send(Message(cluster.topic, b"refused"))
    (_, sends) = collect(reader)["rocketmq_send_cost_time"]
    statuses = {dict(p.attributes)["invocation_status"]: p.count for p in sends}
    assert statuses == {"failure": 1}


async def test_the_gauges_read_the_cache_and_the_lag(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    metrics: OpenTelemetryMetrics,
    reader: InMemoryMetricReader,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A listener held on its first call: the queue's other messages wait in the cache; the gauges,
    read in the consumer's trio thread at collection, show them, then zero once all are consumed."""
    release = trio.Event()

    async def listener(msgs: list[MessageExt]) -> None:
        await release.wait()

    import time

    queue = cluster.queues()[0]
    stored = cluster.broker(queue).put_messages(
        0,
        [Message(cluster.topic, b"x" * n) for n in range(1, 5)],
        store_timestamp=int(time.time() * 1000) - 2000,
    )
    async with make_consumer(listener=listener, hooks=[metrics], consume_concurrency=1) as consumer:
        await cluster.wait_until(lambda: any(s.cached_count == 4 for s in consumer.statistics()))
        found = collect(reader)
        labels = {"topic": cluster.topic, "consumer_group": cluster.group, "client_id": consumer.client_id}

        def value(name: str) -> float:
            _unit, points = found[name]
            (point,) = [p for p in points if dict(p.attributes) == labels]
            assert isinstance(point, NumberDataPoint)
            return point.value

        assert found["rocketmq_consumer_cached_messages"][0] == "{message}"
        assert value("rocketmq_consumer_cached_messages") == 4
        assert value("rocketmq_consumer_cached_bytes") == sum(len(m.body) for m in stored) == 10
        assert value("rocketmq_consumer_inflight_messages") == 4  # pulled, none committed
        assert value("rocketmq_consumer_ready_messages") == 0  # every stored message pulled
        assert 2000.0 <= value("rocketmq_consumer_lag_latency") < 60_000.0  # stored 2 s ago
        release.set()
        await cluster.wait_until(lambda: consumer.consumed == 4)
        found = collect(reader)
        assert value("rocketmq_consumer_cached_messages") == 0
        assert value("rocketmq_consumer_lag_latency") == 0
    # A closed consumer is left out.
    found = collect(reader)
    assert all(not points for name, (_, points) in found.items() if name.startswith("rocketmq_consumer_"))


def test_gauges_are_read_from_another_thread(
    metrics: OpenTelemetryMetrics, reader: InMemoryMetricReader
) -> None:
    """A collection from a thread that is not the consumer's (a Prometheus scrape) hands the reading
    to the consumer's trio thread."""
    from rocketmq_py._otel_metrics import _read_in_trio

    seen: list[object] = []

    async def main() -> None:
        token = trio.lowlevel.current_trio_token()

        def read() -> list[Any]:
            seen.append(trio.lowlevel.current_trio_token())
            return []

        assert await trio.to_thread.run_sync(_read_in_trio, token, read) == []
        assert _read_in_trio(token, read) == []  # in the trio thread itself: called directly

    trio.run(main)
    assert len(seen) == 2
