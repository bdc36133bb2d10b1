"""The blocking Producer against an in-process FakeBroker (NameServer and broker in one).

The fake runs in the test's trio loop; the blocking producer runs in its own loop thread and is
driven from a worker thread (``trio.to_thread.run_sync``), so both loops make progress.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

import pytest
import trio

from rocketmq_py.errors import BrokerError, EmptyBody, MessageIllegal, StateError
from rocketmq_py.protocol import RemotingCommand, RequestCode
from rocketmq_py.sync import Message, MessageQueue, Producer, SendStatus, select_by_hash
from rocketmq_py.testing import FakeBroker

TOPIC = "SyncTopic"
T = TypeVar("T")


@pytest.fixture
async def broker() -> AsyncIterator[FakeBroker]:
    async with FakeBroker(broker_name="broker-a") as fb:
        fb.add_topic(TOPIC, queues=2)
        yield fb


async def blocking(fn: Callable[[], T]) -> T:
    return await trio.to_thread.run_sync(fn)


def _stored(fb: FakeBroker) -> list[bytes]:
    return sorted(m.body for q in range(2) for m in fb.messages(TOPIC, q))


def _threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("rocketmq-py")]


async def test_send_oneway_batch_and_statistics(broker: FakeBroker) -> None:
    def run() -> None:
        with Producer("pg-sync", namesrv=broker.address) as producer:
            assert producer.client_id.endswith(producer._client.config.instance_name or "?")
            result = producer.send(Message(TOPIC, b"one", tags="A", keys=["k1", "k2"]))
            assert result.status is SendStatus.SEND_OK
            assert result.queue.topic == TOPIC
            ordered = producer.send(Message(TOPIC, b"two"), selector=select_by_hash, arg=7)
            assert ordered.queue == MessageQueue(TOPIC, "broker-a", 7 % 2)
            producer.send_oneway(Message(TOPIC, b"three"), queue=MessageQueue(TOPIC, "broker-a", 0))
            batch = producer.send_batch([Message(TOPIC, b"four"), Message(TOPIC, b"five")])
            assert len(batch.msg_id.split(",")) == 2
            stats = producer.statistics()
            assert stats.sent == 4
            assert stats.failed == 0
        assert producer.statistics().sent == 4  # readable after shutdown

    await blocking(run)
    assert broker.requests(RequestCode.UNREGISTER_CLIENT)  # shutdown() unregistered the group
    assert _stored(broker) == [b"five", b"four", b"one", b"three", b"two"]
    one = next(m for q in range(2) for m in broker.messages(TOPIC, q) if m.body == b"one")
    assert one.tags == "A"
    assert one.keys == ("k1", "k2")
    assert _threads() == []


async def test_errors_keep_their_types(broker: FakeBroker) -> None:
    async def refuse(request: RemotingCommand) -> RemotingCommand | None:
        raise MessageIllegal(13, "refused by the test")

    broker.on(RequestCode.SEND_MESSAGE_V2, refuse)

    def run() -> None:
        with Producer("pg-sync", namesrv=broker.address) as producer:
            with pytest.raises(EmptyBody):
                producer.send(Message(TOPIC, b""))
            with pytest.raises(MessageIllegal, match="refused by the test") as caught:
                producer.send(Message(TOPIC, b"x"))
            assert isinstance(caught.value, BrokerError)
            assert caught.value.code == 13
            assert producer.statistics().failed == 1

    await blocking(run)


async def test_sends_from_many_threads(broker: FakeBroker) -> None:
    def run() -> None:
        with Producer("pg-sync", namesrv=broker.address) as producer:

            def work(n: int) -> None:
                for i in range(10):
                    producer.send(Message(TOPIC, f"{n}-{i}".encode()))

            workers = [threading.Thread(target=work, args=(n,)) for n in range(4)]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join(30)
            assert producer.statistics().sent == 40

    await blocking(run)
    assert len(_stored(broker)) == 40


async def test_lifecycle_errors(broker: FakeBroker) -> None:
    def run() -> None:
        producer = Producer("pg-sync", namesrv=broker.address)
        with pytest.raises(StateError, match="not started"):
            producer.send(Message(TOPIC, b"x"))
        with pytest.raises(StateError, match="not started"):
            _ = producer.client_id
        assert producer.start() is producer
        with pytest.raises(StateError):
            producer.start()
        producer.shutdown()
        producer.close()
        with pytest.raises(StateError, match="closed"):
            producer.send(Message(TOPIC, b"x"))

    await blocking(run)
    assert _threads() == []


async def test_namespace_passes_through_the_blocking_facade(broker: FakeBroker) -> None:
    broker.add_topic(f"ns1%{TOPIC}", queues=2)

    def run() -> None:
        with Producer("pg-sync", namesrv=broker.address, namespace="ns1") as producer:
            result = producer.send(Message(TOPIC, b"wrapped"))
            assert result.queue == MessageQueue(TOPIC, "broker-a", result.queue.queue_id)

    await blocking(run)
    assert [m.body for q in range(2) for m in broker.messages(f"ns1%{TOPIC}", q)] == [b"wrapped"]
    assert _stored(broker) == []
    (send,) = broker.requests(RequestCode.SEND_MESSAGE_V2)
    assert (send.ext_fields["a"], send.ext_fields["b"]) == ("ns1%pg-sync", f"ns1%{TOPIC}")
