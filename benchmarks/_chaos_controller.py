"""The ``controller`` phase of ``benchmarks/chaos.py``, and the per-key order rule of its orderly group.

On a 5.x controller-mode group (:class:`rocketmq_py.testing.ControllerCluster`: ``broker-a`` as three
replicas, ``allAckInSyncStateSet``) the phase SIGKILLs the master and nothing else: the controller
sees its connection close and elects an in-sync slave, which registers as ``brokerId`` 0; no one
restarts anything. The fault is *on* from the kill until the NameServer lists the new master.

Before the kill it waits until every slave holds what a production slave would have copied long
before (a slave copies its master's topic, subscription-group and consumer-offset tables about
every 10 s, Java ``SlaveSynchronize.syncAll``): the topic, the groups, and the topic's offsets of
every group.
Right before the kill it reads the groups' committed offsets on the master; after the consumers
closed, on the new master: each queue's must have moved past where it stood at the kill, or the
group's commits after the failover never reached the broker that now owns the queues.

The order rule (:func:`order_breaks`): the producer sends the messages of one key (``seq % keys``)
one after the other to the queue the key hashes to, so the key's stored order is its sequence
order. Over its deliveries to the orderly group, in delivery order, drop each delivery of a
sequence number delivered before (a redelivery: after a failover an orderly queue may be delivered
again from its last commit, which repeats a suffix of what the key had); what is left must be
strictly increasing. A break is a first delivery of a number below one delivered before it: a
message delivered after one stored later than it.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence

import trio
from _chaos_report import PhaseFigures

from rocketmq_py.errors import RocketMQError
from rocketmq_py.lowlevel import ConnectionPool, RemotingApi
from rocketmq_py.testing import ControllerCluster

#: Java ``RequestCode.GET_ALL_TOPIC_CONFIG`` and ``GET_ALL_CONSUMER_OFFSET``: the tables a slave copies.
_GET_ALL_TOPIC_CONFIG = 21
_GET_ALL_CONSUMER_OFFSET = 43
#: Java ``RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG``: the groups a broker knows.
GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
#: Seconds to wait for the slaves' copies (one copy every 10 s; a loaded two-core machine is slow).
REPLICATION_WAIT = 90.0
#: Seconds the controller has to elect a new master and the NameServer to list it.
ELECTION_WAIT = 60.0


def order_breaks(delivered: Iterable[int]) -> list[tuple[int, int]]:
    """The breaks of the order rule in one key's deliveries (sequence numbers, in delivery order).

    Returns ``(highest first delivery so far, sequence number delivered first after it)`` for each
    first delivery below an earlier one; redeliveries (numbers seen before) are skipped.
    """
    seen: set[int] = set()
    top = -1
    breaks: list[tuple[int, int]] = []
    for seq in delivered:
        if seq in seen:
            continue
        seen.add(seq)
        if seq < top:
            breaks.append((top, seq))
        top = max(top, seq)
    return breaks


class OrderlyLog:
    """What the orderly group got: deliveries per sequence number and where from, per key in order."""

    def __init__(self, keys: int) -> None:
        self.keys = keys
        self.deliveries: collections.Counter[int] = collections.Counter()
        self.delivered_from: dict[int, list[tuple[str, int, int]]] = collections.defaultdict(list)
        self.by_key: dict[int, list[int]] = collections.defaultdict(list)

    def delivered(self, seq: int, where: tuple[str, int, int]) -> None:
        """Record one delivery of ``seq`` from ``where`` (store host, queue id, queue offset)."""
        self.deliveries[seq] += 1
        self.delivered_from[seq].append(where)
        self.by_key[seq % self.keys].append(seq)

    def breaks(self) -> dict[int, list[tuple[int, int]]]:
        """The order breaks of every key that has some."""
        found = {key: order_breaks(seqs) for key, seqs in self.by_key.items()}
        return {key: b for key, b in found.items() if b}


async def committed_offsets(
    address: str, groups: Sequence[str], topic: str, queues: int, broker: str
) -> dict[tuple[str, int], int]:
    """The committed offset of each ``(group, queue id)`` on the broker at ``address`` (-1: none)."""
    async with ConnectionPool() as pool:
        api = RemotingApi(pool, timeout=5)
        return {
            (group, q): await api.query_consumer_offset(address, group, topic, q, broker)
            for group in groups
            for q in range(queues)
        }


async def wait_replicated(cluster: ControllerCluster, topic: str, groups: Sequence[str]) -> float:
    """Wait until every slave has copied ``topic``, every group's subscription-group config (a broker
    refuses the commits of a group it does not know: ``ConsumerManageProcessor.updateConsumerOffset``)
    and the topic's offsets of every group; return the seconds it took.

    Raises:
        TimeoutError: not within :data:`REPLICATION_WAIT` seconds.
    """
    started = time.monotonic()
    wanted = [f"{topic}@{group}".encode() for group in groups]
    async with ConnectionPool() as pool:
        api = RemotingApi(pool, timeout=5)
        with trio.move_on_after(REPLICATION_WAIT):
            while True:
                try:
                    ready = True
                    for slave in cluster.slaves:
                        topics = (await api.call(slave.address, _GET_ALL_TOPIC_CONFIG)).body
                        offsets = (await api.call(slave.address, _GET_ALL_CONSUMER_OFFSET)).body
                        known = (await api.call(slave.address, GET_ALL_SUBSCRIPTIONGROUP_CONFIG)).body
                        ready &= topic.encode() in topics and all(w in offsets for w in wanted)
                        ready &= all(f'"{group}"'.encode() in known for group in groups)
                except (OSError, RocketMQError):
                    ready = False
                if ready:
                    return time.monotonic() - started
                await trio.sleep(1.0)
    raise TimeoutError(f"the slaves did not copy {topic} and its groups' offsets in {REPLICATION_WAIT:g} s")


class ControllerFault:
    """The steps of one ``controller`` phase: prepare (the slaves' copies, then the master's committed
    offsets), inject (SIGKILL the master), lift (wait for the new master), after (the new master's
    offsets, once the consumers closed)."""

    def __init__(
        self,
        cluster: ControllerCluster,
        phase: PhaseFigures,
        topic: str,
        groups: Sequence[str],
        queues: int,
        blocking: Callable[..., Awaitable[None]],
    ) -> None:
        self.cluster = cluster
        self.phase = phase
        self.topic = topic
        self.groups = groups
        self.queues = queues
        self.blocking = blocking
        self.old: str | None = None
        self.new: str | None = None
        self.broker = ""  # the group's brokerName, as the master registers

    async def prepare(self) -> None:
        """Wait until the slaves hold the topic and the groups' offsets (they copy every 10 s), then
        read the groups' committed offsets on the master."""
        took = await wait_replicated(self.cluster, self.topic, self.groups)
        self.phase.notes.append(f"the slaves had the topic and the groups' offsets after {took:.1f} s")
        self.old = self.cluster.master
        if self.old is None:
            raise RuntimeError("the controller-mode group has no known master")
        self.broker = self.cluster.brokers[0].name
        address = self.cluster.node_address(self.old)
        self.phase.committed_at_fault = await committed_offsets(
            address, self.groups, self.topic, self.queues, self.broker
        )

    async def inject(self) -> None:
        """SIGKILL the master."""
        assert self.old is not None, "prepare() first"
        await self.blocking(self.cluster.kill_broker, self.old)

    async def lift(self) -> None:
        """Wait until the controller elected another master and the NameServer lists it."""
        self.new = await trio.to_thread.run_sync(
            lambda: self.cluster.wait_for_master(ELECTION_WAIT, other_than=self.old)
        )
        self.phase.notes.append(f"master {self.old} killed; {self.new} elected and listed")

    async def after(self) -> None:
        """Read the groups' committed offsets on the new master."""
        if self.new is None:
            return
        self.phase.committed_after = await committed_offsets(
            self.cluster.node_address(self.new),
            self.groups,
            self.topic,
            self.queues,
            self.broker,
        )
        behind = stale_offsets(self.phase.committed_at_fault, self.phase.committed_after)
        if behind:
            self.phase.notes.append(f"offsets not past the kill on the new master: {behind}")
            async with ConnectionPool() as pool:
                address = self.cluster.node_address(self.new)
                known = (
                    await RemotingApi(pool, timeout=5).call(address, GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
                ).body
            unknown = [group for group in self.groups if f'"{group}"'.encode() not in known]
            self.phase.notes.append(f"groups the new master does not know: {unknown or 'none'}")
        else:
            moved = len(self.phase.committed_after)
            self.phase.notes.append(f"all {moved} (group, queue) offsets on the new master are past the kill")


def stale_offsets(
    at_fault: Mapping[tuple[str, int], int], after: Mapping[tuple[str, int], int]
) -> dict[tuple[str, int], tuple[int, int]]:
    """The ``(group, queue)`` whose offset ``after`` is not past the one ``at_fault`` (both shown)."""
    return {
        key: (before, after.get(key, -1)) for key, before in at_fault.items() if after.get(key, -1) <= before
    }
