"""Invalid messages are refused before any I/O: no route query, no connection, nothing sent."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
import trio.testing

from rocketmq_py.errors import (
    EmptyBody,
    InvalidGroup,
    InvalidMessage,
    InvalidTopic,
    MessageTooLarge,
    ReservedProperty,
)
from rocketmq_py.producer._producer import Producer
from rocketmq_py.protocol import Message

if TYPE_CHECKING:
    from conftest import Cluster

MakeProducer = Callable[..., Producer]

BAD_MESSAGES = [
    pytest.param(Message("bad topic!", b"x"), InvalidTopic, "illegal characters", id="topic-chars"),
    pytest.param(
        Message("t" * 128, b"x"), InvalidTopic, "longer than the maximum of 127", id="topic-too-long"
    ),
    pytest.param(Message("TBW102", b"x"), InvalidTopic, "system topic", id="system-topic"),
    pytest.param(Message("TopicTest", b""), EmptyBody, "empty", id="empty-body"),
    pytest.param(Message("TopicTest", b"x" * 1025), MessageTooLarge, "1025", id="body-too-large"),
    pytest.param(
        Message("TopicTest", b"x", properties={"PGROUP": "g"}),
        ReservedProperty,
        "PGROUP",
        id="reserved-property",
    ),
]


def assert_no_io(cluster: Cluster) -> None:
    for fb in (cluster.namesrv, cluster.a, cluster.b):
        assert fb.accepted == 0
        assert fb.received == []


@pytest.mark.parametrize(("message", "error", "text"), BAD_MESSAGES)
async def test_send_refuses_before_io(
    cluster: Cluster, make_producer: MakeProducer, message: Message, error: type[InvalidMessage], text: str
) -> None:
    async with make_producer(max_message_size=1024) as producer:
        with pytest.raises(error, match=text):
            await producer.send(message)
        with pytest.raises(error, match=text):
            await producer.send_oneway(message)
        with pytest.raises(error, match=text):
            await producer.send_batch([message])
        await trio.testing.wait_all_tasks_blocked()
        assert_no_io(cluster)
        stats = producer.statistics()
        assert (stats.attempts, stats.sent) == (0, 0)
    # Nothing was ever routed, so closing had no broker to unregister from either.
    assert_no_io(cluster)


@pytest.mark.parametrize(
    ("messages", "text"),
    [
        pytest.param([], "at least one message", id="empty"),
        pytest.param([Message("TopicTest", b"x"), Message("Other", b"y")], "one topic", id="two-topics"),
        pytest.param([Message("TopicTest", b"x", delay_level=3)], "delayed", id="delay"),
    ],
)
async def test_send_batch_refuses_before_io(
    cluster: Cluster, make_producer: MakeProducer, messages: list[Message], text: str
) -> None:
    async with make_producer() as producer:
        with pytest.raises(InvalidMessage, match=text):
            await producer.send_batch(messages)
        await trio.testing.wait_all_tasks_blocked()
        assert_no_io(cluster)


async def test_batch_larger_than_max_size_is_refused_before_io(
    cluster: Cluster, make_producer: MakeProducer
) -> None:
    # Every body fits, the encoded batch does not.
    messages = [Message("TopicTest", b"x" * 600) for _ in range(2)]
    async with make_producer(max_message_size=1024) as producer:
        with pytest.raises(MessageTooLarge):
            await producer.send_batch(messages)
        await trio.testing.wait_all_tasks_blocked()
        assert_no_io(cluster)


@pytest.mark.parametrize("group", ["DEFAULT_PRODUCER", "bad group", "g" * 121, ""])
async def test_bad_producer_group_is_refused_at_construction(cluster: Cluster, group: str) -> None:
    with pytest.raises(InvalidGroup):
        Producer(group, namesrv=cluster.namesrv.address)
    assert_no_io(cluster)
