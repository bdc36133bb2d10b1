"""LitePullConsumer against fake brokers: assign/poll, seek, pause, flow control, commits, rebalance."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing

from rocketmq_py.consumer._flow import FlowLimits
from rocketmq_py.consumer._lite_buffer import LiteBuffer, LiteQueue
from rocketmq_py.consumer._lite_pull import LitePullConsumer
from rocketmq_py.errors import ClientError, StateError
from rocketmq_py.protocol import (
    ConsumeType,
    Message,
    MessageExt,
    MessageModel,
    MessageQueue,
    RequestCode,
)

if TYPE_CHECKING:
    from conftest import Cluster

ME = "127.0.0.1@me"
OTHER = "127.0.0.1@other"  # sorts after ME: AVG gives ME the first half
MakeLite = Callable[..., LitePullConsumer]


@pytest.fixture
def make_lite(cluster: Cluster) -> MakeLite:
    def make(**options: Any) -> LitePullConsumer:
        options.setdefault("namesrv", cluster.namesrv.address)
        options.setdefault("instance_name", "me")
        options.setdefault("client_ip", "127.0.0.1")
        options.setdefault("consume_from_where", "CONSUME_FROM_FIRST_OFFSET")
        return LitePullConsumer(options.pop("group", cluster.group), **options)

    return make


def offsets_of(msgs: list[MessageExt]) -> list[int]:
    return [m.queue_offset for m in msgs]


async def poll_until(consumer: LitePullConsumer, count: int) -> list[MessageExt]:
    got: list[MessageExt] = []
    with trio.fail_after(120):
        while len(got) < count:
            got.extend(await consumer.poll(timeout=1))
    return got


def committed_on(cluster: Cluster, mq: MessageQueue) -> int | None:
    return cluster.broker(mq).consumer_offsets.get((cluster.group, mq.topic, mq.queue_id))


async def test_assign_and_poll_every_message_once_in_order(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    a0, _, _, b1 = cluster.queues()
    cluster.put(a0, 25)
    cluster.put(b1, 3)
    async with make_lite() as consumer:
        consumer.assign([a0, b1])
        assert consumer.assignment() == {a0, b1}
        got = await poll_until(consumer, 28)
        assert await consumer.poll(timeout=2) == []
    by_queue = {
        mq: [m for m in got if m.body.startswith(f"{mq.broker_name}/{mq.queue_id}-".encode())]
        for mq in (a0, b1)
    }
    assert offsets_of(by_queue[a0]) == list(range(25))
    assert offsets_of(by_queue[b1]) == list(range(3))
    # Each poll returned one pull batch of at most pull_batch_size (10) messages.
    pulls = cluster.pulls(cluster.a, a0)
    assert {p.max_msg_nums for p in pulls} == {10}
    # The subscription rides in each pull, so assign needs no registered subscription.
    assert all(p.subscription == "*" and p.sys_flag & 0x4 for p in pulls)


async def test_getmany_returns_messages_by_queue_up_to_max_records(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    a0, a1, _, _ = cluster.queues()
    cluster.put(a0, 4)
    cluster.put(a1, 4)
    async with make_lite() as consumer:
        consumer.assign([a0, a1])
        await cluster.wait_until(lambda: sum(s.pq.msg_count for s in consumer._queues.values()) == 8)
        first = await consumer.getmany(max_records=5)
        assert sum(len(v) for v in first.values()) == 5
        rest = await consumer.getmany()
        assert sum(len(v) for v in rest.values()) == 3
        merged = {mq: offsets_of(first.get(mq, []) + rest.get(mq, [])) for mq in (a0, a1)}
        assert merged == {a0: [0, 1, 2, 3], a1: [0, 1, 2, 3]}
        assert await consumer.getmany(timeout=1) == {}
        with pytest.raises(ClientError):
            await consumer.getmany(max_records=0)


async def test_async_for_yields_messages_one_by_one(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    a0 = cluster.queues()[0]
    cluster.put(a0, 12)
    seen: list[int] = []
    async with make_lite(auto_commit=False) as consumer:
        consumer.assign([a0])
        async for msg in consumer:
            seen.append(msg.queue_offset)
            if len(seen) == 3:
                break
        # Only what was yielded counts as consumed.
        await consumer.commit()
        assert committed_on(cluster, a0) == 3
        async for msg in consumer:
            seen.append(msg.queue_offset)
            if len(seen) == 12:
                break
    assert seen == list(range(12))


async def test_seek_discards_buffered_messages_of_that_queue(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    a0, a1, _, _ = cluster.queues()
    cluster.put(a0, 10)
    cluster.put(a1, 2)
    async with make_lite(pull_batch_size=2) as consumer:
        consumer.assign([a0, a1])
        await cluster.wait_until(lambda: consumer._queues[a0].pq.msg_count == 10)
        consumer.pause([a1])
        assert offsets_of(await consumer.poll()) == [0, 1]
        consumer.seek(a0, 7)
        got = await poll_until(consumer, 3)
        assert offsets_of(got) == [7, 8, 9]
        consumer.seek(a0, 1)
        assert offsets_of(await poll_until(consumer, 9)) == list(range(1, 10))
        with pytest.raises(ClientError):
            consumer.seek(cluster.queues()[2], 0)  # not assigned
        with pytest.raises(ClientError):
            consumer.seek(a0, -1)


async def test_seek_to_beginning_end_and_timestamp(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    a0 = cluster.queues()[0]
    cluster.first_messages_out_of_memory()  # so that CONSUME_FROM_LAST_OFFSET decides the start
    for n, ts in enumerate((1_000, 2_000, 3_000, 3_000, 4_000)):
        cluster.a.put_messages(0, [Message(a0.topic, f"m{n}".encode())], store_timestamp=ts)
    async with make_lite(consume_from_where="CONSUME_FROM_LAST_OFFSET") as consumer:
        consumer.assign([a0])
        assert await consumer.poll(timeout=2) == []  # starts at the end
        await consumer.seek_to_beginning(a0)
        assert offsets_of(await poll_until(consumer, 5)) == [0, 1, 2, 3, 4]
        await consumer.seek_to_timestamp(a0, 2_500)
        assert offsets_of(await poll_until(consumer, 3)) == [2, 3, 4]
        assert await consumer.offset_for_timestamp(a0, 3_000) == 2
        await consumer.seek_to_end(a0)
        assert await consumer.poll(timeout=2) == []
        cluster.put(a0, 1)
        assert offsets_of(await poll_until(consumer, 1)) == [5]
        with pytest.warns(DeprecationWarning, match="use seek_to_beginning"):
            await consumer.seek_to_begin(a0)  # the old name still seeks
        assert offsets_of(await poll_until(consumer, 6)) == [0, 1, 2, 3, 4, 5]


async def test_pause_stops_pulling_and_hides_messages_until_resume(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    a0, _, b0, _ = cluster.queues()
    async with make_lite() as consumer:
        consumer.assign([a0, b0])
        await cluster.wait_until(lambda: len(cluster.pulls(cluster.a, a0)) >= 1)
        consumer.pause([a0])
        assert consumer.paused() == {a0}
        cluster.put(a0, 30)  # the long poll in flight brings one batch back, then a0 is not pulled
        cluster.put(b0, 2)
        assert offsets_of(await poll_until(consumer, 2)) == [0, 1]
        await trio.sleep(60)
        pulls_while_paused = len(cluster.pulls(cluster.a, a0))
        assert consumer._queues[a0].pq.msg_count == 10
        assert await consumer.poll(timeout=5) == []  # buffered, but paused
        await trio.sleep(60)
        assert len(cluster.pulls(cluster.a, a0)) == pulls_while_paused
        consumer.resume([a0])
        got = await poll_until(consumer, 30)
        assert offsets_of(got) == list(range(30))


async def test_flow_control_per_queue_and_for_all(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    a0, a1, _, _ = cluster.queues()
    cluster.put(a0, 100)
    cluster.put(a1, 100)
    async with make_lite(
        flow_limits=FlowLimits(pull_threshold_for_queue=20, pull_threshold_for_all=35)
    ) as consumer:
        consumer.assign([a0, a1])
        await trio.sleep(30)

        def check_full() -> None:
            buffered = [consumer._queues[mq].pq.msg_count for mq in (a0, a1)]
            # A pull starts only while its queue holds <= 20 and the buffer <= 35 messages, but
            # both queues may start one at the same moment: 10 more each at most (as Java says).
            assert all(count <= 20 + 10 for count in buffered)
            assert sum(buffered) <= 35 + 2 * 10
            assert sum(buffered) > 35 or all(count > 20 for count in buffered)

        check_full()
        pulls = len(cluster.pulls(cluster.a))
        await trio.sleep(30)
        assert len(cluster.pulls(cluster.a)) == pulls  # nothing more while full
        got = await consumer.poll()
        await trio.sleep(5)
        check_full()
        got += await poll_until(consumer, 200 - len(got))
        assert len(got) == 200
        assert len({(m.queue_id, m.queue_offset) for m in got}) == 200


async def test_auto_commit_every_5_seconds_commits_after_the_last_polled(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    a0 = cluster.queues()[0]
    cluster.first_messages_out_of_memory()  # no offset from the broker: the start is computed
    cluster.put(a0, 25)
    async with make_lite() as consumer:
        consumer.assign([a0])
        start = trio.current_time()
        await cluster.wait_until(lambda: consumer._queues[a0].pq.msg_count == 25)
        assert committed_on(cluster, a0) == 0  # the start position is committed at once
        assert offsets_of(await consumer.poll()) == list(range(10))
        await trio.sleep_until(start + 5.5)
        assert committed_on(cluster, a0) == 10
        assert cluster.offset_updates(cluster.a, a0)[-1] == (10, True)  # oneway, as Java's persister
        await consumer.poll()
        assert committed_on(cluster, a0) == 10
        await trio.sleep(5)
        assert committed_on(cluster, a0) == 20
        await consumer.poll()
    # Leaving commits synchronously.
    assert committed_on(cluster, a0) == 25
    assert cluster.offset_updates(cluster.a, a0)[-1] == (25, False)


async def test_manual_commit_and_committed(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    a0, a1, _, _ = cluster.queues()
    cluster.put(a0, 5)
    async with make_lite(auto_commit=False) as consumer:
        consumer.assign([a0, a1])
        await poll_until(consumer, 5)
        await trio.sleep(20)
        assert committed_on(cluster, a0) is None  # no auto-commit, not even the start
        await consumer.commit()
        assert await consumer.committed(a0) == 5
        await consumer.commit({a0: 2})
        assert await consumer.committed(a0) == 2
        assert cluster.offset_updates(cluster.a, a0)[-1] == (2, False)
    assert committed_on(cluster, a0) == 2  # closing commits nothing new without auto-commit


async def test_committed_offset_is_where_a_restart_begins(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    a0 = cluster.queues()[0]
    cluster.put(a0, 8)
    async with make_lite() as consumer:
        consumer.assign([a0])
        assert offsets_of(await poll_until(consumer, 8)) == list(range(8))
        await consumer.commit({a0: 6})
    # auto_commit on close commits the consumed offset (8) again.
    async with make_lite() as consumer:
        consumer.assign([a0])
        cluster.put(a0, 2)
        assert offsets_of(await poll_until(consumer, 2)) == [8, 9]


async def test_subscribe_and_assign_are_mutually_exclusive(cluster: Cluster, make_lite: MakeLite) -> None:
    consumer = make_lite()
    consumer.subscribe(cluster.topic)
    with pytest.raises(StateError):
        consumer.assign(cluster.queues())
    other = make_lite()
    other.assign(cluster.queues())
    with pytest.raises(StateError):
        other.subscribe(cluster.topic)


async def test_calls_before_start_raise_state_error(cluster: Cluster, make_lite: MakeLite) -> None:
    consumer = make_lite()
    with pytest.raises(StateError):
        await consumer.poll(timeout=0)
    with pytest.raises(StateError):
        consumer.seek(cluster.queues()[0], 0)
    with pytest.raises(StateError):
        await consumer.commit()


async def test_subscribe_rebalances_and_revoke_commits_and_discards(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    a0, a1, b0, b1 = cluster.queues()
    cluster.answer_consumer_ids(ME)
    cluster.put(b0, 6)
    async with make_lite(pull_batch_size=2, rebalance_interval=20) as consumer:
        consumer.subscribe(cluster.topic, "*")
        await cluster.wait_until(lambda: consumer.assignment() == {a0, a1, b0, b1})
        await cluster.wait_until(lambda: consumer._queues[b0].pq.msg_count == 6)
        assert offsets_of(await consumer.poll()) == [0, 1]
        cluster.answer_consumer_ids(ME, OTHER)
        await cluster.notify_ids_changed(cluster.b)
        await cluster.wait_until(lambda: consumer.assignment() == {a0, a1})
        # b0 was revoked: its consumed offset committed synchronously, its buffer dropped.
        assert committed_on(cluster, b0) == 2
        assert (2, False) in cluster.offset_updates(cluster.b, b0)
        cluster.put(a0, 1)
        got = await poll_until(consumer, 1)
        assert [m.body for m in got] == [b"broker-a/0-0"]
        assert await consumer.poll(timeout=3) == []
        beats = cluster.heartbeats(cluster.a)
        (data,) = beats[-1].consumer_data_set
        assert data.consume_type == ConsumeType.CONSUME_ACTIVELY
        assert [s.topic for s in data.subscription_data_set] == [cluster.topic]  # no retry topic


async def test_assign_replaces_the_assignment(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    a0, a1, _, _ = cluster.queues()
    cluster.put(a0, 3)
    async with make_lite() as consumer:
        consumer.assign([a0])
        await poll_until(consumer, 3)
        consumer.assign([a1])
        assert consumer.assignment() == {a1}
        await trio.sleep(1)
        assert committed_on(cluster, a0) == 3  # released queue committed
        cluster.put(a1, 1)
        assert offsets_of(await poll_until(consumer, 1)) == [0]


async def test_broadcasting_takes_every_queue_and_keeps_offsets_in_a_file(
    cluster: Cluster, make_lite: MakeLite, tmp_path: Path
) -> None:
    # Real time: the file store works in threads, and a mock clock would jump past every
    # deadline while a thread writes.
    cluster.answer_consumer_ids(ME, OTHER)
    queues = cluster.queues()
    for mq in queues:
        cluster.put(mq, 2)
    async with make_lite(message_model=MessageModel.BROADCASTING, offsets_dir=tmp_path) as consumer:
        consumer.subscribe(cluster.topic)
        await cluster.wait_until(lambda: consumer.assignment() == set(queues))
        await poll_until(consumer, 8)
        await consumer.commit()
        assert {mq: await consumer.committed(mq) for mq in queues} == dict.fromkeys(queues, 2)
    assert all(committed_on(cluster, mq) is None for mq in queues)  # nothing on the brokers
    doc = json.loads((tmp_path / ME / cluster.group / "offsets.json").read_text())
    assert sorted(e["offset"] for e in doc["offsetTable"]) == [2, 2, 2, 2]
    (beat,) = cluster.heartbeats(cluster.a)[-1].consumer_data_set
    assert beat.message_model == MessageModel.BROADCASTING
    # A restart resumes from the file.
    async with make_lite(message_model="BROADCASTING", offsets_dir=tmp_path) as consumer:
        consumer.subscribe(cluster.topic)
        cluster.put(queues[3], 1)
        got = await poll_until(consumer, 1)
        assert [(m.body, m.queue_offset) for m in got] == [(b"broker-b/1-2", 2)]


async def test_poll_ends_with_state_error_when_closed(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    consumer = make_lite()
    result: list[BaseException] = []

    async def poller() -> None:
        try:
            await consumer.poll(timeout=100)
        except StateError as exc:
            result.append(exc)

    async with trio.open_nursery() as nursery, consumer:
        consumer.assign([cluster.queues()[0]])
        nursery.start_soon(poller)
        await trio.sleep(1)
    assert len(result) == 1
    assert [m async for m in consumer] == []
    assert cluster.a.requests(RequestCode.UNREGISTER_CLIENT)


# --- the buffer alone (no broker) ------------------------------------------------------------------


def _msgs(mq: MessageQueue, offsets: range) -> list[MessageExt]:
    return [MessageExt(mq.topic, b"x", queue_id=mq.queue_id, queue_offset=offset) for offset in offsets]


async def test_buffer_takes_oldest_batches_first_skipping_paused_queues() -> None:
    q0, q1 = (MessageQueue("T", "b", 0), MessageQueue("T", "b", 1))
    buffer = LiteBuffer(FlowLimits(pull_threshold_for_queue=5), threshold_for_all=8)
    first, second = LiteQueue(q0, next_offset=0, consumed=0), LiteQueue(q1, next_offset=0, consumed=0)
    assert buffer.append(first, _msgs(q0, range(3))) == 3
    assert buffer.append(second, _msgs(q1, range(4))) == 4
    assert buffer.append(first, _msgs(q0, range(2, 6))) == 3  # offset 2 is buffered already
    assert buffer.total == 10
    assert buffer.blocked(first)  # 6 > 5 in the queue, and 10 > 8 in all
    assert buffer.blocked(second)  # 10 > 8 in all
    buffer.pause([q0])
    assert offsets_of(buffer.take(None, one_batch=True)[q1]) == [0, 1, 2, 3]
    assert second.consumed == 4
    assert buffer.take(None, one_batch=False) == {}  # only q0's, paused
    buffer.resume([q0])
    part = buffer.take(4, one_batch=False)
    assert offsets_of(part[q0]) == [0, 1, 2, 3]  # the first batch, then part of the next
    assert first.consumed == 4
    assert not buffer.blocked(first)
    buffer.discard(first)
    assert buffer.total == 0
    assert first.dropped
    assert buffer.take(None, one_batch=False) == {}
    assert buffer.append(first, _msgs(q0, range(6, 8))) == 0  # a dropped queue buffers nothing


async def test_buffer_wakes_waiters(autojump_clock: trio.testing.MockClock) -> None:
    mq = MessageQueue("T", "b", 0)
    buffer = LiteBuffer(FlowLimits(), threshold_for_all=1)
    queue = LiteQueue(mq, next_offset=0, consumed=0)
    woken: list[str] = []

    async def wait(name: str, waiter: Callable[[], Any]) -> None:
        await waiter()
        woken.append(name)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait, "arrival", buffer.wait_arrival)
        nursery.start_soon(wait, "room", buffer.wait_room)
        await trio.sleep(1)
        assert woken == []
        buffer.append(queue, _msgs(mq, range(2)))
        await trio.sleep(1)
        assert woken == ["arrival"]
        buffer.take(1, one_batch=True)
        await trio.sleep(1)
        assert woken == ["arrival", "room"]


async def test_auto_commit_sends_only_assigned_queues(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    a0, a1, _, _ = cluster.queues()
    cluster.first_messages_out_of_memory()  # else the broker answers 0 for a1: "never committed"
    cluster.put(a1, 3)
    async with make_lite() as consumer:
        consumer.assign([a0])
        await trio.sleep(1)
        assert await consumer.committed(a1) == -1
        await consumer.commit({a1: 2})  # e.g. a tool fixing another member's queue
        cluster.a.consumer_offsets[(cluster.group, a1.topic, a1.queue_id)] = 3  # its owner moves on
        await trio.sleep(12)
        assert committed_on(cluster, a1) == 3  # not overwritten by our auto-commits
        assert cluster.offset_updates(cluster.a, a1) == [(2, False)]


async def test_newly_assigned_queue_reads_its_offset_after_the_handoff_delay(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    """With other members, the previous owner gets ``handoff_delay`` to commit before we read the offset."""
    a0, a1, b0, b1 = cluster.queues()
    cluster.answer_consumer_ids(OTHER, ME)  # ME sorts first: AVG gives it a0, a1

    def queries(fb: Any) -> int:
        return len(fb.requests(RequestCode.QUERY_CONSUMER_OFFSET))

    async with make_lite(rebalance_interval=20) as consumer:
        started = trio.current_time()
        consumer.subscribe(cluster.topic, "*")
        await cluster.wait_until(lambda: consumer.assignment() == {a0, a1})
        await cluster.wait_until(lambda: queries(cluster.a) == 2)
        assert trio.current_time() - started >= 1.0  # not before the delay
        assert queries(cluster.b) == 0
        cluster.answer_consumer_ids(ME)  # alone: b0, b1 too, read at once
        await cluster.notify_ids_changed(cluster.a)
        await cluster.wait_until(lambda: queries(cluster.b) == 2)
        joined = trio.current_time()
        assert consumer.assignment() == {a0, a1, b0, b1}
        assert joined - started < 25


async def test_handoff_delay_zero_reads_at_once(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    cluster.answer_consumer_ids(OTHER, ME)
    async with make_lite(rebalance_interval=20, handoff_delay=0) as consumer:
        started = trio.current_time()
        consumer.subscribe(cluster.topic, "*")
        await cluster.wait_until(lambda: len(cluster.a.requests(RequestCode.QUERY_CONSUMER_OFFSET)) == 2)
        assert trio.current_time() - started < 1.0


async def test_resubscribing_raises_the_sub_version_strictly(cluster: Cluster, make_lite: MakeLite) -> None:
    """The broker keeps a registered subscription unless the new subVersion is greater."""
    consumer = make_lite()
    versions = []
    for tag in ("TagA", "TagB", "TagC", "TagD"):  # within one millisecond of each other
        consumer.subscribe(cluster.topic, tag)
        versions.append(consumer._subscriptions[cluster.topic].sub_version)
    assert versions == sorted(set(versions))
    assert consumer._subscriptions[cluster.topic].tags_set == {"TagD"}
