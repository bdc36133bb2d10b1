"""POP consumption (``client_rebalance=False``) against one FakeBroker playing NameServer and broker.

The fake's POP behaviour, and the broker methods it is read from: ``rocketmq_py/testing/_fake_pop.py``;
the same behaviour on the real broker: ``integration/test_pop.py`` and ``integration/test_pop_modes.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing

from rocketmq_py.consumer._pop_rules import POP_DELAY_LEVELS_S, failure_delay_s, init_mode
from rocketmq_py.consumer._push import ConsumeStatus, PushConsumer
from rocketmq_py.protocol import (
    ConsumeFromWhere,
    ConsumeInitMode,
    Message,
    MessageExt,
    MessageRequestMode,
    PopCheckpoint,
    PopMessageRequestHeader,
    PropertyKey,
    RequestCode,
    from_ext_fields,
)
from rocketmq_py.testing._fake_broker import FakeBroker
from tests.consumer._pop_fake import pop_member, wait_until

TOPIC = "PopTopic"
GROUP = "cg-pop"


@pytest.fixture
async def broker() -> AsyncIterator[FakeBroker]:
    async with FakeBroker(broker_name="broker-a") as fb:
        fb.add_topic(TOPIC, queues=2)
        fb.add_topic("%RETRY%" + GROUP, queues=1)
        yield fb


class Listener:
    """Records every delivery; fails first deliveries when ``fail_first``; hangs when ``hang``."""

    def __init__(self, *, fail_first: bool = False, hang: bool = False, work: float = 0.0) -> None:
        self.messages: list[MessageExt] = []
        self.fail_first = fail_first
        self.hang = hang
        self.work = work

    async def __call__(self, msgs: list[MessageExt]) -> ConsumeStatus:
        self.messages.extend(msgs)
        if self.hang:
            await trio.sleep_forever()
        if self.work:
            await trio.sleep(self.work)
        if self.fail_first and any(m.reconsume_times == 0 for m in msgs):
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.CONSUME_SUCCESS

    def bodies(self) -> set[bytes]:
        return {m.body for m in self.messages}


def make(fb: FakeBroker, listener: Listener, name: str = "me", **options: Any) -> PushConsumer:
    return pop_member(fb, listener, GROUP, TOPIC, name=name, **options)


def put(fb: FakeBroker, count: int, queues: int = 2) -> set[bytes]:
    bodies = set()
    for n in range(count):
        body = f"m-{n}".encode()
        fb.put_messages(n % queues, [Message(TOPIC, body)])
        bodies.add(body)
    return bodies


async def test_pop_consumes_and_acks_every_message(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock
) -> None:
    bodies = put(broker, 10)
    listener = Listener()
    async with make(broker, listener) as consumer:
        await wait_until(lambda: len(broker.pop.acks) == 10)
        assert consumer._pop is not None
        pop = consumer._pop
        # (the broker records an ack before its answer reaches the consumer)
        await wait_until(lambda: all(q.waiting_ack == 0 for q in pop.queues.values()))
        popped = sorted(consumer._pop.queues)
        assert [(mq.topic, mq.queue_id) for mq in popped] == [(TOPIC, 0), (TOPIC, 1)]
        assert set(consumer.assignment()) == {*popped, *consumer._queues}  # + the pulled retry topic
        stats = consumer.pop_statistics()
        assert [(s.queue, s.popped, s.waiting_ack) for s in stats] == [(mq, 5, 0) for mq in popped]
        assert all(s.last_pop_age >= 0 and s.last_pop_timestamp > 0 for s in stats)
        assert {s.queue for s in consumer.statistics()} == set(consumer._queues)  # pulled ones only
    assert listener.bodies() == bodies
    assert len(listener.messages) == 10
    assert all(m.topic == TOPIC for m in listener.messages)
    assert broker.pop.acked(GROUP, TOPIC, 0) == [0, 1, 2, 3, 4]
    assert broker.pop.acked(GROUP, TOPIC, 1) == [0, 1, 2, 3, 4]
    ack = broker.pop.acks[0]
    ck = PopCheckpoint.parse(ack.extra_info)
    assert (ack.topic, ack.queue_id, ack.offset, ck.broker_name) == (
        TOPIC,
        ck.queue_id,
        ck.queue_offset,
        "broker-a",
    )
    pops = [
        from_ext_fields(PopMessageRequestHeader, c.ext_fields)
        for c in broker.requests(RequestCode.POP_MESSAGE)
    ]
    assert {p.invisible_time for p in pops} == {60000}
    assert {p.max_msg_nums for p in pops} == {32}
    assert {p.init_mode for p in pops} == {ConsumeInitMode.MIN}  # make() consumes from the first offset
    # The topic is popped, never pulled (the group's retry topic is still pulled).
    assert all(c.ext_fields.get("topic") != TOPIC for c in broker.requests(RequestCode.PULL_MESSAGE))
    assert consumer.consumed == 10


async def test_behind_a_proxy_without_query_assignment_the_topic_is_pulled(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    """A 5.x Proxy registers no QUERY_ASSIGNMENT (rocketmq-proxy ``RemotingProtocolServer``) and
    answers REQUEST_CODE_NOT_SUPPORTED; Java's client then consumes nothing
    (``RebalanceImpl.getRebalanceResultFromBroker``). POP cannot work through the Proxy over remoting
    (``ConsumerManagerActivity.processRequest0`` never answers ACK_MESSAGE), so the member reads the
    topic by client rebalance and pull, as a group in PULL mode; the refusal is asked once. The same
    through a real Proxy: ``integration/test_proxy.py``."""
    broker.refuse(RequestCode.QUERY_ASSIGNMENT)
    bodies = put(broker, 10)
    listener = Listener()
    async with make(broker, listener) as consumer:
        await wait_until(lambda: listener.bodies() == bodies)
        await trio.sleep(30)  # more rebalance rounds
        assert consumer._pop is not None
        assert consumer._pop.queues == {}
        assert {(mq.topic, mq.queue_id) for mq in consumer._queues if mq.topic == TOPIC} == {
            (TOPIC, 0),
            (TOPIC, 1),
        }
    assert len(listener.messages) == 10
    assert broker.requests(RequestCode.POP_MESSAGE) == []
    assert len(broker.requests(RequestCode.QUERY_ASSIGNMENT)) == 1
    warnings = [r.getMessage() for r in caplog.records if "serves no QUERY_ASSIGNMENT" in r.getMessage()]
    assert len(warnings) == 1, warnings


async def test_a_failed_message_is_retimed_and_redelivered(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock
) -> None:
    put(broker, 2)
    listener = Listener(fail_first=True)
    async with make(broker, listener) as consumer:
        started = trio.current_time()
        await wait_until(lambda: len(broker.pop.acks) == 2)
        elapsed = trio.current_time() - started
    assert [c.invisible_time for c in broker.pop.changes] == [POP_DELAY_LEVELS_S[0] * 1000] * 2
    assert POP_DELAY_LEVELS_S[0] <= elapsed < 60
    assert sorted(m.reconsume_times for m in listener.messages) == [0, 0, 1, 1]
    assert all(PropertyKey.POP_CK in m.properties for m in listener.messages)
    assert consumer.failed == 2
    assert consumer.consumed == 2


async def test_a_hanging_consumer_does_not_pin_its_messages(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock
) -> None:
    """A listener call that hangs does not pin its messages: once the invisible time runs out the
    broker revives them (``PopReviveService.reviveRetry``) and whoever pops next gets them. Here the
    stuck member hangs on first deliveries only, so whichever member pops the copies consumes them."""
    bodies = put(broker, 8)

    class Stuck(Listener):
        async def __call__(self, msgs: list[MessageExt]) -> ConsumeStatus:
            self.messages.extend(msgs)
            if any(m.reconsume_times == 0 for m in msgs):
                await trio.sleep_forever()
            return ConsumeStatus.CONSUME_SUCCESS

    stuck, healthy = Stuck(), Listener()
    async with make(broker, stuck, "stuck", pop_invisible_time=20) as stuck_consumer:
        await wait_until(lambda: len(stuck.messages) == 8)
        popped_at = trio.current_time()
        assert sum(s.waiting_ack for s in stuck_consumer.pop_statistics()) == 8  # popped, never acked
        async with make(broker, healthy, "healthy"):
            await wait_until(lambda: len(broker.pop.acks) == 8)
            # Hidden until the stuck member's invisible time ran out.
            assert trio.current_time() - popped_at >= 20
    again = healthy.messages + [m for m in stuck.messages if m.reconsume_times]
    assert {m.body for m in again} == bodies
    assert all(m.reconsume_times == 1 for m in again)
    assert len(broker.pop.acks) == 8  # nothing acked twice: the stuck calls never finished
    assert [m.reconsume_times for m in broker.pop.revived] == [1] * 8


async def test_more_consumers_than_queues_all_receive(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock
) -> None:
    broker.add_topic(TOPIC, queues=1)
    listeners = [Listener(work=1.0) for _ in range(3)]
    bodies: set[bytes] = set()
    async with (
        make(broker, listeners[0], "c0", pop_batch_nums=4),
        make(broker, listeners[1], "c1", pop_batch_nums=4),
        make(broker, listeners[2], "c2", pop_batch_nums=4),
    ):
        for n in range(60):  # all three are long-polling the one queue
            body = f"m-{n}".encode()
            broker.put_messages(0, [Message(TOPIC, body)])
            bodies.add(body)
            await trio.sleep(0.2)
        await wait_until(lambda: len(broker.pop.acks) == 60)
    assert all(listener.messages for listener in listeners)
    assert set().union(*(listener.bodies() for listener in listeners)) == bodies
    assert sum(len(listener.messages) for listener in listeners) == 60  # no duplicates here


async def test_a_group_in_pull_mode_falls_back_to_client_rebalance(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock
) -> None:
    broker.pop.modes[(TOPIC, GROUP)] = MessageRequestMode.PULL
    bodies = put(broker, 4)
    listener = Listener()
    async with make(broker, listener) as consumer:
        await wait_until(lambda: listener.bodies() == bodies)
        assert consumer._pop is not None
        assert not consumer._pop.queues
    assert not broker.requests(RequestCode.POP_MESSAGE)
    assert any(c.ext_fields.get("topic") == TOPIC for c in broker.requests(RequestCode.PULL_MESSAGE))


def test_orderly_and_broadcasting_use_client_rebalance() -> None:
    assert not PushConsumer(GROUP, namesrv="x:1", client_rebalance=False, orderly=True)._pops
    assert not PushConsumer(GROUP, namesrv="x:1", client_rebalance=False, message_model="BROADCASTING")._pops
    assert not PushConsumer(GROUP, namesrv="x:1")._pops
    assert PushConsumer(GROUP, namesrv="x:1", client_rebalance=False)._pops


@pytest.mark.parametrize(
    "options", [{"pop_batch_nums": 0}, {"pop_batch_nums": 33}, {"pop_invisible_time": 1}]
)
def test_pop_settings_are_checked(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="pop_"):
        PushConsumer(GROUP, namesrv="x:1", client_rebalance=False, **options)


def test_init_mode_follows_java() -> None:
    """FIRST_OFFSET pops from the queue's first message (MIN, 0), anything else from its end (MAX, 1).

    Java: ``RebalancePushImpl.getConsumeInitMode`` (MIN for CONSUME_FROM_FIRST_OFFSET, else MAX)
    and ``common/constant/ConsumeInitMode`` (MIN = 0, MAX = 1). We sent them the other way round.
    """
    assert init_mode(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET) is ConsumeInitMode.MIN
    assert ConsumeInitMode.MIN == 0
    assert init_mode(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET) is ConsumeInitMode.MAX
    assert ConsumeInitMode.MAX == 1
    assert init_mode(ConsumeFromWhere.CONSUME_FROM_TIMESTAMP) is ConsumeInitMode.MAX


def test_failure_delays_follow_java() -> None:
    """The invisible time after a failure is the delay level of the reconsume count, capped at the
    last one (Java ``changePopInvisibleTime`` with delay level 0: ``popDelayLevel``)."""
    assert failure_delay_s(0) == 10
    assert failure_delay_s(2) == 60
    assert failure_delay_s(15) == 7200
    assert failure_delay_s(40) == 7200
