"""Master + slave on the real broker: a dead master's queues are read from its slave, and nothing is lost.

One module cluster: ``broker-a`` (master only) and ``broker-b`` with a slave (``brokerId`` 1,
``brokerRole=SLAVE``, replicating over HA). Each test kills broker-b's master and starts it again
before it ends, so the next test finds the full cluster.

A slave learns topics and subscription groups only from its master's tables, which it copies once a
minute (5.x ``SlaveSynchronize.syncAll``); it refuses pulls of a topic it does not know and offsets
of a group it does not know. So the module creates its topics and groups up front, on the masters,
and waits (once) until the slave has copied them, as a production slave would have long before its
master dies.

While a master is down its slave serves pulls and, as the Java client does, consumer offsets: they
are read (``RemoteBrokerOffsetStore`` via ``findBrokerAddressInAdmin``) and committed there. The
offset part is issue 11 defect 4 (the consumer's offset store asked the master only); the test of a
consumer started while the master is down fails until that is fixed.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import pytest
import trio

from integration._shapes import new_topic, shape_cluster, wait_until
from rocketmq_py import ConsumeStatus, Message, MessageExt, Producer, PushConsumer
from rocketmq_py._client._api import RemotingApi
from rocketmq_py._transport import ConnectionPool
from rocketmq_py.consumer._flow import FlowLimits
from rocketmq_py.errors import SubscriptionGroupNotExist
from rocketmq_py.testing import LocalCluster, cluster_members, topic_route

QUEUES = 2  # per broker
_GET_ALL_TOPIC_CONFIG = 21  # Java RequestCode.GET_ALL_TOPIC_CONFIG
_GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201  # Java RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG
#: The slave copies its master's tables every 60 s (after a first wait of 10 s).
SLAVE_SYNC_WAIT = 90.0


@dataclass(frozen=True)
class Names:
    run_topic: str
    run_group: str
    start_topic: str
    start_group: str


@pytest.fixture(scope="module")
def ms_cluster() -> Iterator[LocalCluster]:
    with shape_cluster(2, slaves=["broker-b"]) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def names(ms_cluster: LocalCluster) -> Names:
    """The module's topics and groups, created on the masters and copied by the slave."""
    cluster = ms_cluster
    tag = uuid.uuid4().hex[:8]
    names = Names(f"ms-run-{tag}", f"ms-run-g-{tag}", f"ms-start-{tag}", f"ms-start-g-{tag}")
    for topic in (names.run_topic, names.start_topic):
        cluster.create_topic(topic, QUEUES)
    for group in (names.run_group, names.start_group):
        cluster.mqadmin("updateSubGroup", "-c", cluster.cluster_name, "-g", group).check()

    async def copied() -> None:
        _, slave = addresses(cluster)
        async with ConnectionPool() as pool:
            api = RemotingApi(pool, timeout=5)
            with trio.move_on_after(SLAVE_SYNC_WAIT):
                while True:
                    topics = (await api.call(slave, _GET_ALL_TOPIC_CONFIG)).body
                    groups = (await api.call(slave, _GET_ALL_SUBSCRIPTIONGROUP_CONFIG)).body
                    if all(t.encode() in topics for t in (names.run_topic, names.start_topic)) and all(
                        g.encode() in groups for g in (names.run_group, names.start_group)
                    ):
                        return
                    await trio.sleep(1)
            pytest.fail(f"the slave did not copy the topics and groups within {SLAVE_SYNC_WAIT:.0f} s")

    started = time.monotonic()
    trio.run(copied)
    print(f"slave copied the topics and groups after {time.monotonic() - started:.1f} s")
    return names


@pytest.fixture
async def api() -> AsyncIterator[RemotingApi]:
    async with ConnectionPool() as pool:
        yield RemotingApi(pool, timeout=5)


def addresses(cluster: LocalCluster) -> tuple[str, str]:
    """(broker-b master, broker-b slave)."""
    (slave,) = cluster.slaves
    return cluster.broker_address("broker-b"), slave.address


def log_tail(cluster: LocalCluster, node: str, lines: int = 30) -> str:
    """The last lines of ``node``'s stdout log, for a failure message."""
    return "\n".join(cluster.log_path(node).read_text(errors="replace").splitlines()[-lines:])


async def max_offsets(api: RemotingApi, address: str, topic: str) -> list[int]:
    return [await api.get_max_offset(address, topic, q) for q in range(QUEUES)]


async def group_offsets(api: RemotingApi, address: str, group: str, topic: str) -> list[int]:
    return [await api.query_consumer_offset(address, group, topic, q, "broker-b") for q in range(QUEUES)]


async def wait_offsets(
    api: RemotingApi,
    address: str,
    group: str,
    topic: str,
    want: list[int],
    timeout: float,  # noqa: ASYNC109 - a test helper, not an API
    what: str,
) -> None:
    """Wait until ``group``'s offsets of broker-b's queues on ``address`` are ``want``."""
    seen: list[int] = []
    with trio.move_on_after(timeout):
        while True:
            seen = await group_offsets(api, address, group, topic)
            if seen == want:
                return
            await trio.sleep(0.3)
    pytest.fail(f"{what}: {seen} instead of {want} after {timeout:.0f} s")


async def wait_replicated(api: RemotingApi, cluster: LocalCluster, topic: str) -> list[int]:
    """Wait until broker-b's slave holds every message its master holds; returns the max offsets."""
    master, slave = addresses(cluster)
    with trio.fail_after(30):
        while True:
            want = await max_offsets(api, master, topic)
            if await max_offsets(api, slave, topic) == want:
                return want
            await trio.sleep(0.2)


async def write_slave_offsets(
    api: RemotingApi, slave: str, group: str, topic: str, offsets: list[int]
) -> None:
    """Write ``group``'s offsets of broker-b's queues to the slave, as its next copy would.

    The slave knows the group (the ``names`` fixture waited for it), yet it may answer
    SUBSCRIPTION_GROUP_NOT_EXIST for a moment: whenever its table's data version differs from the
    master's, each copy deletes every group, persisting the table after each delete, before it puts
    them all back (5.x ``SlaveSynchronize.syncSubscriptionGroupConfig``; 4.x clears the table and
    puts it back). The deletes bump the slave's version again, so the next copy does it again. The
    write is retried until it lands; ci5 failed on its first attempt.
    """
    for queue_id, offset in enumerate(offsets):
        with trio.fail_after(30):
            while True:
                try:
                    await api.update_consumer_offset(slave, group, topic, queue_id, offset, "broker-b")
                    break
                except SubscriptionGroupNotExist:
                    await trio.sleep(0.1)


async def produce(cluster: LocalCluster, topic: str, prefix: str, n: int) -> dict[bytes, str]:
    """Send ``n`` messages; body -> broker name that stored it."""
    stored: dict[bytes, str] = {}
    async with Producer(f"ms-pg-{uuid.uuid4().hex[:6]}", namesrv=cluster.namesrv_addr) as producer:
        for i in range(n):
            body = f"{prefix}-{i}".encode()
            stored[body] = (await producer.send(Message(topic, body))).queue.broker_name
    return stored


def test_the_slave_registers_under_the_masters_name(ms_cluster: LocalCluster) -> None:
    cluster = ms_cluster
    master, slave = addresses(cluster)
    assert cluster_members(cluster.namesrv_addr)["broker-b"] == {0: master, 1: slave}
    topic = new_topic(cluster, QUEUES, prefix="ms-route")
    route = topic_route(cluster.namesrv_addr, topic)
    assert route is not None
    by_name = {b.broker_name: b.broker_addrs for b in route.broker_datas}
    assert by_name["broker-b"] == {0: master, 1: slave}
    assert list(by_name["broker-a"]) == [0]


async def test_a_running_consumer_reads_the_dead_masters_queues_from_its_slave(
    ms_cluster: LocalCluster, names: Names, api: RemotingApi
) -> None:
    """Messages stored on broker-b before its master dies are pulled from the slave; once the master
    is back, new messages come from it and the group's offsets are committed to it again. 0 lost."""
    cluster = ms_cluster
    topic, name = names.run_topic, names.run_group
    consumed: list[bytes] = []
    gate = trio.Event()

    async def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        for m in msgs:
            if m.body.startswith(b"p2-"):
                await gate.wait()  # held until the master is dead
            consumed.append(m.body)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        name,
        namesrv=cluster.namesrv_addr,
        listener=listener,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        pull_batch_size=1,
        # One cached message per queue: what broker-b held at the kill must mostly be pulled after it.
        flow_limits=FlowLimits(pull_threshold_for_queue=1),
        rebalance_interval=1,
        persist_interval=1,
    )
    consumer.subscribe(topic)
    sent: dict[bytes, str] = {}
    try:
        async with consumer:
            sent |= await produce(cluster, topic, "p1", 20)
            await wait_until(lambda: len(consumed) == 20, 60, "p1 consumed")
            sent |= await produce(cluster, topic, "p2", 40)
            await wait_replicated(api, cluster, topic)
            await trio.to_thread.run_sync(cluster.kill_broker, "broker-b")
            p2_on_b = [b for b, broker in sent.items() if b.startswith(b"p2-") and broker == "broker-b"]
            assert len(p2_on_b) >= 10
            gate.set()
            await wait_until(lambda: set(p2_on_b) <= set(consumed), 90, "broker-b's p2 read from the slave")
            sent |= await produce(cluster, topic, "p3", 20)  # broker-a only while broker-b has no master
            await trio.to_thread.run_sync(cluster.restart_broker, "broker-b")
            # New sends reach the restarted master again. In ci14 (a loaded machine) all 40 sends made
            # just after its registration went to broker-a: a producer avoids a broker for a while
            # after a send to it fails, as one can while the broker finishes starting. So: rounds of
            # 10 sends, each from a new producer, until one lands on broker-b (at least 4 rounds).
            rounds = 0
            with trio.fail_after(90):
                while rounds < 4 or "broker-b" not in {sent[b] for b in sent if b.startswith(b"p4-")}:
                    sent |= await produce(cluster, topic, f"p4-{rounds}", 10)
                    rounds += 1
            await wait_until(lambda: set(sent) <= set(consumed), 90, "every acknowledged message consumed")
            master, _ = addresses(cluster)
            assert cluster.broker_running("broker-b"), log_tail(cluster, "broker-b")
            ends = await max_offsets(api, master, topic)
            await wait_offsets(api, master, name, topic, ends, 30, "offsets committed to the master again")
    finally:
        if not cluster.broker_running("broker-b"):
            print(f"broker-b's master had stopped:\n{log_tail(cluster, 'broker-b')}")
            await trio.to_thread.run_sync(cluster.restart_broker, "broker-b")
    assert {sent[b] for b in sent if b.startswith(b"p4-")} == {"broker-a", "broker-b"}
    assert {sent[b] for b in sent if b.startswith(b"p3-")} == {"broker-a"}
    assert set(consumed) == set(sent)  # 0 lost (a redelivery after the failover is allowed)


async def test_a_consumer_started_while_the_master_is_down_reads_and_commits_offsets_via_the_slave(
    ms_cluster: LocalCluster, names: Names, api: RemotingApi
) -> None:
    cluster = ms_cluster
    topic, name = names.start_topic, names.start_group
    master, slave = addresses(cluster)
    consumed: list[bytes] = []

    async def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        consumed.extend(m.body for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    def consumer() -> PushConsumer:
        c = PushConsumer(
            name,
            namesrv=cluster.namesrv_addr,
            listener=listener,
            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
            rebalance_interval=1,
            persist_interval=1,
        )
        c.subscribe(topic)
        return c

    sent = await produce(cluster, topic, "p1", 20)
    async with consumer():
        await wait_until(lambda: set(sent) <= set(consumed), 60, "p1 consumed")
        first_ends = await max_offsets(api, master, topic)
        await wait_offsets(api, master, name, topic, first_ends, 30, "p1 offsets committed to the master")
    # What the slave's next copy of the master's offset table (within a minute) would bring.
    await write_slave_offsets(api, slave, name, topic, first_ends)
    assert await group_offsets(api, slave, name, topic) == first_ends
    consumed.clear()
    later = await produce(cluster, topic, "p2", 40)
    ends = await wait_replicated(api, cluster, topic)
    await trio.to_thread.run_sync(cluster.kill_broker, "broker-b")
    try:
        async with consumer():
            await wait_until(lambda: set(later) <= set(consumed), 60, "p2 consumed while the master is down")
            # Committed to the slave, as Java does.
            await wait_offsets(api, slave, name, topic, ends, 30, "p2 offsets committed to the slave")
    finally:
        await trio.to_thread.run_sync(cluster.restart_broker, "broker-b")
    # Started from the committed offsets read on the slave: nothing of p1 came again.
    assert not [b for b in consumed if b.startswith(b"p1-")]


def test_a_restarted_namesrv_lists_every_running_broker_again(ms_cluster: LocalCluster) -> None:
    """After a NameServer restart every running broker registers again, a broker restarted earlier
    included; ``start_namesrv`` waits for the running ones only (a dead master is not awaited)."""
    cluster = ms_cluster
    master, slave = addresses(cluster)
    full = {"broker-a": {0: cluster.broker_address("broker-a")}, "broker-b": {0: master, 1: slave}}
    try:
        cluster.restart_broker("broker-b")
        started = time.monotonic()
        cluster.stop_namesrv()
        cluster.start_namesrv()  # raises ClusterError naming a running broker that never came back
        print(f"NameServer restart to complete cluster: {time.monotonic() - started:.1f} s")
        assert cluster_members(cluster.namesrv_addr) == full

        cluster.kill_broker("broker-b")
        cluster.stop_namesrv()
        cluster.start_namesrv()
        members = cluster_members(cluster.namesrv_addr)
        assert members == {"broker-a": full["broker-a"], "broker-b": {1: slave}}
    finally:
        if not cluster.broker_running("broker-b"):
            cluster.restart_broker("broker-b")
    assert cluster_members(cluster.namesrv_addr) == full
