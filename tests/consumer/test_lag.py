"""``lag()`` of both consumers and ``end_offsets()`` / ``beginning_offsets()`` of lite pull (issue 28 §2).

The broker behaviour relied on: GET_MAX_OFFSET answers the offset after a queue's last message
(``AdminBrokerProcessor.getMaxOffset``), QUERY_CONSUMER_OFFSET the group's stored offset or
QUERY_NOT_FOUND (``ConsumerManageProcessor.queryConsumerOffset``), and a pull without the commit
flag stores nothing (``PullMessageProcessor.processRequest``: ``hasCommitOffsetFlag``). Real twin:
``integration/test_lite_pull_consumer.py::test_lag_and_the_ends_of_queues_on_the_real_broker``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from rocketmq_py import QueueLag
from rocketmq_py.consumer._lite_pull import LitePullConsumer
from rocketmq_py.consumer._push import PushConsumer
from rocketmq_py.errors import RocketMQError, StateError
from rocketmq_py.protocol import Message, MessageExt, RequestCode

if TYPE_CHECKING:
    from conftest import Cluster, Recorder

MakeConsumer = Callable[..., PushConsumer]
MINUTE_MS = 60_000


def lite(cluster: Cluster, **options: object) -> LitePullConsumer:
    consumer = LitePullConsumer(
        cluster.group,
        namesrv=cluster.namesrv.address,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        auto_commit=False,
        pull_batch_size=4,
        **options,  # type: ignore[arg-type]
    )
    consumer.subscribe(cluster.topic)
    return consumer


def store_minutes_ago(cluster: Cluster, count: int, minutes: int) -> None:
    a0 = cluster.queues()[0]
    stamp = int(time.time() * 1000) - minutes * MINUTE_MS
    cluster.a.put_messages(
        a0.queue_id, [Message(a0.topic, f"m-{n}".encode()) for n in range(count)], store_timestamp=stamp
    )


async def polled(consumer: LitePullConsumer, count: int) -> list[MessageExt]:
    got: list[MessageExt] = []
    with trio.fail_after(60):
        while len(got) < count:
            got.extend(await consumer.poll(timeout=1))
    return got


async def test_a_lite_consumer_s_lag_counts_from_what_poll_returned(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    a0 = cluster.queues()[0]
    store_minutes_ago(cluster, 10, minutes=5)
    async with lite(cluster) as consumer:
        with pytest.raises(StateError):
            await LitePullConsumer("other").lag()
        assert len(await polled(consumer, 4)) == 4  # one batch of a0
        lags = await consumer.lag()
        await consumer.commit()
        after_commit = {lag.queue: lag for lag in await consumer.lag()}
    assert [lag.queue for lag in lags] == cluster.queues()  # every owned queue, in queue order
    by_queue = {lag.queue: lag for lag in lags}
    first = by_queue[a0]
    assert (first.max_offset, first.committed, first.consumed, first.behind) == (10, 0, 4, 6)
    assert first.oldest_age is not None
    assert 5 * 60 - 1 < first.oldest_age < 5 * 60 + 60  # message m-4, stored five minutes ago
    assert (after_commit[a0].committed, after_commit[a0].behind) == (4, 6)
    for mq, lag in by_queue.items():
        if mq != a0:  # empty queues: nothing behind
            assert lag == QueueLag(mq, 0, lag.committed, 0, 0, None)


async def test_a_push_consumer_that_consumed_everything_is_not_behind(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    store_minutes_ago(cluster, 6, minutes=1)
    async with make_consumer(consume_from_where="CONSUME_FROM_FIRST_OFFSET") as consumer:
        await cluster.wait_until(lambda: len(recorder.messages) == 6)
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 6)
        lags = {lag.queue: lag for lag in await consumer.lag()}
    assert set(lags) == {*cluster.queues(), *cluster.queues(cluster.retry)}  # the retry topic's too
    assert (lags[a0].max_offset, lags[a0].consumed, lags[a0].behind, lags[a0].oldest_age) == (6, 6, 0, None)


async def test_the_ends_of_any_queue_assigned_or_not(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    a0, a1, b0, _ = cluster.queues()
    cluster.put(a0, 3)
    cluster.put(b0, 7)
    consumer = LitePullConsumer(cluster.group, namesrv=cluster.namesrv.address)
    async with consumer:
        consumer.assign([a1])
        ends = await consumer.end_offsets([b0, a0, a1])
        beginnings = await consumer.beginning_offsets((b0, a0))
    assert list(ends.items()) == [(b0, 7), (a0, 3), (a1, 0)]  # in the order asked
    assert beginnings == {b0: 0, a0: 0}


async def test_a_broker_that_cannot_answer_raises_its_error_not_a_group(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    b0 = cluster.queues()[2]
    cluster.b.refuse(RequestCode.GET_MAX_OFFSET)
    async with lite(cluster) as consumer:
        with pytest.raises(RocketMQError):
            await consumer.end_offsets([b0])
        await cluster.wait_until(lambda: len(consumer.assignment()) == 4)
        with pytest.raises(RocketMQError):
            await consumer.lag()
