"""Orderly push consumers on the real cluster: per sharding key, order survives a rebalance and a SIGKILL.

Members run in their own processes (``_consumer_proc.py --orderly``) and report each consumed
message with a wall-clock time; merging every member's reports by that time gives, per sharding
key, the order in which the group consumed the key's messages. A graceful rebalance (2 -> 3
members) must keep it exact: the old owner commits, then unlocks; the new owner locks, then
reads the offset (and no older offset of the old owner's may land after its last commit: its pulls
carry none and its periodic commits are answered, ``tests/consumer/test_push_orderly.py``). After a SIGKILL the new owner can only lock the queue once the broker's lock
expires (60 s) and replays from the last committed offset: a key may go back (redelivery), never
forward past a message it has not consumed.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest
import trio

from rocketmq_py import Message, Producer, select_by_hash
from rocketmq_py.testing import Cluster
from rocketmq_py.testing._report_process import ReportingProcess
from rocketmq_py.testing._traffic import wait_grown

KEYS = [f"key-{k}" for k in range(16)]
#: Messages produced between two steps of the test (20 steps of every key, about 3 s).
TRAFFIC = 20 * len(KEYS)
Queue = tuple[str, int]


@dataclass
class Member(ReportingProcess):
    """An orderly consumer process and what it reported."""

    owned: frozenset[Queue] = frozenset()
    #: (time, body) per consumed message.
    consumed: list[tuple[float, str]] = field(default_factory=list)

    def on_report(self, report: dict[str, Any]) -> None:
        event = report["event"]
        if event == "owned":
            self.owned = frozenset((b, q) for b, q in report["queues"])
        elif event == "consumed":
            self.consumed.extend((report["at"], body) for _, body, _ in report["msgs"])


Spawn = Callable[[str, str], Awaitable[Member]]


@pytest.fixture
def spawn_member(spawn_process: Callable[..., Awaitable[Any]]) -> Spawn:
    """``await spawn_member(group, topic)``: an orderly member (rebalance every 2 s)."""

    async def spawn(group: str, topic: str) -> Member:
        args = ["--group", group, "--topic", topic, "--orderly", "--consume-delay", "0.002"]
        member: Member = await spawn_process(Member, *args)
        return member

    return spawn


async def wait_settled(members: list[Member], queues: frozenset[Queue], timeout: float) -> None:  # noqa: ASYNC109
    """Every queue owned (locked) by exactly one member, for 3 s in a row."""
    stable_since: float | None = None
    with trio.fail_after(timeout):
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
class OrderedProducer:
    """Sends ``<key>:<step>`` for every key, step after step, each key to its queue by hash."""

    namesrv: str
    topic: str
    sent: list[str] = field(default_factory=list)
    _stop: trio.Event = field(default_factory=trio.Event)
    _done: trio.Event = field(default_factory=trio.Event)

    async def run(self) -> None:
        try:
            async with Producer("it-orderly-producer", namesrv=self.namesrv) as producer:
                step = 0
                while not self._stop.is_set():
                    for key in KEYS:
                        body = f"{key}:{step}"
                        await producer.send(
                            Message(self.topic, body.encode()), selector=select_by_hash, arg=key
                        )
                        self.sent.append(body)
                    step += 1
                    await trio.sleep(0.1)
        finally:
            self._done.set()

    async def stop(self) -> None:
        self._stop.set()
        await self._done.wait()


def steps_per_key(members: Iterable[Member], before: float | None = None) -> dict[str, list[int]]:
    """Per key, the steps in the order the group consumed them (merged by report time)."""
    merged = sorted((at, body) for m in members for at, body in m.consumed if before is None or at < before)
    steps: dict[str, list[int]] = defaultdict(list)
    for _, body in merged:
        key, step = body.split(":")
        steps[key].append(int(step))
    return steps


async def test_order_per_key_survives_a_rebalance_and_a_kill(
    cluster: Cluster, create_topic: Callable[..., str], spawn_member: Spawn, nursery: trio.Nursery
) -> None:
    topic = create_topic(4)
    group = f"it-orderly-{topic}"
    queues = frozenset((b.name, q) for b in cluster.brokers for q in range(4))
    members = [await spawn_member(group, topic) for _ in range(2)]
    await wait_settled(members, queues, timeout=60)
    producer = OrderedProducer(cluster.namesrv_addr, topic)
    nursery.start_soon(producer.run)
    await wait_grown(producer.sent, TRAFFIC)

    members.append(await spawn_member(group, topic))  # 2 -> 3: queues change hands gracefully
    await wait_settled(members, queues, timeout=60)
    await wait_grown(producer.sent, len(producer.sent) + TRAFFIC)

    victim = max(members[:2], key=lambda m: len(m.owned))
    killed_at = time.time()
    victim.process.kill()  # SIGKILL: no commit, no unlock; the broker's lock lapses after 60 s
    await victim.process.wait()
    survivors = [m for m in members if m is not victim]
    await wait_settled(survivors, queues, timeout=150)
    await wait_grown(producer.sent, len(producer.sent) + TRAFFIC)
    await producer.stop()

    with trio.move_on_after(60):
        while set(producer.sent) - {body for m in members for _, body in m.consumed}:  # noqa: ASYNC110
            await trio.sleep(0.2)
    lost = set(producer.sent) - {body for m in members for _, body in m.consumed}
    deliveries = sum(len(m.consumed) for m in members)
    print(
        f"\norderly 2 -> 3 -> SIGKILL: produced {len(producer.sent)}, delivered {deliveries}, "
        f"duplicates {deliveries - len(set(producer.sent))}, lost {len(lost)}"
    )
    assert len(producer.sent) > 500
    assert lost == set()

    # Until the kill: every key consumed exactly in order, once, across the graceful rebalance.
    before = steps_per_key(members, before=killed_at)
    assert set(before) == set(KEYS)
    for key, steps in before.items():
        assert steps == list(range(len(steps))), (key, steps)
    # Overall: a key may replay what the victim consumed but had not committed, never skip ahead.
    last_step = max(int(body.split(":")[1]) for body in producer.sent)
    for key, steps in steps_per_key(members).items():
        assert steps[0] == 0, key
        jumps = [(a, b) for a, b in itertools.pairwise(steps) if b > a + 1]
        assert jumps == [], (key, jumps)
        assert max(steps) >= last_step - 1, key
    for member in survivors:
        await member.stop()
