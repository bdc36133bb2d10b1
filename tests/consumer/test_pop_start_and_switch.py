"""Where a new POP group starts, and a group switched between PULL and POP, on one FakeBroker.

The fake's POP reads the group's consumer offset, commits it at each pop and revives unacknowledged
messages into ``%RETRY%<group>_<topic>`` as the broker does (see ``rocketmq_py.testing._fake_pop``,
which names the broker methods); ``integration/test_pop_modes.py`` runs the same stories on the real
broker.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing

from rocketmq_py.consumer._push import ConsumeStatus, PushConsumer
from rocketmq_py.protocol import ConsumeFromWhere, Message, MessageExt, MessageRequestMode, pop_retry_topic
from rocketmq_py.testing._fake_broker import FakeBroker
from tests.consumer._pop_fake import pop_member, wait_until

TOPIC = "PopTopic"
GROUP = "cg-pop-start"


@pytest.fixture
async def broker() -> AsyncIterator[FakeBroker]:
    async with FakeBroker(broker_name="broker-a") as fb:
        fb.add_topic(TOPIC, queues=1)
        yield fb


def make(fb: FakeBroker, listener: Any, **options: Any) -> PushConsumer:
    return pop_member(fb, listener, GROUP, TOPIC, handoff_delay=0, **options)


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, [f"old-{n}" for n in range(10)] + ["new"]),
        # MAX starts at the last stored message (max offset - 1), then what comes after.
        (ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, ["old-9", "new"]),
    ],
)
async def test_a_new_pop_group_starts_where_its_init_mode_says(
    broker: FakeBroker,
    autojump_clock: trio.testing.MockClock,
    where: ConsumeFromWhere,
    expected: list[str],
) -> None:
    """Broker: ``PopMessageProcessor.getInitOffset`` (MIN: the min offset; MAX: max offset - 1, or 0
    while ``initPopOffsetByCheckMsgInMem`` finds the first message in memory: off here, as on a
    topic whose first messages are gone). A LAST_OFFSET group replayed the whole backlog and a
    FIRST_OFFSET one skipped it, because the client sent the modes inverted."""
    broker.pop.init_offset_by_check_in_mem = False
    broker.put_messages(0, [Message(TOPIC, f"old-{n}".encode()) for n in range(10)])
    got: list[str] = []

    async def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        got.extend(m.body.decode() for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    async with make(broker, listener, consume_from_where=where):
        await wait_until(lambda: bool(got))
        broker.put_messages(0, [Message(TOPIC, b"new")])
        await wait_until(lambda: "new" in got)
        await trio.sleep(5)  # nothing else comes
    assert sorted(got) == sorted(expected)  # listener calls run concurrently


class Deliveries:
    """Counts the deliveries of each body; fails first deliveries of the bodies in ``fail``."""

    def __init__(self, fail: frozenset[str] = frozenset(), slow: frozenset[str] = frozenset()) -> None:
        self.count: Counter[str] = Counter()
        self.fail = fail
        self.slow = slow

    async def __call__(self, msgs: list[MessageExt]) -> ConsumeStatus:
        failed = False
        for msg in msgs:
            body = msg.body.decode()
            self.count[body] += 1
            failed |= body in self.fail and msg.reconsume_times == 0
            if body in self.slow:
                await trio.sleep(3)  # (within the handoff timeout, 5 s: the handoff waits)
        return ConsumeStatus.RECONSUME_LATER if failed else ConsumeStatus.CONSUME_SUCCESS


async def test_a_group_switched_from_pull_to_pop_consumes_each_message_once(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock
) -> None:
    """``mqadmin setConsumeMode -m POP`` on a running group: its pulled queues of the topic are
    dropped (committing their offsets) and popping goes on from there. Java:
    ``RebalanceImpl.updateMessageQueueAssignment`` drops every pulled queue of the topic that the
    assignment does not list in PULL mode; broker: ``PopMessageProcessor.getPopOffset`` reads the
    group's consumer offset, the one its pulls committed, so the pulled queues are handed off (their
    running calls finished, the offset committed) before the first pop. We kept pulling beside the
    pops: every message after the switch came twice; and popping began before the handoff's commit,
    so what the pulls had consumed came again."""
    broker.pop.modes[(TOPIC, GROUP)] = MessageRequestMode.PULL
    listener = Deliveries(slow=frozenset({"pulled-9"}))  # still running when the switch comes
    async with make(
        broker,
        listener,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        persist_interval=3600,  # the pulls' progress reaches the broker with the handoff only
    ) as consumer:
        broker.put_messages(0, [Message(TOPIC, f"pulled-{n}".encode()) for n in range(10)])
        await wait_until(lambda: len(listener.count) == 10)
        assert consumer._pop is not None
        assert {mq.topic for mq in consumer._queues} >= {TOPIC}
        broker.pop.modes[(TOPIC, GROUP)] = MessageRequestMode.POP
        pop = consumer._pop
        await wait_until(lambda: bool(pop.queues) and TOPIC not in {mq.topic for mq in consumer._queues})
        broker.put_messages(0, [Message(TOPIC, f"popped-{n}".encode()) for n in range(20)])
        await wait_until(lambda: len(listener.count) == 30)
        await trio.sleep(60)  # a second copy would have come by now
    assert set(listener.count.values()) == {1}, listener.count
    assert broker.pop.acked(GROUP, TOPIC, 0) == list(range(10, 30))  # popping began after the pulls


async def test_a_group_switched_from_pop_back_to_pull_still_gets_its_revived_messages(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock
) -> None:
    """Back to PULL: a message that failed under POP is revived into ``%RETRY%<group>_<topic>``
    after its invisible time (``PopReviveService.reviveRetry``), and the consumer subscribes that
    topic on the switch so that it is still consumed; switching to POP again unsubscribes it.
    Java: ``RebalanceImpl.updateMessageQueueAssignment`` (``KeyBuilder.buildPopRetryTopic``). We
    subscribed nothing: the message was stranded there."""
    retry = pop_retry_topic(TOPIC, GROUP)
    listener = Deliveries(fail=frozenset({"fails-once"}))
    async with make(
        broker, listener, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    ) as consumer:
        broker.put_messages(0, [Message(TOPIC, b"fails-once"), Message(TOPIC, b"fine")])
        await wait_until(lambda: len(broker.pop.changes) == 1)  # failed: hidden for 10 s
        broker.pop.modes[(TOPIC, GROUP)] = MessageRequestMode.PULL
        await wait_until(lambda: consumer._pop is not None and not consumer._pop.queues)
        assert retry in consumer._subscriptions
        broker.put_messages(0, [Message(TOPIC, b"pulled")])
        await wait_until(lambda: listener.count["fails-once"] == 2 and listener.count["pulled"] == 1)
        assert [m.topic for m in broker.pop.revived] == [retry]
        broker.pop.modes[(TOPIC, GROUP)] = MessageRequestMode.POP
        await wait_until(lambda: retry not in consumer._subscriptions)
        await wait_until(lambda: not any(mq.topic in (TOPIC, retry) for mq in consumer._queues))
    assert listener.count == Counter({"fails-once": 2, "fine": 1, "pulled": 1})
