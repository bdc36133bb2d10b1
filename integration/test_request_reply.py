"""Request-reply on the real broker, with the official Java client on either side.

A requester's ``Producer.request`` sends to a topic; a responder (a push consumer of that topic)
sends ``create_reply`` of each request with a producer; the broker takes the reply on its
``<cluster>_REPLY_TOPIC`` (every broker creates it at start) and pushes it to the requester. Ours
against ours, ours against the Java responder, the Java requester against ours, and a request
nobody answers. The Java side is ``integration/java/RequestReplyInterop.java`` on the classpath of
the Java tools that go with the cluster's release (``rocketmq-client`` 5.5.0 for 5.x brokers).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from rocketmq_py import ConsumeStatus, Message, MessageExt, Producer, PushConsumer, create_reply
from rocketmq_py.errors import RequestReplyTimeout
from rocketmq_py.protocol import PropertyKey, reply_topic
from rocketmq_py.testing import Cluster
from rocketmq_py.testing._cluster import CLUSTER_NAME
from rocketmq_py.testing._tools import ToolResult, run_java_program

JAVA_DRIVER = Path(__file__).parent / "java" / "RequestReplyInterop.java"
REPLY_TOPIC = reply_topic(CLUSTER_NAME)
#: Long enough for a JVM to start and a consumer group to rebalance on a loaded machine.
TIMEOUT = 60.0


def _java(cluster: Cluster, *args: str) -> ToolResult:
    return run_java_program(
        JAVA_DRIVER, [args[0], cluster.namesrv_addr, *args[1:]], version=cluster.version, timeout=180
    )


def _lines(result: ToolResult, prefix: str, fields: int) -> list[list[str]]:
    """The lines starting with ``prefix``, split in ``fields`` words (the last one, a body, may have spaces)."""
    return [
        line.split(" ", fields - 1) for line in result.output.splitlines() if line.startswith(prefix + " ")
    ]


@asynccontextmanager
async def our_responder(cluster: Cluster, topic: str) -> AsyncIterator[list[MessageExt]]:
    """A push consumer of ``topic`` answering every request with ``re: <body>``; yields the requests."""
    answered: list[MessageExt] = []
    async with Producer("it-rr-responder", namesrv=cluster.namesrv_addr) as producer:

        async def listener(messages: list[MessageExt]) -> ConsumeStatus:
            for request in messages:
                await producer.send(create_reply(request, b"re: " + request.body))
                answered.append(request)
            return ConsumeStatus.CONSUME_SUCCESS

        consumer = PushConsumer(
            f"it-rr-{topic}",
            namesrv=cluster.namesrv_addr,
            listener=listener,
            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        )
        consumer.subscribe(topic)
        async with consumer:
            yield answered


@pytest.mark.direct_route(
    "a 5.x Proxy takes no replies (SEND_REPLY_MESSAGE_V2): test_proxy.py checks the refusal"
)
async def test_our_requester_and_our_responder(cluster: Cluster, create_topic: Callable[..., str]) -> None:
    topic = create_topic(2)
    async with (
        our_responder(cluster, topic) as answered,
        Producer("it-rr-requester", namesrv=cluster.namesrv_addr) as requester,
    ):
        replies: dict[bytes, MessageExt] = {}

        async def ask(body: bytes) -> None:
            replies[body] = await requester.request(Message(topic, body), timeout=TIMEOUT)

        async with trio.open_nursery() as nursery:
            for body in (b"one", b"two", b"three"):
                nursery.start_soon(ask, body)
        client_id = requester.client_id
    assert {body: reply.body for body, reply in replies.items()} == {
        b"one": b"re: one",
        b"two": b"re: two",
        b"three": b"re: three",
    }
    assert {reply.topic for reply in replies.values()} == {REPLY_TOPIC}
    by_body = {request.body: request for request in answered}
    for body, reply in replies.items():
        request = by_body[body]
        assert request.properties[PropertyKey.CLUSTER] == CLUSTER_NAME
        assert request.properties[PropertyKey.REPLY_TO_CLIENT] == client_id
        assert reply.properties[PropertyKey.CORRELATION_ID] == request.properties[PropertyKey.CORRELATION_ID]


@pytest.mark.direct_route(
    "a 5.x Proxy takes no replies (SEND_REPLY_MESSAGE_V2): test_proxy.py checks the refusal"
)
async def test_our_requester_and_the_java_responder(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(2)
    java: list[ToolResult] = []

    async def run_responder() -> None:
        java.append(await trio.to_thread.run_sync(_java, cluster, "respond", topic, "1", str(int(TIMEOUT))))

    async with (
        Producer("it-rr-requester", namesrv=cluster.namesrv_addr) as requester,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(run_responder)
        reply = await requester.request(Message(topic, b"from python"), timeout=TIMEOUT)
    [result] = java
    assert result.ok, result.output
    [[_, correlation_id, body]] = _lines(result, "REPLIED", 3)
    assert body == "from python"
    assert reply.body == b"re: from python"
    assert reply.topic == REPLY_TOPIC
    assert reply.properties[PropertyKey.CORRELATION_ID] == correlation_id
    assert reply.properties[PropertyKey.MESSAGE_TYPE] == "reply"


@pytest.mark.direct_route(
    "a 5.x Proxy takes no replies (SEND_REPLY_MESSAGE_V2): test_proxy.py checks the refusal"
)
async def test_the_java_requester_and_our_responder(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(2)
    async with our_responder(cluster, topic) as answered:
        result = await trio.to_thread.run_sync(
            _java, cluster, "request", topic, "from-java", str(int(TIMEOUT * 1000))
        )
    assert result.ok, result.output
    [[_, topic_seen, correlation_id, body]] = _lines(result, "REPLY", 4)
    assert (topic_seen, body) == (REPLY_TOPIC, "re: from-java")
    [request] = [r for r in answered if r.body == b"from-java"]
    assert request.properties[PropertyKey.CORRELATION_ID] == correlation_id


async def test_a_request_nobody_answers_times_out(cluster: Cluster, create_topic: Callable[..., str]) -> None:
    topic = create_topic(2)
    async with Producer("it-rr-requester", namesrv=cluster.namesrv_addr) as requester:
        with pytest.raises(RequestReplyTimeout) as caught:
            await requester.request(Message(topic, b"hello?"), timeout=3.0)
        assert caught.value.sent is True
        assert len(requester._client_instance.replies) == 0
