"""``rocketmq_py.admin.Admin`` on the real cluster, each answer checked against mqadmin's on the
same cluster where mqadmin has the command (topicStatus, consumerProgress and with ``-s true`` its
queue owners, resetOffsetByTime, queryMsgById and with ``-g -d`` its direct consumption), and
against what the clients did otherwise."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

import pytest
import trio

from rocketmq_py import ConsumeResult, MessageExt, Producer, PushConsumer
from rocketmq_py.admin import Admin
from rocketmq_py.errors import BrokerError, ClientError, RouteNotFound
from rocketmq_py.protocol import Message
from rocketmq_py.sync import Admin as SyncAdmin
from rocketmq_py.testing import Cluster

pytestmark = pytest.mark.direct_route("the admin calls go to the NameServer and the brokers (docs/proxy.md)")

COUNT = 24


async def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 60) -> None:  # noqa: ASYNC109
    with trio.move_on_after(timeout):
        while not predicate():  # noqa: ASYNC110 - the listener's state
            await trio.sleep(0.1)
        return
    pytest.fail(f"{what}: not within {timeout:.0f} s")


_TOPIC_STATUS_ROW = re.compile(r"^(broker-\S+)\s+(\d+)\s+(\d+)\s+(\d+)", re.MULTILINE)
_PROGRESS_ROW = re.compile(r"^(\S+)\s+(broker-\S+)\s+(\d+)\s+(\d+)\s+(\d+)", re.MULTILINE)
#: A row of ``resetOffsetByTime`` (a group online): broker, queue, the offset it was reset to.
_RESET_ROW = re.compile(r"^(broker-\S+)\s+(\d+)\s+(\d+)\s*$", re.MULTILINE)
#: A row of ``consumerProgress -s true``: topic, broker, queue, offsets, then the owner's client IP.
_OWNER_ROW = re.compile(r"^(\S+)\s+(broker-\S+)\s+(\d+)\s+\d+\s+\d+\s+(\S+)", re.MULTILINE)


async def test_admin_answers_as_mqadmin_does(cluster: Cluster) -> None:
    topic = f"it-admin-{uuid.uuid4().hex[:10]}"
    group = f"it-admin-g-{uuid.uuid4().hex[:8]}"
    options = cluster.client_options()
    async with Admin(**options) as admin:
        # The cluster and a new topic.
        brokers = await admin.brokers()
        assert {(b.broker_name, b.address) for b in brokers if b.broker_id == 0} == {
            (b.name, b.address) for b in cluster.brokers
        }
        route = await admin.create_topic(topic, 4)
        assert route is not None
        assert {q.broker_name: q.write_queue_nums for q in route.queue_datas} == {
            b.name: 4 for b in cluster.brokers
        }
        assert topic in await admin.topics()

        # Messages with keys, then the queues' offsets: ours and mqadmin topicStatus.
        async with Producer(f"it-admin-p-{uuid.uuid4().hex[:8]}", **options) as producer:
            sent = [
                await producer.send(Message(topic, f"m-{n}".encode(), keys=[f"k-{n}"])) for n in range(COUNT)
            ]
        # Counted once the broker's dispatch thread has put them in their consume queues, moments
        # after the sends were answered (ReputMessageService).
        with trio.fail_after(15):
            stats = await admin.topic_stats(topic)
            while sum(q.messages for q in stats) < COUNT:
                await trio.sleep(0.05)
                stats = await admin.topic_stats(topic)
        assert len(stats) == 4 * len(cluster.brokers)
        assert sum(q.messages for q in stats) == COUNT
        status = await trio.to_thread.run_sync(
            lambda: cluster.mqadmin("topicStatus", "-t", topic).check().output
        )
        theirs = {(b, int(q)): (int(lo), int(hi)) for b, q, lo, hi in _TOPIC_STATUS_ROW.findall(status)}
        assert {
            (q.queue.broker_name, q.queue.queue_id): (q.min_offset, q.max_offset) for q in stats
        } == theirs

        # A group that consumed everything: its progress, members, and mqadmin consumerProgress.
        got: list[MessageExt] = []

        async def listener(msgs: list[MessageExt]) -> None:
            got.extend(msgs)

        consumer = PushConsumer(
            group,
            listener=listener,
            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
            persist_interval=1,
            **options,
        )
        consumer.subscribe(topic)
        async with consumer:
            await wait_for(lambda: len(got) >= COUNT, "the messages consumed")
            progress = await admin.group_progress(group, topic)
            with trio.move_on_after(30):
                while progress.lag:  # committed every second
                    await trio.sleep(0.5)
                    progress = await admin.group_progress(group, topic)
            assert progress.lag == 0, progress
            assert {q.queue for q in progress.queues} == {q.queue for q in stats}
            assert all(q.consumer_offset == q.broker_offset for q in progress.queues)
            members = await admin.group_members(group)
            assert [m.client_id for m in members.members] == [consumer.client_id]
            assert members.members[0].language == "PYTHON"
            assert topic in members.subscriptions
            assert members.message_model == "CLUSTERING"
            mq_progress = await trio.to_thread.run_sync(
                lambda: cluster.mqadmin("consumerProgress", "-g", group).check().output
            )
            theirs_progress = {
                (b, int(q)): (int(bo), int(co))
                for t, b, q, bo, co in _PROGRESS_ROW.findall(mq_progress)
                if t == topic
            }
            assert theirs_progress == {
                (q.queue.broker_name, q.queue.queue_id): (q.broker_offset, q.consumer_offset)
                for q in progress.queues
            }

            # Who owns which queue (Admin.group_progress(owners=True), consumerProgress -s true), and
            # the member's own running info.
            owned = await admin.group_progress(group, topic, owners=True)
            assert {q.queue: q.client_id for q in owned.queues} == {
                q.queue: consumer.client_id for q in stats
            }
            shown_owners = await trio.to_thread.run_sync(
                lambda: cluster.mqadmin("consumerProgress", "-g", group, "-s", "true").check().output
            )
            assert {(b, int(q)): ip for t, b, q, ip in _OWNER_ROW.findall(shown_owners) if t == topic} == {
                (q.queue.broker_name, q.queue.queue_id): consumer.client_id.split("@")[0] for q in stats
            }, shown_owners
            info = await admin.running_info(group, consumer.client_id)
            assert {q.queue for q in stats} <= set(info.mq_table)
            assert topic in {s.topic for s in info.subscription_set}
            with pytest.raises(BrokerError):  # no such member
                await admin.running_info(group, "127.0.0.1@no-such-member")

            # The group among the brokers' groups; a message consumed once more through its broker,
            # by offset id and by unique key (Admin.consume_directly), and by mqadmin queryMsgById -g -d.
            assert group in await admin.groups()
            before = len(got)
            answer = await admin.consume_directly(group, consumer.client_id, sent[3].offset_msg_id)
            assert answer.consume_result == ConsumeResult.CR_SUCCESS
            assert [m.body for m in got[before:]] == [b"m-3"]
            answer = await admin.consume_directly(group, consumer.client_id, sent[4].msg_id, topic=topic)
            assert answer.consume_result == ConsumeResult.CR_SUCCESS
            assert [m.body for m in got[before:]] == [b"m-3", b"m-4"]
            pushed = await trio.to_thread.run_sync(
                lambda: (
                    cluster.mqadmin(
                        "queryMsgById",
                        "-t",
                        topic,
                        "-i",
                        sent[5].offset_msg_id,
                        "-g",
                        group,
                        "-d",
                        consumer.client_id,
                    )
                    .check()
                    .output
                )
            )
            assert "consumeResult=CR_SUCCESS" in pushed, pushed
            assert [m.body for m in got[before:]] == [b"m-3", b"m-4", b"m-5"]
            with pytest.raises(BrokerError):  # no such member
                await admin.consume_directly(group, "127.0.0.1@no-such-member", sent[3].offset_msg_id)

            # Reset to the first message with the member online: the broker tells it, it consumes again.
            before = len(got)
            reset = await admin.reset_offsets(group, topic, 0)
            assert set(reset) == {q.queue for q in stats}
            assert all(offset == 0 for offset in reset.values())
            await wait_for(lambda: len(got) >= before + COUNT, "the messages consumed again after the reset")

            # To a time between the first and the last store time: mqadmin resetOffsetByTime and
            # Admin.reset_offsets find the same offsets (the brokers search their queues alike).
            stored = sorted({m.store_timestamp for m in got})
            middle = stored[len(stored) // 2]
            shown_reset = await trio.to_thread.run_sync(
                lambda: (
                    cluster.mqadmin("resetOffsetByTime", "-g", group, "-t", topic, "-s", str(middle))
                    .check()
                    .output
                )
            )
            theirs_reset = {(b, int(q)): int(o) for b, q, o in _RESET_ROW.findall(shown_reset)}
            assert len(theirs_reset) == len(stats), shown_reset
            ours_reset = await admin.reset_offsets(group, topic, middle)
            assert {(mq.broker_name, mq.queue_id): o for mq, o in ours_reset.items()} == theirs_reset

        # The member gone: a reset to now moves every offset to its queue's end.
        reset = await admin.reset_offsets(group, topic, 2**63 - 1)
        assert reset == {q.queue: q.max_offset for q in stats}
        assert (await admin.group_members(group)).members == ()

        # Messages by offset id (and mqadmin queryMsgById), by unique key, by key.
        first = sent[0]
        found = await admin.message(first.offset_msg_id)
        assert (found.body, found.queue_offset) == (b"m-0", first.queue_offset)
        shown = await trio.to_thread.run_sync(
            lambda: cluster.mqadmin("queryMsgById", "-t", topic, "-i", first.offset_msg_id).check().output
        )
        assert topic in shown
        assert first.msg_id in shown
        assert (await admin.message_by_unique_key(topic, sent[5].msg_id)).body == b"m-5"
        by_key = await admin.messages_by_key(topic, "k-7")
        assert [m.body for m in by_key] == [b"m-7"]
        assert await admin.messages_by_key(topic, "no-such-key") == []
        with pytest.raises(ClientError):
            await admin.message("not-an-id")

        # Deleted: the NameServer knows it no more.
        assert await admin.delete_topic(topic) == sorted(b.name for b in cluster.brokers)
        with pytest.raises(RouteNotFound):
            await admin.route(topic)
        assert topic not in await admin.topics()


def test_the_blocking_admin_has_the_same_calls(cluster: Cluster) -> None:
    with SyncAdmin(**cluster.client_options()) as admin:
        assert {b.broker_name for b in admin.brokers()} == {b.name for b in cluster.brokers}
        topics = admin.topics()
        assert "TBW102" in topics or any(t.startswith("RMQ_SYS") for t in topics)


def test_the_cli_commands_over_the_admin_api(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    """``topic stats``, ``group lag``, ``group reset-offsets`` and ``message get``, with ``--json``
    where they have it, on what a producer and a consumer did."""
    import json

    from rocketmq_py.cli import EXIT_OK, main

    namesrv = cluster.admin_namesrv_addr
    topic = f"it-admin-cli-{uuid.uuid4().hex[:10]}"
    group = f"it-admin-cli-g-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, 2)

    async def traffic() -> list[str]:
        got: list[MessageExt] = []

        async def listener(msgs: list[MessageExt]) -> None:
            got.extend(msgs)

        async with Producer(f"it-admin-cli-p-{uuid.uuid4().hex[:8]}", **cluster.client_options()) as producer:
            ids = [(await producer.send(Message(topic, f"c-{n}".encode()))).offset_msg_id for n in range(6)]
        consumer = PushConsumer(
            group,
            listener=listener,
            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
            persist_interval=1,
            **cluster.client_options(),
        )
        consumer.subscribe(topic)
        async with consumer, Admin(**cluster.client_options()) as admin:
            await wait_for(lambda: len(got) >= 6, "the messages consumed")
            with trio.move_on_after(30):
                while (await admin.group_progress(group, topic)).lag:  # noqa: ASYNC110 - a broker answer, no event
                    await trio.sleep(0.5)
        return ids

    ids = trio.run(traffic)

    assert main(["-n", namesrv, "topic", "stats", topic, "--json"]) == EXIT_OK
    stats = json.loads(capsys.readouterr().out)
    assert sum(q["max_offset"] - q["min_offset"] for q in stats) == 6
    assert len(stats) == 2 * len(cluster.brokers)

    assert main(["-n", namesrv, "group", "lag", group, topic, "--json"]) == EXIT_OK
    lag = json.loads(capsys.readouterr().out)
    assert lag["lag"] == 0
    assert {(q["broker_name"], q["queue_id"]) for q in lag["queues"]} == {
        (q["broker_name"], q["queue_id"]) for q in stats
    }

    assert main(["-n", namesrv, "group", "reset-offsets", group, topic, "--earliest"]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.endswith(f"{group} on {topic}: {len(stats)} queues reset to the earliest\n")
    assert main(["-n", namesrv, "group", "lag", group, topic, "--json", "--owners"]) == EXIT_OK
    lag = json.loads(capsys.readouterr().out)
    assert lag["lag"] == 6  # nobody consumes now
    assert [q["owner"] for q in lag["queues"]] == [None] * len(stats)  # and nobody owns a queue

    assert main(["-n", namesrv, "message", "get", ids[2], "--json"]) == EXIT_OK
    shown = json.loads(capsys.readouterr().out)
    assert (shown["topic"], shown["body"]) == (topic, "c-2")
    assert main(["-n", namesrv, "message", "get", ids[3]]) == EXIT_OK
    assert "body:             c-3" in capsys.readouterr().out
