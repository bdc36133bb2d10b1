"""The docker backend's Proxy: ``start_cluster(backend="docker", proxy=True)``, a 5.x Proxy in
cluster mode in a container of its own in front of the brokers' containers, reached on 127.0.0.1.

This file runs in the docker step of ``make test`` (``DOCKER_TESTS``); the main run leaves it out
(the jar backend's Proxy is ``integration/test_proxy.py``'s). CI, which starts a Docker engine,
fails here without one; elsewhere the file is skipped with the reason.

The clients are given the Proxy's remoting port as their NameServer and never see the NameServer or
a broker: a push consumer reads by client rebalance; a member with ``client_rebalance=False`` falls
back to client rebalance and pull, as through the jar backend's Proxy (the Proxy serves no
QUERY_ASSIGNMENT: ``integration/test_proxy.py``, ``tests/consumer/test_push_pop.py``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import trio

from integration._shapes import new_topic, version_under_test
from rocketmq_py import ConsumeStatus, Message, MessageExt, Producer, PushConsumer
from rocketmq_py.lowlevel import ConnectionPool, RemotingApi
from rocketmq_py.testing import Cluster, start_cluster
from rocketmq_py.testing._docker import docker_available

COUNT = 40
#: Seconds to wait for what a loaded machine may take (a rebalance, a first pull through the Proxy).
WAIT = 60.0


@pytest.fixture(scope="module")
def docker_proxied() -> Iterator[Cluster]:
    """One broker and a Proxy in front of it, each in its own container (the docker backend)."""
    version = version_under_test()
    if version.startswith("4."):
        pytest.skip("a Proxy came with RocketMQ 5.0 (the 4.x run has none)")
    if not docker_available():
        if os.environ.get("CI"):
            pytest.fail(
                "CI: no Docker engine answers; the docker backend's Proxy test needs one", pytrace=False
            )
        pytest.skip("no Docker engine answers here (CI runs this file in the docker step)")
    with start_cluster(1, version=version, backend="docker", proxy=True) as cluster:
        yield cluster


def push_consumer(cluster: Cluster, topic: str, listener: Any, **options: Any) -> PushConsumer:
    consumer = PushConsumer(
        f"dpx-{uuid.uuid4().hex[:8]}",
        listener=listener,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        **options,
        **cluster.client_options(proxy=True),
    )
    consumer.subscribe(topic)
    return consumer


async def wait_for(predicate: Callable[[], object], what: str) -> None:
    with trio.move_on_after(WAIT):
        while not predicate():  # noqa: ASYNC110 - the state of a listener
            await trio.sleep(0.1)
    assert predicate(), f"{what} within {WAIT:g} s"


async def test_the_proxy_container_is_the_route_of_the_broker(docker_proxied: Cluster) -> None:
    topic = new_topic(docker_proxied, 4, "dpx")
    assert docker_proxied.proxy_addr is not None
    assert docker_proxied.proxy_addr != docker_proxied.namesrv_addr
    async with ConnectionPool() as pool:
        route = await RemotingApi(pool, timeout=10).get_route_info(docker_proxied.proxy_addr, topic)
    assert [b.broker_name for b in route.broker_datas] == ["broker-a"]
    assert {a for b in route.broker_datas for a in b.broker_addrs.values()} == {docker_proxied.proxy_addr}


@pytest.mark.parametrize("client_rebalance", [True, False], ids=["push", "broker-assigned"])
async def test_what_is_sent_through_the_proxy_is_consumed_through_it(
    docker_proxied: Cluster, client_rebalance: bool
) -> None:
    topic = new_topic(docker_proxied, 4, "dpx")
    got: list[bytes] = []

    async def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        got.extend(m.body for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = push_consumer(docker_proxied, topic, listener, client_rebalance=client_rebalance)
    sent = {f"m-{i}".encode() for i in range(COUNT)}
    async with Producer(
        f"dpx-p-{uuid.uuid4().hex[:8]}", **docker_proxied.client_options(proxy=True)
    ) as producer:
        for i in range(COUNT // 2):
            await producer.send(Message(topic, f"m-{i}".encode()))
        await producer.send_batch([Message(topic, f"m-{i}".encode()) for i in range(COUNT // 2, COUNT)])
        async with consumer:
            await wait_for(lambda: set(got) >= sent, f"{COUNT} messages consumed")
    assert set(got) == sent
