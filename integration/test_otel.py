"""OpenTelemetryHook on the real cluster: one trace from the producer, through the broker, to a
push consumer and to a lite pull consumer (the trace context rides in the stored message)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
import trio

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from rocketmq_py import LitePullConsumer, Message, MessageExt, Producer, PushConsumer
from rocketmq_py.otel import OpenTelemetryHook
from rocketmq_py.testing import Cluster


def traced() -> tuple[OpenTelemetryHook, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return OpenTelemetryHook(tracer_provider=provider), exporter


def of_kind(exporter: InMemorySpanExporter, kind: SpanKind) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.kind is kind]


async def test_one_trace_from_producer_to_push_consumer(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(4)
    hook, exporter = traced()
    got: list[MessageExt] = []
    arrived = trio.Event()

    async def listener(msgs: list[MessageExt]) -> None:
        got.extend(msgs)
        arrived.set()

    consumer = PushConsumer(
        f"it-otel-push-{topic}",
        namesrv=cluster.namesrv_addr,
        listener=listener,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        instance_name=f"otel-{uuid.uuid4().hex[:8]}",
        hooks=[hook],
    )
    consumer.subscribe(topic)
    async with Producer("it-otel-producer", namesrv=cluster.namesrv_addr, hooks=[hook]) as producer:
        result = await producer.send(Message(topic, b"traced", tags="TagA", keys="order-1"))
    async with consumer:
        with trio.fail_after(60):
            await arrived.wait()

    (msg,) = got
    assert msg.msg_id == result.msg_id
    (send,) = of_kind(exporter, SpanKind.PRODUCER)
    (process,) = of_kind(exporter, SpanKind.CONSUMER)
    # The broker stored the trace context with the message: one trace, the consumer span a child.
    assert msg.properties["traceparent"].split("-")[1] == f"{send.context.trace_id:032x}"
    assert process.context.trace_id == send.context.trace_id
    assert process.parent is not None
    assert process.parent.span_id == send.context.span_id
    assert send.name == f"send {topic}"
    assert process.name == f"process {topic}"
    assert send.attributes is not None
    assert send.attributes["messaging.message.id"] == result.msg_id
    assert send.attributes["server.address"]  # the broker master it went to
    assert process.attributes is not None
    assert process.attributes["messaging.message.id"] == result.msg_id
    assert send.status.status_code is StatusCode.UNSET
    assert process.status.status_code is StatusCode.UNSET


async def test_one_trace_from_producer_to_lite_pull_consumer(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(4)
    hook, exporter = traced()
    async with Producer("it-otel-producer", namesrv=cluster.namesrv_addr, hooks=[hook]) as producer:
        sent = {(await producer.send(Message(topic, f"m-{i}".encode()))).msg_id for i in range(5)}
    got: list[MessageExt] = []
    async with LitePullConsumer(
        f"it-otel-lite-{topic}",
        namesrv=cluster.namesrv_addr,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        instance_name=f"otel-{uuid.uuid4().hex[:8]}",
        hooks=[hook],
    ) as consumer:
        consumer.subscribe(topic)
        with trio.fail_after(60):
            while {m.msg_id for m in got} < sent:
                got.extend(await consumer.poll(timeout=1))

    sends = {
        span.attributes["messaging.message.id"]: span
        for span in of_kind(exporter, SpanKind.PRODUCER)
        if span.attributes
    }
    receives = of_kind(exporter, SpanKind.CONSUMER)
    assert set(sends) == sent
    assert len(receives) == len(got)
    for span in receives:
        assert span.name == f"receive {topic}"
        assert span.attributes is not None
        parent = sends[span.attributes["messaging.message.id"]]
        assert span.context.trace_id == parent.context.trace_id
        assert span.parent is not None
        assert span.parent.span_id == parent.context.span_id
