"""The route service against fake NameServers: failover, TBW102 auto-create, cached routes when the
NameServers are gone, and route changes picked up by the refresh loop."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from rocketmq_py._client._config import ClientConfig
from rocketmq_py._client._instance import ClientInstance
from rocketmq_py._client._route import FoundBroker
from rocketmq_py._client._route_service import LOST_BROKER_RECHECK_INTERVAL, LOST_BROKER_WATCH
from rocketmq_py.errors import ConnectionFailed, MalformedBody, RouteNotFound, TopicNotExist, TransportError
from rocketmq_py.producer._producer import Producer
from rocketmq_py.protocol import Message, MessageQueue, QueueData, RequestCode, ResponseCode, TopicRouteData
from rocketmq_py.testing._fake_broker import FakeBroker

if TYPE_CHECKING:
    from conftest import Cluster

ROUTE_LOG = "rocketmq_py.route"


def instance(namesrv: str, *, poll_namesrv_interval: float = 30.0) -> ClientInstance:
    return ClientInstance(ClientConfig(namesrv=namesrv, poll_namesrv_interval=poll_namesrv_interval))


# --- NameServer failover -------------------------------------------------------------------------


async def test_failover_past_a_refused_namesrv_is_remembered(
    cluster: Cluster, refused_address: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, ROUTE_LOG)
    cluster.namesrv.add_topic("Other")
    async with instance(f"{refused_address};{cluster.namesrv.address}") as client:
        info = await client.routes.publish_info(cluster.topic)
        (refusal,) = caplog.records
        assert refusal.getMessage().startswith(
            f"NameServer {refused_address} did not answer for {cluster.topic}"
        )
        caplog.clear()
        # The next lookup starts with the NameServer that answered: no second refusal.
        await client.routes.fetch("Other")
        assert caplog.records == []
    assert {q.broker_name for q in info.queues} == {"broker-a", "broker-b"}
    assert cluster.route_queries(cluster.namesrv) == [cluster.topic, "Other"]


async def test_failover_past_a_dropping_namesrv_is_remembered(cluster: Cluster) -> None:
    async with FakeBroker(broker_name="namesrv-1") as first:
        first.drop_on(RequestCode.GET_ROUTEINFO_BY_TOPIC)
        async with instance(f"{first.address};{cluster.namesrv.address}") as client:
            await client.routes.publish_info(cluster.topic)
            for _ in range(3):
                await client.routes.update(cluster.topic)
    assert cluster.route_queries(first) == [cluster.topic]  # asked once, then skipped
    assert cluster.route_queries(cluster.namesrv) == [cluster.topic] * 4


async def test_failover_goes_back_to_the_first_namesrv_when_the_second_fails(cluster: Cluster) -> None:
    async with FakeBroker(broker_name="namesrv-1") as first:
        first.set_route(cluster.topic, cluster.route(cluster.a))
        first.drop_on(RequestCode.GET_ROUTEINFO_BY_TOPIC)
        async with instance(f"{first.address};{cluster.namesrv.address}") as client:
            await client.routes.update(cluster.topic)  # first drops -> the second answers
            first.clear_faults()
            cluster.namesrv.drop_on(RequestCode.GET_ROUTEINFO_BY_TOPIC)
            await client.routes.update(cluster.topic)  # the second drops -> back to the first
            assert client.routes.cached_route(cluster.topic) == cluster.route(cluster.a)
    assert cluster.route_queries(first) == [cluster.topic] * 2
    assert cluster.route_queries(cluster.namesrv) == [cluster.topic] * 2


async def test_no_namesrv_answers(refused_address: str, autojump_clock: trio.testing.MockClock) -> None:
    async with FakeBroker(broker_name="namesrv-2") as dropping:
        dropping.drop_on(RequestCode.GET_ROUTEINFO_BY_TOPIC)
        async with instance(f"{refused_address};{dropping.address}") as client:
            with pytest.raises(ConnectionFailed) as caught:
                await client.routes.publish_info("TopicTest")
    assert isinstance(caught.value, TransportError)
    assert f"no NameServer answered ({refused_address}, {dropping.address})" in str(caught.value)


async def test_namesrv_error_answers_end_the_search(cluster: Cluster) -> None:
    async with (
        FakeBroker(broker_name="namesrv-1") as first,
        instance(f"{first.address};{cluster.namesrv.address}") as client,
    ):
        with pytest.raises(TopicNotExist):
            await client.routes.fetch(cluster.topic)  # first answered: it knows no such topic
    assert cluster.route_queries(first) == [cluster.topic]
    assert cluster.route_queries(cluster.namesrv) == []


# --- TBW102 --------------------------------------------------------------------------------------


def tbw102(cluster: Cluster) -> TopicRouteData:
    """TBW102 on both brokers, as a broker with autoCreateTopicEnable has it (perm R|W|INHERIT):
    8 queues on broker-a, 2 on broker-b."""
    route = TopicRouteData(
        queue_datas=(
            QueueData(broker_name="broker-a", read_queue_nums=8, write_queue_nums=8, perm=7),
            QueueData(broker_name="broker-b", read_queue_nums=2, write_queue_nums=2, perm=7),
        ),
        broker_datas=cluster.route(cluster.a, cluster.b).broker_datas,
    )
    cluster.namesrv.set_route("TBW102", route)
    return route


async def test_unknown_topic_is_published_through_the_clamped_tbw102_route(cluster: Cluster) -> None:
    tbw102(cluster)
    async with instance(cluster.namesrv.address) as client:
        info = await client.routes.publish_info("NewTopic")
        assert client.routes.master_address("broker-a") == cluster.a.address
    assert info.queues == tuple(MessageQueue("NewTopic", "broker-a", q) for q in range(4)) + tuple(
        MessageQueue("NewTopic", "broker-b", q) for q in range(2)
    )
    assert cluster.route_queries(cluster.namesrv) == ["NewTopic", "TBW102"]


async def test_send_to_an_unknown_topic_lets_the_broker_create_it(cluster: Cluster) -> None:
    async with (
        FakeBroker(broker_name="broker-a", auto_create_topics=True) as a,
        FakeBroker(broker_name="broker-b", auto_create_topics=True) as b,
    ):
        cluster.namesrv.set_route("TBW102", cluster.route(a, b, queues=8, perm=7))
        async with Producer("pg", namesrv=cluster.namesrv.address) as producer:
            results = [await producer.send(Message("NewTopic", b"hi")) for _ in range(8)]
        requests = [cmd for fb in (a, b) for cmd in fb.requests(RequestCode.SEND_MESSAGE_V2)]
    assert len(requests) == 8
    for request in requests:
        assert request.ext_fields["b"] == "NewTopic"
        assert request.ext_fields["c"] == "TBW102"
        assert request.ext_fields["d"] == "4"
        assert 0 <= int(request.ext_fields["e"]) < 4  # min(4, 8 TBW102 queues)
    assert {r.queue for r in results} == {
        MessageQueue("NewTopic", n, q) for n in ("broker-a", "broker-b") for q in range(4)
    }
    assert sum(len(fb.messages("NewTopic", q)) for fb in (a, b) for q in range(4)) == 8


async def test_tbw102_queue_ids_stay_below_its_own_queue_count(cluster: Cluster) -> None:
    async with FakeBroker(broker_name="broker-c", auto_create_topics=True) as c:
        cluster.namesrv.set_route("TBW102", cluster.route(c, queues=2, perm=7))
        async with Producer("pg", namesrv=cluster.namesrv.address) as producer:
            results = [await producer.send(Message("NewTopic", b"hi")) for _ in range(6)]
        requests = c.requests(RequestCode.SEND_MESSAGE_V2)
    assert {int(r.ext_fields["e"]) for r in requests} == {0, 1}  # min(4, 2)
    assert {r.queue.queue_id for r in results} == {0, 1}


async def test_auto_create_off_raises_route_not_found(cluster: Cluster) -> None:
    tbw102(cluster)
    async with Producer("pg", namesrv=cluster.namesrv.address, auto_create_topic=False) as producer:
        with pytest.raises(RouteNotFound) as caught:
            await producer.send(Message("NewTopic", b"hi"))
    assert caught.value.topic == "NewTopic"
    assert caught.value.namesrv_addrs == (cluster.namesrv.address,)
    assert "NewTopic" in str(caught.value)
    assert cluster.namesrv.address in str(caught.value)
    assert cluster.route_queries(cluster.namesrv) == ["NewTopic"]  # TBW102 not even asked
    assert all(fb.accepted == 0 for fb in cluster.brokers)


async def test_no_tbw102_route_raises_route_not_found(cluster: Cluster) -> None:
    async with Producer("pg", namesrv=cluster.namesrv.address) as producer:
        with pytest.raises(RouteNotFound, match="no TBW102 route") as caught:
            await producer.send(Message("NewTopic", b"hi"))
    assert caught.value.topic == "NewTopic"
    assert cluster.route_queries(cluster.namesrv) == ["NewTopic", "TBW102"]


async def test_route_without_a_writable_master_raises_route_not_found(cluster: Cluster) -> None:
    cluster.namesrv.set_route("ReadOnly", cluster.route(cluster.a, perm=4))
    async with instance(cluster.namesrv.address) as client:
        with pytest.raises(RouteNotFound, match="no writable queue with a master"):
            await client.routes.publish_info("ReadOnly")


# --- refresh ----------------------------------------------------------------------------------------


async def serve_namesrv(
    route: TopicRouteData, topic: str, stop: trio.Event, *, task_status: trio.TaskStatus[FakeBroker]
) -> None:
    """A fake NameServer that serves until ``stop`` is set, then refuses connections."""
    async with FakeBroker(broker_name="namesrv-2") as namesrv:
        namesrv.set_route(topic, route)
        task_status.started(namesrv)
        await stop.wait()


async def test_cached_route_keeps_working_when_the_namesrv_is_gone(
    cluster: Cluster, caplog: pytest.LogCaptureFixture, autojump_clock: trio.testing.MockClock
) -> None:
    caplog.set_level(logging.WARNING, ROUTE_LOG)
    stop = trio.Event()
    route = cluster.route(cluster.a, cluster.b)
    async with trio.open_nursery() as nursery:
        namesrv: FakeBroker = await nursery.start(serve_namesrv, route, cluster.topic, stop)
        async with Producer("pg", namesrv=namesrv.address, poll_namesrv_interval=30.0) as producer:
            first = await producer.send(Message(cluster.topic, b"before"))
            stop.set()
            await trio.sleep(95)  # three refreshes, every one failing
            refresh_failures = [
                r.getMessage()
                for r in caplog.records
                if r.getMessage().startswith(f"route refresh of {cluster.topic} failed")
            ]
            assert len(refresh_failures) == 3
            assert all("keeping the cached route" in text for text in refresh_failures)
            results = [await producer.send(Message(cluster.topic, b"after")) for _ in range(4)]
            assert producer._client_instance.routes.cached_route(cluster.topic) == route
    assert cluster.route_queries(namesrv) == [cluster.topic]
    assert first.queue.topic == cluster.topic
    assert {r.queue.broker_name for r in results} == {"broker-a", "broker-b"}


async def test_refresh_picks_up_a_route_change(
    cluster: Cluster, caplog: pytest.LogCaptureFixture, autojump_clock: trio.testing.MockClock
) -> None:
    caplog.set_level(logging.INFO, ROUTE_LOG)
    changes: list[tuple[float, str, TopicRouteData]] = []
    async with instance(cluster.namesrv.address, poll_namesrv_interval=30.0) as client:
        client.routes.add_listener(lambda topic, route: changes.append((trio.current_time(), topic, route)))
        start = trio.current_time()
        before = await client.routes.publish_info(cluster.topic)
        await trio.sleep(31)  # one refresh, nothing changed
        assert await client.routes.publish_info(cluster.topic) is before  # tables kept as they were
        cluster.namesrv.set_route(cluster.topic, cluster.route(cluster.b, queues=3))
        await trio.sleep(30)  # the next refresh sees the change
        after = await client.routes.publish_info(cluster.topic)
    assert [(when - start, topic) for when, topic, _ in changes] == [(0, cluster.topic), (60, cluster.topic)]
    assert changes[-1][2] == cluster.route(cluster.b, queues=3)
    assert after.queues == tuple(MessageQueue(cluster.topic, "broker-b", q) for q in range(3))
    assert any(r.getMessage().startswith(f"route of {cluster.topic} changed") for r in caplog.records)
    assert cluster.route_queries(cluster.namesrv) == [cluster.topic] * 3


async def test_producer_follows_a_route_change(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    async with Producer("pg", namesrv=cluster.namesrv.address, poll_namesrv_interval=30.0) as producer:
        await producer.send(Message(cluster.topic, b"x"))
        cluster.namesrv.set_route(cluster.topic, cluster.route(cluster.b))
        await trio.sleep(31)  # the refresh at 30 s picks it up
        results = [await producer.send(Message(cluster.topic, b"y")) for _ in range(4)]
    assert {r.queue.broker_name for r in results} == {"broker-b"}


async def test_a_topic_the_namesrv_stops_knowing_keeps_its_cached_route(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    async with instance(cluster.namesrv.address, poll_namesrv_interval=30.0) as client:
        await client.routes.publish_info(cluster.topic)
        cluster.namesrv.on_reply(RequestCode.GET_ROUTEINFO_BY_TOPIC, 17, remark="No topic route info")
        await trio.sleep(31)
        assert client.routes.cached_route(cluster.topic) == cluster.route(cluster.a, cluster.b)
        info = await client.routes.publish_info(cluster.topic)
    assert len(info.queues) == 4


async def test_a_malformed_route_answer_does_not_end_the_refresh_loop(
    cluster: Cluster, caplog: pytest.LogCaptureFixture, autojump_clock: trio.testing.MockClock
) -> None:
    caplog.set_level(logging.WARNING, ROUTE_LOG)
    async with instance(cluster.namesrv.address, poll_namesrv_interval=30.0) as client:
        await client.routes.publish_info(cluster.topic)
        cluster.namesrv.on_reply(RequestCode.GET_ROUTEINFO_BY_TOPIC, ResponseCode.SUCCESS, body=b"{not json")
        await trio.sleep(61)  # two refreshes, both answered with garbage
        assert client.routes.cached_route(cluster.topic) == cluster.route(cluster.a, cluster.b)
        with pytest.raises(MalformedBody):  # a direct lookup reports it
            await client.routes.update(cluster.topic)
    failures = [r.getMessage() for r in caplog.records if r.getMessage().startswith("route refresh of")]
    assert len(failures) == 2
    assert all("malformed JSON body" in text for text in failures)


# --- brokers that left every route (issue 11, defect 9) -------------------------------------------


async def test_a_broker_named_by_another_topic_stays(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    cluster.namesrv.set_route("Other", cluster.route(cluster.b))
    async with instance(cluster.namesrv.address, poll_namesrv_interval=10.0) as client:
        await client.routes.publish_info(cluster.topic)
        await client.routes.publish_info("Other")
        cluster.namesrv.set_route(cluster.topic, cluster.route(cluster.a))
        await trio.sleep(11)
        assert client.routes.broker_table == {
            "broker-a": {0: cluster.a.address},
            "broker-b": {0: cluster.b.address},
        }
        cluster.namesrv.set_route("Other", cluster.route(cluster.a))
        await trio.sleep(10)
        assert client.routes.broker_table == {"broker-a": {0: cluster.a.address}}


async def test_a_slave_that_left_the_route_is_forgotten(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    async with FakeBroker(broker_name="broker-a-slave") as slave:
        cluster.namesrv.set_route(
            cluster.topic, cluster.route(cluster.a, cluster.b, slaves={"broker-a": slave})
        )
        async with instance(cluster.namesrv.address, poll_namesrv_interval=10.0) as client:
            await client.routes.publish_info(cluster.topic)
            assert client.routes.broker_table["broker-a"] == {0: cluster.a.address, 1: slave.address}
            cluster.namesrv.set_route(cluster.topic, cluster.route(cluster.a, cluster.b))
            await trio.sleep(11)
            assert client.routes.broker_table["broker-a"] == {0: cluster.a.address}
            assert client.routes.find_broker("broker-a", 1) == FoundBroker(cluster.a.address, 0)


async def test_brokers_known_through_tbw102_stay_while_the_topic_has_no_route(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    async with FakeBroker(broker_name="broker-c", auto_create_topics=True) as c:
        cluster.namesrv.set_route("TBW102", cluster.route(c, queues=2, perm=7))
        async with Producer("pg", namesrv=cluster.namesrv.address, poll_namesrv_interval=10.0) as producer:
            await producer.send(Message("NewTopic", b"1"))
            await trio.sleep(11)  # a refresh: the NameServer still does not know NewTopic
            assert producer._client_instance.routes.master_address("broker-c") == c.address
            await producer.send(Message("NewTopic", b"2"))
        assert len(c.requests(RequestCode.SEND_MESSAGE_V2)) == 2


# --- a broker lost from a route is looked for every few seconds (chaos CI failure, stop 34) --------


async def test_a_broker_lost_from_a_route_is_seen_again_within_the_recheck_interval(
    cluster: Cluster, caplog: pytest.LogCaptureFixture, autojump_clock: trio.testing.MockClock
) -> None:
    """A broker killed and restarted leaves the route and comes back: the client sees it again a
    few seconds after the NameServer does, not at the next poll (up to 30 s later; Java's
    ``MQClientInstance`` polls every ``pollNameServerInterval`` only). The chaos test's kill phase
    once waited 30.4 s for a broker's queues: its last poll fell just before the restarted broker
    registered."""
    caplog.set_level(logging.INFO, ROUTE_LOG)
    changes: list[tuple[float, frozenset[str]]] = []
    async with instance(cluster.namesrv.address, poll_namesrv_interval=30.0) as client:
        client.routes.add_listener(
            lambda _, route: changes.append(
                (trio.current_time(), frozenset(q.broker_name for q in route.queue_datas))
            )
        )
        start = trio.current_time()
        await client.routes.subscribe_queues(cluster.topic)
        cluster.namesrv.set_route(cluster.topic, cluster.route(cluster.b))
        await trio.sleep(31)  # the poll at 30 s sees broker-a gone
        await trio.sleep(6)  # rechecks at 32, 34, 36: still gone
        cluster.namesrv.set_route(cluster.topic, cluster.route(cluster.a, cluster.b))
        await trio.sleep(2)  # the recheck at 38 s sees it back
        assert [(when - start, brokers) for when, brokers in changes] == [
            (0, {"broker-a", "broker-b"}),
            (30, {"broker-b"}),
            (38, {"broker-a", "broker-b"}),
        ]
        await trio.sleep(25)  # nothing lost any more: only the poll at 60 s
    assert cluster.route_queries(cluster.namesrv) == [cluster.topic] * 7
    messages = [r.getMessage() for r in caplog.records]
    assert f"the route of {cluster.topic} lost broker-a: asking again every 2 s until it is back" in messages
    assert f"the route of {cluster.topic} has broker-a again" in messages


async def test_the_recheck_of_a_lost_broker_ends_after_its_watch(
    cluster: Cluster, caplog: pytest.LogCaptureFixture, autojump_clock: trio.testing.MockClock
) -> None:
    """A broker taken out for good costs :data:`LOST_BROKER_WATCH` seconds of rechecks, then the
    poll alone asks."""
    caplog.set_level(logging.INFO, ROUTE_LOG)
    async with instance(cluster.namesrv.address, poll_namesrv_interval=30.0) as client:
        await client.routes.subscribe_queues(cluster.topic)
        cluster.namesrv.set_route(cluster.topic, cluster.route(cluster.b))
        await trio.sleep(30 + LOST_BROKER_WATCH + 1)
        asked = len(cluster.route_queries(cluster.namesrv))
        # 1 lookup, the polls, one recheck every 2 s of the watch (those at a poll's time ride on it)
        assert LOST_BROKER_WATCH / LOST_BROKER_RECHECK_INTERVAL <= asked <= LOST_BROKER_WATCH / 2 + 20
        await trio.sleep(120)
        assert len(cluster.route_queries(cluster.namesrv)) == asked + 4  # the polls alone
    assert f"broker-a of {cluster.topic} still missing; back to the route poll" in [
        r.getMessage() for r in caplog.records
    ]


async def test_a_lost_broker_of_a_topic_no_longer_in_use_is_not_looked_for(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    """Only the topics the client keeps fresh are rechecked: a route fetched once is not."""
    async with instance(cluster.namesrv.address, poll_namesrv_interval=30.0) as client:
        await client.routes.update(cluster.topic)  # fetched, not in use
        cluster.namesrv.set_route(cluster.topic, cluster.route(cluster.b))
        await client.routes.update(cluster.topic)  # a loss, noticed
        await trio.sleep(29)
    assert cluster.route_queries(cluster.namesrv) == [cluster.topic] * 2
