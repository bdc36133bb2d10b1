"""OpenTelemetryHook against fake brokers: a trace crosses producer -> broker -> consumer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from rocketmq_py.consumer._lite_pull import LitePullConsumer
from rocketmq_py.consumer._push import ConsumeStatus, PushConsumer
from rocketmq_py.otel import OpenTelemetryHook
from rocketmq_py.producer._producer import Producer
from rocketmq_py.protocol import Message, MessageExt, RequestCode, ResponseCode

if TYPE_CHECKING:
    from conftest import Cluster, Recorder

MakeConsumer = Callable[..., PushConsumer]


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    yield exporter
    exporter.clear()


@pytest.fixture
def hook(exporter: InMemorySpanExporter) -> OpenTelemetryHook:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return OpenTelemetryHook(tracer_provider=provider)


def spans(exporter: InMemorySpanExporter, kind: SpanKind) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.kind is kind]


async def test_a_trace_crosses_producer_broker_and_push_consumer(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    hook: OpenTelemetryHook,
    exporter: InMemorySpanExporter,
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with (
        make_consumer(hooks=[hook]) as consumer,
        Producer("pg-otel", namesrv=cluster.namesrv.address, hooks=[hook]) as producer,
    ):
        result = await producer.send(Message(cluster.topic, b"traced", tags="TagA", keys="k1"))
        await cluster.wait_until(lambda: consumer.consumed == 1)

    (send,) = spans(exporter, SpanKind.PRODUCER)
    (process,) = spans(exporter, SpanKind.CONSUMER)
    assert send.name == f"send {cluster.topic}"
    assert process.name == f"process {cluster.topic}"
    # One trace: the consumer span is a child of the producer span.
    assert process.context.trace_id == send.context.trace_id
    assert process.parent is not None
    assert process.parent.span_id == send.context.span_id
    # The context travelled in the stored message's properties.
    (msg,) = recorder.messages
    assert msg.properties["traceparent"].split("-")[1] == f"{send.context.trace_id:032x}"
    assert send.attributes is not None
    assert send.attributes["messaging.system"] == "rocketmq"
    assert send.attributes["messaging.destination.name"] == cluster.topic
    assert send.attributes["messaging.operation.type"] == "send"
    assert send.attributes["messaging.message.id"] == result.msg_id
    assert send.attributes["messaging.rocketmq.client_group"] == "pg-otel"
    assert send.attributes["messaging.rocketmq.message.tag"] == "TagA"
    assert send.attributes["messaging.rocketmq.message.keys"] == ("k1",)
    assert send.attributes["server.address"] == "127.0.0.1"
    assert process.attributes is not None
    assert process.attributes["messaging.operation.type"] == "process"
    assert process.attributes["messaging.message.id"] == result.msg_id
    assert process.attributes["messaging.consumer.group.name"] == cluster.group
    assert send.status.status_code is StatusCode.UNSET
    assert process.status.status_code is StatusCode.UNSET


async def test_the_consumer_span_is_current_in_the_listener(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    hook: OpenTelemetryHook,
    exporter: InMemorySpanExporter,
    autojump_clock: trio.testing.MockClock,
) -> None:
    from opentelemetry import trace

    seen: list[int] = []

    async def listener(msgs: list[MessageExt]) -> None:
        seen.append(trace.get_current_span().get_span_context().span_id)

    async with make_consumer(listener=listener, hooks=[hook]) as consumer:
        cluster.put(cluster.queues()[0], 1)
        await cluster.wait_until(lambda: consumer.consumed == 1)
    (process,) = spans(exporter, SpanKind.CONSUMER)
    assert seen == [process.context.span_id]
    assert trace.get_current_span().get_span_context().is_valid is False  # detached after the call


async def test_failures_set_status_error(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    hook: OpenTelemetryHook,
    exporter: InMemorySpanExporter,
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        if msgs[0].reconsume_times == 0:
            raise RuntimeError("the listener broke")
        return ConsumeStatus.CONSUME_SUCCESS

    for fb in cluster.brokers:
        fb.on_reply(RequestCode.SEND_MESSAGE_V2, ResponseCode.MESSAGE_ILLEGAL, remark="no")
    async with (
        make_consumer(listener=listener, hooks=[hook]) as consumer,
        Producer("pg-otel", namesrv=cluster.namesrv.address, hooks=[hook]) as producer,
    ):
        with pytest.raises(Exception, match="no"):
            await producer.send(Message(cluster.topic, b"refused"))
        cluster.put(cluster.queues()[0], 1)
        await cluster.wait_until(lambda: consumer.consumed == 1)

    (send,) = spans(exporter, SpanKind.PRODUCER)
    assert send.status.status_code is StatusCode.ERROR
    assert send.attributes is not None
    assert send.attributes["error.type"] == "MessageIllegal"
    failed, ok = sorted(spans(exporter, SpanKind.CONSUMER), key=lambda s: s.start_time or 0)
    assert failed.status.status_code is StatusCode.ERROR
    assert [event.name for event in failed.events] == ["exception"]
    assert ok.status.status_code is StatusCode.UNSET


async def test_a_trace_crosses_to_the_lite_pull_consumer(
    cluster: Cluster,
    hook: OpenTelemetryHook,
    exporter: InMemorySpanExporter,
    autojump_clock: trio.testing.MockClock,
) -> None:
    lite = LitePullConsumer(
        cluster.group,
        namesrv=cluster.namesrv.address,
        instance_name="me",
        client_ip="127.0.0.1",
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        hooks=[hook],
    )
    async with Producer("pg-otel", namesrv=cluster.namesrv.address, hooks=[hook]) as producer:
        result = await producer.send(Message(cluster.topic, b"traced"))
    async with lite:
        lite.assign([result.queue])
        with trio.fail_after(60):
            got = await lite.poll(timeout=10)
    assert [m.msg_id for m in got] == [result.msg_id]
    (send,) = spans(exporter, SpanKind.PRODUCER)
    (receive,) = spans(exporter, SpanKind.CONSUMER)
    assert receive.name == f"receive {cluster.topic}"
    assert receive.context.trace_id == send.context.trace_id
    assert receive.parent is not None
    assert receive.parent.span_id == send.context.span_id
