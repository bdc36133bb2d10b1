"""PushConsumer flow control against fake brokers: a full cache pauses the pulls of its queue."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import trio
import trio.testing

from rocketmq_py.consumer._flow import FlowLimits
from rocketmq_py.consumer._push import PushConsumer, QueueStatistics
from rocketmq_py.protocol import Message, MessageExt, MessageQueue, RequestCode

if TYPE_CHECKING:
    from conftest import Cluster, Recorder

MakeConsumer = Callable[..., PushConsumer]
FIRST = "CONSUME_FROM_FIRST_OFFSET"  # the messages are stored before the consumer starts


def stats(consumer: PushConsumer, mq: MessageQueue) -> QueueStatistics:
    (found,) = [s for s in consumer.statistics() if s.queue == mq]
    return found


def block_all(release: trio.Event) -> Callable[[list[MessageExt]], object]:
    async def hook(msgs: list[MessageExt]) -> None:
        await release.wait()

    return hook


def block_offsets(events: dict[int, trio.Event]) -> Callable[[list[MessageExt]], object]:
    async def hook(msgs: list[MessageExt]) -> None:
        for msg in msgs:
            if msg.queue_offset in events:
                await events[msg.queue_offset].wait()

    return hook


async def test_count_limit_pauses_pulling_at_1000_cached_messages_and_resumes(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    release = trio.Event()
    recorder.hook = block_all(release)
    cluster.put(a0, 1500)
    async with make_consumer(consume_from_where=FIRST) as consumer:
        assert consumer.flow_limits.pull_threshold_for_queue == 1000
        await cluster.wait_until(lambda: stats(consumer, a0).paused_by_flow_control == "COUNT")
        paused = stats(consumer, a0)
        assert paused.cached_count == 1024  # 32 pulls of 32: the first count over 1000
        assert paused.next_pull_offset == 1024
        assert recorder.calls == consumer.consume_concurrency  # every worker is stuck
        pulls = len(cluster.pulls(cluster.a, a0))
        assert pulls == 32

        await trio.sleep(10)
        assert len(cluster.pulls(cluster.a, a0)) == pulls  # no pull while paused
        assert stats(consumer, a0).paused_by_flow_control == "COUNT"

        release.set()
        await cluster.wait_until(lambda: len(recorder.messages) == 1500)
        assert sorted(recorder.offsets(a0)) == list(range(1500))
        assert len(cluster.pulls(cluster.a, a0)) > pulls
        resumed = stats(consumer, a0)
        assert resumed.paused_by_flow_control is None
        assert resumed.cached_count == 0
        assert resumed.committed_offset == 1500


async def test_a_pause_longer_than_the_idle_limit_does_not_drop_the_queue(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A queue paused by flow control is not an idle pull (Java stamps lastPullTimestamp first)."""
    a0 = cluster.queues()[0]
    release = trio.Event()
    recorder.hook = block_all(release)
    cluster.put(a0, 40)
    async with make_consumer(
        consume_from_where=FIRST, flow_limits=FlowLimits(pull_threshold_for_queue=10)
    ) as consumer:
        await cluster.wait_until(lambda: stats(consumer, a0).paused_by_flow_control == "COUNT")
        queries = len(cluster.a.requests(RequestCode.QUERY_CONSUMER_OFFSET))
        await trio.sleep(200)  # ten rebalances, well past PULL_MAX_IDLE_TIME
        assert a0 in consumer.assignment()
        assert len(cluster.a.requests(RequestCode.QUERY_CONSUMER_OFFSET)) == queries  # not rebuilt
        assert (0, False) not in cluster.offset_updates(cluster.a, a0)  # never dropped
        release.set()
        await cluster.wait_until(lambda: len(recorder.messages) == 40)
        assert sorted(recorder.offsets(a0)) == list(range(40))  # each once: the cache was never thrown away


async def test_size_limit_pauses_pulling(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    release = trio.Event()
    recorder.hook = block_all(release)
    fb = cluster.broker(a0)
    fb.put_messages(0, [Message(cluster.topic, bytes(100 * 1024)) for _ in range(100)])
    limits = FlowLimits(pull_threshold_size_for_queue_mib=2)
    async with make_consumer(consume_from_where=FIRST, flow_limits=limits) as consumer:
        await cluster.wait_until(lambda: stats(consumer, a0).paused_by_flow_control == "SIZE")
        paused = stats(consumer, a0)
        assert paused.cached_bytes == 32 * 100 * 1024  # one pull of 32: 3 MiB (rounded down) > 2
        assert paused.cached_count == 32
        pulls = len(cluster.pulls(fb, a0))
        await trio.sleep(5)
        assert len(cluster.pulls(fb, a0)) == pulls
        release.set()
        await cluster.wait_until(lambda: len(recorder.messages) == 100)
        assert stats(consumer, a0).paused_by_flow_control is None


async def test_span_limit_pauses_pulling_while_cached_offsets_spread_too_far(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Span = last cached offset - first cached offset: two stuck messages 150 apart pause the
    queue though only two messages are cached; the span, not the count, decides."""
    a0 = cluster.queues()[0]
    low, high = trio.Event(), trio.Event()
    recorder.hook = block_offsets({0: low, 150: high})
    cluster.put(a0, 300)
    limits = FlowLimits(consume_max_span=100)
    async with make_consumer(consume_from_where=FIRST, flow_limits=limits) as consumer:
        await cluster.wait_until(lambda: len(recorder.messages) == 160)  # 5 pulls of 32
        await cluster.wait_until(lambda: stats(consumer, a0).cached_count == 2)
        paused = stats(consumer, a0)
        assert paused.paused_by_flow_control == "SPAN"
        assert paused.max_span == 150
        assert paused.committed_offset == 0  # the stuck message holds the offset back
        pulls = len(cluster.pulls(cluster.a, a0))
        assert pulls == 5
        await trio.sleep(10)
        assert len(cluster.pulls(cluster.a, a0)) == pulls  # no pull while paused

        high.set()  # offset 0 alone left: span 0, pulling resumes though 0 is still stuck
        await cluster.wait_until(lambda: len(recorder.messages) == 300)
        await trio.sleep(1)  # a pull right after a batch may still see it cached and wait 50 ms
        resumed = stats(consumer, a0)
        assert resumed.paused_by_flow_control is None
        assert resumed.max_span == 0
        assert resumed.cached_count == 1
        assert resumed.committed_offset == 0

        low.set()
        await cluster.wait_until(lambda: stats(consumer, a0).committed_offset == 300)
        assert sorted(recorder.offsets(a0)) == list(range(300))


async def test_default_span_limit_is_2000(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    low, high = trio.Event(), trio.Event()
    recorder.hook = block_offsets({0: low, 2001: high})
    cluster.put(a0, 2100)
    async with make_consumer(consume_from_where=FIRST, pull_batch_size=500) as consumer:
        assert consumer.flow_limits.consume_max_span == 2000
        await cluster.wait_until(lambda: stats(consumer, a0).cached_count == 2)
        assert stats(consumer, a0).max_span == 2001
        assert stats(consumer, a0).paused_by_flow_control == "SPAN"
        high.set()
        low.set()
        await cluster.wait_until(lambda: stats(consumer, a0).committed_offset == 2100)
        await trio.sleep(1)
        assert stats(consumer, a0).paused_by_flow_control is None
