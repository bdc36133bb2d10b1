"""PushConsumer graceful rebalance handoff against fake brokers: revoke, wait, commit, release, listener."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import trio
import trio.lowlevel
import trio.testing

from rocketmq_py.consumer._push import PushConsumer
from rocketmq_py.protocol import MessageExt, MessageQueue, RemotingCommand, RequestCode

if TYPE_CHECKING:
    from conftest import Cluster, Recorder

MakeConsumer = Callable[..., PushConsumer]
ME = "127.0.0.1@me"
OTHER_LOW = "127.0.0.1@aa"  # sorts before ME
OTHER_HIGH = "127.0.0.1@zz"  # sorts after ME


@dataclass
class Events:
    """A rebalance listener recording its calls, and what the broker had when on_revoked ran."""

    cluster: Cluster
    calls: list[tuple[str, list[MessageQueue]]] = field(default_factory=list)
    updates_seen_on_revoke: list[int] = field(default_factory=list)

    def on_revoked(self, queues: list[MessageQueue]) -> None:  # a plain function is fine
        self.calls.append(("revoked", queues))
        self.updates_seen_on_revoke.append(
            sum(len(self.cluster.offset_updates(fb)) for fb in self.cluster.brokers)
        )

    async def on_assigned(self, queues: list[MessageQueue]) -> None:
        await trio.lowlevel.checkpoint()
        self.calls.append(("assigned", queues))

    def of_topic(self, kind: str, topic: str) -> list[list[MessageQueue]]:
        return [qs for k, qs in self.calls if k == kind and qs[0].topic == topic]


async def test_revoked_queue_waits_for_its_running_listener_then_commits_synchronously(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    cluster.group_consumed_before()  # offsets on every queue, committed back on handoff
    a0, a1, b0, b1 = cluster.queues()
    events = Events(cluster)
    release = trio.Event()
    started = trio.Event()

    async def slow_b0_0(msgs: list[MessageExt]) -> None:
        if msgs[0].store_host == cluster.b.address and msgs[0].queue_offset == 0:
            started.set()
            await release.wait()

    recorder.hook = slow_b0_0
    cluster.answer_consumer_ids(ME)
    # One worker: b0's messages 1-2 stay cached behind the running call.
    async with make_consumer(consume_concurrency=1, rebalance_listener=events) as consumer:
        assert events.of_topic("assigned", cluster.topic) == [[a0, a1, b0, b1]]
        cluster.put(b0, 3)
        await started.wait()
        cluster.answer_consumer_ids(ME, OTHER_HIGH)  # b0, b1 go to the other member
        await cluster.notify_ids_changed(cluster.a)
        await cluster.wait_until(lambda: any(s.revoking for s in consumer.statistics()))
        revoked_at = len(cluster.b.received)
        await trio.sleep(3)  # within the 5 s handoff timeout: still ours, still waiting
        assert b0 in consumer.assignment()
        (stats,) = [s for s in consumer.statistics() if s.queue == b0]
        assert stats.revoking
        assert stats.consuming == 1
        assert events.of_topic("revoked", cluster.topic) == []
        assert [c for c in cluster.b.received[revoked_at:] if c.code == RequestCode.PULL_MESSAGE] == []

        release.set()
        await cluster.wait_until(lambda: b0 not in consumer.assignment())
        assert [mq for mq in sorted(consumer.assignment()) if mq.topic == cluster.topic] == [a0, a1]
        # on_revoked ran before the commit; the commit was synchronous and counts the finished call.
        assert events.of_topic("revoked", cluster.topic) == [[b0, b1]]
        index = [qs for k, qs in events.calls if k == "revoked"].index([b0, b1])
        assert events.updates_seen_on_revoke[index] == 0
        assert cluster.offset_updates(cluster.b, b0) == [(1, False)]
        assert cluster.offset_updates(cluster.b, b1) == [(0, False)]
        assert cluster.b.consumer_offsets[(cluster.group, cluster.topic, 0)] == 1
        await trio.sleep(10)
        # Messages 1 and 2 were cached, never handed over: the next owner pulls them.
        assert recorder.offsets(b0) == [0]


async def test_a_listener_running_past_the_handoff_timeout_is_left_to_the_next_owner(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    _, _, b0, _ = cluster.queues()
    release = trio.Event()
    started = trio.Event()

    async def stuck_on_b0(msgs: list[MessageExt]) -> None:
        if msgs[0].store_host == cluster.b.address and msgs[0].queue_offset == 1:
            started.set()
            await release.wait()

    recorder.hook = stuck_on_b0
    cluster.answer_consumer_ids(ME)
    async with make_consumer(handoff_timeout=2) as consumer:
        cluster.put(b0, 2)
        await started.wait()
        cluster.answer_consumer_ids(ME, OTHER_HIGH)
        await cluster.notify_ids_changed(cluster.a)
        await cluster.wait_until(lambda: any(s.revoking for s in consumer.statistics()))
        revoking_since = trio.current_time()
        await cluster.wait_until(lambda: b0 not in consumer.assignment())
        assert trio.current_time() - revoking_since >= 1.9  # (polled every 10 ms)
        # Offset 0 was consumed, offset 1 is still running: the commit says 1.
        assert cluster.offset_updates(cluster.b, b0) == [(1, False)]
        release.set()
        await trio.sleep(10)
        # The late result moved nothing.
        assert cluster.b.consumer_offsets[(cluster.group, cluster.topic, 0)] == 1
        assert consumer._offset_store.get(b0) == -1


async def test_close_hands_off_every_queue_gracefully(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0, a1, b0, b1 = cluster.queues()
    events = Events(cluster)
    release = trio.Event()
    started = trio.Event()

    async def slow_a0_4(msgs: list[MessageExt]) -> None:
        if msgs[0].store_host == cluster.a.address and msgs[0].queue_offset == 4:
            started.set()
            await release.wait()

    recorder.hook = slow_a0_4
    async with trio.open_nursery() as nursery, make_consumer(rebalance_listener=events):
        cluster.put(a0, 5)
        await started.wait()

        async def finish_soon() -> None:
            await trio.sleep(1)
            release.set()

        nursery.start_soon(finish_soon)
    assert recorder.offsets(a0) == [0, 1, 2, 3, 4]
    # The running call finished inside the close, and its offset was committed synchronously.
    assert cluster.offset_updates(cluster.a, a0)[-1] == (5, False)
    assert cluster.a.consumer_offsets[(cluster.group, cluster.topic, 0)] == 5
    revoked = [qs for k, qs in events.calls if k == "revoked"]
    assert sorted(mq for qs in revoked for mq in qs if mq.topic == cluster.topic) == [a0, a1, b0, b1]


async def test_a_new_owner_reads_the_offset_only_after_the_handoff_delay(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    _, _, b0, _ = cluster.queues()
    queried_at: list[float] = []
    default = cluster.b._groups.query_consumer_offset

    async def query(request: RemotingCommand) -> RemotingCommand | None:
        if request.ext_fields.get("topic") == cluster.topic:
            queried_at.append(trio.current_time())
        return await default(request)

    cluster.b.on(RequestCode.QUERY_CONSUMER_OFFSET, query)
    cluster.answer_consumer_ids(ME, OTHER_HIGH)
    async with make_consumer(handoff_delay=1.5) as consumer:
        await trio.sleep(1)
        # The previous owner commits meanwhile.
        cluster.b.consumer_offsets[(cluster.group, cluster.topic, 0)] = 7
        cluster.answer_consumer_ids(OTHER_LOW, ME)
        notified = trio.current_time()
        await cluster.notify_ids_changed(cluster.a)
        await cluster.wait_until(lambda: b0 in consumer.assignment())
        assert min(queried_at) - notified >= 1.5
        (stats,) = [s for s in consumer.statistics() if s.queue == b0]
        assert stats.next_pull_offset == 7


async def test_a_sole_member_starts_without_the_handoff_delay(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    cluster.answer_consumer_ids(ME)
    start = trio.current_time()
    async with make_consumer(handoff_delay=30) as consumer:
        assert trio.current_time() - start < 30
        assert len(consumer.assignment()) == 6  # 4 topic queues, 2 retry queues


async def test_statistics_report_lock_consuming_timestamps_and_persisted_offset(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    release = trio.Event()

    async def slow_at_2(msgs: list[MessageExt]) -> None:
        if msgs[0].queue_offset == 2:
            await release.wait()

    recorder.hook = slow_at_2
    async with make_consumer() as consumer:
        cluster.put(a0, 4)
        await cluster.wait_until(lambda: len(recorder.messages) == 4)
        (stats,) = [s for s in consumer.statistics() if s.queue == a0]
        assert stats.consuming == 1
        assert not stats.revoking
        assert stats.committed_offset == 2
        assert stats.persisted_offset == -1
        assert not stats.locked
        assert stats.lock_age is None
        assert not stats.suspended
        assert stats.paused_by_flow_control is None
        assert stats.paused_detail is None
        assert stats.last_pull_timestamp > 0
        assert stats.last_consume_timestamp > 0
        await trio.sleep(5.5)  # one persist round
        (stats,) = [s for s in consumer.statistics() if s.queue == a0]
        assert stats.persisted_offset == 2
        release.set()
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 4)
        await trio.sleep(5.5)
        (stats,) = [s for s in consumer.statistics() if s.queue == a0]
        assert stats.consuming == 0
        assert stats.persisted_offset == stats.committed_offset == 4


async def test_queue_rebuilt_after_an_idle_pull_is_not_announced_to_the_listener(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Dropping and rebuilding an idle pull keeps the queue: neither on_revoked nor on_assigned."""
    a0, a1, b0, b1 = cluster.queues()
    events = Events(cluster)
    cluster.a.never_reply(RequestCode.PULL_MESSAGE)  # broker-a's pulls outlast the idle limit

    def offset_queries() -> int:
        return len(cluster.a.requests(RequestCode.QUERY_CONSUMER_OFFSET))

    async with make_consumer(rebalance_listener=events, pull_max_idle_time=10) as consumer:
        assert events.of_topic("assigned", cluster.topic) == [[a0, a1, b0, b1]]
        calls = list(events.calls)  # the topic's and the retry topic's
        first = offset_queries()  # a0, a1 and the retry topic's queue
        await trio.sleep(19)
        await cluster.wait_until(lambda: offset_queries() == 2 * first)  # rebuilt: idle past 10 s
        await trio.sleep(30)
        assert {a0, a1, b0, b1} <= set(consumer.assignment())
        assert events.calls == calls
