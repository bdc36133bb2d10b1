"""A queue whose pull loop is alive is never dropped as "idle" (Java ``PULL_MAX_IDLE_TIME``).

Java stamps ``ProcessQueue.lastPullTimestamp`` at the start of every pull attempt, whatever comes
of it, and the rebalance drops (and rebuilds) only queues whose stamp is older than 120 s: pull
requests that got lost. A queue whose broker does not answer, or whose messages wait for busy
listeners, keeps its place and its in-memory progress.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import trio
import trio.testing

from rocketmq_py.consumer._flow import FlowLimits
from rocketmq_py.consumer._push import PushConsumer
from rocketmq_py.protocol import MessageExt, RequestCode

if TYPE_CHECKING:
    from conftest import Cluster, Recorder

MakeConsumer = Callable[..., PushConsumer]
FIRST = "CONSUME_FROM_FIRST_OFFSET"
# broker-a's pulls and offsets go unanswered (the group's member list still comes from broker-b,
# so that every rebalance round runs).
_SILENT_CODES = (
    RequestCode.PULL_MESSAGE,
    RequestCode.UPDATE_CONSUMER_OFFSET,
    RequestCode.QUERY_CONSUMER_OFFSET,
    RequestCode.GET_MAX_OFFSET,
)


async def test_a_broker_silent_for_150_s_keeps_its_queues_and_their_progress(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    cluster.put(a0, 1000)
    # Nothing reaches broker-a's offset table meanwhile: all progress is in memory.
    async with make_consumer(persist_interval=3600, consume_from_where=FIRST) as consumer:
        await cluster.wait_until(lambda: len(recorder.offsets(a0)) == 1000)
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 1000)
        for code in _SILENT_CODES:  # broker-a takes requests and never answers them
            cluster.a.never_reply(code)
        await trio.sleep(150)  # seven rebalance rounds, past the 120-s idle limit
        assert a0 in consumer.assignment()
        assert consumer._offset_store.get(a0) == 1000
        cluster.a.clear_faults()
        cluster.put(a0, 1)
        await cluster.wait_until(lambda: len(recorder.offsets(a0)) >= 1001)
        await trio.sleep(30)

    assert sorted(recorder.offsets(a0)) == list(range(1001))  # no re-delivery


async def test_slow_listeners_do_not_make_queues_drop_and_pull_again(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    cluster.put(a0, 12_000)

    async def slow(msgs: list[MessageExt]) -> None:
        await trio.sleep(5)

    recorder.hook = slow
    limits = FlowLimits(pull_threshold_for_queue=20_000, consume_max_span=65535)
    async with make_consumer(
        consume_concurrency=1, flow_limits=limits, persist_interval=3600, consume_from_where=FIRST
    ):
        # The hand-off to the one busy worker fills up and the pull loop waits on it, for minutes.
        await trio.sleep(600)

    offsets = [h.queue_offset for h in cluster.pulls(cluster.a, a0)]
    assert offsets == sorted(offsets)  # never pulled again from an earlier offset
    assert len(recorder.offsets(a0)) == len(set(recorder.offsets(a0)))  # nothing twice


async def test_the_idle_limit_is_an_option(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    consumer = make_consumer(pull_max_idle_time=30)
    assert consumer.pull_max_idle_time == 30
    assert make_consumer().pull_max_idle_time == 120  # Java's rocketmq.client.pull.pullMaxIdleTime
