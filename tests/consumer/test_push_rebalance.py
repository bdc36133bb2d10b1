"""PushConsumer rebalancing against fake brokers: when it runs, what it allocates, drop and start."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from rocketmq_py.consumer._push import PushConsumer
from rocketmq_py.protocol import (
    HeartbeatData,
    MessageQueue,
    PullMessageRequestHeader,
    QueryConsumerOffsetRequestHeader,
    RequestCode,
    decode_body,
    from_ext_fields,
)

if TYPE_CHECKING:
    from conftest import Cluster, Recorder

MakeConsumer = Callable[..., PushConsumer]
ME = "127.0.0.1@me"
OTHER_LOW = "127.0.0.1@aa"  # sorts before ME
OTHER_HIGH = "127.0.0.1@zz"  # sorts after ME
ID_QUERY = RequestCode.GET_CONSUMER_LIST_BY_GROUP


def id_queries(cluster: Cluster) -> int:
    return sum(len(fb.requests(ID_QUERY)) for fb in cluster.brokers)


def offset_queries(cluster: Cluster, mq: MessageQueue) -> int:
    headers = [
        from_ext_fields(QueryConsumerOffsetRequestHeader, cmd.ext_fields)
        for cmd in cluster.broker(mq).requests(RequestCode.QUERY_CONSUMER_OFFSET)
    ]
    return sum(1 for h in headers if (h.topic, h.queue_id) == (mq.topic, mq.queue_id))


def topic_queues(consumer: PushConsumer, topic: str) -> list[MessageQueue]:
    return [mq for mq in sorted(consumer.assignment()) if mq.topic == topic]


# --- at start ------------------------------------------------------------------------------------


async def test_start_registers_by_heartbeat_then_owns_every_queue_alone(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    async with make_consumer() as consumer:
        assert consumer.client_id == ME
        assert topic_queues(consumer, cluster.topic) == cluster.queues()
        assert topic_queues(consumer, cluster.retry) == cluster.queues(cluster.retry)
        # The group's member list came from a broker, which knew us from the heartbeat.
        assert id_queries(cluster) == 2  # one per subscribed topic: TopicTest and the retry topic
        for fb in cluster.brokers:
            assert fb.consumers == {cluster.group: [ME]}
        await cluster.wait_until(lambda: cluster.pulled_queues() == set(cluster.queues()))
        await cluster.wait_until(
            lambda: cluster.pulled_queues(cluster.retry) == set(cluster.queues(cluster.retry))
        )
    for fb in cluster.brokers:  # UNREGISTER_CLIENT took us out of the group again
        assert fb.consumers == {cluster.group: []}


@pytest.mark.parametrize(
    ("members", "expected"),
    [
        ((ME, OTHER_HIGH), ["broker-a/0", "broker-a/1"]),
        ((OTHER_LOW, ME), ["broker-b/0", "broker-b/1"]),
        ((OTHER_LOW, ME, OTHER_HIGH), ["broker-b/0"]),  # 4 queues, 3 members: 2, 1, 1
        ((OTHER_HIGH, OTHER_LOW, ME), ["broker-b/0"]),  # the broker's order does not matter
        ((OTHER_LOW, OTHER_HIGH), []),  # not a member (yet): nothing
    ],
)
async def test_allocation_follows_the_members_the_broker_names(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    autojump_clock: trio.testing.MockClock,
    members: tuple[str, ...],
    expected: list[str],
) -> None:
    cluster.answer_consumer_ids(*members)
    async with make_consumer() as consumer:
        owned = topic_queues(consumer, cluster.topic)
        assert [f"{mq.broker_name}/{mq.queue_id}" for mq in owned] == expected
        await trio.sleep(5)
        assert cluster.pulled_queues() == set(owned)


# --- triggers ------------------------------------------------------------------------------------


async def test_rebalance_runs_every_20_seconds_by_default(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    async with make_consumer() as consumer:
        assert consumer.rebalance_interval == 20
        start = trio.current_time()
        assert id_queries(cluster) == 2
        await trio.sleep_until(start + 19.5)
        assert id_queries(cluster) == 2
        await trio.sleep_until(start + 20.5)
        assert id_queries(cluster) == 4
        await trio.sleep_until(start + 39.5)
        assert id_queries(cluster) == 4
        await trio.sleep_until(start + 40.5)
        assert id_queries(cluster) == 6


async def test_rebalance_interval_is_configurable(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    async with make_consumer(rebalance_interval=3):
        start = trio.current_time()
        await trio.sleep_until(start + 10)
        assert id_queries(cluster) == 2 * 4  # at 0, 3, 6, 9


async def test_notify_consumer_ids_changed_rebalances_at_once(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    async with make_consumer():
        await trio.sleep(5)
        assert id_queries(cluster) == 2
        notified = trio.current_time()
        await cluster.notify_ids_changed(cluster.b)
        await cluster.wait_until(lambda: id_queries(cluster) == 4)
        assert trio.current_time() - notified < 0.5  # not at the 20 s tick
        # The periodic tick is not disturbed by the extra round.
        await trio.sleep(10)
        assert id_queries(cluster) == 4


async def test_member_change_drops_old_queues_and_starts_new_ones(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    cluster.group_consumed_before()  # offsets on every queue, committed back when a queue leaves
    a0, a1, b0, b1 = cluster.queues()
    cluster.answer_consumer_ids(ME, OTHER_HIGH)
    async with make_consumer() as consumer:
        assert topic_queues(consumer, cluster.topic) == [a0, a1]
        cluster.put(a0, 3)
        await cluster.wait_until(lambda: len(recorder.messages) == 3)
        assert consumer._offset_store.get(a0) == 3

        cluster.answer_consumer_ids(OTHER_LOW, ME)
        await cluster.notify_ids_changed(cluster.a)
        await cluster.wait_until(lambda: topic_queues(consumer, cluster.topic) == [b0, b1])
        changed = len(cluster.a.received)

        # Each dropped queue had its offset committed synchronously, then left the table.
        assert cluster.offset_updates(cluster.a, a0)[-1] == (3, False)
        assert cluster.offset_updates(cluster.a, a1)[-1] == (0, False)
        assert consumer._offset_store.get(a0) == consumer._offset_store.get(a1) == -1
        assert {mq.queue_id for mq in consumer._offset_store.snapshot() if mq.topic == cluster.topic} == {
            0,
            1,
        }
        assert all(
            mq.broker_name == "broker-b"
            for mq in consumer._offset_store.snapshot()
            if mq.topic == cluster.topic
        )

        # The new queues are pulled and consumed, the old ones not any more.
        await cluster.wait_until(lambda: {b0, b1} <= cluster.pulled_queues())
        cluster.put(b1, 2)
        cluster.put(a0, 2)
        await cluster.wait_until(lambda: len(recorder.messages) == 5)
        await trio.sleep(30)
        assert recorder.offsets(b1) == [0, 1]
        assert recorder.offsets(a0) == [0, 1, 2]
        later_pulls = [cmd for cmd in cluster.a.received[changed:] if cmd.code == RequestCode.PULL_MESSAGE]
        assert [cmd for cmd in later_pulls if cmd.ext_fields["topic"] == cluster.topic] == []


async def test_heartbeat_with_newer_sub_version_goes_out_before_the_first_pull_of_a_new_queue(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    b0 = cluster.queues()[2]
    cluster.answer_consumer_ids(ME, OTHER_HIGH)
    async with make_consumer() as consumer:
        await trio.sleep(1)
        before = consumer._subscriptions[cluster.topic].sub_version
        cluster.answer_consumer_ids(OTHER_LOW, ME)
        await cluster.notify_ids_changed(cluster.a)
        await cluster.wait_until(lambda: b0 in cluster.pulled_queues())

    received = cluster.b.received
    first_pull = next(
        i
        for i, cmd in enumerate(received)
        if cmd.code == RequestCode.PULL_MESSAGE and cmd.ext_fields["topic"] == cluster.topic
    )
    pull_version = int(received[first_pull].ext_fields["subVersion"])
    assert pull_version > before
    beats = [
        decode_body(HeartbeatData, cmd.body)
        for cmd in received[:first_pull]
        if cmd.code == RequestCode.HEART_BEAT and cmd.body
    ]
    assert beats, "no heartbeat before the first pull"
    (consumer_data,) = beats[-1].consumer_data_set
    assert consumer_data.group_name == cluster.group
    subs = {sub.topic: sub for sub in consumer_data.subscription_data_set}
    assert set(subs) == {cluster.topic, cluster.retry}
    assert subs[cluster.topic].sub_version == pull_version
    assert subs[cluster.topic].sub_string == "*"


async def test_subscription_and_heartbeat_reach_every_broker_before_any_pull(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    async with make_consumer("TagA || TagB") as consumer:
        await cluster.wait_until(lambda: cluster.pulled_queues() == set(cluster.queues()))
        assert consumer.assignment()
    for fb in cluster.brokers:
        first_pull = next(i for i, cmd in enumerate(fb.received) if cmd.code == RequestCode.PULL_MESSAGE)
        heartbeats = [
            cmd for cmd in fb.received[:first_pull] if cmd.code == RequestCode.HEART_BEAT and cmd.body
        ]
        assert heartbeats
        (data,) = decode_body(HeartbeatData, heartbeats[-1].body).consumer_data_set
        (sub,) = [s for s in data.subscription_data_set if s.topic == cluster.topic]
        assert sub.tags_set == {"TagA", "TagB"}
        assert data.consume_type.name == "CONSUME_PASSIVELY"
        assert data.message_model.name == "CLUSTERING"
        # Every pull is never newer than what the broker knows: the subscription versions of the
        # last heartbeat it received before that pull (a topic rebalanced later renews its own
        # version and heartbeats before its pulls, while the first topic's pulls already run).
        registered: dict[str, int] = {}
        for cmd in fb.received:
            if cmd.code == RequestCode.HEART_BEAT and cmd.body:
                (beat,) = decode_body(HeartbeatData, cmd.body).consumer_data_set
                registered = {s.topic: s.sub_version for s in beat.subscription_data_set}
            elif cmd.code == RequestCode.PULL_MESSAGE:
                pull = from_ext_fields(PullMessageRequestHeader, cmd.ext_fields)
                assert pull.sub_version <= registered[pull.topic]


# --- idle pulls ----------------------------------------------------------------------------------


async def test_queue_whose_pull_attempt_outlasts_the_idle_limit_is_dropped_and_rebuilt(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A pull loop stuck in one attempt for longer than ``pull_max_idle_time`` counts as lost.

    Every attempt stamps the queue (tests/consumer/test_push_idle.py): with Java's 120 s limit
    and its 30-s pull timeout, only a loop that stopped altogether goes idle. A limit shorter
    than one held pull shows the rebuild.
    """
    a0, _, b0, _ = cluster.queues()
    cluster.a.never_reply(RequestCode.PULL_MESSAGE)  # broker-a holds every pull for its 30 s
    async with make_consumer(pull_max_idle_time=10) as consumer:
        start = trio.current_time()
        assert offset_queries(cluster, a0) == 1
        await trio.sleep_until(start + 19)
        assert offset_queries(cluster, a0) == 1  # still the first ProcessQueue
        await cluster.wait_until(lambda: offset_queries(cluster, a0) == 2)
        # Found idle at the first rebalance after 10 s inside one attempt: the one at 20 s.
        assert 20 <= trio.current_time() - start <= 21
        assert a0 in consumer.assignment()
        assert offset_queries(cluster, b0) == 1  # broker-b's queues answered all along

        cluster.a.clear_faults()
        cluster.put(a0, 2)
        await cluster.wait_until(lambda: recorder.offsets(a0) == [0, 1])


async def test_resubscribing_sends_a_heartbeat_with_a_strictly_newer_sub_version(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    """The broker ignores a subscription whose subVersion is not greater than the registered one."""
    async with make_consumer("TagA") as consumer:
        versions = [consumer._subscriptions[cluster.topic].sub_version]
        for tag in ("TagB", "TagC", "TagD"):  # within one millisecond of each other
            consumer.subscribe(cluster.topic, tag)
            versions.append(consumer._subscriptions[cluster.topic].sub_version)
        assert versions == sorted(set(versions))
        seen = len(cluster.heartbeats(cluster.a))
        await cluster.wait_until(lambda: len(cluster.heartbeats(cluster.a)) > seen)
    (data,) = cluster.heartbeats(cluster.a)[seen].consumer_data_set
    (sub,) = [s for s in data.subscription_data_set if s.topic == cluster.topic]
    assert sub.tags_set == {"TagD"}
    assert sub.sub_version >= versions[-1]


async def test_a_queue_whose_start_offset_could_not_be_read_is_taken_at_the_next_round_a_second_later(
    cluster: Cluster, make_consumer: MakeConsumer, recorder: Recorder, autojump_clock: trio.testing.MockClock
) -> None:
    """A round that could not take every queue it was given (the broker did not answer the start
    offset: restarting, or cut off) is followed by another one second later, not at the next
    periodic round (20 s): Java's ``RebalanceService`` waits ``minInterval`` (1 s) after a round
    whose working queues differ from its allocation (``RebalanceImpl.rebalanceByTopic``:
    ``balanced = allocateResultSet.equals(getWorkingMessageQueue(topic))``). The stop's CI run of
    ``integration/test_chaos.py`` rebuilt the idle queues of a killed broker and read their
    offsets from it while it was down; they were taken only at a later round."""
    a0 = cluster.queues()[0]
    cluster.a.drop_on(RequestCode.QUERY_CONSUMER_OFFSET)
    async with make_consumer() as consumer:
        assert a0 not in consumer.assignment()
        await trio.sleep(3)
        cluster.a.clear_faults()
        answered_at = trio.current_time()
        cluster.put(a0, 1)
        await cluster.wait_until(lambda: len(recorder.messages) == 1)
        assert trio.current_time() - answered_at < 3  # virtual time: the next periodic round was 17 s away
    assert recorder.bodies() == [b"broker-a/0-0"]


async def test_a_round_that_failed_is_followed_by_another_a_second_later(
    cluster: Cluster, make_consumer: MakeConsumer, recorder: Recorder, autojump_clock: trio.testing.MockClock
) -> None:
    """No broker answered the group's members: the round failed, and the next comes 1 s later, not
    20 s (Java ``RebalanceImpl.doRebalance``: an exception makes the round unbalanced, a retry
    topic's aside)."""
    for fb in cluster.brokers:
        fb.drop_on(ID_QUERY)
    async with make_consumer() as consumer:
        assert consumer.assignment() == frozenset()
        await trio.sleep(3)
        for fb in cluster.brokers:
            fb.clear_faults()
        answered_at = trio.current_time()
        cluster.put(cluster.queues()[0], 1)
        await cluster.wait_until(lambda: len(recorder.messages) == 1)
        assert trio.current_time() - answered_at < 3  # virtual time: the next periodic round was 17 s away
