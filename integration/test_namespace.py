"""Namespaces against the real broker, with the Java client (``setNamespace``) on the other side.

Our producer in namespace ``ns1`` sends to ``topic``; a Java consumer with the same namespace and the
plain names receives every message (``integration/java/NamespaceClient.java``, run with the client
jars of the cluster's release). A Java producer in ``ns1`` sends; our PushConsumer in ``ns1``
receives with the plain topic. mqadmin shows the topic on the broker as ``ns1%topic``.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import trio

from rocketmq_py import Message, MessageExt, Producer, PushConsumer
from rocketmq_py.testing import Cluster
from rocketmq_py.testing._distribution import resolve_client
from rocketmq_py.testing._tools import ToolResult, run_java

NS = "ns1"
COUNT = 20
JAVA_CLIENT = Path(__file__).parent / "java" / "NamespaceClient.java"
_STATUS_ROW = re.compile(r"^(broker-\S+)\s+(\d+)\s+(\d+)\s+(\d+)", re.MULTILINE)


def _names(prefix: str) -> tuple[str, str]:
    """A fresh plain topic and group."""
    suffix = uuid.uuid4().hex[:10]
    return f"it-{prefix}-{suffix}", f"it-{prefix}-group-{suffix}"


def _java(cluster: Cluster, *args: str, timeout: float = 180.0) -> ToolResult:
    classpath = resolve_client(cluster.version).classpath
    return run_java(
        classpath,
        str(JAVA_CLIENT),
        [args[0], cluster.namesrv_addr, NS, *args[1:]],
        jvm_opts=["-Xms64m", "-Xmx256m"],
        timeout=timeout,
    )


def _stored(cluster: Cluster, wire_topic: str) -> int:
    """Messages in ``wire_topic`` (sum of max offsets from ``mqadmin topicStatus``)."""
    status = cluster.mqadmin("topicStatus", "-t", wire_topic).check().output
    return sum(int(row[3]) for row in _STATUS_ROW.findall(status))


def _topic_list(cluster: Cluster) -> set[str]:
    return set(cluster.mqadmin("topicList").check().output.split())


async def test_our_producer_to_a_java_consumer_in_the_namespace(cluster: Cluster) -> None:
    topic, group = _names("ns-py2java")
    wire = f"{NS}%{topic}"
    cluster.create_topic(wire, 4)
    async with Producer(f"{group}-p", namesrv=cluster.namesrv_addr, namespace=NS) as producer:
        results = [await producer.send(Message(topic, f"py-{i}".encode())) for i in range(COUNT)]
    assert {r.queue.topic for r in results} == {topic}

    assert wire in _topic_list(cluster)
    assert topic not in _topic_list(cluster)
    assert _stored(cluster, wire) == COUNT

    java = await trio.to_thread.run_sync(lambda: _java(cluster, "consume", topic, group, str(COUNT), "120"))
    java.check()
    received = re.findall(r"^RECEIVED (\S+) (\d+) (\S+)$", java.output, re.MULTILINE)
    assert sorted(body for _, _, body in received) == sorted(f"py-{i}" for i in range(COUNT))
    assert {t for t, _, _ in received} == {topic}  # Java unwraps the topic for its listener too
    # The Java consumer committed its offsets under the wrapped group.
    progress = cluster.mqadmin("consumerProgress", "-g", f"{NS}%{group}").check().output
    assert wire in progress


async def test_java_producer_to_our_push_consumer_in_the_namespace(cluster: Cluster) -> None:
    topic, group = _names("ns-java2py")
    wire = f"{NS}%{topic}"
    cluster.create_topic(wire, 4)
    java = await trio.to_thread.run_sync(lambda: _java(cluster, "produce", topic, f"{group}-p", str(COUNT)))
    java.check()
    sent = re.findall(r"^SENT (\S+) (\S+)$", java.output, re.MULTILINE)
    assert len(sent) == COUNT
    assert {t for t, _ in sent} == {topic}
    assert _stored(cluster, wire) == COUNT
    assert wire in _topic_list(cluster)

    got: list[MessageExt] = []

    async def listener(msgs: list[MessageExt]) -> None:
        got.extend(msgs)

    consumer = PushConsumer(
        group,
        namesrv=cluster.namesrv_addr,
        namespace=NS,
        listener=listener,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
    )
    consumer.subscribe(topic)
    async with consumer:
        with trio.fail_after(60):
            while len(got) < COUNT:  # noqa: ASYNC110 - the listener fills the list
                await trio.sleep(0.1)
        await trio.sleep(1)  # no duplicates trickle in
        owned = sorted(consumer.assignment())
    assert sorted(m.body for m in got) == sorted(f"java-{i}".encode() for i in range(COUNT))
    assert {m.topic for m in got} == {topic}
    assert {mq.topic for mq in owned} == {topic, f"%RETRY%{group}"}
    # The broker knows the group and its retry topic by their wrapped names.
    assert f"%RETRY%{NS}%{group}" in _topic_list(cluster)
    progress = cluster.mqadmin("consumerProgress", "-g", f"{NS}%{group}").check().output
    assert wire in progress


async def test_a_failed_message_comes_back_through_the_wrapped_retry_topic(cluster: Cluster) -> None:
    topic, group = _names("ns-retry")
    wire = f"{NS}%{topic}"
    cluster.create_topic(wire, 2)
    got: list[MessageExt] = []

    async def listener(msgs: list[MessageExt]) -> None:
        got.extend(msgs)
        if all(m.reconsume_times == 0 for m in msgs):
            raise RuntimeError("fail the first delivery")

    consumer = PushConsumer(
        group,
        namesrv=cluster.namesrv_addr,
        namespace=NS,
        listener=listener,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
    )
    consumer.subscribe(topic)
    async with Producer(f"{group}-p", namesrv=cluster.namesrv_addr, namespace=NS) as producer, consumer:
        await producer.send(Message(topic, b"retry-me"))
        with trio.fail_after(90):  # the first retry level is 10 s
            while len(got) < 2:  # noqa: ASYNC110 - the listener fills the list
                await trio.sleep(0.2)
    first, again = got[:2]
    assert first.topic == again.topic == topic
    assert again.reconsume_times == 1
    assert again.properties["RETRY_TOPIC"] == wire
    assert _stored(cluster, f"%RETRY%{NS}%{group}") >= 1


async def test_fetch_publish_queues_are_the_wrapped_topics_queues_under_the_plain_name(
    cluster: Cluster,
) -> None:
    """``Producer.fetch_publish_queues`` against ``mqadmin topicStatus`` of the wrapped topic (the
    fake-broker test of the same, tests/producer/test_producer_namespace.py, assumes this route)."""
    topic, group = _names("ns-queues")
    wire = f"{NS}%{topic}"
    cluster.create_topic(wire, 4)
    async with Producer(f"{group}-p", namesrv=cluster.namesrv_addr, namespace=NS) as producer:
        queues = await producer.fetch_publish_queues(topic)
    status = cluster.mqadmin("topicStatus", "-t", wire).check().output
    listed = {(broker, int(queue_id)) for broker, queue_id, _, _ in _STATUS_ROW.findall(status)}
    assert {q.topic for q in queues} == {topic}
    assert {(q.broker_name, q.queue_id) for q in queues} == listed
    assert len(listed) == 4 * len(cluster.brokers)
