"""POP on the real broker where the FakeBroker once agreed with our misreadings (issue 24): where a
new group starts, a group switched PULL -> POP -> PULL under traffic, a listener slower than the
invisible time, and a message that fails too often. The fake-broker twins are in
``tests/consumer/test_pop_start_and_switch.py`` and ``tests/consumer/test_pop_expiry.py``.

RocketMQ 5.0+ only. Topics have one queue on each broker (two in all).
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator

import pytest
import trio

from integration._pop import (
    TRAFFIC_SEND_TIMEOUT,
    keep_sending,
    pop_group,
    produce,
    set_consume_mode,
    wait_until,
)
from integration._shapes import read_topic, stored_messages
from rocketmq_py import ConsumeStatus, LitePullConsumer, Message, MessageExt, Producer, PushConsumer
from rocketmq_py.consumer._pop_acks import checkpoint_of
from rocketmq_py.errors import RocketMQError
from rocketmq_py.protocol import PropertyKey, dlq_topic, pop_retry_topic
from rocketmq_py.protocol._versions import V5_0_0
from rocketmq_py.testing import Cluster


@pytest.fixture(scope="module")
def cluster(exclusive_cluster: Cluster) -> Cluster:
    """A cluster no other worker's tests use: this module turns a broker setting off for a test
    (``initPopOffsetByCheckMsgInMem``)."""
    return exclusive_cluster


@pytest.fixture(autouse=True)
def _pop_brokers(broker_version: int, cluster: Cluster) -> None:
    if broker_version < V5_0_0:
        pytest.skip(f"RocketMQ {cluster.version} has no POP consumption (5.0+)")


def member(cluster: Cluster, group: str, topic: str, listener: object, **options: object) -> PushConsumer:
    """A member that lets the brokers assign its queues, rebalancing every 2 s."""
    options.setdefault("consume_from_where", "CONSUME_FROM_FIRST_OFFSET")
    consumer = PushConsumer(
        group,
        namesrv=cluster.namesrv_addr,
        listener=listener,  # type: ignore[arg-type]
        client_rebalance=False,
        rebalance_interval=2,
        instance_name=f"it-pop-modes-{uuid.uuid4().hex[:6]}",
        **options,  # type: ignore[arg-type]
    )
    consumer.subscribe(topic)
    return consumer


@pytest.fixture
def pop_offsets_not_from_memory(cluster: Cluster) -> Iterator[None]:
    """Every broker with ``initPopOffsetByCheckMsgInMem`` off while the test runs: else a young
    queue's first message is in memory and a new POP group starts at 0 whatever its init mode
    (``PopMessageProcessor.getInitOffset``), which hid the inverted mode."""

    def update(value: str) -> None:
        result = cluster.mqadmin(
            "updateBrokerConfig", "-c", "DefaultCluster", "-k", "initPopOffsetByCheckMsgInMem", "-v", value
        )
        assert result.ok, result.output

    update("false")
    try:
        yield
    finally:
        update("true")


@pytest.mark.usefixtures("pop_offsets_not_from_memory")
async def test_a_new_pop_group_starts_where_its_consume_from_where_says(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    """CONSUME_FROM_FIRST_OFFSET pops the backlog; CONSUME_FROM_LAST_OFFSET starts at each queue's
    last message (max offset - 1). We sent the two modes inverted: a LAST_OFFSET group replayed the
    retained log and a FIRST_OFFSET one skipped it."""
    topic = create_topic(1)
    backlog = await produce(cluster, topic, 20, prefix="old")
    first_group, last_group = pop_group(cluster, topic), pop_group(cluster, topic)
    got: dict[str, list[bytes]] = {"first": [], "last": []}

    def recorder(name: str) -> Callable[[list[MessageExt]], ConsumeStatus]:
        def listener(msgs: list[MessageExt]) -> ConsumeStatus:
            got[name].extend(m.body for m in msgs)
            return ConsumeStatus.CONSUME_SUCCESS

        return listener

    first = member(cluster, first_group, topic, recorder("first"))
    last = member(cluster, last_group, topic, recorder("last"), consume_from_where="CONSUME_FROM_LAST_OFFSET")
    async with first, last:
        with trio.fail_after(60):
            await wait_until(lambda: len(got["first"]) >= 20 and len(got["last"]) >= 1)
        fresh = await produce(cluster, topic, 4, prefix="new")
        with trio.fail_after(60):
            await wait_until(lambda: fresh <= set(got["first"]) and fresh <= set(got["last"]))
        await trio.sleep(3)  # nothing more comes
    assert sorted(got["first"]) == sorted(backlog | fresh)
    old = [b for b in got["last"] if b.startswith(b"old")]
    assert 1 <= len(old) <= 2, got["last"]  # the last message of each queue (or of the one that had any)
    assert sorted(b for b in got["last"] if b.startswith(b"new")) == sorted(fresh)


async def test_a_group_switched_pull_to_pop_to_pull_under_traffic_loses_and_repeats_nothing(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    """``mqadmin setConsumeMode`` on a running group, twice, with messages flowing: under POP, some
    messages fail once; the switch back to PULL comes before they are revived, so they come back
    through ``%RETRY%<group>_<topic>``, which the consumer subscribes on that switch. We kept
    pulling beside the pops (every message twice) and, back in PULL, never read that retry topic."""
    topic = create_topic(1)
    group = f"it-pop-switch-{uuid.uuid4().hex[:8]}"  # in the default mode, PULL
    deliveries: Counter[bytes] = Counter()
    failed_once: set[bytes] = set()
    popping = False

    log: list[tuple[bytes, str, int, str]] = []  # body, how, reconsume times, topic: for the failure message

    def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        for msg in msgs:
            deliveries[msg.body] += 1
            how = "popped" if PropertyKey.POP_CK in msg.properties else "pulled"
            log.append(
                (msg.body, how, msg.reconsume_times, msg.properties.get(PropertyKey.RETRY_TOPIC, msg.topic))
            )
        # Under POP, every fifth message fails its first delivery.
        doomed = [m.body for m in msgs if popping and m.reconsume_times == 0 and int(m.body[2:]) % 5 == 0]
        if doomed:
            failed_once.update(doomed)
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.CONSUME_SUCCESS

    sent: list[bytes] = []

    async def traffic() -> None:
        async with Producer(
            f"it-pop-switch-p-{uuid.uuid4().hex[:6]}",
            namesrv=cluster.namesrv_addr,
            send_timeout=TRAFFIC_SEND_TIMEOUT,
        ) as producer:
            for n in range(100_000):
                body = f"m-{n}".encode()
                await producer.send(Message(topic, body))
                sent.append(body)
                await trio.sleep(0.05)

    # (A pop whose reply the switch back cancels leaves its messages hidden: they are revived after
    # the invisible time, shortened here.)
    consumer = member(cluster, group, topic, listener, pop_invisible_time=20)
    async with consumer, trio.open_nursery() as nursery:
        nursery.start_soon(traffic)
        pop = consumer._pop
        assert pop is not None
        with trio.fail_after(60):
            await wait_until(lambda: len(deliveries) >= 40)  # pulled
        assert not pop.queues
        set_consume_mode(cluster, group, topic, "POP")
        popping = True
        with trio.fail_after(60):
            await wait_until(
                lambda: len(pop.queues) == 2 and not any(mq.topic == topic for mq in consumer._queues)
            )
            await wait_until(lambda: len(failed_once) >= 3)
        set_consume_mode(cluster, group, topic, "PULL")
        with trio.fail_after(60):
            await wait_until(
                lambda: not pop.queues and pop_retry_topic(topic, group) in consumer._subscriptions
            )
        popping = False
        await trio.sleep(5)
        nursery.cancel_scope.cancel()  # the traffic stops; the consumer drains what is left
    async with member(cluster, group, topic, listener, pop_invisible_time=20):
        with trio.fail_after(120):  # the failed ones: revived after 10 s, then pulled from the retry topic
            await wait_until(
                lambda: set(sent) <= set(deliveries) and all(deliveries[b] >= 2 for b in failed_once)
            )
        await trio.sleep(3)
    assert not set(sent) - set(deliveries)  # nothing lost
    # What was popped and not yet acknowledged when the pops stopped (a pop's reply cut by the
    # switch, acks on the wire) is both read again by the pulls (the broker's committed offset
    # stays before the first unacknowledged pop) and revived into the retry topic: Java's client
    # sees the same. Those in flight, at most a pop batch per queue, may come twice; nothing else.
    # On each queue they come after the last message a pop delivered from that queue, not after
    # what was sent when mqadmin returned (on a loaded machine the switch may take effect seconds
    # before that), nor after the last message popped from the other queue: a queue's last pop may
    # be in flight for seconds while the other queue's pops go on (ci7: the reply to the last pop
    # of one queue, holding m-53, never reached the listener, while the other queue's pops
    # delivered past m-117; the broker popped m-53 and revived it into the retry topic).
    # A send whose attempt timed out on a stalled broker may be stored there and on the broker its
    # retry went to: each stored copy is delivered (the producer's "again"; seen under load).
    stored = await read_topic(cluster, topic, stored_messages(cluster, topic))
    copies = Counter(m.body for m in stored)
    queue_of = {m.body: (m.broker_name, m.queue_id) for m in stored}
    on_queue: dict[tuple[str, int], list[bytes]] = {}
    for m in sorted(stored, key=lambda m: (m.broker_name, m.queue_id, m.queue_offset)):
        if m.body not in on_queue.get((m.broker_name, m.queue_id), []):
            on_queue.setdefault((m.broker_name, m.queue_id), []).append(m.body)
    popped = {b for b, how, reconsume, _ in log if how == "popped" and reconsume == 0}
    last_popped = {
        q: max((i for i, b in enumerate(bodies) if b in popped), default=0) for q, bodies in on_queue.items()
    }
    # At most a pop batch on each side of the last delivered: a pop the switch cancelled on the
    # client stays suspended in the broker's long polling, which pops the next messages to arrive
    # for it (ci10: m-58, sent after the pops stopped, was popped so and revived).
    in_flight = {
        b for q, bodies in on_queue.items() for b in bodies[max(0, last_popped[q] - 32) : last_popped[q] + 33]
    }
    repeated = {b for b, n in deliveries.items() if n > max(copies[b], 1) * (2 if b in failed_once else 1)}
    found = [
        (entry, queue_of.get(entry[0]), on_queue.get(queue_of.get(entry[0], ("", -1)), []).index(entry[0]))
        for entry in log
        if entry[0] in repeated and entry[0] in queue_of
    ] + [("last popped per queue", {q: on_queue[q][i] for q, i in last_popped.items() if on_queue[q]})]
    details = "\n".join(map(str, found))  # a string, which pytest prints whole
    assert repeated <= in_flight, details
    assert len(repeated) <= 2 * 32, details
    # Each extra delivery is one the switch explains: a pop's, the pull reading the queue again
    # from the broker's committed offset (PopBufferMergeService.commitOffset moves it only past
    # acknowledged checkpoints), and the copy revived into the retry topic (reconsume times 1).
    # Any of the three may be missing: a pop the switch cut never reaches the listener (here:
    # m-51 and m-52 pulled, then revived, never delivered by a pop), and an ack that left before
    # the pops stopped but landed after the pull read the offset leaves nothing to revive
    # (AckMessageProcessor.appendAck; ci7 of i28-tidy: m-51 popped, then pulled, no revived copy).
    for body in repeated:
        kinds = [(how, reconsume) for b, how, reconsume, _ in log if b == body]
        assert kinds.count(("popped", 0)) <= copies[body], details  # popped once: no pop from behind
        assert all(reconsume <= 1 or body in failed_once for _, reconsume in kinds), details


async def test_a_listener_slower_than_the_invisible_time_consumes_nothing_twice(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    """One listener slot and a first call that outlasts the 5-s invisible time: the batches waiting
    behind it expire and are revived meanwhile; they are not consumed (their copies are), and the
    late result of the slow call is not acknowledged. We called the listener with every expired
    batch: each of those messages was consumed twice.

    A message is consumed twice when one stored copy is delivered again after it was consumed:
    once as popped (reconsume times 0) and once revived, or revived twice. Two stored copies of one
    body, each consumed once, are the producer's (a send retried after an attempt timed out on a
    busy machine; both copies have reconsume times 0, at two queue offsets), not a POP repeat."""
    topic = create_topic(1)
    group = pop_group(cluster, topic)
    calls: Counter[bytes] = Counter()
    # body -> (reconsume times, queue offset, ms left before the invisible time ended at the call's end)
    seen: dict[bytes, list[tuple[int, int, int | None]]] = {}

    async def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        calls[msgs[0].body] += 1
        if msgs[0].body == b"pop-0" and msgs[0].reconsume_times == 0:
            await trio.sleep(8)
        found = checkpoint_of(msgs[0])
        left = (
            None if found is None else found[1].pop_time + found[1].invisible_time - int(time.time() * 1000)
        )
        for m in msgs:
            seen.setdefault(m.body, []).append((m.reconsume_times, m.queue_offset, left))
        return ConsumeStatus.CONSUME_SUCCESS

    slow = member(
        cluster, group, topic, listener, pop_invisible_time=5, consume_concurrency=1, consume_batch_max_size=1
    )
    async with slow, trio.open_nursery() as nursery:
        bodies = await produce(cluster, topic, 1)  # pop-0 first: its call holds the only slot
        with trio.fail_after(60):
            await wait_until(lambda: calls[b"pop-0"] == 1)
        bodies |= await produce(cluster, topic, 12, prefix="late")  # popped meanwhile: they wait, expire
        nursery.start_soon(keep_sending, cluster, topic)
        with trio.fail_after(120):
            await wait_until(lambda: bodies <= set(calls) and calls[b"pop-0"] >= 2)
        await trio.sleep(8)
        nursery.cancel_scope.cancel()
    assert calls[b"pop-0"] == 2  # the late result was ignored, its copy consumed

    def repeated(deliveries: list[tuple[int, int, int | None]]) -> bool:
        stored_copies = len({offset for times, offset, _ in deliveries if times == 0})
        return len(deliveries) > max(stored_copies, 1)

    assert {b: d for b, d in seen.items() if b != b"pop-0" and repeated(d)} == {}


async def test_a_message_that_fails_too_often_goes_to_the_dead_letter_queue(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    """``max_reconsume_times=1``: the listener sees the message twice (reconsume times 0 and 1), then
    it goes to ``%DLQ%<group>`` on the broker, as a PULL consumer's would. We redelivered it for hours
    (the age rule of Java's remoting client) and then dropped it."""
    topic = create_topic(1)
    group = pop_group(cluster, topic)
    seen: list[int] = []

    def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        seen.extend(m.reconsume_times for m in msgs if m.body == b"poison")
        return (
            ConsumeStatus.RECONSUME_LATER
            if any(m.body == b"poison" for m in msgs)
            else ConsumeStatus.CONSUME_SUCCESS
        )

    async with member(cluster, group, topic, listener, max_reconsume_times=1), trio.open_nursery() as nursery:
        async with Producer(f"it-pop-dlq-{uuid.uuid4().hex[:6]}", namesrv=cluster.namesrv_addr) as producer:
            await producer.send(Message(topic, b"poison"))
        nursery.start_soon(keep_sending, cluster, topic)
        with trio.fail_after(120):  # the second delivery after 10 s, then to the DLQ
            await wait_until(lambda: len(seen) >= 2)
        dead: list[MessageExt] = []
        async with LitePullConsumer(
            f"it-pop-dlq-reader-{uuid.uuid4().hex[:6]}", namesrv=cluster.namesrv_addr
        ) as reader:
            with trio.fail_after(60):
                while not dead:
                    try:
                        queues = await reader.fetch_message_queues(dlq_topic(group))
                    except RocketMQError:  # the DLQ topic's route appears with its first message
                        await trio.sleep(0.5)
                        continue
                    reader.assign(queues)
                    for mq in queues:
                        await reader.seek_to_beginning(mq)
                    dead = [m for m in await reader.poll(timeout=2) if m.body == b"poison"]
        await trio.sleep(5)  # no third delivery
        nursery.cancel_scope.cancel()
    assert seen == [0, 1]
    assert len(dead) == 1
