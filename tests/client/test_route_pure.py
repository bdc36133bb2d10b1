"""Route -> queue lists, change detection and TBW102 clamping (pure, protocol.md §6.4-6.5)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rocketmq_py._client._route import (
    AUTO_CREATE_TOPIC_KEY,
    DEFAULT_TOPIC_QUEUE_NUMS,
    PERM_INHERIT,
    PERM_PRIORITY,
    PERM_READ,
    PERM_WRITE,
    FoundBroker,
    TopicPublishInfo,
    broker_addresses,
    default_topic_route,
    drop_offline_brokers,
    find_broker_address,
    master_address,
    publish_info,
    route_changed,
    sorted_queues,
    subscribe_queues,
)
from rocketmq_py.errors import MalformedBody
from rocketmq_py.protocol import BrokerData, MessageQueue, QueueData, TopicRouteData

RW = PERM_READ | PERM_WRITE


def qd(name: str, read: int = 3, write: int = 3, perm: int = RW) -> QueueData:
    return QueueData(broker_name=name, read_queue_nums=read, write_queue_nums=write, perm=perm)


def bd(name: str, addrs: dict[int, str] | None = None) -> BrokerData:
    if addrs is None:
        addrs = {0: f"{name}:10911"}
    return BrokerData(cluster="DefaultCluster", broker_name=name, broker_addrs=addrs)


def mqs(topic: str, broker: str, n: int) -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


# Three brokers with three write queues each, listed out of order: nine queues in name order.
THREE = TopicRouteData(
    queue_datas=(qd("broker-c"), qd("broker-a"), qd("broker-b")),
    broker_datas=(
        bd("broker-b"),
        bd("broker-a", {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}),
        bd("broker-c"),
    ),
)


def test_perm_constants_match_java() -> None:
    assert (PERM_PRIORITY, PERM_READ, PERM_WRITE, PERM_INHERIT) == (8, 4, 2, 1)
    assert AUTO_CREATE_TOPIC_KEY == "TBW102"
    assert DEFAULT_TOPIC_QUEUE_NUMS == 4


def test_three_brokers_nine_queues_in_broker_name_order() -> None:
    info = publish_info("T", THREE)
    assert info == TopicPublishInfo(
        "T", tuple(mqs("T", "broker-a", 3) + mqs("T", "broker-b", 3) + mqs("T", "broker-c", 3)), False, THREE
    )
    assert info.have_queues
    assert subscribe_queues("T", THREE) == frozenset(info.queues)


def test_publish_skips_brokers_without_master_or_write_perm() -> None:
    route = TopicRouteData(
        queue_datas=(
            qd("broker-a"),
            qd("broker-b"),  # slave only
            qd("broker-c", perm=PERM_READ),  # read-only
            qd("broker-d", perm=PERM_WRITE),  # write-only
            qd("broker-e"),  # no BrokerData at all
        ),
        broker_datas=(
            bd("broker-a"),
            bd("broker-b", {1: "10.0.0.9:10911"}),
            bd("broker-c"),
            bd("broker-d"),
        ),
    )
    assert publish_info("T", route).queues == tuple(mqs("T", "broker-a", 3) + mqs("T", "broker-d", 3))
    # Consumers read from every readable broker, master or not, with or without a BrokerData.
    assert subscribe_queues("T", route) == frozenset(
        mqs("T", "broker-a", 3) + mqs("T", "broker-b", 3) + mqs("T", "broker-c", 3) + mqs("T", "broker-e", 3)
    )


def test_read_and_write_counts_differ() -> None:
    route = TopicRouteData(queue_datas=(qd("b", read=4, write=2),), broker_datas=(bd("b"),))
    assert publish_info("T", route).queues == tuple(mqs("T", "b", 2))
    assert subscribe_queues("T", route) == frozenset(mqs("T", "b", 4))


def test_no_writable_queue_gives_empty_publish_info() -> None:
    route = TopicRouteData(queue_datas=(qd("b", perm=PERM_READ),), broker_datas=(bd("b"),))
    info = publish_info("T", route)
    assert info.queues == ()
    assert not info.have_queues
    assert not TopicPublishInfo("T").have_queues


def test_order_topic_conf_wins_and_keeps_its_order() -> None:
    route = replace(THREE, order_topic_conf="broker-c:2;broker-a:3;")
    info = publish_info("T", route)
    assert info.order_topic
    assert info.queues == tuple(mqs("T", "broker-c", 2) + mqs("T", "broker-a", 3))


def test_empty_order_topic_conf_is_ignored() -> None:
    info = publish_info("T", replace(THREE, order_topic_conf=""))
    assert not info.order_topic
    assert len(info.queues) == 9


@pytest.mark.parametrize("conf", ["broker-a", "broker-a:x", ":3", "broker-a:-1", "a:1;;b"])
def test_malformed_order_topic_conf(conf: str) -> None:
    with pytest.raises(MalformedBody, match="orderTopicConf"):
        publish_info("T", replace(THREE, order_topic_conf=conf))


def test_sorted_queues_uses_java_order() -> None:
    queues = [
        MessageQueue("b", "x", 0),
        MessageQueue("a", "y", 10),
        MessageQueue("a", "y", 9),
        MessageQueue("a", "x", 1),
    ]
    assert sorted_queues(queues) == (
        MessageQueue("a", "x", 1),
        MessageQueue("a", "y", 9),
        MessageQueue("a", "y", 10),
        MessageQueue("b", "x", 0),
    )


# --- change detection ----------------------------------------------------------------------------


def test_no_cached_route_is_a_change() -> None:
    assert route_changed(None, THREE)


def test_order_of_brokers_is_not_a_change() -> None:
    shuffled = TopicRouteData(
        queue_datas=tuple(reversed(THREE.queue_datas)),
        broker_datas=tuple(reversed(THREE.broker_datas)),
    )
    assert not route_changed(THREE, shuffled)
    assert not route_changed(THREE, THREE)


@pytest.mark.parametrize(
    "changed",
    [
        # master moved
        replace(THREE, broker_datas=(bd("broker-b", {0: "10.9.9.9:10911"}), *THREE.broker_datas[1:])),
        # slave added
        replace(
            THREE, broker_datas=(bd("broker-b", {0: "broker-b:10911", 1: "s:1"}), *THREE.broker_datas[1:])
        ),
        # perm changed (broker made read-only)
        replace(THREE, queue_datas=(qd("broker-c", perm=PERM_READ), *THREE.queue_datas[1:])),
        # queue count changed
        replace(THREE, queue_datas=(qd("broker-c", write=4), *THREE.queue_datas[1:])),
        # broker removed
        replace(THREE, queue_datas=THREE.queue_datas[1:]),
        # order conf and filter servers count too
        replace(THREE, order_topic_conf="broker-a:3"),
        replace(THREE, filter_server_table={"10.0.0.1:10911": ("f",)}),
    ],
)
def test_real_changes_are_detected(changed: TopicRouteData) -> None:
    assert route_changed(THREE, changed)
    assert route_changed(changed, THREE)


# --- TBW102 --------------------------------------------------------------------------------------


def test_default_topic_route_clamps_to_read_queue_nums() -> None:
    tbw = TopicRouteData(
        queue_datas=(
            qd("broker-a", read=8, write=8, perm=RW | PERM_INHERIT),
            qd("broker-b", read=2, write=8, perm=RW | PERM_INHERIT),
            qd("broker-c", read=8, write=3, perm=RW | PERM_INHERIT),  # Java looks at read only
        ),
        broker_datas=(bd("broker-a"), bd("broker-b"), bd("broker-c")),
    )
    clamped = default_topic_route(tbw)
    assert [(d.read_queue_nums, d.write_queue_nums) for d in clamped.queue_datas] == [(4, 4), (2, 2), (4, 4)]
    assert clamped.broker_datas == tbw.broker_datas
    assert tbw.queue_datas[0].read_queue_nums == 8  # the input is untouched
    info = publish_info("NewTopic", clamped)
    assert info.queues == tuple(
        mqs("NewTopic", "broker-a", 4) + mqs("NewTopic", "broker-b", 2) + mqs("NewTopic", "broker-c", 4)
    )
    smaller = default_topic_route(tbw, default_queue_nums=1)
    assert [(d.read_queue_nums, d.write_queue_nums) for d in smaller.queue_datas] == [(1, 1)] * 3


# --- broker addresses ----------------------------------------------------------------------------


def test_broker_addresses_and_master() -> None:
    table = broker_addresses(THREE)
    assert table == {
        "broker-a": {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"},
        "broker-b": {0: "broker-b:10911"},
        "broker-c": {0: "broker-c:10911"},
    }
    assert master_address(table["broker-a"]) == "10.0.0.1:10911"
    assert master_address({1: "s:1"}) is None


def test_find_broker_address_fallbacks() -> None:
    table = {
        "full": {0: "m:1", 1: "s1:1", 2: "s2:1"},
        "no-master": {2: "s2:1", 3: "s3:1"},
        "empty": {},
    }
    assert find_broker_address(table, "full") == FoundBroker("m:1", 0)
    assert not FoundBroker("m:1", 0).slave
    assert find_broker_address(table, "full", 1) == FoundBroker("s1:1", 1)
    assert find_broker_address(table, "full", 1).slave  # type: ignore[union-attr]
    # a missing slave id tries the next one, then anything
    assert find_broker_address(table, "no-master", 1) == FoundBroker("s2:1", 2)
    assert find_broker_address(table, "full", 5) == FoundBroker("m:1", 0)
    # no master: any address (the lowest id), unless only this one is wanted
    assert find_broker_address(table, "no-master") == FoundBroker("s2:1", 2)
    assert find_broker_address(table, "no-master", only_this=True) is None
    assert find_broker_address(table, "full", 5, only_this=True) is None
    assert find_broker_address(table, "unknown") is None
    assert find_broker_address(table, "empty") is None


def test_drop_offline_brokers_keeps_only_addresses_some_route_names() -> None:
    # Java MQClientInstance.cleanOfflineBroker: an address is offline when no cached route names
    # it; a broker with no address left goes.
    table = {
        "broker-a": {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"},
        "broker-b": {0: "broker-b:10911"},
        "broker-c": {0: "broker-c:10911"},
    }
    a_without_slave = TopicRouteData(
        queue_datas=(qd("broker-a"),), broker_datas=(bd("broker-a", {0: "10.0.0.1:10911"}),)
    )
    only_c = TopicRouteData(queue_datas=(qd("broker-c"),), broker_datas=(bd("broker-c"),))
    kept, offline = drop_offline_brokers(table, [a_without_slave, only_c])
    assert kept == {"broker-a": {0: "10.0.0.1:10911"}, "broker-c": {0: "broker-c:10911"}}
    assert offline == {"10.0.0.2:10911", "broker-b:10911"}
    assert table["broker-b"] == {0: "broker-b:10911"}  # the input is untouched
    # Every broker still routed: nothing goes.
    assert drop_offline_brokers(table, [THREE]) == (table, set())
    # No route at all: everything goes.
    assert drop_offline_brokers(table, []) == ({}, {a for addrs in table.values() for a in addrs.values()})
