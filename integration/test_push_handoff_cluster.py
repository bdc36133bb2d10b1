"""Graceful rebalance handoff on the real cluster: a group scaled 2 -> 3 -> 2 under steady traffic.

Members run in their own processes (``_consumer_proc.py --listen-rebalance``), which report the
rebalance listener's ``on_assigned`` / ``on_revoked`` calls besides their owned queues and what they
consumed. Nothing may be lost; the duplicate count is printed (run with ``-s``): with the handoff it
is usually 0, but it depends on when each member sees the member change, so it is not asserted.
What is asserted is that, once the group has settled on the allocation AVG gives its members, each
member's listener calls add up to the queues it owns, and every queue it gained or gave up in a
scaling step was announced by ``on_assigned`` / ``on_revoked``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import trio

from rocketmq_py import MessageQueue
from rocketmq_py.consumer._allocate import AllocateAveragely, sort_consumers, sort_queues
from rocketmq_py.testing import Cluster
from rocketmq_py.testing._report_process import ReportingProcess
from rocketmq_py.testing._traffic import SteadyProducer

#: Messages produced between two steps of the scaling (about 3 s at 150 msg/s).
TRAFFIC = 450

Queue = tuple[str, int]


@dataclass
class Member(ReportingProcess):
    """A consumer process: its owned queues, listener calls and consumed bodies."""

    owned: frozenset[Queue] = frozenset()
    #: ("assigned" | "revoked", queues), in call order.
    calls: list[tuple[str, frozenset[Queue]]] = field(default_factory=list)
    bodies: list[str] = field(default_factory=list)

    def on_report(self, report: dict[str, Any]) -> None:
        event = report["event"]
        if event == "owned":
            self.owned = frozenset((b, q) for b, q in report["queues"])
        elif event in ("assigned", "revoked"):
            self.calls.append((event, frozenset((b, q) for b, q in report["queues"])))
        elif event == "consumed":
            self.bodies.extend(body for _, body, _ in report["msgs"])

    def queues_from_calls(self) -> set[Queue]:
        """The owned queues the listener calls add up to; each call must make sense."""
        return self.queues_from(self.calls, self.client_id)

    @staticmethod
    def queues_from(calls: list[tuple[str, frozenset[Queue]]], who: str | None = None) -> set[Queue]:
        queues: set[Queue] = set()
        for kind, changed in calls:
            if kind == "assigned":
                assert not queues & changed, f"{who} assigned {changed} it owned"
                queues |= changed
            else:
                assert changed <= queues, f"{who} revoked {changed} it did not own"
                queues -= changed
        return queues

    def calls_since(self, index: int, kind: str) -> set[Queue]:
        return {q for k, changed in self.calls[index:] if k == kind for q in changed}


Spawn = Callable[[str, str], Awaitable[Member]]


@pytest.fixture
def spawn_member(spawn_process: Callable[..., Awaitable[Any]]) -> Spawn:
    """``await spawn_member(group, topic)``: a member with a rebalance listener (rebalance every 2 s)."""

    async def spawn(group: str, topic: str) -> Member:
        args = ["--group", group, "--topic", topic, "--listen-rebalance", "--consume-delay", "0.005"]
        member: Member = await spawn_process(Member, *args)
        return member

    return spawn


def expected_allocation(members: list[Member], topic: str, queues: frozenset[Queue]) -> dict[str, set[Queue]]:
    """What AVG gives each member (by client id) once every member sees the same group."""
    cids = sort_consumers(m.client_id for m in members if m.client_id is not None)
    mq_all = sort_queues(MessageQueue(topic, b, q) for b, q in queues)
    strategy = AllocateAveragely()
    return {
        cid: {(mq.broker_name, mq.queue_id) for mq in strategy.allocate("g", cid, mq_all, cids)}
        for cid in cids
    }


async def wait_settled(members: list[Member], topic: str, queues: frozenset[Queue]) -> None:
    """Every member owns its AVG share and its listener calls add up to it, for 3 s in a row.

    Owning each queue exactly once is not enough: while members see different member lists
    (one broker told of a newcomer before the other) a transient split can look settled.
    """
    stable_since: float | None = None
    with trio.fail_after(60):
        while any(m.client_id is None for m in members):  # noqa: ASYNC110 (reports, not an event)
            await trio.sleep(0.1)
        expected = expected_allocation(members, topic, queues)
        assert len(expected) == len(members)
        while True:
            settled = all(
                m.owned == expected[m.client_id] and m.queues_from_calls() == m.owned
                for m in members
                if m.client_id is not None
            )
            now = trio.current_time()
            if settled:
                stable_since = now if stable_since is None else stable_since
                if now - stable_since >= 3:
                    return
            else:
                stable_since = None
            await trio.sleep(0.2)


def check_step(member: Member, mark: int) -> None:
    """What ``member`` gained / gave up since call ``mark`` was announced by the listener."""
    before = Member.queues_from(member.calls[:mark])
    after = set(member.owned)
    assert member.queues_from_calls() == after, member.client_id
    assert after - before <= member.calls_since(mark, "assigned"), member.client_id
    assert before - after <= member.calls_since(mark, "revoked"), member.client_id


async def test_scaling_2_3_2_under_traffic_hands_queues_over_with_listener_calls(
    cluster: Cluster, create_topic: Callable[..., str], spawn_member: Spawn, nursery: trio.Nursery
) -> None:
    topic = create_topic(8)
    group = f"it-handoff-{topic}"
    queues = frozenset((b.name, q) for b in cluster.brokers for q in range(8))
    members = [await spawn_member(group, topic) for _ in range(2)]
    await wait_settled(members, topic, queues)
    producer = SteadyProducer(cluster.namesrv_addr, topic, rate=150.0, group="it-handoff-producer")
    nursery.start_soon(producer.run)
    await producer.wait_sent(TRAFFIC)

    # 2 -> 3: each old member announced what it gave up; the newcomer was assigned what it owns.
    marks = [len(m.calls) for m in members]
    newcomer = await spawn_member(group, topic)
    members.append(newcomer)
    await wait_settled(members, topic, queues)
    for member, mark in zip(members, [*marks, 0], strict=True):
        check_step(member, mark)
    assert newcomer.owned, "AVG gives the newcomer a share of 16 queues"
    await producer.wait_sent(TRAFFIC)

    # 3 -> 2: the leaver revokes all it had on close; the stayers announce what they take over.
    leaver, stayers = members[0], members[1:]
    had = leaver.owned
    marks = [len(m.calls) for m in stayers]
    await leaver.stop()
    assert leaver.calls[-1] == ("revoked", had)
    assert leaver.queues_from_calls() == set()
    await wait_settled(stayers, topic, queues)
    for member, mark in zip(stayers, marks, strict=True):
        check_step(member, mark)
    taken_over = set().union(
        *(m.calls_since(mark, "assigned") for m, mark in zip(stayers, marks, strict=True))
    )
    assert set(had) <= taken_over
    await producer.wait_sent(TRAFFIC)
    await producer.stop()

    with trio.move_on_after(60):
        while set(producer.sent) - {b for m in members for b in m.bodies}:  # noqa: ASYNC110
            await trio.sleep(0.2)
    lost = set(producer.sent) - {b for m in members for b in m.bodies}
    deliveries = sum(len(m.bodies) for m in members)
    duplicates = deliveries - len({b for m in members for b in m.bodies})
    print(
        f"\nhandoff 2 -> 3 -> 2: produced {len(producer.sent)}, delivered {deliveries} "
        f"({', '.join(str(len(m.bodies)) for m in members)} per member), duplicates {duplicates}, "
        f"lost {len(lost)}"
    )
    assert len(producer.sent) > 1000
    assert lost == set(), f"{len(lost)} lost, e.g. {sorted(lost)[:10]}"
    # Before any stayer stops (the other would take its queues over).
    for member in stayers:
        assert member.queues_from_calls() == set(member.owned), member.client_id
    for member in stayers:
        await member.stop()
