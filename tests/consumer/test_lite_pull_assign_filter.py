"""LitePullConsumer: a filter expression in assign mode, and queue-change listeners (fake brokers)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing

from rocketmq_py.consumer._lite_pull import LitePullConsumer
from rocketmq_py.errors import StateError
from rocketmq_py.protocol import MessageExt, MessageQueue, RemotingCommand, RequestCode

if TYPE_CHECKING:
    from conftest import Cluster

MakeLite = Callable[..., LitePullConsumer]
SUBSCRIPTION_FLAG = 0x4


@pytest.fixture
def make_lite(cluster: Cluster) -> MakeLite:
    def make(**options: Any) -> LitePullConsumer:
        options.setdefault("namesrv", cluster.namesrv.address)
        options.setdefault("instance_name", "me")
        options.setdefault("client_ip", "127.0.0.1")
        options.setdefault("consume_from_where", "CONSUME_FROM_FIRST_OFFSET")
        return LitePullConsumer(options.pop("group", cluster.group), **options)

    return make


def put_tagged(cluster: Cluster, mq: MessageQueue, tags: list[str | None]) -> None:
    for tag in tags:
        cluster.put(mq, 1, tags=tag)


async def poll_for(consumer: LitePullConsumer, seconds: float) -> list[MessageExt]:
    got: list[MessageExt] = []
    with trio.move_on_after(seconds):
        while True:
            got.extend(await consumer.poll(timeout=1))
    return got


# --- assign with an expression ------------------------------------------------------------------


async def test_assign_with_a_tag_expression_returns_only_those_tags(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    a0, _, b0, _ = cluster.queues()
    put_tagged(cluster, a0, ["a", "b", "a", None, "b", "a"])
    put_tagged(cluster, b0, ["b", "a"])
    async with make_lite() as consumer:
        consumer.assign([a0, b0], "a")
        got = await poll_for(consumer, 10)
        info = consumer._running_info()
    assert sorted((m.queue_id, m.broker_name, m.queue_offset) for m in got) == [
        (0, "broker-a", 0),
        (0, "broker-a", 2),
        (0, "broker-a", 5),
        (0, "broker-b", 1),
    ]
    assert {m.tags for m in got} == {"a"}
    # Each pull carried the expression (subscription flag set), so the broker filtered.
    pulls = cluster.pulls(cluster.a, a0) + cluster.pulls(cluster.b, b0)
    assert pulls
    assert all(
        p.subscription == "a" and p.expression_type == "TAG" and p.sys_flag & SUBSCRIPTION_FLAG for p in pulls
    )
    # Nothing is registered with the brokers in assign mode; running info shows the expression.
    assert [(s.topic, s.sub_string) for s in info.subscription_set] == [(cluster.topic, "a")]
    assert all(not beat.consumer_data_set[0].subscription_data_set for beat in cluster.heartbeats(cluster.a))


async def test_assign_rechecks_tags_on_the_client(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    # A real broker filters by the tag's hash ("Aa" and "BB" share Java's hashCode): this one
    # ignores the expression altogether, and the client still keeps only the wanted tags.
    a0 = cluster.queues()[0]
    put_tagged(cluster, a0, ["Aa", "BB", None, "Aa", "Cc"])
    pull = cluster.a._handlers[RequestCode.PULL_MESSAGE]

    async def unfiltered(request: RemotingCommand) -> RemotingCommand | None:
        fields = {k: v for k, v in request.ext_fields.items() if k != "subscription"}
        return await pull(dataclasses.replace(request, ext_fields=fields))

    cluster.a.on(RequestCode.PULL_MESSAGE, unfiltered)
    async with make_lite() as consumer:
        consumer.assign([a0], "Aa || Cc")
        got = await poll_for(consumer, 10)
        assert consumer._queues[a0].next_offset == 5  # every message was pulled
    assert [(m.queue_offset, m.tags) for m in sorted(got, key=lambda m: m.queue_offset)] == [
        (0, "Aa"),
        (3, "Aa"),
        (4, "Cc"),
    ]


async def test_reassign_without_expression_keeps_it_and_a_new_one_applies_from_the_consumed_offset(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    a0, a1, _, _ = cluster.queues()
    put_tagged(cluster, a0, ["a", "b"])
    put_tagged(cluster, a1, ["a", "b"])
    async with make_lite() as consumer:
        consumer.assign([a0], "a")
        first = await poll_for(consumer, 5)
        consumer.assign([a0, a1])  # no expression: the topic keeps "a"
        second = await poll_for(consumer, 5)
        version = consumer._subscriptions[cluster.topic].sub_version
        consumer.assign([a0, a1], "b")
        assert consumer._subscriptions[cluster.topic].sub_version > version
        put_tagged(cluster, a0, ["a", "b"])
        third = await poll_for(consumer, 5)
    assert [(m.queue_id, m.queue_offset) for m in first] == [(0, 0)]
    assert [(m.queue_id, m.queue_offset) for m in second] == [(1, 0)]
    # The new expression applies from the first message not polled yet: the "b"s skipped under
    # "a" (offset 1 of each queue) come now, and so does the new one.
    assert sorted((m.queue_id, m.queue_offset, m.tags) for m in third) == [
        (0, 1, "b"),
        (0, 3, "b"),
        (1, 1, "b"),
    ]


async def test_assign_expression_before_start_and_its_checks(make_lite: MakeLite, cluster: Cluster) -> None:
    a0 = cluster.queues()[0]
    consumer = make_lite()
    consumer.assign([a0], "x || y")
    sub = consumer._subscriptions[cluster.topic]
    assert (sub.sub_string, sub.tags_set) == ("x || y", frozenset({"x", "y"}))
    with pytest.raises(ValueError, match="NOPE"):
        consumer.assign([a0], "a", expression_type="NOPE")
    sql = make_lite()
    sql.assign([a0], "a > 1", expression_type="sql92")
    assert sql._subscriptions[cluster.topic].expression_type.value == "SQL92"
    other = make_lite()
    other.subscribe(cluster.topic)
    with pytest.raises(StateError):
        other.assign([a0], "a")


# --- queue-change listeners -----------------------------------------------------------------------


def grow_topic(cluster: Cluster, queues: int) -> None:
    """Give ``cluster.topic`` ``queues`` queues on each broker (route and stores)."""
    for fb in cluster.brokers:
        fb.add_topic(cluster.topic, queues=queues)
    cluster.namesrv.set_route(cluster.topic, cluster.route(cluster.a, cluster.b, queues=queues))


async def test_listener_hears_the_queues_at_start_and_after_the_topic_grows(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    heard: list[tuple[str, frozenset[MessageQueue], float]] = []

    def listener(topic: str, queues: frozenset[MessageQueue]) -> None:
        heard.append((topic, queues, trio.current_time()))

    consumer = make_lite(topic_metadata_check_interval=10)
    consumer.register_queue_change_listener(cluster.topic, listener)
    async with consumer:
        assert [(t, q) for t, q, _ in heard] == [(cluster.topic, frozenset(cluster.queues()))]
        started = trio.current_time()
        await trio.sleep(35)  # three checks, nothing changed: not called again
        assert len(heard) == 1
        grow_topic(cluster, 4)
        await cluster.wait_until(lambda: len(heard) == 2)
        await trio.sleep(25)
    topic, queues, when = heard[1]
    assert topic == cluster.topic
    assert queues == {
        MessageQueue(cluster.topic, fb.broker_name, q) for fb in cluster.brokers for q in range(4)
    }
    assert isinstance(queues, frozenset)
    assert when - started <= 40 + 1e-6  # the first check after the change (every 10 s)
    assert len(heard) == 2


async def test_async_listener_registered_while_running_is_called_at_once_and_may_assign(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    for mq in cluster.queues():
        cluster.put(mq, 2)
    async with make_lite() as consumer:

        async def reassign(topic: str, queues: frozenset[MessageQueue]) -> None:
            await trio.lowlevel.checkpoint()
            consumer.assign(queues)

        await trio.sleep(5)
        consumer.register_queue_change_listener(cluster.topic, reassign)
        await cluster.wait_until(lambda: consumer.assignment() == frozenset(cluster.queues()), timeout=1)
        got = await poll_for(consumer, 5)
        assert len(got) == 8
        grow_topic(cluster, 3)
        new = [MessageQueue(cluster.topic, fb.broker_name, 2) for fb in cluster.brokers]
        for mq in new:
            cluster.put(mq, 1)
        more = await poll_for(consumer, 40)
    assert sorted((m.broker_name, m.queue_id) for m in more) == [("broker-a", 2), ("broker-b", 2)]


async def test_a_failing_listener_is_logged_and_polling_goes_on(
    cluster: Cluster,
    make_lite: MakeLite,
    autojump_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    a0 = cluster.queues()[0]
    calls: list[int] = []

    def broken(topic: str, queues: frozenset[MessageQueue]) -> None:
        calls.append(len(queues))
        raise RuntimeError("listener bug")

    consumer = make_lite(topic_metadata_check_interval=5)
    consumer.register_queue_change_listener(cluster.topic, broken)
    consumer.register_queue_change_listener("NoSuchTopic", broken)  # its route fetch fails: logged
    with caplog.at_level(logging.WARNING, logger="rocketmq_py.consumer.lite"):
        async with consumer:
            consumer.assign([a0])
            cluster.put(a0, 3)
            assert len(await poll_for(consumer, 3)) == 3
            grow_topic(cluster, 3)
            await trio.sleep(6)
            cluster.put(a0, 2)
            assert len(await poll_for(consumer, 3)) == 2
            assert consumer._nursery is not None  # still running
    assert calls == [4, 6]
    failures = [r for r in caplog.records if "queue-change listener" in r.getMessage()]
    assert len(failures) == 2
    assert all(r.exc_info and isinstance(r.exc_info[1], RuntimeError) for r in failures)
    assert any("NoSuchTopic" in r.getMessage() for r in caplog.records)


async def test_a_replaced_listener_and_a_reopened_consumer_hear_the_current_queues(
    cluster: Cluster, make_lite: MakeLite, autojump_clock: trio.testing.MockClock
) -> None:
    first: list[int] = []
    second: list[int] = []
    consumer = make_lite()
    consumer.register_queue_change_listener(cluster.topic, lambda _t, q: first.append(len(q)))
    async with consumer:
        consumer.register_queue_change_listener(cluster.topic, lambda _t, q: second.append(len(q)))
        await cluster.wait_until(lambda: second == [4], timeout=1)
    async with consumer:
        assert second == [4, 4]
    assert first == [4]
    assert consumer.topic_metadata_check_interval == 30
    assert consumer._watcher.topics() == {cluster.topic}
