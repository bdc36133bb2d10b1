"""``health()`` on the real cluster: a producer and a push consumer that work are ready, with the
cluster's NameServer and brokers as they report them; a client whose NameServer does not answer is
not, and says why (the fake-broker tests are ``tests/consumer/test_health.py`` and
``tests/producer/test_health.py``)."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Callable, Iterator

import pytest
import trio

from rocketmq_py import ClientEvent, Hook, Message, MessageExt, Producer, PushConsumer
from rocketmq_py.errors import RocketMQError
from rocketmq_py.testing import Cluster


async def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 60) -> None:  # noqa: ASYNC109
    with trio.move_on_after(timeout):
        while not predicate():  # noqa: ASYNC110 - the clients' state, no event to wait on
            await trio.sleep(0.1)
        return
    pytest.fail(f"{what}: not within {timeout:.0f} s")


@pytest.fixture
def closed_port() -> Iterator[str]:
    """A loopback address nothing listens on (bound, not listening, for the test)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{sock.getsockname()[1]}"


async def test_a_working_producer_and_consumer_are_ready(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(4)
    got: list[MessageExt] = []

    async def listener(msgs: list[MessageExt]) -> None:
        got.extend(msgs)

    consumer = PushConsumer(
        f"it-health-{uuid.uuid4().hex[:8]}",
        listener=listener,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        **cluster.client_options(),
    )
    consumer.subscribe(topic)
    async with (
        consumer,
        Producer(f"it-health-p-{uuid.uuid4().hex[:8]}", **cluster.client_options()) as producer,
    ):
        for n in range(8):
            await producer.send(Message(topic, f"h-{n}".encode()))
        await wait_for(lambda: len(got) >= 8, "the messages consumed")
        masters = {b.name: b.address for b in cluster.brokers}
        for client in (producer, consumer):
            await wait_for(
                lambda c=client: (
                    {b.broker_name for b in c.health().brokers if b.reachable and b.broker_id == 0}
                    == set(masters)
                ),
                f"every master accepting {type(client).__name__}'s heartbeats",
            )
            health = client.health()
            assert health.ok, health
            assert health.reasons == ()
            assert health.running
            assert health.namesrv is not None
            assert health.client_id == client.client_id
            assert {b.broker_name: b.address for b in health.brokers if b.broker_id == 0} == masters
        health = consumer.health()
        owned = {q.queue for q in health.queues}
        assert {q for q in owned if q.topic == topic} == {
            q for q in consumer.assignment() if q.topic == topic
        }
        assert len({q for q in owned if q.topic == topic}) == 4 * len(masters)
        assert all(q.timed_out_ago is None and q.stalled_for is None for q in health.queues)
    assert not producer.health().ok
    assert consumer.health().reasons == ("not started",)


async def test_a_producer_whose_namesrv_does_not_answer_is_not_ready(closed_port: str) -> None:
    async with Producer(f"it-health-dead-{uuid.uuid4().hex[:8]}", namesrv=closed_port) as producer:
        with pytest.raises(RocketMQError):
            await producer.send(Message("it-health-nowhere", b"x"))
        health = producer.health()
        assert not health.ok
        (reason,) = health.reasons
        assert reason.startswith("no NameServer answered a route request since the client started")
        assert closed_port in reason


class Events(Hook):
    """Records the client events a hook gets."""

    def __init__(self) -> None:
        self.seen: list[ClientEvent] = []

    def on_event(self, event: ClientEvent) -> None:
        self.seen.append(event)

    def of(self, kind: str, topic: str | None = None) -> list[ClientEvent]:
        return [e for e in self.seen if e.kind == kind and (topic is None or e.topic == topic)]


async def test_events_of_a_consumer_on_the_real_cluster(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    """Connections to the NameServer and every broker, then the rebalance that takes the topic's
    queues; a second member joining makes the first give half of them up."""
    topic = create_topic(4)
    group = f"it-events-{uuid.uuid4().hex[:8]}"
    first, second = Events(), Events()

    def member(events: Events) -> PushConsumer:
        consumer = PushConsumer(
            group,
            listener=lambda msgs: None,
            rebalance_interval=2,
            hooks=[events],
            **cluster.client_options(),
        )
        consumer.subscribe(topic)
        return consumer

    async with member(first) as one:
        await wait_for(lambda: bool(first.of("rebalanced", topic)), "the first member's rebalance")
        (taken,) = first.of("rebalanced", topic)
        assert taken.added == {q for q in one.assignment() if q.topic == topic}
        assert len(taken.added) == 4 * len(cluster.brokers)
        assert taken.client_id == one.client_id
        connected = {e.address for e in first.of("connected")}
        assert cluster.namesrv_addr in connected
        assert {b.address for b in cluster.brokers} <= connected
        async with member(second):
            await wait_for(
                lambda: len(first.of("rebalanced", topic)) >= 2, "the first member giving queues up"
            )
            gave_up = first.of("rebalanced", topic)[1]
            assert len(gave_up.removed) == 2 * len(cluster.brokers)
            assert gave_up.removed <= taken.added
            await wait_for(lambda: bool(second.of("rebalanced", topic)), "the second member's rebalance")
            assert second.of("rebalanced", topic)[0].added == gave_up.removed
