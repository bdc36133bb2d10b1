"""The broker's consumer commands on our PushConsumer, and ``group inspect`` / ``consume``, on the real cluster.

- ``mqadmin consumerStatus`` / ``consumerProgress`` read our consumer's running info
  (GET_CONSUMER_RUNNING_INFO, forwarded by the broker);
- ``mqadmin resetOffsetByTime`` makes a running consumer of ours consume again from that time: on
  the shared 5.3.3 cluster the broker resets server-side (``useServerSideResetOffset=true``, the
  5.x default) and the consumer's next pulls answer from the new offsets; on a one-broker cluster of
  this module started with ``useServerSideResetOffset=false`` the broker sends the consumer
  RESET_CONSUMER_CLIENT_OFFSET (what 4.x brokers do), which our handler turns into
  ``PushConsumer.reset_offsets``;
- ``mqadmin queryMsgById -g -d`` makes it consume one message directly (CONSUME_MESSAGE_DIRECTLY);
- ``rocketmq-py group inspect`` on a healthy group, on one whose members use two strategies, and on
  one shared with the Java benchmark Consumer;
- ``rocketmq-py consume --from-beginning --count N`` prints the N messages produced, and Ctrl-C
  (SIGINT to a ``rocketmq-py consume`` process) stops it with its offsets committed.

mqadmin exits 0 even when it fails: its output is what is checked.

Through a Proxy (``make proxy``) the consumers and ``consume`` go through it; the mqadmin commands
that reach a consumer through the brokers, and ``group inspect``, need a direct route
(``direct_route``: the Proxy keeps its clients' heartbeats, and serves no GET_BROKER_CLUSTER_INFO).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trio

from integration._java_consumer import start_java_consumer
from rocketmq_py import Message, MessageExt, Producer, PushConsumer
from rocketmq_py.cli import EXIT_INTERRUPTED, EXIT_OK, main
from rocketmq_py.cli._group import collect_group
from rocketmq_py.cli._inspect import GroupReport
from rocketmq_py.consumer._broker_requests import CommandCallbacks, command_handlers
from rocketmq_py.errors import ClusterError
from rocketmq_py.lowlevel import ConnectionPool, RemotingApi, open_admin_calls
from rocketmq_py.protocol import (
    MessageQueue,
    RemotingCommand,
    RequestCode,
    ResetOffsetBody,
    ResetOffsetRequestHeader,
    decode_body,
    from_ext_fields,
)
from rocketmq_py.testing import Cluster, LocalCluster, ToolResult, resolve_bench, topic_route
from rocketmq_py.testing._distribution import find_java, write_home_conf
from rocketmq_py.testing._processes import JvmProcess
from rocketmq_py.testing._tools import BENCH_MAIN_CLASSES


@pytest.fixture(scope="module")
def client_reset_cluster(cluster: Cluster) -> Iterator[Cluster]:
    """A one-broker cluster whose broker sends RESET_CONSUMER_CLIENT_OFFSET to the consumers."""
    try:
        own = LocalCluster(1, broker_config={"useServerSideResetOffset": "false"}).start()
    except ClusterError as exc:
        pytest.fail(f"the one-broker cluster for client-side resets did not start:\n{exc}", pytrace=False)
    with own:
        yield own


async def mqadmin(cluster: Cluster, *args: str) -> ToolResult:
    return await trio.to_thread.run_sync(lambda: cluster.mqadmin(*args))


async def cli(*argv: str) -> int:
    return await trio.to_thread.run_sync(main, list(argv))


async def wait_until(predicate: Callable[[], bool]) -> None:
    """Poll ``predicate`` until it holds (use under ``trio.fail_after``)."""
    while not predicate():  # noqa: ASYNC110 - listeners fill the state, no event to wait on
        await trio.sleep(0.1)


async def committed(pc: PushConsumer, topic: str) -> int:
    """The group's offsets of ``topic`` as the brokers store them, summed over the topic's queues."""
    routes, total = pc._client_instance.routes, 0
    for mq in await routes.subscribe_queues(topic):
        address = await routes.require_master(topic, mq.broker_name)
        total += max(
            0,
            await pc._client_instance.api.query_consumer_offset(
                address, pc.group, topic, mq.queue_id, mq.broker_name
            ),
        )
    return total


async def wait_committed(pc: PushConsumer, topic: str, total: int) -> None:
    """Poll until the brokers store ``total`` as the group's offsets of ``topic`` (30 s at most)."""
    with trio.fail_after(30):
        while await committed(pc, topic) != total:  # noqa: ASYNC110 - broker state, no event to wait on
            await trio.sleep(0.2)


async def stored_progress(cluster: Cluster, group: str, topic: str) -> list[tuple[int, int]]:
    """``(max offset, the group's stored offset)`` of each queue of ``topic``, asked of its brokers
    directly (as mqadmin consumerProgress shows them, which needs the group's retry topic: a
    consumer behind a Proxy has none, since the Proxy keeps its heartbeats)."""
    route = await trio.to_thread.run_sync(topic_route, cluster.admin_namesrv_addr, topic)
    assert route is not None
    rows = []
    async with ConnectionPool() as pool:
        api = RemotingApi(pool, timeout=10)
        for queues in sorted(route.queue_datas, key=lambda q: q.broker_name):
            address = cluster.broker_address(queues.broker_name)
            for queue_id in range(queues.read_queue_nums):
                rows.append(
                    (
                        await api.get_max_offset(address, topic, queue_id, queues.broker_name),
                        await api.query_consumer_offset(address, group, topic, queue_id, queues.broker_name),
                    )
                )
    return rows


async def wait_report(cluster: Cluster, group: str, topic: str, done: Callable[[GroupReport], bool]) -> None:
    """Poll ``group inspect``'s data until ``done(report)`` (60 s at most): every member's running
    info reflects the rebalance the test waited for."""
    with trio.fail_after(60):
        while True:
            async with open_admin_calls([cluster.namesrv_addr], timeout=5) as admin:
                if done(await collect_group(admin, group, topic)):
                    return
            await trio.sleep(0.5)


async def produce(cluster: Cluster, topic: str, bodies: list[str], **kw: str) -> None:
    async with Producer("it-group-cli-producer", namesrv=cluster.namesrv_addr) as producer:
        for body in bodies:
            await producer.send(Message(topic, body.encode(), **kw))  # type: ignore[arg-type]


def consumer(cluster: Cluster, group: str, topic: str, got: list[MessageExt], **kw: object) -> PushConsumer:
    async def listener(msgs: list[MessageExt]) -> None:
        got.extend(msgs)

    pc = PushConsumer(
        group,
        namesrv=cluster.namesrv_addr,
        listener=listener,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        rebalance_interval=2,
        persist_interval=1,
        **kw,  # type: ignore[arg-type]
    )
    pc.subscribe(topic)
    return pc


@pytest.mark.direct_route(
    "a 5.x Proxy in cluster mode keeps its clients' heartbeats: the brokers do not know a consumer behind it, so mqadmin cannot reach it through them"
)
async def test_mqadmin_consumer_status_and_progress_show_our_consumer(
    cluster: Cluster, create_topic: Callable[..., str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # consumerStatus writes each member's running info under the cwd
    topic = create_topic(4)
    group = f"it-status-{topic}"
    got: list[MessageExt] = []
    async with consumer(cluster, group, topic, got) as pc:
        await produce(cluster, topic, [f"s{i}" for i in range(16)])
        with trio.fail_after(30):
            await wait_until(lambda: len(got) >= 16)
        await wait_committed(pc, topic, 16)  # persisted (every second here)
        status = (await mqadmin(cluster, "consumerStatus", "-g", group, "-i", pc.client_id)).output
        listing = (await mqadmin(cluster, "consumerStatus", "-g", group)).output
        progress = (await mqadmin(cluster, "consumerProgress", "-g", group, "-s", "true")).output
        owned = sorted(pc.assignment())
        client_id = pc.client_id

    # consumerStatus -i: our properties, subscriptions and one ProcessQueueInfo per owned queue.
    assert "PROP_CONSUME_TYPE                       : CONSUME_PASSIVELY" in status
    assert f"consumerGroup                           : {group}" in status
    subs = status.split("#Consumer Subscription#", 1)[1].split("\n\n", 1)[0]
    assert f"Topic: {topic} " in subs
    assert f"Topic: %RETRY%{group} " in subs
    detail = status.split("#Consumer MQ Detail#", 1)[1].split("\n\n", 1)[0]
    rows = {
        (f[0], f[1], int(f[2])): line
        for line in detail.splitlines()
        if len(f := line.split()) > 3 and f[2].isdigit()
    }
    assert {(mq.topic, mq.broker_name, mq.queue_id) for mq in owned} == set(rows)
    for mq in owned:
        if mq.topic == topic:
            assert "droped=false" in rows[(mq.topic, mq.broker_name, mq.queue_id)]
    offsets = status.split("#Consumer Offset#", 1)[1].split("\n\n", 1)[0]
    committed = {
        (f[1], int(f[2])): int(f[3]) for line in offsets.splitlines() if (f := line.split()) and f[0] == topic
    }
    assert sum(committed.values()) == 16
    assert "#Consumer RT&TPS#" in status
    # consumerStatus without -i: every member's running info was fetched and analysed.
    assert client_id in listing
    assert "Same subscription in the same group of consumer" in listing
    assert "Rebalance OK" in listing
    # consumerProgress: per queue the consumer offset equals the broker offset, and the client
    # column (from our running info's mqTable) names us.
    table = [line.split() for line in progress.splitlines() if line.startswith(topic)]
    assert len(table) == 8
    for fields in table:
        assert fields[3] == fields[4]  # broker offset == consumer offset
        assert client_id.split("@")[0] in " ".join(fields[5:])
    assert sum(int(f[3]) for f in table) == 16


async def test_reset_offset_by_time_makes_a_running_consumer_consume_again(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(2)
    group = f"it-reset-{topic}"
    got: list[MessageExt] = []
    async with consumer(cluster, group, topic, got) as pc:
        await produce(cluster, topic, [f"old-{i}" for i in range(6)])
        with trio.fail_after(30):
            await wait_until(lambda: len(got) >= 6)
        await trio.sleep(1.5)  # a clear gap between the two batches' store times (not a wait)
        since = int(time.time() * 1000)
        await trio.sleep(0.5)
        await produce(cluster, topic, [f"new-{i}" for i in range(8)])
        with trio.fail_after(30):
            await wait_until(lambda: len(got) >= 14)
        await wait_committed(pc, topic, 14)
        before = len(got)
        reset = await mqadmin(cluster, "resetOffsetByTime", "-g", group, "-t", topic, "-s", str(since))
        with trio.fail_after(60):
            await wait_until(lambda: len(got) >= before + 8)
        await trio.sleep(2)  # a quiet period: no old message comes again (absence cannot be polled)
    assert "rollback consumer offset by specified group" in reset.output or topic in reset.output, (
        reset.output
    )
    again = sorted(m.body.decode() for m in got[before:])
    assert again == sorted(f"new-{i}" for i in range(8))  # the new batch again, none of the old one


async def test_reset_offset_by_time_sent_to_the_client_resets_a_running_consumer(
    client_reset_cluster: Cluster,
) -> None:
    cluster = client_reset_cluster
    topic = f"it-client-reset-{time.time_ns() % 10**12}"
    await trio.to_thread.run_sync(lambda: cluster.create_topic(topic, 2))
    group = f"it-client-reset-{topic}"
    got: list[MessageExt] = []
    received: list[RemotingCommand] = []
    async with consumer(cluster, group, topic, got) as pc:
        # The handler the consumer installed, through the same adapter (its private entry points).
        target = CommandCallbacks(
            pc.group, pc._request_rebalance, pc._running_info, pc._reset_offsets, pc._consume_directly
        )
        handler = command_handlers(target)[RequestCode.RESET_CONSUMER_CLIENT_OFFSET]

        async def recording(request: RemotingCommand) -> RemotingCommand | None:
            received.append(request)
            return await handler(request)

        pc._client_instance.register_handler(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, recording)
        await produce(cluster, topic, [f"old-{i}" for i in range(6)])
        with trio.fail_after(30):
            await wait_until(lambda: len(got) >= 6)
        await trio.sleep(1.5)  # a clear gap between the two batches' store times (not a wait)
        since = int(time.time() * 1000)
        await trio.sleep(0.5)
        await produce(cluster, topic, [f"new-{i}" for i in range(8)])
        with trio.fail_after(30):
            await wait_until(lambda: len(got) >= 14)
        await wait_committed(pc, topic, 14)
        before = len(got)
        reset = await mqadmin(cluster, "resetOffsetByTime", "-g", group, "-t", topic, "-s", str(since))
        with trio.fail_after(60):
            await wait_until(lambda: len(got) >= before + 8)
        await trio.sleep(2)  # a quiet period: no old message comes again (absence cannot be polled)
    assert received, reset.output
    request = received[0]
    assert request.is_oneway
    header = from_ext_fields(ResetOffsetRequestHeader, request.ext_fields)
    assert (header.topic, header.group, header.timestamp) == (topic, group, since)
    table = decode_body(ResetOffsetBody, request.body).offset_table
    assert set(table) == {MessageQueue(topic, "broker-a", q) for q in (0, 1)}
    assert sum(table.values()) == 6  # the new batch starts after the 6 old messages
    again = sorted(m.body.decode() for m in got[before:])
    assert again == sorted(f"new-{i}" for i in range(8))


@pytest.mark.direct_route(
    "a 5.x Proxy in cluster mode keeps its clients' heartbeats: the brokers do not know a consumer behind it, so mqadmin cannot reach it through them"
)
async def test_mqadmin_consume_message_directly(cluster: Cluster, create_topic: Callable[..., str]) -> None:
    topic = create_topic(1)
    group = f"it-direct-{topic}"
    got: list[MessageExt] = []
    async with consumer(cluster, group, topic, got) as pc:
        await produce(cluster, topic, ["direct-0"])
        with trio.fail_after(30):
            await wait_until(lambda: len(got) >= 1)
        offset_msg_id = got[0].offset_msg_id
        result = await mqadmin(
            cluster, "queryMsgById", "-t", topic, "-i", offset_msg_id, "-g", group, "-d", pc.client_id
        )
        with trio.fail_after(10):
            await wait_until(lambda: len(got) >= 2)
    assert (
        "ConsumeMessageDirectlyResult [order=false, autoCommit=true, consumeResult=CR_SUCCESS"
        in result.output
    ), result.output
    assert [m.body for m in got[:2]] == [b"direct-0", b"direct-0"]


@pytest.mark.direct_route(
    "group inspect needs the NameServer (GET_BROKER_CLUSTER_INFO) and the brokers' members; through a Proxy it fails with UnsupportedByProxy (test_proxy.py)"
)
async def test_group_inspect_healthy_group(
    cluster: Cluster, create_topic: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    topic = create_topic(4)
    group = f"it-inspect-ok-{topic}"
    got: list[MessageExt] = []
    async with consumer(cluster, group, topic, got) as one, consumer(cluster, group, topic, got) as two:
        with trio.fail_after(60):
            await wait_until(
                lambda: (
                    len([q for q in [*one.assignment(), *two.assignment()] if q.topic == topic]) == 8
                    and len(one.assignment()) == len(two.assignment())
                )
            )
        await wait_report(cluster, group, topic, lambda r: r.healthy and len(r.consumer_ids) == 2)
        code = await cli("-n", cluster.namesrv_addr, "group", "inspect", group, topic, "--json")
        report = json.loads(capsys.readouterr().out)
        code_text = await cli("-n", cluster.namesrv_addr, "group", "inspect", group)
        text = capsys.readouterr().out
        ids = sorted([one.client_id, two.client_id])
    assert code == code_text == EXIT_OK
    assert report["healthy"] is True, report["flags"]
    assert sorted(report["consumerIds"]) == ids
    assert report["strategy"] == "AVG"
    (t,) = report["topics"]
    assert len(t["queues"]) == 8
    assert all(q["owners"] == [q["expectedOwner"]] for q in t["queues"])
    assert text.splitlines()[-1] == "no problems found"
    assert f"topic %RETRY%{group}:" in text  # every subscribed topic without TOPIC


@pytest.mark.direct_route(
    "group inspect needs the NameServer (GET_BROKER_CLUSTER_INFO) and the brokers' members; through a Proxy it fails with UnsupportedByProxy (test_proxy.py)"
)
async def test_group_inspect_flags_two_strategies_in_one_group(
    cluster: Cluster, create_topic: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    topic = create_topic(4)
    group = f"it-inspect-bad-{topic}"
    got: list[MessageExt] = []
    avg = consumer(cluster, group, topic, got, strategy="AVG")
    circle = consumer(cluster, group, topic, got, strategy="AVG_BY_CIRCLE")
    async with avg, circle:
        # Both have seen both members: each holds 4 of the 8 queues, by its own strategy.
        with trio.fail_after(60):
            await wait_until(
                lambda: (
                    len([q for q in avg.assignment() if q.topic == topic]) == 4
                    and len([q for q in circle.assignment() if q.topic == topic]) == 4
                )
            )
        flagged = {"shared-queue", "unowned-queue", "strategy-differs", "allocation-differs"}
        await wait_report(cluster, group, topic, lambda r: flagged <= {f.kind for f in r.flags})
        code = await cli("-n", cluster.namesrv_addr, "group", "inspect", group, topic, "--json")
        report = json.loads(capsys.readouterr().out)
        assert await cli("-n", cluster.namesrv_addr, "group", "inspect", group, topic) == EXIT_OK
        text = capsys.readouterr().out
        mine = {(q.broker_name, q.queue_id) for q in avg.assignment() if q.topic == topic}
        theirs = {(q.broker_name, q.queue_id) for q in circle.assignment() if q.topic == topic}
        expected_strategies = {avg.client_id: "AVG", circle.client_id: "AVG_BY_CIRCLE"}
    assert code == EXIT_OK
    assert report["healthy"] is False
    kinds = {f["kind"] for f in report["flags"]}
    assert {"shared-queue", "unowned-queue", "strategy-differs", "allocation-differs"} <= kinds
    shared = {
        (q["brokerName"], q["queueId"])
        for f in report["flags"]
        if f["kind"] == "shared-queue"
        for q in f["queues"]
    }
    assert shared == mine & theirs
    assert shared  # AVG and AVG_BY_CIRCLE over 8 queues and 2 members always overlap
    unowned = {
        (q["brokerName"], q["queueId"])
        for f in report["flags"]
        if f["kind"] == "unowned-queue"
        for q in f["queues"]
    }
    assert unowned == {(b.name, i) for b in cluster.brokers for i in range(4)} - mine - theirs
    strategies = {m["clientId"]: m["strategy"] for m in report["members"]}
    assert strategies == expected_strategies
    assert "[strategy-differs]" in text
    assert "[shared-queue]" in text


async def test_consume_from_beginning_prints_the_produced_messages(
    cluster: Cluster, create_topic: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    topic = create_topic(2)
    group = f"it-consume-{topic}"
    bodies = [f"line-{i}" for i in range(7)]
    await produce(cluster, topic, bodies, tags="TagC")
    code = await cli(
        "-n", cluster.namesrv_addr, "consume", topic, "-g", group, "--from-beginning", "--count", "7"
    )
    out, err = capsys.readouterr()
    assert code == EXIT_OK
    lines = out.splitlines()
    assert len(lines) == 7
    assert sorted(line.split("body=", 1)[1] for line in lines) == bodies
    assert all(" tags=TagC " in line for line in lines)
    assert {line.split()[0].split(":")[0] for line in lines} <= {b.name for b in cluster.brokers}
    assert err.startswith(f"consumed 7 message(s) from {topic} as {group}")
    # The offsets were persisted: nothing is left to consume.
    progress = await stored_progress(cluster, group, topic)
    assert sum(stored for _, stored in progress) == 7
    assert all(stored == end for end, stored in progress), progress


def test_consume_stops_on_ctrl_c_with_offsets_persisted(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(2)
    group = f"it-consume-int-{topic}"
    trio.run(produce, cluster, topic, [f"int-{i}" for i in range(5)])
    argv = [
        sys.executable,
        "-m",
        "rocketmq_py.cli",
        "-n",
        cluster.namesrv_addr,
        "consume",
        topic,
        "-g",
        group,
    ]
    with subprocess.Popen(
        [*argv, "--from-beginning"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        watchdog = threading.Timer(90, proc.kill)  # a missing line must not hang the run
        watchdog.start()
        try:
            assert proc.stdout is not None
            lines = [proc.stdout.readline() for _ in range(5)]
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            watchdog.cancel()
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == EXIT_INTERRUPTED
    assert out == ""
    assert sorted(line.rstrip("\n").split("body=", 1)[1] for line in lines) == [f"int-{i}" for i in range(5)]
    assert f"consumed 5 message(s) from {topic} as {group}; offsets persisted" in err
    assert "Traceback" not in err
    progress = trio.run(stored_progress, cluster, group, topic)
    assert sum(max(stored, 0) for _, stored in progress) == 5, progress  # committed on the way out


@pytest.mark.direct_route(
    "group inspect needs the NameServer (GET_BROKER_CLUSTER_INFO) and the brokers' members; through a Proxy it fails with UnsupportedByProxy (test_proxy.py)"
)
async def test_group_inspect_reads_a_java_member(
    cluster: Cluster, create_topic: Callable[..., str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = create_topic(4)
    group = f"it-inspect-java-{topic}"
    write_home_conf(tmp_path)
    argv = [
        find_java(),
        *("-Xms64m", "-Xmx256m", "-Drocketmq.client.rebalance.waitInterval=2000"),
        *(f"-Duser.home={tmp_path}", f"-Drocketmq.home.dir={tmp_path}"),
        *("-cp", resolve_bench(cluster.version).classpath, BENCH_MAIN_CLASSES["consumer"]),
        *("-n", cluster.namesrv_addr, "-t", topic, "-g", group, "-p", "false", "-w", "2"),
    ]
    java = JvmProcess(
        "java-consumer",
        argv,
        log_path=tmp_path / "java-consumer.log",
        env=dict(os.environ, ROCKETMQ_HOME=str(tmp_path)),
        cwd=tmp_path,
        die_with_parent=True,
    )
    try:
        await trio.to_thread.run_sync(start_java_consumer, java, tmp_path)
        got: list[MessageExt] = []
        async with consumer(cluster, group, topic, got) as ours:
            ours_id = ours.client_id
            # Both members use AVG: once each has seen the other, the report is clean.
            report = None
            with trio.fail_after(60):
                while report is None or not report.healthy or len(report.consumer_ids) != 2:
                    await trio.sleep(1)
                    async with open_admin_calls([cluster.namesrv_addr], timeout=5) as admin:
                        report = await collect_group(admin, group, topic)
            assert await cli("-n", cluster.namesrv_addr, "group", "inspect", group, topic) == EXIT_OK
            text = capsys.readouterr().out
    finally:
        java.terminate(timeout=10)
    members = {m.client_id: m for m in report.members}
    (java_id,) = set(members) - {ours_id}
    assert members[java_id].strategy == members[ours_id].strategy == "AVG"
    assert len(members[java_id].owned & members[ours_id].owned) == 0
    assert {mq for m in members.values() for mq in m.owned if mq.topic == topic} == set(
        report.topics[0].queues
    )
    assert text.splitlines()[-1] == "no problems found"
    (row,) = [line.split() for line in text.splitlines() if line.startswith(java_id)]
    assert (row[1], row[3]) == ("AVG", "yes")
