"""Orderly PushConsumer against fake brokers: locks, one task per queue in order, suspend, DLQ, unlock."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from rocketmq_py.consumer._orderly import ConsumeOrderlyStatus, check_reconsume_times
from rocketmq_py.consumer._push import ConsumeStatus, PushConsumer
from rocketmq_py.errors import ClientError
from rocketmq_py.protocol import (
    LockBatchRequestBody,
    MessageExt,
    MessageQueue,
    RemotingCommand,
    RequestCode,
    UnlockBatchRequestBody,
    decode_body,
)

if TYPE_CHECKING:
    from conftest import Cluster, Recorder

MakeConsumer = Callable[..., PushConsumer]
ME = "127.0.0.1@me"
OTHER = "127.0.0.1@zz"
SUSPEND = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT


def lock_requests(cluster: Cluster) -> list[LockBatchRequestBody]:
    return [
        decode_body(LockBatchRequestBody, cmd.body)
        for fb in cluster.brokers
        for cmd in fb.requests(RequestCode.LOCK_BATCH_MQ)
    ]


def offsets_of(cluster: Cluster, recorder: Recorder, mq: MessageQueue) -> list[int]:
    host = cluster.broker(mq).address
    return [
        m.queue_offset
        for m in recorder.messages
        if (m.topic, m.queue_id, m.store_host) == (mq.topic, mq.queue_id, host)
    ]


def unlocked_queues(cluster: Cluster) -> set[MessageQueue]:
    return {
        mq
        for fb in cluster.brokers
        for cmd in fb.requests(RequestCode.UNLOCK_BATCH_MQ)
        for mq in decode_body(UnlockBatchRequestBody, cmd.body).mq_set
    }


def holders(cluster: Cluster) -> dict[MessageQueue, str]:
    return {mq: holder for fb in cluster.brokers for (_, mq), (holder, _) in fb._store.locks.items()}


# --- pure parts ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (None, ConsumeOrderlyStatus.SUCCESS),
        (ConsumeOrderlyStatus.SUCCESS, ConsumeOrderlyStatus.SUCCESS),
        (SUSPEND, SUSPEND),
        (ConsumeStatus.CONSUME_SUCCESS, ConsumeOrderlyStatus.SUCCESS),
        (ConsumeStatus.RECONSUME_LATER, SUSPEND),
        ("SUSPEND_CURRENT_QUEUE_A_MOMENT", SUSPEND),
    ],
)
def test_listener_answers_map_to_orderly_statuses(answer: object, expected: ConsumeOrderlyStatus) -> None:
    assert ConsumeOrderlyStatus.of(answer) is expected


def test_an_answer_that_is_no_status_is_refused() -> None:
    with pytest.raises(ClientError):
        ConsumeOrderlyStatus.of(42)


def test_check_reconsume_times_sends_exhausted_messages_to_the_dlq_and_suspends_the_others() -> None:
    fresh = MessageExt("T", b"a", reconsume_times=1)
    spent = MessageExt("T", b"b", reconsume_times=3)
    decision = check_reconsume_times([fresh, spent], 3)
    assert decision.to_dlq == [spent]
    assert decision.suspend
    assert fresh.reconsume_times == 2  # raised in memory, as Java does
    assert spent.reconsume_times == 3
    only_spent = check_reconsume_times([MessageExt("T", b"c", reconsume_times=5)], 3)
    assert not only_spent.suspend
    assert len(only_spent.to_dlq) == 1


# --- locks ---------------------------------------------------------------------------------------


async def test_queues_are_locked_before_the_first_pull_and_renewed_every_20_seconds(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    async with make_consumer(orderly=True) as consumer:
        start = trio.current_time()
        assert consumer.max_reconsume_times == 2**31 - 1  # Java's orderly default
        owned = set(consumer.assignment())
        assert holders(cluster) == dict.fromkeys(owned, ME)
        for fb in cluster.brokers:
            first_lock = next(i for i, c in enumerate(fb.received) if c.code == RequestCode.LOCK_BATCH_MQ)
            first_pull = next(i for i, c in enumerate(fb.received) if c.code == RequestCode.PULL_MESSAGE)
            assert first_lock < first_pull
        assert all(s.locked for s in consumer.statistics())
        initial = [len(fb.requests(RequestCode.LOCK_BATCH_MQ)) for fb in cluster.brokers]
        await trio.sleep_until(start + 19.5)
        assert [len(fb.requests(RequestCode.LOCK_BATCH_MQ)) for fb in cluster.brokers] == initial
        await trio.sleep_until(start + 20.5)
        renewal = [
            decode_body(LockBatchRequestBody, cmd.body)
            for fb, count in zip(cluster.brokers, initial, strict=True)
            for cmd in fb.requests(RequestCode.LOCK_BATCH_MQ)[count:]
        ]
        assert {mq for body in renewal for mq in body.mq_set} == owned  # one request per broker
        assert {body.client_id for body in renewal} == {ME}
        assert len(renewal) == 2
    # Closing released every lock.
    assert unlocked_queues(cluster) == owned
    assert holders(cluster) == {}


async def test_a_queue_locked_by_another_member_is_taken_once_released_from_the_broker_offset(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    cluster.put(a0, 5)
    cluster.a._store.locks[(cluster.group, a0)] = (OTHER, trio.current_time())
    async with make_consumer(orderly=True, consume_from_where="CONSUME_FROM_FIRST_OFFSET") as consumer:
        assert a0 not in consumer.assignment()
        await trio.sleep(5)
        assert offsets_of(cluster, recorder, a0) == []
        # The other member commits 3, then unlocks: we lock it at the next (1 s) retry.
        cluster.a.consumer_offsets[(cluster.group, cluster.topic, 0)] = 3
        del cluster.a._store.locks[(cluster.group, a0)]
        await cluster.wait_until(lambda: offsets_of(cluster, recorder, a0) == [3, 4])
        assert holders(cluster)[a0] == ME


async def test_a_lost_lock_stops_consumption_of_that_queue(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    async with make_consumer(orderly=True) as consumer:
        cluster.put(a0, 2)
        await cluster.wait_until(lambda: len(offsets_of(cluster, recorder, a0)) == 2)
        # Another member takes the lock (as after our lock expired on the broker).
        cluster.a._store.locks[(cluster.group, a0)] = (OTHER, trio.current_time() + 1000)
        await trio.sleep(21)  # the renewal is refused
        (stats,) = [s for s in consumer.statistics() if s.queue == a0]
        assert not stats.locked
        cluster.put(a0, 3)
        await trio.sleep(10)
        assert offsets_of(cluster, recorder, a0) == [0, 1]
        del cluster.a._store.locks[(cluster.group, a0)]
        await cluster.wait_until(lambda: offsets_of(cluster, recorder, a0) == [0, 1, 2, 3, 4], timeout=40)


# --- consumption ---------------------------------------------------------------------------------


async def test_each_queue_is_consumed_in_offset_order_by_one_call_at_a_time(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    running: dict[tuple[str, int], int] = defaultdict(int)
    most: dict[tuple[str, int], int] = defaultdict(int)
    across = [0, 0]  # now, most

    async def slow(msgs: list[MessageExt]) -> None:
        key = (msgs[0].store_host, msgs[0].queue_id)
        running[key] += 1
        across[0] += 1
        most[key] = max(most[key], running[key])
        across[1] = max(across[1], across[0])
        await trio.sleep(0.1)
        running[key] -= 1
        across[0] -= 1

    recorder.hook = slow
    async with make_consumer(orderly=True):
        for mq in cluster.queues():
            cluster.put(mq, 20)
        await cluster.wait_until(lambda: len(recorder.messages) == 80)
    for mq in cluster.queues():
        assert offsets_of(cluster, recorder, mq) == list(range(20))
    assert set(most.values()) == {1}  # never two calls on one queue
    assert across[1] > 1  # but queues run side by side
    for fb in cluster.brokers:
        assert fb.consumer_offsets[(cluster.group, cluster.topic, 0)] == 20


async def test_suspend_pauses_only_that_queue_and_redelivers_the_same_message(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0, a1 = cluster.queues()[:2]
    seen: list[tuple[int, int, float]] = []  # (queue id, offset, time) on a0
    suspended_once = False

    def answer(msgs: list[MessageExt]) -> None:
        nonlocal suspended_once
        msg = msgs[0]
        if msg.store_host == cluster.a.address and msg.queue_id == 0:
            seen.append((msg.queue_offset, msg.reconsume_times, trio.current_time()))
            if msg.queue_offset == 1 and not suspended_once:
                suspended_once = True
                recorder.status = SUSPEND
                return
        recorder.status = ConsumeOrderlyStatus.SUCCESS  # type: ignore[assignment]

    recorder.hook = answer
    async with make_consumer(orderly=True, suspend_current_queue_time=2) as consumer:
        cluster.put(a0, 3)
        await cluster.wait_until(lambda: [o for o, _, _ in seen] == [0, 1, 1, 2])
        (_, _, first), (_, reconsumed, second) = seen[1], seen[2]
        assert second - first >= 2  # paused for suspend_current_queue_time
        assert reconsumed == 1  # the redelivery counts as a reconsumption
        # The other queues did not wait: a1 consumed while a0 was suspended.
        cluster.put(a1, 1)
        await cluster.wait_until(lambda: offsets_of(cluster, recorder, a1) == [0])
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 3)


async def test_a_message_suspended_max_reconsume_times_goes_to_the_dlq_and_the_queue_moves_on(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]

    def poison(msgs: list[MessageExt]) -> None:
        recorder.status = SUSPEND if msgs[0].body.endswith(b"-0") else ConsumeOrderlyStatus.SUCCESS  # type: ignore[assignment]

    recorder.hook = poison
    async with make_consumer(orderly=True, max_reconsume_times=2) as consumer:
        cluster.put(a0, 2)
        await cluster.wait_until(lambda: offsets_of(cluster, recorder, a0)[-1:] == [1])
        # Delivered with reconsume times 0, 1, 2; the third SUSPEND sent it to the DLQ.
        assert offsets_of(cluster, recorder, a0) == [0, 0, 0, 1]
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 2)
    dlq = cluster.a.messages("%DLQ%" + cluster.group, 0) + cluster.b.messages("%DLQ%" + cluster.group, 0)
    assert [m.body for m in dlq] == [b"broker-a/0-0"]
    assert dlq[0].properties["RETRY_TOPIC"] == cluster.topic
    assert cluster.a.messages(cluster.retry, 0) == []
    assert cluster.b.messages(cluster.retry, 0) == []


async def test_rebalanced_away_queue_is_committed_then_unlocked(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    _, _, b0, b1 = cluster.queues()
    cluster.answer_consumer_ids(ME)
    async with make_consumer(orderly=True) as consumer:
        cluster.put(b0, 3)
        await cluster.wait_until(lambda: len(offsets_of(cluster, recorder, b0)) == 3)
        cluster.answer_consumer_ids(ME, OTHER)
        await cluster.notify_ids_changed(cluster.a)
        await cluster.wait_until(lambda: b0 not in consumer.assignment())
        assert {b0, b1} <= unlocked_queues(cluster)
        assert b0 not in holders(cluster)
        # The commit came first, synchronously.
        received = cluster.b.received
        commit = max(
            i
            for i, c in enumerate(received)
            if c.code == RequestCode.UPDATE_CONSUMER_OFFSET
            and not c.is_oneway
            and (c.ext_fields["topic"], c.ext_fields["queueId"]) == (cluster.topic, "0")
        )
        unlock = next(i for i, c in enumerate(received) if c.code == RequestCode.UNLOCK_BATCH_MQ)
        assert commit < unlock
        assert cluster.b.consumer_offsets[(cluster.group, cluster.topic, 0)] == 3


async def test_an_orderly_member_commits_only_in_requests_whose_answer_it_waits_for(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """No commit offset rides on an orderly member's pulls, and its periodic commits are not oneway.

    The broker stores a pull's commit offset on its pull executor, after reading the messages
    (``PullMessageProcessor.tryCommitOffset``, called from ``DefaultPullMessageResultHandler.handle``),
    and an UPDATE_CONSUMER_OFFSET on its consumer-manage executor (``BrokerController``
    ``registerProcessor``); both are pools of many threads. So two offsets a member sends in order
    may be stored in either order: a pull (or a oneway commit) sent just before a handoff's commit
    can store an older offset after it, and the next owner, which reads the offset once it holds
    the lock, consumes again a message this member consumed. The real broker logs such a
    regression ("[NOTIFYME]update consumer offset less than store", from
    ``ConsumerOffsetManager.commitOffset``); ``integration/test_push_orderly_cluster.py`` caught
    one as a key consumed twice across a graceful rebalance. An orderly member therefore only
    commits with answered requests, under the lock the handoff's commit takes too: every offset it
    stored before is stored before the handoff's.
    """
    queues = cluster.queues()
    cluster.answer_consumer_ids(ME)
    async with make_consumer(orderly=True, persist_interval=1):
        for mq in queues:
            cluster.put(mq, 3)
        await cluster.wait_until(lambda: len(recorder.messages) == 12)
        # Past a long poll's 15 s: each queue pulled again since its messages were consumed.
        await trio.sleep(20)
        cluster.assert_commits_only_answered(pulls=12)


async def test_a_revoked_queue_stays_locked_while_its_listener_runs_past_the_handoff_timeout(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Java never unlocks an orderly queue whose consume lock is held: its order would break.

    (``RebalancePushImpl.tryRemoveOrderMessageQueue``: the queue stays until the running call
    returns; only then is the offset committed and the broker lock released.)
    """
    _, _, b0, _ = cluster.queues()
    release = trio.Event()
    started = trio.Event()

    async def stuck_on_b0(msgs: list[MessageExt]) -> None:
        if msgs[0].store_host == cluster.b.address and msgs[0].queue_offset == 1:
            started.set()
            await release.wait()

    recorder.hook = stuck_on_b0
    cluster.answer_consumer_ids(ME)
    async with make_consumer(orderly=True, handoff_timeout=2) as consumer:
        cluster.put(b0, 3)
        await started.wait()
        cluster.answer_consumer_ids(ME, OTHER)
        await cluster.notify_ids_changed(cluster.a)
        await trio.sleep(60)  # far past the handoff timeout and a 20-s lock renewal
        assert holders(cluster).get(b0) == ME  # nobody else could lock b0 meanwhile
        assert b0 not in unlocked_queues(cluster)
        assert cluster.b._store.locks[(cluster.group, b0)][1] > trio.current_time() - 30  # renewed
        release.set()
        await cluster.wait_until(lambda: b0 in unlocked_queues(cluster))
        await cluster.wait_until(lambda: b0 not in consumer.assignment())
        assert b0 not in holders(cluster)
        # The running call finished, so its message counts: the commit says 2, then the unlock.
        assert cluster.b.consumer_offsets[(cluster.group, cluster.topic, 0)] == 2
        assert offsets_of(cluster, recorder, b0) == [0, 1]


async def test_a_lock_renewal_in_flight_never_relocks_a_queue_released_meanwhile(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A renewal sent before a handoff's unlock must not land after it and lock the queue again.

    (Seen once in CI: the periodic LOCK_BATCH_MQ carrying a revoked queue raced its UNLOCK_BATCH_MQ;
    the broker kept the queue locked to us for 60 s after we had let it go.)  Here broker-b holds
    the renewal until the unlock arrives, or 2 s pass (within the 3-s lock timeout): renewals
    and unlocks must be ordered.
    """
    _, _, b0, _ = cluster.queues()
    release = trio.Event()
    started = trio.Event()
    renewal_waiting = trio.Event()
    original = cluster.b._groups.lock_batch_mq

    def b0_unlocked() -> bool:
        return b0 in unlocked_queues(cluster)

    async def lock_after_the_unlock(request: RemotingCommand) -> RemotingCommand | None:
        if release.is_set() and b0 in decode_body(LockBatchRequestBody, request.body).mq_set:
            renewal_waiting.set()
            with trio.move_on_after(2):
                await cluster.wait_until(b0_unlocked)
        return await original(request)

    async def stuck_on_b0(msgs: list[MessageExt]) -> None:
        if msgs[0].store_host == cluster.b.address and msgs[0].queue_offset == 1:
            started.set()
            await renewal_waiting.wait()

    recorder.hook = stuck_on_b0
    cluster.b.on(RequestCode.LOCK_BATCH_MQ, lock_after_the_unlock)
    cluster.answer_consumer_ids(ME)
    async with make_consumer(orderly=True, handoff_timeout=2) as consumer:
        cluster.put(b0, 3)
        await started.wait()
        cluster.answer_consumer_ids(ME, OTHER)
        await cluster.notify_ids_changed(cluster.a)
        release.set()  # the next renewal is held; the listener returns once it is
        await cluster.wait_until(lambda: b0 not in consumer.assignment())
        await cluster.wait_until(b0_unlocked)
        await trio.sleep(10)  # past the held renewal, whichever came first
        assert b0 not in holders(cluster)
        assert cluster.b.consumer_offsets[(cluster.group, cluster.topic, 0)] == 2


async def test_a_lock_lost_while_waiting_for_a_consume_slot_stops_that_queue(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The lock is checked right before each consume, not before waiting for a free slot."""
    a0, _, b0, _ = cluster.queues()
    a0_started = trio.Event()

    async def slow_on_a0(msgs: list[MessageExt]) -> None:
        if msgs[0].store_host == cluster.a.address:
            a0_started.set()
            await trio.sleep(40)  # holds the only consume slot

    recorder.hook = slow_on_a0
    cluster.answer_consumer_ids(ME)
    async with make_consumer(orderly=True, consume_concurrency=1):
        cluster.put(a0, 1)
        await a0_started.wait()
        cluster.put(b0, 1)  # b0 is locked and waits for the slot
        await trio.sleep(5)
        # Another member takes b0's broker lock: the renewal at 20 s fails.
        cluster.b._store.locks[(cluster.group, b0)] = (OTHER, trio.current_time() + 1000)
        await trio.sleep(60)  # the slot is free again from 40 s on
        assert offsets_of(cluster, recorder, b0) == []  # not consumed without the lock
        del cluster.b._store.locks[(cluster.group, b0)]
        await cluster.wait_until(lambda: offsets_of(cluster, recorder, b0) == [0])
