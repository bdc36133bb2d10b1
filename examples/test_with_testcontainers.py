"""Your own tests against a real RocketMQ in Docker: pytest, testcontainers and ``start_cluster()``.

Copy this file into your project's tests. It needs ``pip install rocketmq-py[dev]`` (pytest,
pytest-trio, testcontainers) and a Docker engine; then::

    pytest test_with_testcontainers.py     # pytest-trio runs the async tests (the trio mark)

``start_cluster(backend="docker")`` starts a NameServer and a broker in containers of the official
``apache/rocketmq`` image (pulled on first use; a ``rocketmq-py/rocketmq`` image built with
``python -m rocketmq_py.testing build-image`` is used instead where present, for machines without
an image registry). The containers use the host's network and everything is on 127.0.0.1; they are
removed when the fixture ends. ``ROCKETMQ_VERSION`` picks the release (default 5.3.3).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
import trio

from rocketmq_py import ConsumeStatus, Message, MessageExt, Producer, PushConsumer, SendStatus
from rocketmq_py.testing import Cluster, start_cluster

pytestmark = pytest.mark.trio


@pytest.fixture(scope="session")
def rocketmq() -> Iterator[Cluster]:
    """One NameServer and one broker in Docker for the whole test session."""
    with start_cluster(brokers=1, backend=os.environ.get("ROCKETMQ_BACKEND", "docker")) as cluster:
        yield cluster


@pytest.fixture
def topic(rocketmq: Cluster) -> str:
    """A fresh topic with 4 queues (created with the official mqadmin tool)."""
    name = f"orders-{uuid.uuid4().hex[:8]}"
    rocketmq.create_topic(name, queues=4)
    return name


async def test_send_and_consume(rocketmq: Cluster, topic: str) -> None:
    async with Producer("orders-producer", namesrv=rocketmq.namesrv_addr) as producer:
        sent = [await producer.send(Message(topic, f"order {i}".encode(), tags="new")) for i in range(10)]
    assert all(result.status is SendStatus.SEND_OK for result in sent)

    received: list[MessageExt] = []
    all_in = trio.Event()

    async def on_messages(messages: list[MessageExt]) -> ConsumeStatus:
        received.extend(messages)
        if len(received) >= len(sent):
            all_in.set()
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        "orders-consumer",
        namesrv=rocketmq.namesrv_addr,
        listener=on_messages,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",  # a new group reads the topic from the start
    )
    consumer.subscribe(topic, "new")
    async with consumer:
        with trio.fail_after(60):
            await all_in.wait()
    assert sorted(m.body for m in received) == sorted(f"order {i}".encode() for i in range(10))
    assert {m.msg_id for m in received} == {result.msg_id for result in sent}


async def test_a_tag_filter_skips_other_tags(rocketmq: Cluster, topic: str) -> None:
    async with Producer("orders-producer", namesrv=rocketmq.namesrv_addr) as producer:
        for i in range(6):
            await producer.send(Message(topic, f"event {i}".encode(), tags="paid" if i % 2 else "cancelled"))

    paid: list[bytes] = []
    three = trio.Event()

    async def on_paid(messages: list[MessageExt]) -> ConsumeStatus:
        paid.extend(m.body for m in messages)
        if len(paid) >= 3:
            three.set()
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        "paid-consumer",
        namesrv=rocketmq.namesrv_addr,
        listener=on_paid,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
    )
    consumer.subscribe(topic, "paid")
    async with consumer:
        with trio.fail_after(60):
            await three.wait()
    assert sorted(paid) == [b"event 1", b"event 3", b"event 5"]
