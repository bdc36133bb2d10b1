"""The push consumer with the official Java tools: the benchmark Producer's messages, and one group
shared with the Java benchmark Consumer (both allocate by AVG), checked with mqadmin.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trio

from integration._java_consumer import start_java_consumer
from integration._shapes import stored_per_queue
from rocketmq_py import Message, MessageExt, Producer, PushConsumer
from rocketmq_py.testing import Cluster, resolve_bench
from rocketmq_py.testing._distribution import find_java, write_home_conf
from rocketmq_py.testing._processes import JvmProcess
from rocketmq_py.testing._tools import BENCH_MAIN_CLASSES

Queue = tuple[str, int]  # (broker name, queue id)


async def wait_until(predicate: Callable[[], bool]) -> None:
    """Poll ``predicate`` until it holds (use under ``trio.fail_after``)."""
    while not predicate():  # noqa: ASYNC110 - the listener fills the state, no event to wait on
        await trio.sleep(0.05)


async def test_messages_from_the_java_benchmark_producer(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    """Our push consumer reads what the Java benchmark Producer stored, with the Java client's ids,
    keys, tags and flags.

    The benchmark counts a send that failed (its 3-s timeout on a loaded machine, say) and moves on to
    the next message, so the topic may hold fewer than the 300 it sent: the consumer must deliver
    exactly what the brokers stored (CI: it waited for 300, and some were never stored).
    """
    topic = create_topic(8)
    java = await trio.to_thread.run_sync(
        lambda: cluster.java_bench(
            "producer", "-t", topic, "-w", "4", "-q", "300", "-k", "true", "-l", "3", timeout=120
        )
    )
    java.check()
    summary = next((ln for ln in java.output.splitlines() if "[Complete]" in ln), "no [Complete] line")
    stored = await stored_per_queue(cluster, topic)
    expected = sum(stored.values())
    assert expected > 0, (stored, summary)
    got: list[MessageExt] = []

    async def listener(msgs: list[MessageExt]) -> None:
        got.extend(msgs)

    consumer = PushConsumer(
        f"it-java-producer-{topic}",
        namesrv=cluster.namesrv_addr,
        listener=listener,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
    )
    consumer.subscribe(topic)
    async with consumer:
        with trio.move_on_after(60):
            await wait_until(lambda: len(got) >= expected)
        await trio.sleep(1)  # a quiet period: no duplicate trickles in
    names = {b.address: b.name for b in cluster.brokers}
    per_queue: dict[tuple[str, int], list[int]] = {}
    for m in got:
        per_queue.setdefault((names.get(m.store_host, m.store_host), m.queue_id), []).append(m.queue_offset)
    assert len(got) == expected, (
        f"{len(got)} delivered of {expected} stored; the Java tool: {summary}; stored per queue "
        f"{stored}; delivered per queue { {q: len(o) for q, o in sorted(per_queue.items())} }"
    )
    # Every stored message once, each queue's from offset 0 on.
    assert {q: sorted(o) for q, o in per_queue.items()} == {q: list(range(n)) for q, n in stored.items() if n}
    # UNIQ_KEY, set by the Java producer per message (a copy its client stored again on a retry
    # keeps it: the positions above say that no stored copy came twice).
    assert len({m.msg_id for m in got}) <= 300
    # 32 hex digits with an IPv4 client address in the id, 56 with an IPv6 one.
    assert all(m.msg_id == m.properties["UNIQ_KEY"] and len(m.msg_id) in (32, 56) for m in got)
    assert {m.topic for m in got} == {topic}
    # One random 128-byte alphanumeric body for the whole run; not compressed.
    bodies = {m.body for m in got}
    assert len(bodies) == 1
    (body,) = bodies
    assert len(body) == 128
    assert body.isalnum()
    assert all(m.sys_flag & 0x1 == 0 for m in got)
    assert {m.tags for m in got} <= {"tag0", "tag1", "tag2"}
    assert all(len(m.keys) == 1 and m.keys[0].isdigit() for m in got)  # the send second
    assert {m.store_host for m in got} == set(names)
    assert all(m.born_host.startswith("127.0.0.1:") for m in got)
    assert all(0 < m.born_timestamp <= m.store_timestamp for m in got)
    assert all(m.reconsume_times == 0 for m in got)
    assert len(per_queue) == 16  # round robin over every queue


# --- one group, two languages -------------------------------------------------------------------


@pytest.fixture
def java_consumer(cluster: Cluster, tmp_path: Path) -> Iterator[Callable[[str, str], JvmProcess]]:
    """``java_consumer(topic, group)`` starts the official benchmark Consumer (AVG) and waits for its
    start (blocking: call it in a thread); stopped after."""
    started: list[JvmProcess] = []

    def start(topic: str, group: str) -> JvmProcess:
        write_home_conf(tmp_path)
        argv = [
            find_java(),
            "-Xms64m",
            "-Xmx256m",
            "-Drocketmq.client.rebalance.waitInterval=2000",  # as our rebalance_interval below
            f"-Duser.home={tmp_path}",
            f"-Drocketmq.home.dir={tmp_path}",
            "-cp",
            resolve_bench(cluster.version).classpath,
            BENCH_MAIN_CLASSES["consumer"],
            *("-n", cluster.namesrv_addr, "-t", topic, "-g", group, "-p", "false", "-w", "4"),
        ]
        proc = JvmProcess(
            "java-consumer",
            argv,
            log_path=tmp_path / "java-consumer.log",
            env=dict(os.environ, ROCKETMQ_HOME=str(tmp_path)),
            cwd=tmp_path,
            die_with_parent=True,
        )
        started.append(proc)
        start_java_consumer(proc, tmp_path)
        return proc

    yield start
    for proc in started:
        proc.terminate(timeout=10)


def java_client_id(cluster: Cluster, group: str) -> str | None:
    out = cluster.mqadmin("consumerConnection", "-g", group).output
    ids = [line.split()[0] for line in out.splitlines() if " JAVA " in line]
    return ids[0] if len(ids) == 1 else None


def java_owned_queues(cluster: Cluster, group: str, client_id: str, topic: str) -> frozenset[Queue]:
    """The queues the Java client holds, from its running info (``mqadmin consumerStatus``)."""
    out = cluster.mqadmin("consumerStatus", "-g", group, "-i", client_id).check().output
    detail = out.split("#Consumer MQ Detail#", 1)[1].split("\n\n", 1)[0]
    owned = set()
    for line in detail.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[0] == topic:
            owned.add((fields[1], int(fields[2])))
    return frozenset(owned)


def consumer_progress(cluster: Cluster, group: str, topic: str) -> dict[Queue, tuple[int, int]]:
    """(broker offset, consumer offset) per queue of ``topic``, from ``mqadmin consumerProgress``."""
    out = cluster.mqadmin("consumerProgress", "-g", group).check().output
    table: dict[Queue, tuple[int, int]] = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[0] == topic:
            table[(fields[1], int(fields[2]))] = (int(fields[3]), int(fields[4]))
    return table


async def test_java_and_python_consumers_split_one_group(
    cluster: Cluster, create_topic: Callable[..., str], java_consumer: Callable[[str, str], JvmProcess]
) -> None:
    topic = create_topic(8)
    group = f"it-mixed-{topic}"
    all_queues = frozenset((b.name, q) for b in cluster.brokers for q in range(8))
    java = await trio.to_thread.run_sync(java_consumer, topic, group)
    got: list[MessageExt] = []

    async def listener(msgs: list[MessageExt]) -> None:
        got.extend(msgs)

    consumer = PushConsumer(
        group,
        namesrv=cluster.namesrv_addr,
        listener=listener,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        rebalance_interval=2,
    )
    consumer.subscribe(topic)
    async with consumer:

        def ours() -> frozenset[Queue]:
            return frozenset((q.broker_name, q.queue_id) for q in consumer.assignment() if q.topic == topic)

        # Both members hold 8 queues once each has seen the other (AVG of 16 over 2 ids).
        java_id: str | None = None
        theirs: frozenset[Queue] = frozenset()
        with trio.fail_after(60):
            while True:
                if len(ours()) == 8:
                    java_id = java_id or await trio.to_thread.run_sync(java_client_id, cluster, group)
                    if java_id is not None:
                        theirs = await trio.to_thread.run_sync(
                            java_owned_queues, cluster, group, java_id, topic
                        )
                        if len(theirs) == 8 and len(ours()) == 8:
                            break
                await trio.sleep(0.5)
        mine = ours()
        assert mine.isdisjoint(theirs), sorted(mine & theirs)
        assert mine | theirs == all_queues

        # Messages to every queue: ours get those of our queues, Java consumes the rest.
        sent: dict[Queue, list[bytes]] = {}
        async with Producer("it-mixed-producer", namesrv=cluster.namesrv_addr) as producer:
            for i in range(160):
                result = await producer.send(Message(topic, f"m-{i}".encode()))
                sent.setdefault((result.queue.broker_name, result.queue.queue_id), []).append(
                    f"m-{i}".encode()
                )
        expected = sorted(b for q in mine for b in sent.get(q, []))
        with trio.fail_after(30):
            await wait_until(lambda: len(got) >= len(expected))
        with trio.fail_after(60):
            while True:
                await trio.sleep(1)  # both sides persist their offsets every 5 s
                progress = await trio.to_thread.run_sync(consumer_progress, cluster, group, topic)
                behind = {q: p for q, p in progress.items() if p[0] != p[1]}
                if set(progress) == all_queues and not behind:
                    break
        assert ours() == mine
    assert sorted(m.body for m in got) == expected
    assert sum(len(v) for v in sent.values()) == 160
    assert java.running()
