"""The sink's send loop against fake brokers: batching, ordered lanes, in-flight limit, failures."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from rocketmq_py.errors import MessageIllegal, MessageTooLarge, SystemBusy, broker_error_for
from rocketmq_py.producer._selectors import select_by_hash
from rocketmq_py.protocol import Message, RemotingCommand, RequestCode, ResponseCode
from spark_connector._sink import send_messages

if TYPE_CHECKING:
    from conftest import SinkCluster

TOPIC = "SinkTopic"


def bodies_by_queue(cluster: SinkCluster, topic: str = TOPIC) -> dict[tuple[str, int], list[bytes]]:
    return {queue: [m.body for m in msgs] for queue, msgs in cluster.stored(topic).items() if msgs}


async def test_unordered_rows_go_in_batches_each_message_once(sink_cluster: SinkCluster) -> None:
    messages = [Message(TOPIC, f"m{i}".encode(), tags="T") for i in range(200)]
    async with sink_cluster.producer() as producer:
        counts = await send_messages(producer, messages, batch_size=64)
    sends = sink_cluster.sends()
    assert [cmd.code for cmd in sends] == [RequestCode.SEND_BATCH_MESSAGE] * 4  # 64 + 64 + 64 + 8
    stored = sorted(b for bodies in bodies_by_queue(sink_cluster).values() for b in bodies)
    assert stored == sorted(f"m{i}".encode() for i in range(200))
    assert (counts.messages, counts.requests, counts.topics) == (200, 4, {TOPIC: 200})
    assert counts.body_bytes == sum(len(m.body) for m in messages)


async def test_batches_are_per_topic_and_delayed_rows_go_alone(sink_cluster: SinkCluster) -> None:
    messages = [
        Message(TOPIC, b"a1"),
        Message("OtherTopic", b"b1"),
        Message(TOPIC, b"late", delay_level=2),
        Message(TOPIC, b"a2"),
        Message("OtherTopic", b"b2"),
    ]
    async with sink_cluster.producer() as producer:
        counts = await send_messages(producer, messages, batch_size=10)
    codes = sorted((cmd.ext_fields["b"], cmd.code) for cmd in sink_cluster.sends())
    assert codes == [
        ("OtherTopic", RequestCode.SEND_BATCH_MESSAGE),
        (TOPIC, RequestCode.SEND_MESSAGE_V2),
        (TOPIC, RequestCode.SEND_BATCH_MESSAGE),
    ]
    (single,) = [cmd for cmd in sink_cluster.sends() if cmd.code == RequestCode.SEND_MESSAGE_V2]
    assert single.body == b"late"
    assert counts.topics == {TOPIC: 3, "OtherTopic": 2}
    assert counts.requests == 3


async def test_a_sharding_key_keeps_its_queue_and_its_row_order(sink_cluster: SinkCluster) -> None:
    keys = [f"order-{n}" for n in range(5)]
    messages = []
    for i in range(300):
        m = Message(TOPIC, f"{keys[i % 5]}:{i}".encode())
        m.sharding_key = keys[i % 5]
        messages.append(m)
    async with sink_cluster.producer() as producer:
        info = await producer.instance.routes.publish_info(TOPIC)
        counts = await send_messages(producer, messages, batch_size=16, max_in_flight=8)
    assert counts.messages == 300
    stored = bodies_by_queue(sink_cluster)
    for key in keys:
        queue = select_by_hash(info.queues, Message(TOPIC), key)
        in_queue = [
            b for b in stored[(queue.broker_name, queue.queue_id)] if b.startswith(f"{key}:".encode())
        ]
        assert in_queue == [f"{key}:{i}".encode() for i in range(300) if i % 5 == keys.index(key)]
    assert sum(len(v) for v in stored.values()) == 300


async def test_no_more_than_max_in_flight_requests(
    sink_cluster: SinkCluster, autojump_clock: trio.testing.MockClock
) -> None:
    for fb in (sink_cluster.a, sink_cluster.b):
        fb.delay(RequestCode.SEND_MESSAGE_V2, 0.5)  # under the 1 s attempt timeout
    messages = [Message(TOPIC, f"m{i}".encode()) for i in range(32)]
    async with sink_cluster.producer() as producer:
        started = trio.current_time()
        counts = await send_messages(producer, messages, batch_size=1, max_in_flight=4)
        elapsed = trio.current_time() - started
    assert counts.requests == 32
    # 32 half-second sends, 4 at a time: 8 rounds of virtual time (route lookups take none).
    assert elapsed == pytest.approx(4.0, abs=0.01)


async def test_a_refused_send_fails_with_the_broker_error_and_the_rows(sink_cluster: SinkCluster) -> None:
    async def refuse(request: RemotingCommand) -> RemotingCommand | None:
        raise broker_error_for(ResponseCode.MESSAGE_ILLEGAL, "the message body size over max value")

    for fb in (sink_cluster.a, sink_cluster.b):
        fb.on(RequestCode.SEND_BATCH_MESSAGE, refuse)
    messages = [Message(TOPIC, f"m{i}".encode()) for i in range(10)]
    async with sink_cluster.producer() as producer:
        with pytest.raises(MessageIllegal) as info:  # the typed error itself, not an exception group
            await send_messages(producer, messages, batch_size=4)
    assert "the message body size over max value" in str(info.value)
    (note,) = info.value.__notes__
    assert note.startswith("rocketmq sink: sending rows ")
    assert note.endswith(f"of this task to topic {TOPIC!r} failed")


async def test_an_oversized_row_fails_before_any_io_for_it(sink_cluster: SinkCluster) -> None:
    messages = [Message(TOPIC, b"ok"), Message(TOPIC, b"x" * 2048)]
    async with sink_cluster.producer(max_message_size=1024) as producer:
        with pytest.raises(MessageTooLarge, match="2048 bytes, above the maximum of 1024") as info:
            await send_messages(producer, messages, batch_size=1)
    assert info.value.__notes__ == [f"rocketmq sink: sending row 1 of this task to topic {TOPIC!r} failed"]


async def test_ordered_sends_to_an_explicit_queue_are_not_retried(sink_cluster: SinkCluster) -> None:
    async def busy(request: RemotingCommand) -> RemotingCommand | None:
        raise broker_error_for(ResponseCode.SYSTEM_BUSY, "too busy")

    for fb in (sink_cluster.a, sink_cluster.b):
        fb.on(RequestCode.SEND_MESSAGE_V2, busy)
    message = Message(TOPIC, b"x")
    message.sharding_key = "k"
    async with sink_cluster.producer() as producer:
        with pytest.raises(SystemBusy, match="too busy"):
            await send_messages(producer, [message], batch_size=1)
    assert len(sink_cluster.sends()) == 1  # one attempt, so a retry never reorders a key
