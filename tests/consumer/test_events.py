"""Client events through hooks (``Hook.on_event``) against fake brokers: connections opened and
closed, brokers that stop and start accepting heartbeats, route changes and rebalances.

The real-broker twin is ``integration/test_health.py::test_events_of_a_consumer_on_the_real_cluster``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import trio
import trio.testing

from rocketmq_py import ClientEvent, Hook, Producer
from rocketmq_py.consumer._push import PushConsumer
from rocketmq_py.protocol import Message, RequestCode

if TYPE_CHECKING:
    from conftest import Cluster

MakeConsumer = Callable[..., PushConsumer]


class Events(Hook):
    def __init__(self) -> None:
        self.seen: list[ClientEvent] = []

    def on_event(self, event: ClientEvent) -> None:
        self.seen.append(event)

    def of(self, kind: str) -> list[ClientEvent]:
        return [e for e in self.seen if e.kind == kind]


async def test_connections_and_the_first_rebalance(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    events = Events()
    async with make_consumer(hooks=[events]) as consumer:
        await cluster.wait_until(lambda: len(events.of("rebalanced")) == 2)
        client_id = consumer.client_id
    assert {e.address for e in events.of("connected")} == {
        cluster.namesrv.address,
        cluster.a.address,
        cluster.b.address,
    }
    assert all(e.client_id == client_id for e in events.seen)
    by_topic = {e.topic: e for e in events.of("rebalanced")}
    assert by_topic[cluster.topic].added == frozenset(cluster.queues())
    assert by_topic[cluster.retry].added == frozenset(cluster.queues(cluster.retry))
    assert all(not e.removed for e in by_topic.values())
    assert not events.of("disconnected")  # closing the client's own pool is no news
    assert not events.of("route_changed")  # the first route of a topic is no change


async def test_a_route_change_and_the_rebalance_it_brings(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    events = Events()
    async with make_consumer(hooks=[events], poll_namesrv_interval=5.0):
        await cluster.wait_until(lambda: len(events.of("rebalanced")) == 2)
        cluster.namesrv.set_route(cluster.topic, cluster.route(cluster.a, queues=2))  # broker-b leaves
        await cluster.wait_until(lambda: bool(events.of("route_changed")))
        await cluster.wait_until(lambda: len(events.of("rebalanced")) == 3)
    (changed,) = events.of("route_changed")
    assert changed.topic == cluster.topic
    assert changed.detail == f"queues now: {cluster.a.broker_name} 2r/2w"
    last = events.of("rebalanced")[-1]
    assert last.topic == cluster.topic
    assert last.removed == frozenset(q for q in cluster.queues() if q.broker_name == cluster.b.broker_name)
    assert last.added == frozenset()


async def test_a_broker_that_stops_and_starts_accepting_heartbeats(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    events = Events()
    async with make_consumer(hooks=[events], heartbeat_interval=5.0):
        await cluster.wait_until(lambda: len(events.of("rebalanced")) == 2)
        cluster.a.never_reply(RequestCode.HEART_BEAT)
        await cluster.wait_until(lambda: bool(events.of("broker_unavailable")))
        await trio.sleep(12)  # two more unanswered heartbeats: no more events
        cluster.a.clear_faults()
        await cluster.wait_until(lambda: bool(events.of("broker_available")))
    (down,) = events.of("broker_unavailable")
    assert (down.broker_name, down.address) == (cluster.a.broker_name, cluster.a.address)
    assert down.detail is not None
    assert down.detail.startswith("RequestTimeout")
    (up,) = events.of("broker_available")
    assert (up.broker_name, up.address) == (cluster.a.broker_name, cluster.a.address)


async def test_a_connection_the_peer_closes(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    events = Events()
    async with Producer(
        "pg-events", namesrv=cluster.namesrv.address, hooks=[events], poll_namesrv_interval=5.0
    ) as producer:
        await producer.send(Message(cluster.topic, b"route, please"))
        assert {e.address for e in events.of("connected")} >= {cluster.namesrv.address}
        cluster.namesrv.drop_on(RequestCode.GET_ROUTEINFO_BY_TOPIC)
        await cluster.wait_until(lambda: bool(events.of("disconnected")), timeout=120)
    (closed, *_) = events.of("disconnected")
    assert closed.address == cluster.namesrv.address
    assert closed.detail is not None
