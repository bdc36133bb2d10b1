"""The client instance against fake brokers: client id, heartbeats to every master, unregister on close."""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from rocketmq_py._client._config import ClientConfig
from rocketmq_py._client._instance import ClientInstance
from rocketmq_py.errors import RequestTimeout, RouteNotFound
from rocketmq_py.producer._producer import Producer
from rocketmq_py.protocol import (
    HeartbeatData,
    Message,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    UnregisterClientRequestHeader,
    decode_body,
    from_ext_fields,
)
from rocketmq_py.testing._fake_broker import BrokerHandler, FakeBroker

if TYPE_CHECKING:
    from conftest import Cluster

HEARTBEAT = RequestCode.HEART_BEAT
UNREGISTER = RequestCode.UNREGISTER_CLIENT


class Heartbeats:
    """Records when each fake got a heartbeat, and what it said."""

    def __init__(self, *brokers: FakeBroker) -> None:
        self.seen: dict[str, list[tuple[float, HeartbeatData]]] = {fb.broker_name: [] for fb in brokers}
        for fb in brokers:
            fb.on(HEARTBEAT, self._handler(fb.broker_name))

    def _handler(self, name: str) -> BrokerHandler:
        async def record(request: RemotingCommand) -> RemotingCommand:
            self.seen[name].append((trio.current_time(), decode_body(HeartbeatData, request.body)))
            return RemotingCommand.response(request, ResponseCode.SUCCESS)

        return record

    def times(self, name: str) -> list[float]:
        return [when for when, _ in self.seen[name]]


def unregisters(fb: FakeBroker) -> list[UnregisterClientRequestHeader]:
    return [from_ext_fields(UnregisterClientRequestHeader, cmd.ext_fields) for cmd in fb.requests(UNREGISTER)]


# --- client id -----------------------------------------------------------------------------------


async def test_client_id_is_ip_at_instance_name(cluster: Cluster) -> None:
    async with Producer("pg", namesrv=cluster.namesrv.address) as producer:
        config = producer.config
        assert producer.client_id == f"{config.client_ip}@{config.instance_name}"
        assert config.client_ip == "127.0.0.1"  # the local address towards the NameServer
        assert config.instance_name is not None
        assert config.instance_name.startswith(f"{os.getpid()}#")


async def test_two_producers_in_one_process_have_different_instance_names(cluster: Cluster) -> None:
    async with (
        Producer("pg", namesrv=cluster.namesrv.address) as first,
        Producer("pg", namesrv=cluster.namesrv.address) as second,
    ):
        assert first.config.instance_name != second.config.instance_name
        assert first.client_id != second.client_id
        assert first.client_id.split("@")[0] == second.client_id.split("@")[0]


async def test_explicit_instance_name_and_ip(cluster: Cluster) -> None:
    config = ClientConfig(namesrv=cluster.namesrv.address, instance_name="orders", client_ip="10.1.2.3")
    async with ClientInstance(config) as client:
        assert client.client_id == "10.1.2.3@orders"
        client.add_producer_group("pg")
        await client.routes.publish_info(cluster.topic)
        await client.heartbeat_all()
    data = decode_body(HeartbeatData, cluster.a.requests(HEARTBEAT)[0].body)
    assert data.client_id == "10.1.2.3@orders"


# --- heartbeats ------------------------------------------------------------------------------------


async def test_heartbeat_reaches_every_master_soon_and_then_every_interval(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    async with FakeBroker(broker_name="broker-a-slave") as slave:
        cluster.namesrv.set_route(
            cluster.topic, cluster.route(cluster.a, cluster.b, slaves={"broker-a": slave})
        )
        beats = Heartbeats(cluster.a, cluster.b, slave)
        config = ClientConfig(namesrv=cluster.namesrv.address, heartbeat_interval=20.0)
        async with ClientInstance(config) as client:
            client.add_producer_group("pg")
            start = trio.current_time()
            await client.routes.publish_info(cluster.topic)  # the brokers become known
            await trio.sleep(1)
            assert beats.times("broker-a") == beats.times("broker-b") == [start]
            await trio.sleep(40)
            client_id = client.client_id
    for name in ("broker-a", "broker-b"):
        assert [when - start for when in beats.times(name)] == [0, 20, 40]
        for _, data in beats.seen[name]:
            assert data.client_id == client_id
            assert [p.group_name for p in data.producer_data_set] == ["pg"]
            assert data.consumer_data_set == ()
    assert beats.times("broker-a-slave") == []  # a producer only registers with masters


async def test_producer_heartbeats_after_its_first_route(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    beats = Heartbeats(cluster.a, cluster.b)
    async with Producer("pg-orders", namesrv=cluster.namesrv.address, heartbeat_interval=30.0) as producer:
        await trio.sleep(5)
        assert beats.times("broker-a") == beats.times("broker-b") == []  # no broker known yet
        await producer.send(Message(cluster.topic, b"x"))
        await trio.sleep(1)
        for name in ("broker-a", "broker-b"):
            ((when, data),) = beats.seen[name]
            assert when == pytest.approx(5)
            assert data.client_id == producer.client_id
            assert [p.group_name for p in data.producer_data_set] == ["pg-orders"]


async def test_a_new_broker_in_a_route_gets_a_heartbeat_at_once(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    cluster.namesrv.set_route(cluster.topic, cluster.route(cluster.a))
    beats = Heartbeats(cluster.a, cluster.b)
    config = ClientConfig(
        namesrv=cluster.namesrv.address, heartbeat_interval=100.0, poll_namesrv_interval=10.0
    )
    async with ClientInstance(config) as client:
        client.add_producer_group("pg")
        await client.routes.publish_info(cluster.topic)
        cluster.namesrv.set_route(cluster.topic, cluster.route(cluster.a, cluster.b))
        await trio.sleep(11)  # the refresh at 10 s finds broker-b
    assert beats.times("broker-a") == [0, 10]
    assert beats.times("broker-b") == [10]


async def test_a_failing_heartbeat_is_logged_and_the_others_still_go_out(
    cluster: Cluster, caplog: pytest.LogCaptureFixture, autojump_clock: trio.testing.MockClock
) -> None:
    caplog.set_level(logging.WARNING, "rocketmq_py.client")
    beats = Heartbeats(cluster.a)
    cluster.b.drop_on(HEARTBEAT)
    config = ClientConfig(namesrv=cluster.namesrv.address, heartbeat_interval=10.0)
    async with ClientInstance(config) as client:
        client.add_producer_group("pg")
        await client.routes.publish_info(cluster.topic)
        await trio.sleep(25)
        assert await client.heartbeat_all() == 1
    assert beats.times("broker-a") == [0, 10, 20, 25]
    failures = [r.getMessage() for r in caplog.records if r.getMessage().startswith("heartbeat to ")]
    assert len(failures) == 4
    assert all(text.startswith(f"heartbeat to {cluster.b.address} failed") for text in failures)


async def test_no_heartbeat_without_groups(cluster: Cluster, autojump_clock: trio.testing.MockClock) -> None:
    config = ClientConfig(namesrv=cluster.namesrv.address, heartbeat_interval=10.0)
    async with ClientInstance(config) as client:
        await client.routes.publish_info(cluster.topic)
        await trio.sleep(25)
        assert await client.heartbeat_all() == 0
    for fb in cluster.brokers:
        assert fb.requests(HEARTBEAT) == []
        assert fb.requests(UNREGISTER) == []


async def test_a_broker_that_left_every_route_gets_no_more_heartbeats(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    # Issue 11, defect 9 (Java MQClientInstance.cleanOfflineBroker, run with the route poll).
    beats = Heartbeats(cluster.a, cluster.b)
    config = ClientConfig(
        namesrv=cluster.namesrv.address, heartbeat_interval=30.0, poll_namesrv_interval=10.0
    )
    async with ClientInstance(config) as client:
        client.add_producer_group("pg")
        await client.routes.publish_info(cluster.topic)
        await trio.sleep(1)
        assert beats.times("broker-b") == [0]
        cluster.namesrv.set_route(cluster.topic, cluster.route(cluster.a))
        await trio.sleep(10)  # the refresh at 10 s: broker-b is in no route any more
        assert set(client.routes.broker_table) == {"broker-a"}
        # Its idle connection is gone too.
        assert [conn.address for conn in client.api.pool.connections()] == [
            cluster.namesrv.address,
            cluster.a.address,
        ]
        # Were it still asked, every round would wait out the request timeout on it.
        cluster.b.never_reply(HEARTBEAT)
        started = trio.current_time()
        assert await client.heartbeat_all() == 1
        assert trio.current_time() == started
        await trio.sleep(60)
        assert len(beats.times("broker-a")) >= 3
    assert beats.times("broker-b") == [0]
    assert unregisters(cluster.b) == []  # closing does not go to it either
    assert len(unregisters(cluster.a)) == 1


async def test_a_broker_back_in_a_route_gets_a_heartbeat_at_once(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    beats = Heartbeats(cluster.a, cluster.b)
    config = ClientConfig(
        namesrv=cluster.namesrv.address, heartbeat_interval=100.0, poll_namesrv_interval=10.0
    )
    async with ClientInstance(config) as client:
        client.add_producer_group("pg")
        await client.routes.publish_info(cluster.topic)
        cluster.namesrv.set_route(cluster.topic, cluster.route(cluster.a))
        await trio.sleep(11)  # the refresh at 10 s drops broker-b
        cluster.namesrv.set_route(cluster.topic, cluster.route(cluster.a, cluster.b))
        await trio.sleep(10)  # the recheck at 12 s (a broker lost) brings it back: greeted at once
    assert beats.times("broker-b") == [0, 12]


# --- unregister ------------------------------------------------------------------------------------


async def test_close_unregisters_from_every_master(cluster: Cluster) -> None:
    async with FakeBroker(broker_name="broker-a-slave") as slave:
        cluster.namesrv.set_route(
            cluster.topic, cluster.route(cluster.a, cluster.b, slaves={"broker-a": slave})
        )
        async with ClientInstance(ClientConfig(namesrv=cluster.namesrv.address)) as client:
            client.add_producer_group("pg-1")
            client.add_producer_group("pg-2")
            await client.routes.publish_info(cluster.topic)
            client_id = client.client_id
        assert slave.requests(UNREGISTER) == []
    for fb in cluster.brokers:
        headers = unregisters(fb)
        assert [(h.client_id, h.producer_group, h.consumer_group) for h in headers] == [
            (client_id, "pg-1", None),
            (client_id, "pg-2", None),
        ]


async def test_producer_close_unregisters_its_group(cluster: Cluster) -> None:
    async with Producer("pg-orders", namesrv=cluster.namesrv.address) as producer:
        await producer.send(Message(cluster.topic, b"x"))
        client_id = producer.client_id
    for fb in cluster.brokers:
        (header,) = unregisters(fb)
        assert (header.client_id, header.producer_group) == (client_id, "pg-orders")


async def test_unregister_is_bounded_by_the_request_timeout(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    for fb in cluster.brokers:
        fb.never_reply(UNREGISTER)
    config = ClientConfig(namesrv=cluster.namesrv.address, request_timeout=2.0)
    async with ClientInstance(config) as client:
        client.add_producer_group("pg")
        await client.routes.publish_info(cluster.topic)
        closing = trio.current_time()
    assert trio.current_time() - closing == pytest.approx(2.0)  # all unregisters, one deadline


async def test_close_without_any_broker_sends_nothing(cluster: Cluster) -> None:
    async with Producer("pg", namesrv=cluster.namesrv.address):
        pass
    for fb in (cluster.namesrv, *cluster.brokers):
        assert fb.accepted == 0


async def test_an_error_in_the_block_still_unregisters_and_propagates_as_is(cluster: Cluster) -> None:
    class Boom(Exception):
        pass

    async def fail_inside() -> None:
        async with Producer("pg", namesrv=cluster.namesrv.address) as producer:
            await producer.send(Message(cluster.topic, b"x"))  # connections are open now
            raise Boom

    with pytest.raises(Boom):  # not wrapped in exception groups
        await fail_inside()
    for fb in cluster.brokers:
        (header,) = unregisters(fb)
        assert header.producer_group == "pg"


async def test_an_uncaught_send_error_leaves_the_block_as_raised(cluster: Cluster) -> None:
    async def send_to_unknown_topic() -> None:
        async with Producer("pg", namesrv=cluster.namesrv.address, auto_create_topic=False) as producer:
            await producer.send(Message(cluster.topic, b"x"))  # connections are open now
            await producer.send(Message("NoSuchTopic", b"x"))

    with pytest.raises(RouteNotFound, match="NoSuchTopic"):
        await send_to_unknown_topic()


# --- connections -----------------------------------------------------------------------------------

STUCK = 9002  # a code the tests make a broker never answer


@pytest.mark.parametrize("close", [True, False])
async def test_close_connection_on_timeout_comes_from_the_config(
    cluster: Cluster, close: bool, autojump_clock: trio.testing.MockClock
) -> None:
    cluster.a.on_reply(STUCK)
    cluster.a.never_reply(STUCK)
    config = ClientConfig(namesrv=cluster.namesrv.address, close_connection_on_timeout=close)
    assert ClientConfig().close_connection_on_timeout  # Java's clientCloseSocketIfTimeout: on
    async with ClientInstance(config) as client:
        with pytest.raises(RequestTimeout):
            await client.api.call(cluster.a.address, STUCK, timeout=1.0)
        await client.api.heartbeat(cluster.a.address, client.heartbeat_data())
    assert cluster.a.accepted == (2 if close else 1)  # closed: the next call reconnected
