"""A delivery time for a broker that cannot honour it (4.x) is refused before anything is stored.

The broker's release comes from its replies' ``version`` header (``FakeBroker(version=...)``
stamps it as a real broker does); before any reply, one heartbeat asks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio.testing

from rocketmq_py._client._capabilities import broker_version
from rocketmq_py._client._config import ClientConfig
from rocketmq_py._client._instance import ClientInstance
from rocketmq_py.errors import DeliveryTimeNotSupported, InvalidMessage
from rocketmq_py.producer._producer import Producer
from rocketmq_py.protocol import BrokerData, Message, PropertyKey, QueueData, RequestCode, TopicRouteData
from rocketmq_py.protocol._versions import V4_9_7, V5_0_0, V5_3_3
from rocketmq_py.testing._fake_broker import FakeBroker

TOPIC = "TimerTopic"
QUEUES = 4


@pytest.fixture
async def broker_4x() -> AsyncIterator[FakeBroker]:
    async with FakeBroker(version=V4_9_7) as fb:
        fb.add_topic(TOPIC, queues=QUEUES)
        yield fb


def stored(fb: FakeBroker) -> list[bytes]:
    return [m.body for q in range(QUEUES) for m in fb.messages(TOPIC, q)]


def timed(key: str, value: str) -> Message:
    msg = Message(TOPIC, b"later")
    msg.properties[key] = value
    return msg


@pytest.mark.parametrize(
    "key", [PropertyKey.TIMER_DELIVER_MS, PropertyKey.TIMER_DELAY_SEC, PropertyKey.TIMER_DELAY_MS]
)
async def test_a_delivery_time_for_a_4x_broker_is_refused_and_nothing_is_stored(
    broker_4x: FakeBroker, key: str, autojump_clock: trio.testing.MockClock
) -> None:
    async with Producer("pg", namesrv=broker_4x.address) as producer:
        with pytest.raises(DeliveryTimeNotSupported) as caught:
            await producer.send(timed(key, "5000"))
        with pytest.raises(DeliveryTimeNotSupported):
            await producer.send_oneway(timed(key, "5000"))
        assert broker_4x.requests(RequestCode.SEND_MESSAGE_V2) == []
        # A message without one still goes, and so does a delay level (4.x has those).
        await producer.send(Message(TOPIC, b"now"))
        delayed = Message(TOPIC, b"level")
        delayed.delay_level = 2
        await producer.send(delayed)
    error = caught.value
    assert isinstance(error, InvalidMessage)
    assert (error.broker_name, error.broker_version, error.key) == ("broker-a", "4.9.7", key)
    assert "4.9.7" in str(error)
    assert key in str(error)
    assert sorted(stored(broker_4x)) == [b"level", b"now"]


async def test_the_first_send_asks_the_broker_its_release_with_a_heartbeat(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with FakeBroker(broker_name="namesrv") as namesrv, FakeBroker(version=V4_9_7) as broker:
        broker.add_topic(TOPIC, queues=QUEUES)
        namesrv.set_route(TOPIC, route_to(broker))
        async with Producer("pg", namesrv=namesrv.address, heartbeat_interval=3600) as producer:
            await producer._client_instance.routes.publish_info(TOPIC)
            # The route is known, the broker's release not: no reply from it yet.
            assert broker.address not in producer._client_instance.api.peer_versions
            with pytest.raises(DeliveryTimeNotSupported):
                await producer.send(timed(PropertyKey.TIMER_DELIVER_MS, "5000"))
            # (the heartbeat loop, woken by the new broker, may have sent one too)
            beats = len(broker.requests(RequestCode.HEART_BEAT))
            assert beats >= 1
            assert producer._client_instance.api.peer_versions[broker.address] == V4_9_7
            # Known now: the next one asks nothing.
            with pytest.raises(DeliveryTimeNotSupported):
                await producer.send(timed(PropertyKey.TIMER_DELIVER_MS, "5000"))
            assert len(broker.requests(RequestCode.HEART_BEAT)) == beats
        assert broker.requests(RequestCode.SEND_MESSAGE_V2) == []


def route_to(broker: FakeBroker) -> TopicRouteData:
    return TopicRouteData(
        queue_datas=(
            QueueData(broker_name="broker-a", read_queue_nums=QUEUES, write_queue_nums=QUEUES, perm=6),
        ),
        broker_datas=(
            BrokerData(cluster="DefaultCluster", broker_name="broker-a", broker_addrs={0: broker.address}),
        ),
    )


@pytest.mark.parametrize("version", [V5_0_0, V5_3_3])
async def test_a_5x_broker_takes_a_delivery_time(
    version: int, autojump_clock: trio.testing.MockClock
) -> None:
    async with FakeBroker(version=version) as fb:
        fb.add_topic(TOPIC, queues=QUEUES)
        async with Producer("pg", namesrv=fb.address) as producer:
            await producer.send(timed(PropertyKey.TIMER_DELIVER_MS, "5000"))
            assert producer._client_instance.api.peer_versions[fb.address] == version
        assert stored(fb) == [b"later"]


async def test_broker_version_asks_with_one_heartbeat_when_no_reply_was_seen() -> None:
    async with (
        FakeBroker(version=V4_9_7) as broker,
        ClientInstance(ClientConfig(namesrv="127.0.0.1:1")) as instance,
    ):
        assert await broker_version(instance, broker.address) == V4_9_7
        assert await broker_version(instance, broker.address) == V4_9_7
        assert len(broker.requests(RequestCode.HEART_BEAT)) == 1
