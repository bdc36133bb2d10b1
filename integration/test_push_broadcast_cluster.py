"""Broadcasting push consumers on the real cluster: everyone gets everything, a restart resumes from its file.

Each member runs in its own process (``_consumer_proc.py --message-model BROADCASTING``) with a
stable ``--instance-name``, so its offset file (one per client id and group, under the test's
temporary directory) is found again after a restart.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio

from rocketmq_py import Message, Producer
from rocketmq_py.testing import Cluster
from rocketmq_py.testing._report_process import ReportingProcess


@dataclass
class Member(ReportingProcess):
    """A consumer process and the bodies it consumed."""

    owned: int = 0
    bodies: list[str] = field(default_factory=list)

    def on_report(self, report: dict[str, Any]) -> None:
        if report["event"] == "owned":
            self.owned = len(report["queues"])
        elif report["event"] == "consumed":
            self.bodies.extend(body for _, body, _ in report["msgs"])


Spawn = Callable[[str, str, str], Awaitable[Member]]


@pytest.fixture
def spawn_member(spawn_process: Callable[..., Awaitable[Any]], tmp_path: Path) -> Spawn:
    """``await spawn_member(group, topic, instance_name)``: a broadcasting member, offsets under tmp_path."""

    async def spawn(group: str, topic: str, instance_name: str) -> Member:
        args = ["--group", group, "--topic", topic, "--message-model", "BROADCASTING"]
        args += ["--instance-name", instance_name, "--offsets-dir", str(tmp_path)]
        args += ["--consume-from-where", "CONSUME_FROM_LAST_OFFSET"]
        member: Member = await spawn_process(Member, *args)
        return member

    return spawn


async def wait_until(predicate: Callable[[], bool], timeout: float = 40.0) -> None:  # noqa: ASYNC109
    with trio.fail_after(timeout):
        while not predicate():  # noqa: ASYNC110 - the report readers fill the state
            await trio.sleep(0.1)


async def produce(cluster: Cluster, topic: str, bodies: list[str]) -> None:
    async with Producer("it-broadcast-producer", namesrv=cluster.namesrv_addr) as producer:
        for body in bodies:
            await producer.send(Message(topic, body.encode()))


async def test_three_members_all_get_every_message_and_a_restarted_one_resumes_from_its_file(
    cluster: Cluster, create_topic: Callable[..., str], spawn_member: Spawn, tmp_path: Path
) -> None:
    topic = create_topic(4)
    group = f"it-bc-{topic}"
    members = [await spawn_member(group, topic, f"bc-{n}") for n in range(3)]
    # Broadcasting: each member owns all 8 queues of the topic (4 per broker), no allocation.
    await wait_until(lambda: all(m.owned == 8 for m in members))
    assert len({m.client_id for m in members}) == 3

    first = [f"first-{i}" for i in range(60)]
    await produce(cluster, topic, first)
    await wait_until(lambda: all(len(m.bodies) >= len(first) for m in members))
    await trio.sleep(2)  # a quiet period: no message comes twice (absence cannot be polled)
    for member in members:
        assert sorted(member.bodies) == sorted(first)  # every message, once each

    # One member goes down; what is produced meanwhile it gets after its restart, and only that.
    leaver = members[2]
    await leaver.stop()
    second = [f"second-{i}" for i in range(40)]
    await produce(cluster, topic, second)
    await wait_until(lambda: all(len(m.bodies) >= len(first) + len(second) for m in members[:2]))
    back = await spawn_member(group, topic, "bc-2")
    await wait_until(lambda: len(back.bodies) >= len(second))
    await trio.sleep(3)  # a quiet period: nothing from before the restart comes again
    assert back.client_id == leaver.client_id
    assert sorted(back.bodies) == sorted(second)
    # The offsets are in the members' files: one per client id (and group).
    assert len(list(tmp_path.rglob("offsets.json"))) == 3  # noqa: ASYNC240 - a test's look at a temp dir
    for member in [*members[:2], back]:
        await member.stop()
