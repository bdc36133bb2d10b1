"""Failed consumption against a real broker: the retry topic, reconsume times and the dead-letter queue.

A failed message goes back to the broker (CONSUMER_SEND_MSG_BACK), which stores it in
``%RETRY%<group>`` after delay level 3 + reconsume times (10 s, 30 s, 1 min, ... by default) and,
once the reconsume times reach the group's maximum, in ``%DLQ%<group>`` instead. These tests run a
dedicated one-broker cluster whose 18 delay levels are all 1 s, so a retry comes back in about a
second.

Delivery is at-least-once, and on a loaded machine a second *stored* copy is legitimate: the
producer abandons a send attempt after 1 s and retries it (the broker may have stored both), and
a send-back whose reply comes after its timeout is followed by a re-send to the retry topic (the
broker may have stored both; Java does the same). Each copy then goes through the retries on its
own, so a run once saw reconsume times ``[0, 0, 1, 1, 2, 2, 3]``. The tests therefore check the
retries per stored copy: no stored message is delivered twice (its commit-log position, the
offset msg id, is unique), the reconsume times first appear as 0, 1, 2, 3 in that order, every
failed delivery is followed by one with the next reconsume times, and nothing comes after the
success (or the dead-letter queue).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Delivery:
    body: bytes
    reconsume_times: int
    topic: str
    msg_id: str
    #: The stored message delivered (store host + commit-log offset): unique per stored copy.
    stored_as: str


Deliveries = list[Delivery]


def recording(
    deliveries: Deliveries, fail: Callable[[MessageExt], bool]
) -> Callable[[list[MessageExt]], Awaitable[ConsumeStatus]]:
    async def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        status = ConsumeStatus.CONSUME_SUCCESS
        for m in msgs:
            deliveries.append(Delivery(m.body, m.reconsume_times, m.topic, m.msg_id, m.offset_msg_id))
            if fail(m):
                status = ConsumeStatus.RECONSUME_LATER
        return status

    return listener


def counts(deliveries: Deliveries) -> Counter[int]:
    return Counter(d.reconsume_times for d in deliveries)


def retried_through(deliveries: Deliveries, last: int) -> bool:
    """Every failed delivery (reconsume times < ``last``) has come back with one more."""
    seen = counts(deliveries)
    return seen[0] >= 1 and all(seen[k + 1] >= seen[k] for k in range(last))


def check_retries(deliveries: Deliveries, last: int) -> None:
    """Deliveries of one message failing until reconsume times ``last``, duplicates allowed only
    as distinct stored copies (see the module docstring)."""
    times = [d.reconsume_times for d in deliveries]
    assert len({d.stored_as for d in deliveries}) == len(deliveries), (
        f"a stored copy came twice: {deliveries}"
    )
    assert list(dict.fromkeys(times)) == list(range(last + 1)), times
    for index, k in enumerate(times):  # a redelivery follows a failed delivery of the step before
        assert k == 0 or k - 1 in times[:index], times
    assert retried_through(deliveries, last), times


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
        with trio.fail_after(60):
            await wait_until(lambda: retried_through(deliveries, 3))
            await trio.sleep(2)  # a success is final: no fifth delivery (a late copy would show here)
            await wait_until(lambda: retried_through(deliveries, 3))
    # [0, 1, 2, 3]; or, after a legitimate duplicate (module docstring), e.g. [0, 0, 1, 1, 2, 2, 3, 3].
    check_retries(deliveries, 3)
    # Redeliveries come from %RETRY%group but show the original topic and id.
    assert {(d.body, d.topic, d.msg_id) for d in deliveries} == {(b"flaky", topic, msg_id)}


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
        with trio.fail_after(60):
            await wait_until(lambda: retried_through(deliveries, 2))
            await trio.sleep(3)  # the third failure sends it to the DLQ, not back again
            await wait_until(lambda: retried_through(deliveries, 2))
    # The first delivery and two retries ([0, 1, 2], or each stored copy's own [0, 1, 2]); the
    # broker then moved it to the dead-letter queue.
    check_retries(deliveries, 2)
    assert {(d.body, d.topic, d.msg_id) for d in deliveries} == {(b"doomed", topic, msg_id)}
    last_failures = counts(deliveries)[2]

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
            await wait_until(lambda: len(dead) >= last_failures)
        await trio.sleep(1)  # a quiet period: a second letter (late send-back reply) would show here
    # One letter per last failure (so one, unless a copy was duplicated), or two if the reply to
    # its send-back came too late (the re-send goes to the DLQ as well); each stored once.
    assert last_failures <= len(dead) <= 2 * last_failures, [d.reconsume_times for d in deliveries]
    assert len({letter.offset_msg_id for letter in dead}) == len(dead)
    for letter in dead:
        assert letter.topic == f"%DLQ%{group}"
        assert letter.body == b"doomed"
        assert letter.msg_id == msg_id
        assert letter.properties.get("RETRY_TOPIC") == topic
        assert letter.reconsume_times == 3  # counted up by the send-back that gave up
