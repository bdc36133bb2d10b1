"""Graceful rebalance handoff on the real cluster: a group scaled 2 -> 3 -> 2 under steady traffic.

Members run in their own processes (``_consumer_proc.py --listen-rebalance``), which report the
rebalance listener's ``on_assigned`` / ``on_revoked`` calls besides their owned queues and what they
consumed. Nothing may be lost; the duplicate count is printed (run with ``-s``): with the handoff it
is usually 0, but it depends on when each member sees the member change, so it is not asserted.
What is asserted is that the listener calls account for every queue that changed hands.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import trio

from rocketmq_py import Message, Producer
from rocketmq_py.testing import Cluster
from rocketmq_py.testing._report_process import ReportingProcess

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
        queues: set[Queue] = set()
        for kind, changed in self.calls:
            if kind == "assigned":
                assert not queues & changed, f"{self.client_id} assigned {changed} it owned"
                queues |= changed
            else:
                assert changed <= queues, f"{self.client_id} revoked {changed} it did not own"
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


async def wait_settled(members: list[Member], queues: frozenset[Queue]) -> None:
    """Every queue owned by exactly one member, for 3 s in a row (60 s at most)."""
    stable_since: float | None = None
    with trio.fail_after(60):
        while True:
            owners = Counter(q for m in members for q in m.owned)
            settled = set(owners) == queues and all(n == 1 for n in owners.values())
            now = trio.current_time()
            if settled:
                stable_since = now if stable_since is None else stable_since
                if now - stable_since >= 3:
                    return
            else:
                stable_since = None
            await trio.sleep(0.2)


@dataclass
class SteadyProducer:
    """Sends ``m-<n>`` at about ``rate`` messages per second until stopped."""

    namesrv: str
    topic: str
    rate: float = 150.0
    sent: list[str] = field(default_factory=list)
    _stop: trio.Event = field(default_factory=trio.Event)
    _done: trio.Event = field(default_factory=trio.Event)

    async def run(self) -> None:
        try:
            async with Producer("it-handoff-producer", namesrv=self.namesrv) as producer:
                while not self._stop.is_set():
                    body = f"m-{len(self.sent)}"
                    await producer.send(Message(self.topic, body.encode()))
                    self.sent.append(body)
                    await trio.sleep(1 / self.rate)
        finally:
            self._done.set()

    async def stop(self) -> None:
        self._stop.set()
        await self._done.wait()


async def test_scaling_2_3_2_under_traffic_hands_queues_over_with_listener_calls(
    cluster: Cluster, create_topic: Callable[..., str], spawn_member: Spawn, nursery: trio.Nursery
) -> None:
    topic = create_topic(8)
    group = f"it-handoff-{topic}"
    queues = frozenset((b.name, q) for b in cluster.brokers for q in range(8))
    members = [await spawn_member(group, topic) for _ in range(2)]
    await wait_settled(members, queues)
    producer = SteadyProducer(cluster.namesrv_addr, topic)
    nursery.start_soon(producer.run)
    await trio.sleep(3)

    # 2 -> 3: what the old members gave up (net of what moved between them) the newcomer was given.
    marks = [len(m.calls) for m in members]
    newcomer = await spawn_member(group, topic)
    members.append(newcomer)
    await wait_settled(members, queues)
    revoked = members[0].calls_since(marks[0], "revoked") | members[1].calls_since(marks[1], "revoked")
    traded = members[0].calls_since(marks[0], "assigned") | members[1].calls_since(marks[1], "assigned")
    assert newcomer.calls_since(0, "assigned") == newcomer.owned
    assert revoked - traded == newcomer.owned
    await trio.sleep(3)

    # 3 -> 2: the leaver revokes all it had on close; the others are assigned that.
    leaver, stayers = members[0], members[1:]
    had = leaver.owned
    marks = [len(m.calls) for m in stayers]
    await leaver.stop()
    assert leaver.calls[-1] == ("revoked", had)
    assert leaver.queues_from_calls() == set()
    await wait_settled(stayers, queues)
    # (AVG gives contiguous blocks: some queues also move from one stayer to the other.)
    assigned = stayers[0].calls_since(marks[0], "assigned") | stayers[1].calls_since(marks[1], "assigned")
    traded = stayers[0].calls_since(marks[0], "revoked") | stayers[1].calls_since(marks[1], "revoked")
    assert traded <= assigned
    assert assigned - traded == had
    await trio.sleep(3)
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
    for member in stayers:
        assert member.queues_from_calls() == set(member.owned)
        await member.stop()
