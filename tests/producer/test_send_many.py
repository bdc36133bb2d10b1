"""The producer's bulk sender (``send_many``) against fake brokers: batching, ordered lanes, the
in-flight limit, failures that stop it and failures it counts."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing

from rocketmq_py.errors import InvalidMessage, MessageIllegal, MessageTooLarge, SystemBusy, broker_error_for
from rocketmq_py.producer._batcher import Chunk
from rocketmq_py.producer._selectors import select_by_hash
from rocketmq_py.producer._send_many import send_many
from rocketmq_py.producer._types import SendResult
from rocketmq_py.protocol import (
    BrokerData,
    Message,
    MessageQueue,
    QueueData,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    TopicRouteData,
)

if TYPE_CHECKING:
    from conftest import BulkCluster

TOPIC = "SinkTopic"


def bodies_by_queue(cluster: BulkCluster, topic: str = TOPIC) -> dict[tuple[str, int], list[bytes]]:
    return {queue: [m.body for m in msgs] for queue, msgs in cluster.stored(topic).items() if msgs}


async def test_unordered_rows_go_in_batches_each_message_once(bulk_cluster: BulkCluster) -> None:
    messages = [Message(TOPIC, f"m{i}".encode(), tags="T") for i in range(200)]
    async with bulk_cluster.producer() as producer:
        counts = await send_many(producer, messages, batch_size=64)
    sends = bulk_cluster.sends()
    assert [cmd.code for cmd in sends] == [RequestCode.SEND_BATCH_MESSAGE] * 4  # 64 + 64 + 64 + 8
    stored = sorted(b for bodies in bodies_by_queue(bulk_cluster).values() for b in bodies)
    assert stored == sorted(f"m{i}".encode() for i in range(200))
    assert (counts.messages, counts.requests, counts.topics) == (200, 4, {TOPIC: 200})
    assert counts.body_bytes == sum(len(m.body) for m in messages)


async def test_batches_are_per_topic_and_delayed_rows_go_alone(bulk_cluster: BulkCluster) -> None:
    messages = [
        Message(TOPIC, b"a1"),
        Message("OtherTopic", b"b1"),
        Message(TOPIC, b"late", delay_level=2),
        Message(TOPIC, b"a2"),
        Message("OtherTopic", b"b2"),
    ]
    async with bulk_cluster.producer() as producer:
        counts = await send_many(producer, messages, batch_size=10)
    codes = sorted((cmd.ext_fields["b"], cmd.code) for cmd in bulk_cluster.sends())
    assert codes == [
        ("OtherTopic", RequestCode.SEND_BATCH_MESSAGE),
        (TOPIC, RequestCode.SEND_MESSAGE_V2),
        (TOPIC, RequestCode.SEND_BATCH_MESSAGE),
    ]
    (single,) = [cmd for cmd in bulk_cluster.sends() if cmd.code == RequestCode.SEND_MESSAGE_V2]
    assert single.body == b"late"
    assert counts.topics == {TOPIC: 3, "OtherTopic": 2}
    assert counts.requests == 3


async def test_a_sharding_key_keeps_its_queue_and_its_row_order(bulk_cluster: BulkCluster) -> None:
    keys = [f"order-{n}" for n in range(5)]
    messages = []
    for i in range(300):
        m = Message(TOPIC, f"{keys[i % 5]}:{i}".encode())
        m.sharding_key = keys[i % 5]
        messages.append(m)
    async with bulk_cluster.producer() as producer:
        info = await producer._client_instance.routes.publish_info(TOPIC)
        counts = await send_many(producer, messages, batch_size=16, max_in_flight=8)
    assert counts.messages == 300
    stored = bodies_by_queue(bulk_cluster)
    for key in keys:
        queue = select_by_hash(info.queues, Message(TOPIC), key)
        in_queue = [
            b for b in stored[(queue.broker_name, queue.queue_id)] if b.startswith(f"{key}:".encode())
        ]
        assert in_queue == [f"{key}:{i}".encode() for i in range(300) if i % 5 == keys.index(key)]
    assert sum(len(v) for v in stored.values()) == 300


async def test_no_more_than_max_in_flight_requests(
    bulk_cluster: BulkCluster, autojump_clock: trio.testing.MockClock
) -> None:
    for fb in (bulk_cluster.a, bulk_cluster.b):
        fb.delay(RequestCode.SEND_MESSAGE_V2, 0.5)  # under the 1 s attempt timeout
    messages = [Message(TOPIC, f"m{i}".encode()) for i in range(32)]
    async with bulk_cluster.producer() as producer:
        started = trio.current_time()
        counts = await send_many(producer, messages, batch_size=1, max_in_flight=4)
        elapsed = trio.current_time() - started
    assert counts.requests == 32
    # 32 half-second sends, 4 at a time: 8 rounds of virtual time (route lookups take none).
    assert elapsed == pytest.approx(4.0, abs=0.01)


async def test_a_refused_send_stops_everything_with_the_broker_error_and_a_note(
    bulk_cluster: BulkCluster,
) -> None:
    async def refuse(request: RemotingCommand) -> RemotingCommand | None:
        raise broker_error_for(ResponseCode.MESSAGE_ILLEGAL, "the message body size over max value")

    for fb in (bulk_cluster.a, bulk_cluster.b):
        fb.on(RequestCode.SEND_BATCH_MESSAGE, refuse)
    messages = [Message(TOPIC, f"m{i}".encode()) for i in range(10)]
    async with bulk_cluster.producer() as producer:
        with pytest.raises(MessageIllegal) as info:  # the typed error itself, not an exception group
            await send_many(producer, messages, batch_size=4)
    assert "the message body size over max value" in str(info.value)
    (note,) = info.value.__notes__
    assert note.startswith("send_many: sending messages ")
    assert note.endswith(f"to topic {TOPIC!r} failed")


async def test_with_on_failure_broker_errors_are_counted_and_sending_goes_on(
    bulk_cluster: BulkCluster,
) -> None:
    for fb in (bulk_cluster.a, bulk_cluster.b):
        store = fb._messages  # the fake's own send handler, for the messages it accepts

        async def some_refused(request: RemotingCommand, store: Any = store) -> RemotingCommand | None:
            if request.body.endswith((b"0", b"3", b"6", b"9")):
                raise broker_error_for(ResponseCode.SYSTEM_BUSY, "too busy")
            return await store.send_message(request)  # type: ignore[no-any-return]

        fb.on(RequestCode.SEND_MESSAGE_V2, some_refused)
    ok: list[tuple[str, int]] = []
    failures: list[tuple[str, int]] = []

    def sent(result: SendResult, chunk: Chunk) -> None:
        ok.append((result.msg_id, chunk.first_index))

    def failed(error: Exception, chunk: Chunk) -> None:
        failures.append((type(error).__name__, chunk.first_index))

    messages = [Message(TOPIC, f"m{i}".encode()) for i in range(20)]
    async with bulk_cluster.producer(retry_times=0) as producer:
        counts = await send_many(
            producer, messages, batch_size=1, max_in_flight=3, on_sent=sent, on_failure=failed
        )
    failed_indexes = sorted(i for _, i in failures)
    assert failed_indexes == [i for i in range(20) if i % 10 in (0, 3, 6, 9)]
    assert {name for name, _ in failures} == {"SystemBusy"}
    assert sorted(i for _, i in ok) == [i for i in range(20) if i % 10 not in (0, 3, 6, 9)]
    assert (counts.messages, counts.failed_messages) == (12, 8)


async def test_an_invalid_message_stops_sending_even_with_on_failure(bulk_cluster: BulkCluster) -> None:
    failures: list[Chunk] = []
    messages = [Message(TOPIC, b"ok"), Message(TOPIC, b"x" * 2048)]
    async with bulk_cluster.producer(max_message_size=1024) as producer:
        with pytest.raises(MessageTooLarge):
            await send_many(producer, messages, batch_size=1, on_failure=lambda e, c: failures.append(c))
    assert failures == []


async def test_a_delayed_message_in_a_lane_keeps_the_lane_order(bulk_cluster: BulkCluster) -> None:
    messages = []
    for i in range(10):
        m = Message(TOPIC, f"k:{i}".encode(), delay_level=1 if i == 4 else 0)
        m.sharding_key = "k"
        messages.append(m)
    async with bulk_cluster.producer() as producer:
        await send_many(producer, messages, batch_size=3)
    stored = [b for bodies in bodies_by_queue(bulk_cluster).values() for b in bodies]
    assert stored == [f"k:{i}".encode() for i in range(10)]  # one queue, in row order
    singles = [cmd.body for cmd in bulk_cluster.sends() if cmd.code == RequestCode.SEND_MESSAGE_V2]
    # [0, 1, 2] [3] [4] [5, 6, 7] [8, 9]: the delayed row goes alone (delays are not batched)
    # and first closes the lane's open batch, which leaves row 3 alone too.
    assert singles == [b"k:3", b"k:4"]
    assert len(bulk_cluster.sends()) == 5


async def test_ordered_sends_to_an_explicit_queue_are_not_retried(bulk_cluster: BulkCluster) -> None:
    async def busy(request: RemotingCommand) -> RemotingCommand | None:
        raise broker_error_for(ResponseCode.SYSTEM_BUSY, "too busy")

    for fb in (bulk_cluster.a, bulk_cluster.b):
        fb.on(RequestCode.SEND_MESSAGE_V2, busy)
    message = Message(TOPIC, b"x")
    message.sharding_key = "k"
    async with bulk_cluster.producer() as producer:
        with pytest.raises(SystemBusy, match="too busy"):
            await send_many(producer, [message], batch_size=1)
    assert len(bulk_cluster.sends()) == 1  # one attempt, so a retry never reorders a key


async def test_a_message_given_with_its_queue_goes_there_in_order(bulk_cluster: BulkCluster) -> None:
    """``(message, queue)`` pairs: each to its queue, in order, batched per queue (a lane, as a
    sharding key's); plain messages beside them are spread by the producer's own selection."""
    pinned = MessageQueue(TOPIC, "broker-b", 2)
    items: list[Message | tuple[Message, MessageQueue]] = []
    for i in range(100):
        message = Message(TOPIC, f"{'p' if i % 2 else 'f'}:{i}".encode())
        items.append((message, pinned) if i % 2 else message)
    async with bulk_cluster.producer() as producer:
        counts = await send_many(producer, items, batch_size=8, max_in_flight=4)
    assert counts.messages == 100
    stored = bodies_by_queue(bulk_cluster)
    assert [b for b in stored[("broker-b", 2)] if b.startswith(b"p:")] == [
        f"p:{i}".encode() for i in range(1, 100, 2)
    ]
    free = [q for q, bodies in stored.items() if any(b.startswith(b"f:") for b in bodies)]
    assert len(free) > 1  # the others were not pinned


@pytest.mark.parametrize(
    ("queue", "complaint"),
    [
        (MessageQueue(TOPIC, "broker-c", 0), "has no writable queue broker-c/0 (its queues: broker-a/0"),
        (MessageQueue(TOPIC, "broker-a", 99), "has no writable queue broker-a/99"),
        (MessageQueue("OtherTopic", "broker-a", 0), "is not of topic 'SinkTopic'"),
    ],
)
async def test_a_queue_the_route_lacks_stops_the_sending(
    bulk_cluster: BulkCluster, queue: MessageQueue, complaint: str
) -> None:
    items: list[Message | tuple[Message, MessageQueue]] = [
        Message(TOPIC, b"ok"),
        (Message(TOPIC, b"bad"), queue),
    ]
    async with bulk_cluster.producer() as producer:
        with pytest.raises(InvalidMessage, match=re.escape(complaint)) as info:
            await send_many(producer, items, batch_size=1)
    assert info.value.__notes__ == [f"send_many: sending message 1 to topic {TOPIC!r} failed"]


async def test_queues_and_sharding_keys_in_a_namespace(bulk_cluster: BulkCluster) -> None:
    """Plain names in, the namespace's topic on the brokers: the route looked up is the wrapped
    topic's, for a pair's queue and for a sharding key's (it was the plain one's, which only the
    namespace has here)."""
    plain = "NsOnlyTopic"
    wire = f"ns1%{plain}"
    for fb in (bulk_cluster.a, bulk_cluster.b):
        fb.add_topic(wire, queues=4)
    bulk_cluster.namesrv.set_route(
        wire,
        TopicRouteData(
            queue_datas=tuple(
                QueueData(broker_name=fb.broker_name, read_queue_nums=4, write_queue_nums=4, perm=6)
                for fb in (bulk_cluster.a, bulk_cluster.b)
            ),
            broker_datas=tuple(
                BrokerData(cluster="DefaultCluster", broker_name=fb.broker_name, broker_addrs={0: fb.address})
                for fb in (bulk_cluster.a, bulk_cluster.b)
            ),
        ),
    )
    keyed = Message(plain, b"keyed")
    keyed.sharding_key = "k"
    items: list[Message | tuple[Message, MessageQueue]] = [
        (Message(plain, b"pinned"), MessageQueue(plain, "broker-a", 3)),
        keyed,
    ]
    async with bulk_cluster.producer(namespace="ns1") as producer:
        await send_many(producer, items, batch_size=1)
        info = await producer._client_instance.routes.publish_info(wire)
    stored = bodies_by_queue(bulk_cluster, wire)
    assert stored[("broker-a", 3)][0] == b"pinned"
    home = select_by_hash(info.queues, Message(wire), "k")
    assert b"keyed" in stored[(home.broker_name, home.queue_id)]
