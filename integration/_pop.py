"""What the POP integration files share: group modes set as mqadmin sets them, producing, steady traffic."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

import trio

from integration._shapes import admin_request
from rocketmq_py import Message, Producer
from rocketmq_py.protocol import RequestCode, ResponseCode
from rocketmq_py.testing import Cluster
from rocketmq_py.testing._cluster import cluster_info


def set_consume_mode(cluster: Cluster, group: str, topic: str, mode: str) -> None:
    """``group`` reads ``topic`` in ``mode`` (POP or PULL) on every master; in POP mode every member
    may pop every queue (``popShareQueueNum`` 8).

    What ``mqadmin setConsumeMode -c DefaultCluster -g G -t T -m MODE -q 8`` sends (Java
    ``SetConsumeModeSubCommand``, ``MQClientAPIImpl.setMessageRequestMode``): SET_MESSAGE_REQUEST_MODE
    (401) with a ``SetMessageRequestModeRequestBody`` to each master of the cluster, without a JVM
    for each switch (3.5 s and a CPU-second apiece on the test machine; these files switched 22 groups).
    """
    body = json.dumps({"topic": topic, "consumerGroup": group, "mode": mode, "popShareQueueNum": 8})
    masters = cluster_info(cluster.admin_namesrv_addr, ssl_context=cluster.ssl_context)
    assert masters, f"the NameServer {cluster.admin_namesrv_addr} lists no master"
    for name, address in sorted(masters.items()):
        reply = admin_request(cluster, address, RequestCode.SET_MESSAGE_REQUEST_MODE, body=body.encode())
        assert reply.code == ResponseCode.SUCCESS, (
            f"{name} ({address}) refused SET_MESSAGE_REQUEST_MODE {mode} for {group}: {reply.code} {reply.remark}"
        )


def pop_group(cluster: Cluster, topic: str) -> str:
    """A fresh group set to POP mode for ``topic`` on every broker of the cluster."""
    group = f"it-pop-{uuid.uuid4().hex[:10]}"
    set_consume_mode(cluster, group, topic, "POP")
    return group


async def produce(
    cluster: Cluster, topic: str, count: int, *, pace: float = 0.0, prefix: str = "pop"
) -> set[bytes]:
    """Send ``count`` messages ``<prefix>-<n>``; their bodies."""
    bodies = set()
    async with Producer(f"it-pop-producer-{uuid.uuid4().hex[:6]}", namesrv=cluster.namesrv_addr) as producer:
        for n in range(count):
            body = f"{prefix}-{n}".encode()
            await producer.send(Message(topic, body))
            bodies.add(body)
            if pace:
                await trio.sleep(pace)
    return bodies


#: Background traffic runs for a minute or more beside the test's own work, on brokers that share two
#: cores with other test workers' clusters: a send that waits out a few seconds' stall is traffic
#: all the same (the default 3 s is the Java client's, for a machine that is not this busy).
TRAFFIC_SEND_TIMEOUT = 15.0


async def keep_sending(cluster: Cluster, topic: str) -> None:
    """Traffic until cancelled: the broker's revive service moves on as acknowledgements and
    checkpoints come in (on an idle group it may wait much longer to revive a message)."""
    async with Producer(
        f"it-pop-traffic-{uuid.uuid4().hex[:6]}",
        namesrv=cluster.namesrv_addr,
        send_timeout=TRAFFIC_SEND_TIMEOUT,
    ) as producer:
        for n in range(100_000):
            await producer.send(Message(topic, f"traffic-{n}".encode()))
            await trio.sleep(0.2)


async def wait_until(predicate: Callable[[], bool]) -> None:
    """Poll ``predicate`` until it holds (use under ``trio.fail_after``)."""
    while not predicate():  # noqa: ASYNC110 - the listeners fill the state
        await trio.sleep(0.1)
