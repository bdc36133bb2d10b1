"""A push member follows its broker group to the master a 5.x controller elected after a kill (issue 26 §2).

In controller mode the group keeps its name when its master dies: the controller elects an in-sync
slave, which sets its broker id to 0 and registers with the NameServers from its own address (Java
``ReplicasManager.changeToMaster``: ``setBrokerId(MixAll.MASTER_ID)``, then ``registerBrokerAll``).
A client's cached route still names the dead address under ``brokerId`` 0 until its next route
poll (30 s) or rebalance (20 s): Java's pulls, offset commits and orderly locks keep going there
(``PullAPIWrapper.pullKernelImpl`` and ``RebalanceImpl.lockAll`` read the cached broker table).
The real twin is the ``controller`` phase of ``integration/test_chaos.py`` (before the fixes the
concurrent group delivered again 21.3 s after the election, the orderly one 30.2 s).

Here ``broker-a``'s master is a fake that closes every connection at its first frame (a killed JVM
refuses connects; a closed connection is the same :class:`TransportError` to the client), and the
elected replica is another fake named ``broker-a`` holding a copy of the log.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from rocketmq_py.consumer._push import PushConsumer
from rocketmq_py.protocol import BrokerData, Message, MessageQueue, QueueData, TopicRouteData
from rocketmq_py.testing._fake_broker import FakeBroker

if TYPE_CHECKING:
    from conftest import Cluster, Recorder

MakeConsumer = Callable[..., PushConsumer]
#: Seconds within which the member must deliver from the new master (virtual time): below the
#: rebalance interval (20 s) and the route poll (30 s) that found it before.
FOLLOW_LIMIT = 10.0


@pytest.fixture
async def elected(cluster: Cluster) -> AsyncIterator[FakeBroker]:
    """The slave of ``broker-a`` the controller will elect (not in the route yet)."""
    async with FakeBroker(broker_name="broker-a") as fb:
        fb.add_topic(cluster.topic, queues=2)
        fb.add_topic(cluster.retry, queues=1)
        yield fb


def route(a: FakeBroker, b: FakeBroker, queues: int) -> TopicRouteData:
    return TopicRouteData(
        queue_datas=tuple(
            QueueData(broker_name=name, read_queue_nums=queues, write_queue_nums=queues, perm=6)
            for name in ("broker-a", "broker-b")
        ),
        broker_datas=tuple(
            BrokerData(cluster="DefaultCluster", broker_name=fb.broker_name, broker_addrs={0: fb.address})
            for fb in (a, b)
        ),
    )


async def kill_master(cluster: Cluster, elected: FakeBroker, a0: MessageQueue) -> None:
    """``broker-a``'s master dies; ``elected`` holds its log of ``a0`` and one message more."""
    cluster.a.drop_after(1)
    await cluster.a.drop_clients()
    log = [Message(m.topic, m.body) for m in cluster.a.messages(cluster.topic, a0.queue_id)]
    elected.put_messages(a0.queue_id, [*log, Message(cluster.topic, b"after the election")])


def elect(cluster: Cluster, elected: FakeBroker) -> None:
    """The NameServer lists ``elected`` as ``broker-a``'s master."""
    cluster.namesrv.set_route(cluster.topic, route(elected, cluster.b, queues=2))
    cluster.namesrv.set_route(cluster.retry, route(elected, cluster.b, queues=1))


async def consume_across_the_election(
    cluster: Cluster, elected: FakeBroker, consumer: PushConsumer, recorder: Recorder, *, listed_after: float
) -> None:
    """One message from ``broker-a``'s first master, then its kill; ``listed_after`` seconds later the
    NameServer lists ``elected``; the member must deliver what only ``elected`` holds within
    :data:`FOLLOW_LIMIT` of that (virtual time)."""
    a0 = cluster.queues()[0]
    async with consumer:
        cluster.put(a0, 1)
        await cluster.wait_until(lambda: len(recorder.messages) == 1)
        await kill_master(cluster, elected, a0)
        await trio.sleep(listed_after)
        elect(cluster, elected)
        listed_at = trio.current_time()
        await cluster.wait_until(lambda: len(recorder.messages) == 2)
        assert trio.current_time() - listed_at < FOLLOW_LIMIT  # virtual time
    assert recorder.bodies()[-1] == b"after the election"


@pytest.mark.parametrize("orderly", [False, True], ids=["concurrent", "orderly"])
async def test_a_member_pulls_from_the_master_elected_after_a_kill(
    cluster: Cluster,
    elected: FakeBroker,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
    orderly: bool,
) -> None:
    """A pull the dead address refused asks the NameServer again (at most once a second a topic),
    so the next pull goes to the new master, not the one the next rebalance or route poll finds."""
    await consume_across_the_election(
        cluster, elected, make_consumer(orderly=orderly), recorder, listed_after=0
    )


async def test_an_orderly_lock_lost_to_a_dead_master_is_taken_again_on_the_new_one(
    cluster: Cluster,
    elected: FakeBroker,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The 20-s lock renewal went to the dead master (the election was not registered yet): the
    member counts its queues unlocked and pulls nothing from them. The renewal is tried again 3 s
    later, not 20 s (Java's ``lockAll`` period), so the queues lock on the new master soon after it
    is listed."""
    # One renewal in the 21 s, refused: the route still names the dead master.
    await consume_across_the_election(
        cluster, elected, make_consumer(orderly=True), recorder, listed_after=21
    )


async def test_offsets_follow_the_master_elected_after_a_route_that_listed_none(
    cluster: Cluster,
    elected: FakeBroker,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A route fetched during the election lists ``broker-a``'s slaves only. Nothing fails on a slave
    (it serves pulls and takes offsets), so no error sent the member back to the NameServer: it
    pulled from the lowest slave and committed there until the next rebalance or route poll, and
    the new master never saw the group's progress (the CI run of the controller chaos phase: the
    concurrent group's offsets on the new master stayed at the slave's pre-kill copy). While a
    broker has no master the member asks the NameServer again, at most once a second a topic."""
    a0 = cluster.queues()[0]
    async with FakeBroker(broker_name="broker-a") as other:  # the replica the controller passes over
        other.add_topic(cluster.topic, queues=2)
        other.add_topic(cluster.retry, queues=1)
        async with make_consumer(persist_interval=1):
            cluster.put(a0, 1)
            await cluster.wait_until(lambda: len(recorder.messages) == 1)
            await kill_master(cluster, elected, a0)
            other.put_messages(
                a0.queue_id, [Message(m.topic, m.body) for m in elected.messages(cluster.topic, 0)]
            )
            slaves = BrokerData(
                cluster="DefaultCluster",
                broker_name="broker-a",
                broker_addrs={1: other.address, 2: elected.address},
            )
            for topic, queues in ((cluster.topic, 2), (cluster.retry, 1)):
                listed = route(other, cluster.b, queues=queues)
                cluster.namesrv.set_route(
                    topic,
                    TopicRouteData(
                        queue_datas=listed.queue_datas, broker_datas=(slaves, listed.broker_datas[1])
                    ),
                )
            await cluster.wait_until(lambda: len(recorder.messages) == 2)  # read from a slave
            elect(cluster, elected)
            listed_at = trio.current_time()
            key = (cluster.group, cluster.topic, a0.queue_id)
            await cluster.wait_until(lambda: elected.consumer_offsets.get(key, 0) >= 2, timeout=FOLLOW_LIMIT)
            assert trio.current_time() - listed_at < FOLLOW_LIMIT  # virtual time


async def test_a_broker_back_in_the_route_has_its_queues_taken_at_once(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A broker that left the route (killed) and is listed again (restarted): the member starts a
    rebalance round as soon as its route names the broker, not at its next round (every 20 s, as
    Java's ``RebalanceService``), and the route is asked for every 2 s while the broker is missing
    (``RouteService``; Java waits for its 30-s poll). The stop's CI run of ``test_chaos.py`` waited
    30.4 s after the restart for ``broker-a``'s queues. Real twin: the ``kill`` phase of
    ``integration/test_chaos.py`` (every queue of the restarted broker delivers again within 30 s)."""
    a0 = cluster.queues()[0]
    async with make_consumer() as consumer:
        for topic, queues in ((cluster.topic, 2), (cluster.retry, 1)):
            cluster.namesrv.set_route(topic, cluster.route(cluster.b, queues=queues))
        # The route poll (30 s) sees broker-a gone; the round after it (40 s) gives its queues up.
        await cluster.wait_until(lambda: a0 not in consumer.assignment())
        for topic, queues in ((cluster.topic, 2), (cluster.retry, 1)):
            cluster.namesrv.set_route(topic, cluster.route(cluster.a, cluster.b, queues=queues))
        listed_at = trio.current_time()
        cluster.put(a0, 1)
        await cluster.wait_until(lambda: len(recorder.messages) == 1)
        assert trio.current_time() - listed_at < 5  # virtual time: the next round was ~20 s away
    assert recorder.bodies() == [b"broker-a/0-0"]


async def test_an_offset_a_killed_broker_could_not_take_is_committed_before_its_queue_is_read_again(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """``broker-a`` is killed: its queues leave the route and the member gives them up, and the
    handoff's commit fails. The restarted broker holds an older copy of the group's offsets (a
    broker flushes them every 5 s, ``flushConsumerOffsetInterval``; SIGKILL loses the rest). The
    failed commit is sent again before the member reads the queue's offset, so nothing is consumed
    twice (Java forgets it: ``removeUnnecessaryMessageQueue``). Real twin: the ``kill`` phase of
    ``integration/test_chaos.py`` with ``--kill-down 20``: 500 to 1,100 messages delivered again
    before (``benchmarks/chaos.py``)."""
    a0 = cluster.queues()[0]
    key = (cluster.group, cluster.topic, a0.queue_id)
    async with make_consumer() as consumer:
        cluster.put(a0, 5)
        await cluster.wait_until(lambda: len(recorder.messages) == 5)
        await cluster.wait_until(lambda: cluster.a.consumer_offsets.get(key) == 5)
        cluster.a.drop_after(1)  # killed: every connection closes at its first frame
        await cluster.a.drop_clients()
        for topic, queues in ((cluster.topic, 2), (cluster.retry, 1)):
            cluster.namesrv.set_route(topic, cluster.route(cluster.b, queues=queues))
        await cluster.wait_until(lambda: a0 not in consumer.assignment())
        cluster.a.consumer_offsets[key] = 2  # what the restarted broker read from its last flush
        cluster.a.clear_faults()
        for topic, queues in ((cluster.topic, 2), (cluster.retry, 1)):
            cluster.namesrv.set_route(topic, cluster.route(cluster.a, cluster.b, queues=queues))
        await cluster.wait_until(lambda: a0 in consumer.assignment())
        cluster.put(a0, 1)
        await cluster.wait_until(lambda: len(recorder.messages) >= 6)
        await trio.sleep(5)
    assert recorder.bodies() == [f"broker-a/0-{n}".encode() for n in range(6)]
