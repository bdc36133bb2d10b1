"""Failed consumption against a real broker: the retry topic, reconsume times and the dead-letter queue.

A failed message goes back to the broker (CONSUMER_SEND_MSG_BACK), which stores it in
``%RETRY%<group>`` after delay level 3 + reconsume times (10 s, 30 s, 1 min, ... by default) and,
once the reconsume times reach the group's maximum, in ``%DLQ%<group>`` instead. These tests run a
dedicated one-broker cluster whose 18 delay levels are all 1 s, so a retry comes back in about a
second.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterator

import pytest
import trio

from rocketmq_py import ConsumeStatus, Message, MessageExt, Producer, PushConsumer
from rocketmq_py.errors import ClusterError
from rocketmq_py.testing import Cluster, LocalCluster

FAST_DELAY_LEVELS = " ".join(["1s"] * 18)


@pytest.fixture(scope="module")
def fast_retry_cluster(cluster: Cluster) -> Iterator[Cluster]:
    """A NameServer and one broker with every delay level at 1 s (``cluster`` only gates the run)."""
    try:
        started = LocalCluster(
            1, version=cluster.version, broker_config={"messageDelayLevel": FAST_DELAY_LEVELS}
        ).start()
    except ClusterError as exc:
        if os.environ.get("CI") or os.environ.get("RMQ_REQUIRE_BROKER") == "1":
            pytest.fail(f"the fast-retry cluster could not start:\n{exc}", pytrace=False)
        pytest.skip(f"no fast-retry cluster: {exc}")
    with started:
        yield started


Deliveries = list[tuple[bytes, int, str, str]]  # (body, reconsume times, topic, msg id)


def recording(
    deliveries: Deliveries, fail: Callable[[MessageExt], bool]
) -> Callable[[list[MessageExt]], Awaitable[ConsumeStatus]]:
    async def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        status = ConsumeStatus.CONSUME_SUCCESS
        for m in msgs:
            deliveries.append((m.body, m.reconsume_times, m.topic, m.msg_id))
            if fail(m):
                status = ConsumeStatus.RECONSUME_LATER
        return status

    return listener


async def send(cluster: Cluster, topic: str, body: bytes) -> str:
    async with Producer("it-retry-producer", namesrv=cluster.namesrv_addr) as producer:
        return (await producer.send(Message(topic, body))).msg_id


async def wait_until(predicate: Callable[[], bool]) -> None:
    """Poll ``predicate`` until it holds (use under ``trio.fail_after``)."""
    while not predicate():  # noqa: ASYNC110 - the listener fills the state, no event to wait on
        await trio.sleep(0.05)


async def test_failing_three_times_then_succeeding_sees_reconsume_times_3(
    fast_retry_cluster: Cluster,
) -> None:
    cluster = fast_retry_cluster
    topic = "it-retry-flaky"
    cluster.create_topic(topic, 2)
    group = "it-retry-flaky-group"
    deliveries: Deliveries = []
    consumer = PushConsumer(
        group,
        namesrv=cluster.namesrv_addr,
        listener=recording(deliveries, lambda m: m.reconsume_times < 3),
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        rebalance_interval=1,
    )
    consumer.subscribe(topic)
    async with consumer:
        msg_id = await send(cluster, topic, b"flaky")
        with trio.fail_after(40):
            await wait_until(lambda: len(deliveries) >= 4)
        await trio.sleep(2)  # a success is final: no fifth delivery
    assert [d[1] for d in deliveries] == [0, 1, 2, 3]
    # Redeliveries come from %RETRY%group but show the original topic and id.
    assert {(d[0], d[2], d[3]) for d in deliveries} == {(b"flaky", topic, msg_id)}


async def test_always_failing_message_lands_in_the_dlq(fast_retry_cluster: Cluster) -> None:
    cluster = fast_retry_cluster
    topic = "it-retry-doomed"
    cluster.create_topic(topic, 2)
    group = "it-retry-doomed-group"
    deliveries: Deliveries = []
    consumer = PushConsumer(
        group,
        namesrv=cluster.namesrv_addr,
        listener=recording(deliveries, lambda m: True),
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        max_reconsume_times=2,
        rebalance_interval=1,
    )
    consumer.subscribe(topic)
    async with consumer:
        msg_id = await send(cluster, topic, b"doomed")
        with trio.fail_after(40):
            await wait_until(lambda: len(deliveries) >= 3)
        await trio.sleep(3)  # the third failure sends it to the DLQ, not back again
    # The first delivery and two retries; the broker then moved it to the dead-letter queue.
    assert [d[1] for d in deliveries] == [0, 1, 2]

    dead: list[MessageExt] = []

    async def collect(msgs: list[MessageExt]) -> None:
        dead.extend(msgs)

    reader = PushConsumer(
        "it-dlq-reader",
        namesrv=cluster.namesrv_addr,
        listener=collect,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
    )
    reader.subscribe(f"%DLQ%{group}")
    async with reader:
        with trio.fail_after(20):
            await wait_until(lambda: bool(dead))
        await trio.sleep(1)
    assert len(dead) == 1
    (letter,) = dead
    assert letter.topic == f"%DLQ%{group}"
    assert letter.body == b"doomed"
    assert letter.msg_id == msg_id
    assert letter.properties.get("RETRY_TOPIC") == topic
    assert letter.reconsume_times == 3  # counted up by the send-back that gave up
