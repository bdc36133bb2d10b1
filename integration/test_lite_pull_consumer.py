"""The lite pull consumer against the real two-broker cluster: poll, group split, rebalance, seek, commit.

Topics have 8 queues on each of the two brokers (16 in all). Consumers rebalance every 2 s instead
of 20 s so that a group settles fast; each consumer has its own client id (instance name).
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import trio

from rocketmq_py import Message, MessageExt, MessageQueue, Producer
from rocketmq_py.consumer._lite_pull import LitePullConsumer
from rocketmq_py.sync import LitePullConsumer as SyncLitePullConsumer
from rocketmq_py.sync import Message as SyncMessage
from rocketmq_py.sync import Producer as SyncProducer
from rocketmq_py.testing import Cluster

SETTLE_TIMEOUT = 60.0


def lite(cluster: Cluster, group: str, **options: Any) -> LitePullConsumer:
    options.setdefault("rebalance_interval", 2.0)
    options.setdefault("instance_name", f"lite-{uuid.uuid4().hex[:8]}")
    return LitePullConsumer(group, namesrv=cluster.namesrv_addr, **options)


def uniq(msgs: Sequence[MessageExt]) -> list[str]:
    return [m.msg_id for m in msgs]


async def drain(consumer: LitePullConsumer, want: set[str], got: list[MessageExt]) -> None:
    with trio.fail_after(60):
        while not want <= set(uniq(got)):
            got.extend(await consumer.poll(timeout=1))


async def test_every_message_of_a_16_queue_topic_is_polled_once(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(8)
    async with Producer("it-lite-producer", namesrv=cluster.namesrv_addr) as producer:
        sent = [(await producer.send(Message(topic, f"m-{i}".encode()))).msg_id for i in range(320)]
    got: list[MessageExt] = []
    async with lite(cluster, f"it-lite-{topic}", consume_from_where="CONSUME_FROM_FIRST_OFFSET") as consumer:
        consumer.subscribe(topic)
        await drain(consumer, set(sent), got)
        got.extend(await consumer.poll(timeout=3))
        assert len(consumer.assignment()) == 16
    assert Counter(uniq(got)) == Counter(sent)  # each exactly once


async def _settled(consumers: Sequence[LitePullConsumer], queues: int) -> list[frozenset[MessageQueue]]:
    with trio.fail_after(SETTLE_TIMEOUT):
        while True:
            owned = [c.assignment() for c in consumers]
            union = frozenset().union(*owned)
            if len(union) == queues and sum(len(o) for o in owned) == queues and all(owned):
                return owned
            await trio.sleep(0.2)


async def test_two_subscribed_consumers_split_the_queues(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(8)
    group = f"it-lite-split-{topic}"
    async with lite(cluster, group) as first, lite(cluster, group) as second:
        first.subscribe(topic)
        second.subscribe(topic)
        owned = await _settled([first, second], 16)
    assert not owned[0] & owned[1]
    assert {len(o) for o in owned} == {8}  # AVG: 16 queues, 2 members


async def test_no_message_lost_across_a_rebalance(cluster: Cluster, create_topic: Callable[..., str]) -> None:
    topic = create_topic(8)
    group = f"it-lite-rebalance-{topic}"
    sent: list[str] = []
    got: dict[str, list[MessageExt]] = {"first": [], "second": []}

    def all_seen() -> bool:
        return set(sent) <= {m.msg_id for ms in got.values() for m in ms}

    async def produce(producer: Producer, count: int) -> None:
        for i in range(count):
            sent.append((await producer.send(Message(topic, f"m-{len(sent)}-{i}".encode()))).msg_id)
            await trio.sleep(0.01)

    async def consume(name: str, consumer: LitePullConsumer) -> None:
        while True:
            got[name].extend(await consumer.poll(timeout=0.5))

    # Default CONSUME_FROM_LAST_OFFSET: the group's position is fixed when a queue is first assigned.
    async with (
        Producer("it-lite-producer", namesrv=cluster.namesrv_addr) as producer,
        lite(cluster, group) as first,
        trio.open_nursery() as nursery,
    ):
        first.subscribe(topic)
        await _settled([first], 16)
        with trio.fail_after(SETTLE_TIMEOUT):
            for mq in first.assignment():
                while await first.committed(mq) < 0:  # noqa: ASYNC110 - the broker's state, no event
                    await trio.sleep(0.2)
        nursery.start_soon(consume, "first", first)
        await produce(producer, 150)
        async with lite(cluster, group) as second:
            second.subscribe(topic)
            nursery.start_soon(consume, "second", second)
            await produce(producer, 150)
            owned = await _settled([first, second], 16)
            await produce(producer, 100)
            with trio.fail_after(60):
                while not all_seen():  # noqa: ASYNC110 - the consumers' tasks fill `got`
                    await trio.sleep(0.2)
            nursery.cancel_scope.cancel()
    seen = Counter(m.msg_id for ms in got.values() for m in ms)
    assert set(seen) == set(sent), f"lost {len(set(sent) - set(seen))} of {len(sent)}"
    assert got["first"]
    assert got["second"]
    assert all(owned)
    duplicates = sum(n - 1 for n in seen.values())
    print(f"lite pull rebalance 1 -> 2: {len(sent)} sent, {duplicates} duplicates")


async def test_seek_to_timestamp_lands_at_the_first_message_stored_at_or_after(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(1)

    def first_queue(queues: Sequence[MessageQueue], message: Message, arg: Any) -> MessageQueue:
        return min(queues)

    async with Producer("it-lite-producer", namesrv=cluster.namesrv_addr) as producer:
        sent = []
        for i in range(20):
            sent.append((await producer.send(Message(topic, f"t-{i}".encode()), selector=first_queue)).msg_id)
            await trio.sleep(0.05)
    async with lite(cluster, f"it-lite-ts-{topic}", auto_commit=False) as consumer:
        queues = await consumer.fetch_message_queues(topic)
        consumer.assign(queues)
        mq = min(queues)
        for queue in queues:
            await consumer.seek_to_beginning(queue)
        got: list[MessageExt] = []
        await drain(consumer, set(sent), got)
        stored = sorted(got, key=lambda m: m.queue_offset)
        assert [m.queue_offset for m in stored] == list(range(20))
        for k in (0, 7, 13, 19):
            target = stored[k].store_timestamp
            expected = next(m.queue_offset for m in stored if m.store_timestamp >= target)
            await consumer.seek_to_timestamp(mq, target)
            with trio.fail_after(30):
                batch: list[MessageExt] = []
                while not batch:
                    batch = await consumer.poll(timeout=1)
            assert batch[0].queue_offset == expected
        # After the last message: the end of the queue.
        assert await consumer.offset_for_timestamp(mq, stored[-1].store_timestamp + 60_000) == 20


async def test_committed_reflects_commit(cluster: Cluster, create_topic: Callable[..., str]) -> None:
    topic = create_topic(2)
    async with Producer("it-lite-producer", namesrv=cluster.namesrv_addr) as producer:
        sent = [(await producer.send(Message(topic, f"c-{i}".encode()))).msg_id for i in range(40)]
    group = f"it-lite-commit-{topic}"
    async with lite(
        cluster, group, auto_commit=False, consume_from_where="CONSUME_FROM_FIRST_OFFSET"
    ) as consumer:
        queues = await consumer.fetch_message_queues(topic)
        consumer.assign(queues)
        got: list[MessageExt] = []
        await drain(consumer, set(sent), got)
        assert {await consumer.committed(mq) for mq in queues} <= {-1, 0}  # nothing committed yet
        await consumer.commit()
        by_queue = Counter((m.store_host, m.queue_id) for m in got)
        committed = {mq: await consumer.committed(mq) for mq in queues}
        assert sum(committed.values()) == len(sent) == sum(by_queue.values())
        await consumer.commit({queues[0]: 1})
        assert await consumer.committed(queues[0]) == 1
    # A second member of the group starts where the group committed.
    async with lite(cluster, group, consume_from_where="CONSUME_FROM_FIRST_OFFSET") as again:
        again.assign([queues[0]])
        want = committed[queues[0]] - 1
        with trio.fail_after(30):
            replay: list[MessageExt] = []
            while len(replay) < want:
                replay.extend(await again.poll(timeout=1))
        assert [m.queue_offset for m in replay] == list(range(1, committed[queues[0]]))


def test_blocking_facade_round_trip(cluster: Cluster, create_topic: Callable[..., str]) -> None:
    topic = create_topic(2)
    with SyncProducer("it-lite-sync-producer", namesrv=cluster.namesrv_addr) as producer:
        sent = {producer.send(SyncMessage(topic, f"s-{i}".encode())).msg_id for i in range(30)}
    consumer = SyncLitePullConsumer(
        f"it-lite-sync-{topic}",
        namesrv=cluster.namesrv_addr,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        instance_name=f"lite-sync-{uuid.uuid4().hex[:8]}",
    )
    consumer.subscribe(topic)
    got: list[MessageExt] = []
    deadline = time.monotonic() + 60
    with consumer:
        for msg in consumer:
            got.append(msg)
            if {m.msg_id for m in got} >= sent or time.monotonic() > deadline:
                break
        assert len(consumer.assignment()) == 4
        consumer.commit()
        committed = sum(consumer.committed(mq) for mq in consumer.assignment())
        lags = consumer.lag()  # the blocking facade's lag() and end_offsets()
        ends = consumer.end_offsets(consumer.assignment())
    assert {m.msg_id for m in got} == sent
    assert committed == 30
    assert sum(ends.values()) == 30
    assert [(lag.behind, lag.committed) for lag in lags] == [(0, ends[lag.queue]) for lag in lags]
    assert list(consumer) == []  # iteration ends once shut down


async def test_lag_and_the_ends_of_queues_on_the_real_broker(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    """The twin of ``tests/consumer/test_lag.py``: the broker's max offsets, stored offsets and
    store timestamps, as ``lag()``, ``end_offsets()`` and ``beginning_offsets()`` read them."""
    topic = create_topic(1)
    async with Producer("it-lite-producer", namesrv=cluster.namesrv_addr) as producer:
        for i in range(12):
            await producer.send(Message(topic, f"lag-{i}".encode()))
    sent_at = time.time()
    group = f"it-lite-lag-{topic}"
    async with lite(
        cluster, group, auto_commit=False, pull_batch_size=2, consume_from_where="CONSUME_FROM_FIRST_OFFSET"
    ) as consumer:
        queues = await consumer.fetch_message_queues(topic)
        # Every send stored (a send retried after a timeout may be stored twice: through a Proxy).
        # A queue's max offset counts a message once the broker's dispatch thread has put it in the
        # consume queue, moments after the send was answered (ReputMessageService).
        with trio.fail_after(15):
            ends = await consumer.end_offsets(queues)
            while sum(ends.values()) < 12:
                await trio.sleep(0.05)
                ends = await consumer.end_offsets(queues)
        assert list(ends) == queues
        assert await consumer.beginning_offsets(queues) == dict.fromkeys(queues, 0)
        consumer.assign(queues)
        batch: list[MessageExt] = []
        with trio.fail_after(30):
            while not batch:
                batch = await consumer.poll(timeout=1)
        polled = MessageQueue(topic, batch[0].broker_name or "", batch[0].queue_id)
        lags = {lag.queue: lag for lag in await consumer.lag()}
        await consumer.commit()
        committed = {lag.queue: lag.committed for lag in await consumer.lag()}
    assert set(lags) == set(queues)
    for mq, lag in lags.items():
        if mq == polled:
            consumed = batch[-1].queue_offset + 1
            assert (lag.max_offset, lag.consumed, lag.behind) == (ends[mq], consumed, ends[mq] - consumed), (
                lag
            )
        else:  # its start offset may still be on its way (-1): then it counts from the committed, 0
            assert (lag.max_offset, lag.behind) == (ends[mq], ends[mq]), lag
            assert lag.consumed in (-1, 0), lag
        assert lag.committed in (-1, 0)
        if lag.behind:
            assert lag.oldest_age is not None
            assert 0 <= lag.oldest_age < time.time() - sent_at + 60  # stored moments ago (clocks agree)
        else:
            assert lag.oldest_age is None
    assert committed[polled] == batch[-1].queue_offset + 1
