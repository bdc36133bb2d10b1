"""Producer sends against fake brokers: results, wire requests, compression, batches, oneway, selectors."""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing

from rocketmq_py.errors import StateError, SystemBusy
from rocketmq_py.producer._producer import Producer
from rocketmq_py.producer._selectors import select_by_hash
from rocketmq_py.producer._types import SendResult, SendStatus
from rocketmq_py.protocol import (
    Message,
    MessageQueue,
    RequestCode,
    ResponseCode,
    decode_batch,
    decode_properties,
    iter_batch,
)

if TYPE_CHECKING:
    from conftest import Cluster

MakeProducer = Callable[..., Producer]
V2_KEYS = frozenset("abcdefghijklmn")


async def test_send_result_matches_what_the_broker_stored(
    cluster: Cluster, make_producer: MakeProducer
) -> None:
    message = cluster.message(b"hello", tags="TagA", keys=["k1", "k2"], properties={"color": "red"})
    async with make_producer() as producer:
        result = await producer.send(message)

    assert result.status is SendStatus.SEND_OK
    fb = cluster.broker(result.queue.broker_name)
    (request,) = cluster.sends(fb)
    assert result.msg_id == cluster.uniq_key(request) == message.uniq_key
    assert len(result.msg_id) == 32
    (stored,) = fb.messages(cluster.topic, result.queue.queue_id)
    assert result.offset_msg_id == stored.offset_msg_id
    assert result.queue == MessageQueue(cluster.topic, fb.broker_name, stored.queue_id)
    assert result.queue_offset == stored.queue_offset == 0
    assert result.region_id == "DefaultRegion"
    assert result.transaction_id is None
    assert stored.body == b"hello"
    assert stored.tags == "TagA"
    assert stored.keys == ("k1", "k2")
    assert stored.properties["color"] == "red"
    other = cluster.b if fb is cluster.a else cluster.a
    assert cluster.sends(other) == []


async def test_send_request_is_send_message_v2_with_short_keys(
    cluster: Cluster, make_producer: MakeProducer
) -> None:
    message = cluster.message(b"payload", tags="TagA", keys="order-1", flag=7, properties={"color": "red"})
    async with make_producer() as producer:
        result = await producer.send(message)

    (request,) = cluster.sends(cluster.broker(result.queue.broker_name))
    assert request.code == 310  # RequestCode.SEND_MESSAGE_V2
    assert not request.is_oneway
    ext = request.ext_fields
    assert set(ext) <= V2_KEYS
    assert {"a", "b", "c", "d", "e", "f", "g", "h", "i"} <= set(ext)
    assert ext["a"] == cluster.group
    assert ext["b"] == cluster.topic
    assert ext["c"] == "TBW102"
    assert ext["d"] == "4"
    assert ext["e"] == str(result.queue.queue_id)
    assert ext["f"] == "0"
    assert abs(int(ext["g"]) - time.time() * 1000) < 60_000  # born timestamp: wall-clock ms
    assert ext["h"] == "7"
    assert ext["m"] == "false"
    assert ext["n"] == result.queue.broker_name
    properties = decode_properties(ext["i"])
    assert properties == {
        "TAGS": "TagA",
        "KEYS": "order-1",
        "color": "red",
        "UNIQ_KEY": result.msg_id,
    }
    assert request.body == b"payload"


async def test_queue_offsets_advance_per_queue(cluster: Cluster, make_producer: MakeProducer) -> None:
    queue = MessageQueue(cluster.topic, "broker-b", 1)
    async with make_producer() as producer:
        results = [await producer.send(cluster.message(b"m%d" % n), queue=queue) for n in range(3)]
    assert [r.queue for r in results] == [queue] * 3
    assert [r.queue_offset for r in results] == [0, 1, 2]
    assert len({r.msg_id for r in results}) == 3
    assert len({r.offset_msg_id for r in results}) == 3
    assert [m.body for m in cluster.b.messages(cluster.topic, 1)] == [b"m0", b"m1", b"m2"]
    assert cluster.sends(cluster.a) == []


@pytest.mark.parametrize(
    ("size", "compressed"),
    [(1, False), (4095, False), (4096, True), (100_000, True)],
)
async def test_bodies_from_4096_bytes_are_zlib_compressed(
    cluster: Cluster, make_producer: MakeProducer, size: int, compressed: bool
) -> None:
    body = (bytes(range(256)) * (size // 256 + 1))[:size]
    queue = MessageQueue(cluster.topic, "broker-a", 0)
    async with make_producer() as producer:
        await producer.send(cluster.message(body), queue=queue)

    (request,) = cluster.sends(cluster.a)
    sys_flag = int(request.ext_fields["f"])
    (stored,) = cluster.a.messages(cluster.topic, 0)
    if compressed:
        assert sys_flag == 0x301  # COMPRESSED | ZLIB type bits
        assert request.body != body
        assert len(request.body) < size
        assert zlib.decompress(request.body) == body
    else:
        assert sys_flag == 0
        assert request.body == body
    assert stored.sys_flag == sys_flag


async def test_compression_threshold_is_configurable(cluster: Cluster, make_producer: MakeProducer) -> None:
    queue = MessageQueue(cluster.topic, "broker-a", 0)
    async with make_producer(compress_over=10) as producer:
        await producer.send(cluster.message(b"x" * 10), queue=queue)
        await producer.send(cluster.message(b"x" * 9), queue=queue)
    first, second = cluster.sends(cluster.a)
    assert int(first.ext_fields["f"]) == 0x301
    assert zlib.decompress(first.body) == b"x" * 10
    assert int(second.ext_fields["f"]) == 0
    assert second.body == b"x" * 9


async def test_send_batch(cluster: Cluster, make_producer: MakeProducer) -> None:
    bodies = [b"one", b"two" * 3000, b"three"]  # the large one is not compressed in a batch
    messages = [cluster.message(body, tags=f"T{n}") for n, body in enumerate(bodies)]
    async with make_producer() as producer:
        result = await producer.send_batch(messages)

    fb = cluster.broker(result.queue.broker_name)
    (request,) = cluster.sends(fb)
    assert request.code == 320  # RequestCode.SEND_BATCH_MESSAGE
    ext = request.ext_fields
    assert set(ext) <= V2_KEYS
    assert ext["m"] == "true"
    assert ext["f"] == "0"
    assert ext["b"] == cluster.topic
    assert decode_properties(ext["i"])["WAIT"] == "true"

    inner = decode_batch(request.body, cluster.topic)
    assert [m.body for m in inner] == bodies
    keys = [m.properties["UNIQ_KEY"] for m in inner]
    assert len(set(keys)) == 3
    assert [m.tags for m in inner] == ["T0", "T1", "T2"]
    assert result.msg_id == ",".join(keys)
    assert [m.uniq_key for m in messages] == keys

    stored = fb.messages(cluster.topic, result.queue.queue_id)
    assert [m.body for m in stored] == bodies
    assert result.offset_msg_id == ",".join(m.offset_msg_id for m in stored)
    assert result.queue_offset == 0
    assert result.status is SendStatus.SEND_OK


async def test_send_batch_offsets_follow_earlier_messages(
    cluster: Cluster, make_producer: MakeProducer
) -> None:
    queue = MessageQueue(cluster.topic, "broker-a", 1)
    async with make_producer() as producer:
        single = await producer.send(cluster.message(b"first"), queue=queue)
        batch = await producer.send_batch([cluster.message(b"x"), cluster.message(b"y")], queue=queue)
    assert single.queue_offset == 0
    assert batch.queue == queue
    assert batch.queue_offset == 1
    assert [m.body for m in cluster.a.messages(cluster.topic, 1)] == [b"first", b"x", b"y"]


async def test_send_oneway_does_not_wait_for_a_reply(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    queue = MessageQueue(cluster.topic, "broker-a", 0)
    cluster.a.delay(RequestCode.SEND_MESSAGE_V2, 100)  # a reply, if one came, would take 100 s
    async with make_producer() as producer:
        start = trio.current_time()
        await producer.send_oneway(cluster.message(b"fire"), queue=queue)
        assert trio.current_time() == start
        with trio.fail_after(5):
            await cluster.a.wait_received(1, RequestCode.SEND_MESSAGE_V2)
        await trio.testing.wait_all_tasks_blocked()  # the fake stores it in a task of its own
        (request,) = cluster.sends(cluster.a)
        assert request.is_oneway
        assert request.code == RequestCode.SEND_MESSAGE_V2
        (stored,) = cluster.a.messages(cluster.topic, 0)
        assert stored.body == b"fire"
        assert stored.uniq_key == cluster.uniq_key(request)
        assert producer._client_instance.api.pool.statistics().pending_requests == 0
        assert producer.statistics().sent == 1


async def test_send_oneway_without_a_queue_uses_the_route(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    async with make_producer() as producer:
        for _ in range(4):
            await producer.send_oneway(cluster.message())
        with trio.fail_after(5):
            for fb in cluster.brokers:
                await fb.wait_received(2, RequestCode.SEND_MESSAGE_V2)
        await trio.testing.wait_all_tasks_blocked()
        stored = [m for fb in cluster.brokers for q in (0, 1) for m in fb.messages(cluster.topic, q)]
        assert len(stored) == 4
    # Round-robin over four queues, two per broker: each broker got two of the four.
    assert len(cluster.sends(cluster.a)) == len(cluster.sends(cluster.b)) == 2
    assert all(cmd.is_oneway for fb in cluster.brokers for cmd in cluster.sends(fb))
    assert cluster.route_queries() == [cluster.topic]


async def test_selector_chooses_the_queue(cluster: Cluster, make_producer: MakeProducer) -> None:
    seen: list[tuple[MessageQueue, ...]] = []

    def pick_last(queues: Sequence[MessageQueue], message: Message, arg: Any) -> MessageQueue:
        seen.append(tuple(queues))
        assert arg == "the-arg"
        return queues[-1]

    async with make_producer() as producer:
        result = await producer.send(cluster.message(), selector=pick_last, arg="the-arg")
        by_hash = [await producer.send(cluster.message(), selector=select_by_hash, arg=7) for _ in range(3)]

    all_queues = tuple(MessageQueue(cluster.topic, b, q) for b in ("broker-a", "broker-b") for q in (0, 1))
    assert seen == [all_queues]
    assert result.queue == MessageQueue(cluster.topic, "broker-b", 1)
    assert cluster.sends(cluster.b)[0].ext_fields["e"] == "1"
    # select_by_hash: queues[7 % 4], the same queue for the same key every time.
    assert {r.queue for r in by_hash} == {all_queues[3]}


async def test_selector_send_makes_one_attempt(cluster: Cluster, make_producer: MakeProducer) -> None:
    cluster.a.on_reply(RequestCode.SEND_MESSAGE_V2, ResponseCode.SYSTEM_BUSY, remark="busy")
    queue = MessageQueue(cluster.topic, "broker-a", 0)
    async with make_producer() as producer:
        with pytest.raises(SystemBusy):
            await producer.send(cluster.message(), selector=lambda queues, message, arg: queue)
        with pytest.raises(SystemBusy):
            await producer.send(cluster.message(), queue=queue)
        stats = producer.statistics()
    assert len(cluster.sends(cluster.a)) == 2
    assert cluster.sends(cluster.b) == []
    assert stats.attempts == 2
    assert stats.retries == 0
    assert stats.failed == 2


async def test_a_message_keeps_its_uniq_key_when_sent_again(
    cluster: Cluster, make_producer: MakeProducer
) -> None:
    message = cluster.message()
    async with make_producer() as producer:
        first = await producer.send(message)
        second = await producer.send(message)
    assert first.msg_id == second.msg_id == message.uniq_key
    assert first.offset_msg_id != second.offset_msg_id


async def test_statistics_count_sends(cluster: Cluster, make_producer: MakeProducer) -> None:
    async with make_producer() as producer:
        for _ in range(3):
            await producer.send(cluster.message())
        await producer.send_batch([cluster.message(), cluster.message()])
        stats = producer.statistics()
    assert (stats.sent, stats.failed, stats.attempts, stats.retries) == (4, 0, 4, 0)
    assert set(stats.fault) == {"broker-a", "broker-b"}
    assert all(item.reachable for item in stats.fault.values())


async def test_send_batch_wrapper_has_no_uniq_key(cluster: Cluster, make_producer: MakeProducer) -> None:
    # The broker appends the wrapper's properties to every stored entry; a wrapper UNIQ_KEY would
    # become every message's id on the consumer side (apache/rocketmq#9416).
    messages = [cluster.message(b"x"), cluster.message(b"y")]
    async with make_producer() as producer:
        result = await producer.send_batch(messages)
    (request,) = cluster.sends(cluster.broker(result.queue.broker_name))
    assert "UNIQ_KEY" not in decode_properties(request.ext_fields["i"])
    inner = [props["UNIQ_KEY"] for _flag, _body, props in iter_batch(request.body)]
    assert inner == result.msg_id.split(",")
    assert len(set(inner)) == 2


async def test_store_warnings_are_returned_as_statuses(cluster: Cluster, make_producer: MakeProducer) -> None:
    stored = {"msgId": "7F00000100002A9F0000000000000000", "queueId": "1", "queueOffset": "9"}
    cluster.a.on_reply(RequestCode.SEND_MESSAGE_V2, ResponseCode.FLUSH_DISK_TIMEOUT, ext_fields=stored)
    cluster.b.on_reply(RequestCode.SEND_MESSAGE_V2, ResponseCode.SLAVE_NOT_AVAILABLE, ext_fields=stored)
    async with make_producer() as producer:
        on_a = await producer.send(cluster.message(), queue=MessageQueue(cluster.topic, "broker-a", 1))
        on_b = await producer.send(cluster.message(), queue=MessageQueue(cluster.topic, "broker-b", 1))
        stats = producer.statistics()
    assert on_a.status is SendStatus.FLUSH_DISK_TIMEOUT
    assert on_b.status is SendStatus.SLAVE_NOT_AVAILABLE
    assert (on_a.offset_msg_id, on_a.queue_offset) == (stored["msgId"], 9)
    assert (stats.sent, stats.retries) == (2, 0)


async def test_not_store_ok_retries_on_another_broker_when_asked(
    cluster: Cluster, make_producer: MakeProducer
) -> None:
    stored = {"msgId": "7F00000100002A9F0000000000000000", "queueId": "0", "queueOffset": "0"}
    cluster.a.on_reply(RequestCode.SEND_MESSAGE_V2, ResponseCode.FLUSH_SLAVE_TIMEOUT, ext_fields=stored)
    async with make_producer(retry_another_broker_when_not_store_ok=True) as producer:
        results = [await producer.send(cluster.message()) for _ in range(4)]
        stats = producer.statistics()
    assert {r.status for r in results} == {SendStatus.SEND_OK}
    assert {r.queue.broker_name for r in results} == {"broker-b"}
    assert stats.retries == len(cluster.sends(cluster.a)) >= 1


async def test_concurrent_sends_share_one_route_lookup(cluster: Cluster, make_producer: MakeProducer) -> None:
    results: list[SendResult] = []
    async with make_producer() as producer:

        async def send_one(n: int) -> None:
            results.append(await producer.send(cluster.message(b"%d" % n)))

        async with trio.open_nursery() as nursery:
            for n in range(20):
                nursery.start_soon(send_one, n)
    assert len(results) == 20
    assert cluster.route_queries() == [cluster.topic]
    assert sum(len(fb.messages(cluster.topic, q)) for fb in cluster.brokers for q in (0, 1)) == 20


async def test_sending_outside_async_with_is_a_state_error(
    cluster: Cluster, make_producer: MakeProducer
) -> None:
    producer = make_producer()
    for _ in range(2):  # before start, then after close
        with pytest.raises(StateError):
            await producer.send(cluster.message())
        with pytest.raises(StateError):
            await producer.send_oneway(cluster.message())
        with pytest.raises(StateError):
            await producer.send_batch([cluster.message()])
        with pytest.raises(StateError):
            _ = producer.client_id
        async with producer:
            with pytest.raises(StateError, match="already started"):
                await producer.__aenter__()
    assert cluster.namesrv.accepted == 0
