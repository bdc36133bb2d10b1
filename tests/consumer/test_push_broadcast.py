"""Broadcasting PushConsumer against fake brokers: every queue, no send-back, offsets in a local file.

These tests run on the real clock: the offset file is written in worker threads, and an
autojumping clock would race ahead while a thread writes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import trio
import trio.testing

from rocketmq_py.consumer._local_offset_store import LocalOffsetStore
from rocketmq_py.consumer._push import ConsumeStatus, PushConsumer
from rocketmq_py.protocol import MessageExt, MessageModel, PullSysFlag, RequestCode

if TYPE_CHECKING:
    from conftest import Cluster, Recorder

MakeConsumer = Callable[..., PushConsumer]
OTHER = "127.0.0.1@zz"


def broker_requests(cluster: Cluster, code: int) -> int:
    return sum(len(fb.requests(code)) for fb in cluster.brokers)


async def test_every_member_takes_every_queue_and_no_retry_topic(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    tmp_path: Path,
) -> None:
    cluster.answer_consumer_ids(OTHER, "127.0.0.1@me")  # would halve a clustering member's share
    async with make_consumer(message_model="BROADCASTING", offsets_dir=str(tmp_path)) as consumer:
        assert sorted(consumer.assignment()) == cluster.queues()
        assert broker_requests(cluster, RequestCode.GET_CONSUMER_LIST_BY_GROUP) == 0
        beats = [beat for fb in cluster.brokers for beat in cluster.heartbeats(fb)]
        (data,) = beats[-1].consumer_data_set
        assert data.message_model is MessageModel.BROADCASTING
        assert {sub.topic for sub in data.subscription_data_set} == {cluster.topic}
        for mq in cluster.queues():
            cluster.put(mq, 2)
        await cluster.wait_until(lambda: len(recorder.messages) == 8)


async def test_failed_messages_are_dropped_not_sent_back(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    tmp_path: Path,
) -> None:
    a0 = cluster.queues()[0]
    recorder.status = ConsumeStatus.RECONSUME_LATER
    async with make_consumer(message_model="BROADCASTING", offsets_dir=str(tmp_path)) as consumer:
        cluster.put(a0, 3)
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 3)
        await trio.sleep(0.5)
        assert len(recorder.messages) == 3  # once each
        assert consumer.failed == 3
    assert broker_requests(cluster, RequestCode.CONSUMER_SEND_MSG_BACK) == 0
    assert cluster.a.messages(cluster.retry, 0) == []


async def test_offsets_live_in_a_local_file_and_a_restart_resumes_from_it(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    tmp_path: Path,
) -> None:
    a0, _, b1 = cluster.queues()[0], cluster.queues()[1], cluster.queues()[3]
    options = {"message_model": "BROADCASTING", "offsets_dir": str(tmp_path), "instance_name": "stable"}
    async with make_consumer(**options) as consumer:
        cluster.put(a0, 3)
        cluster.put(b1, 2)
        await cluster.wait_until(lambda: len(recorder.messages) == 5)
        await cluster.wait_until(lambda: consumer._offset_store.get(b1) == 2)
    # One file per client id and group, a whole JSON document.
    store = LocalOffsetStore(cluster.group, "127.0.0.1@stable", directory=tmp_path)
    assert store.path.parent == tmp_path / "127.0.0.1@stable" / cluster.group
    json.loads(await trio.Path(store.path).read_bytes())
    table = await trio.to_thread.run_sync(store.read_file)
    assert table[a0] == 3
    assert table[b1] == 2
    # The brokers keep no offsets of a broadcasting group.
    assert broker_requests(cluster, RequestCode.UPDATE_CONSUMER_OFFSET) == 0
    assert broker_requests(cluster, RequestCode.QUERY_CONSUMER_OFFSET) == 0

    cluster.put(a0, 2)  # produced while the consumer was down
    recorder.messages.clear()
    async with make_consumer(**options):
        await cluster.wait_until(lambda: len(recorder.messages) == 2)
        await trio.sleep(0.5)
    assert [m.body for m in recorder.messages] == [b"broker-a/0-3", b"broker-a/0-4"]


async def test_two_members_both_consume_everything(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    tmp_path: Path,
) -> None:
    got: dict[str, list[bytes]] = {"one": [], "two": []}

    def listener_for(name: str) -> Callable[[list[MessageExt]], object]:
        async def listener(msgs: list[MessageExt]) -> None:
            got[name].extend(m.body for m in msgs)

        return listener

    common = {"message_model": "BROADCASTING", "offsets_dir": str(tmp_path)}
    async with (
        make_consumer(instance_name="one", listener=listener_for("one"), **common),
        make_consumer(instance_name="two", listener=listener_for("two"), **common),
    ):
        stored = [m.body for mq in cluster.queues() for m in cluster.put(mq, 3)]
        await cluster.wait_until(lambda: len(got["one"]) == len(got["two"]) == 12)
    assert sorted(got["one"]) == sorted(got["two"]) == sorted(stored)


async def test_broadcasting_pulls_never_ask_the_broker_to_commit(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    tmp_path: Path,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Java sets the pull's commit-offset flag for CLUSTERING only: a member's local offsets must
    not leak into the broker's offset table of the group."""
    a0 = cluster.queues()[0]
    async with make_consumer(message_model="BROADCASTING", offsets_dir=str(tmp_path)) as consumer:
        cluster.put(a0, 3)
        await cluster.wait_until(lambda: len(recorder.messages) == 3)
        await cluster.wait_until(lambda: len(cluster.pulls(cluster.a, a0)) == 3)
        assert consumer._offset_store.get(a0) == 3
    for header in cluster.pulls(cluster.a, a0):
        assert header.sys_flag & PullSysFlag.COMMIT_OFFSET == 0
        assert header.commit_offset == 0
    assert (cluster.group, cluster.topic, 0) not in cluster.a.consumer_offsets
