"""POP messages whose invisible time ran out, and messages consumed too often, on one FakeBroker.

Java: ``ConsumeMessagePopConcurrentlyService.ConsumeRequest.run`` (a batch whose ``popTime +
invisibleTime`` has passed is dropped before the listener; a result that comes after it is
ignored) and ``DefaultMQPushConsumerImpl.processPopResult`` (a message popped with more reconsume
times than ``maxReconsumeTimes`` is acknowledged without a listener call). Broker: an unacknowledged
message comes back as a copy with reconsume times + 1 (``PopReviveService.reviveRetry``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing

from rocketmq_py.consumer._push import ConsumeStatus, PushConsumer
from rocketmq_py.protocol import Message, MessageExt, RequestCode, dlq_topic
from rocketmq_py.testing._fake_broker import FakeBroker
from tests.consumer._pop_fake import pop_member, wait_until

TOPIC = "PopTopic"
GROUP = "cg-pop-expiry"


@pytest.fixture
async def broker() -> AsyncIterator[FakeBroker]:
    async with FakeBroker(broker_name="broker-a") as fb:
        fb.add_topic(TOPIC, queues=1)
        yield fb


def make(fb: FakeBroker, listener: Any, **options: Any) -> PushConsumer:
    return pop_member(fb, listener, GROUP, TOPIC, **options)


async def test_a_batch_whose_invisible_time_ran_out_is_not_consumed(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock
) -> None:
    """One listener slot, a first call that outlasts the invisible time: the nine batches waiting
    behind it expired meanwhile and the broker handed out their copies, so calling the listener
    with them would consume each twice (we did: every other body came twice)."""
    calls: Counter[str] = Counter()

    async def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        body = msgs[0].body.decode()
        calls[body] += 1
        if body == "slow" and msgs[0].reconsume_times == 0:
            await trio.sleep(30)  # past the 5-s invisible time: its result does not count either
        return ConsumeStatus.CONSUME_SUCCESS

    broker.put_messages(0, [Message(TOPIC, b"slow")] + [Message(TOPIC, b"m-%d" % n) for n in range(9)])
    async with make(
        broker, listener, pop_invisible_time=5, consume_concurrency=1, consume_batch_max_size=1
    ) as consumer:
        await wait_until(lambda: len(broker.pop.acks) >= 10)
        await trio.sleep(60)
        assert consumer.pop_statistics()[0].waiting_ack == 0
    assert calls == Counter({"slow": 2, **{f"m-{n}": 1 for n in range(9)}})
    assert len(broker.pop.acks) == 10  # the late result of the first "slow" call was not acked
    assert consumer.consumed == 10


@pytest.mark.parametrize("max_reconsume_times", [0, 2])
async def test_a_message_consumed_too_often_goes_to_the_dead_letter_queue(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock, max_reconsume_times: int
) -> None:
    """A message that keeps failing reaches the listener ``max_reconsume_times + 1`` times, as under
    PULL, then goes to ``%DLQ%<group>`` (CONSUMER_SEND_MSG_BACK with delay level -1, as the 5.x proxy
    forwards a POP message to the DLQ, ``ProducerProcessor.forwardMessageToDeadLetterQueue``) and is
    acknowledged. We redelivered it for hours (max 2: 11 calls over 5.6 h) and then dropped it."""
    calls: list[int] = []

    async def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        calls.extend(m.reconsume_times for m in msgs)
        return ConsumeStatus.RECONSUME_LATER

    broker.put_messages(0, [Message(TOPIC, b"poison")])
    async with make(broker, listener, max_reconsume_times=max_reconsume_times):
        await wait_until(lambda: len(broker.pop.acks) == 1)
        await trio.sleep(3600)  # nothing comes back
    assert calls == list(range(max_reconsume_times + 1))
    (dead,) = broker.messages(dlq_topic(GROUP), 0)
    assert dead.body == b"poison"
    (back,) = broker.requests(RequestCode.CONSUMER_SEND_MSG_BACK)
    assert back.ext_fields["delayLevel"] == "-1"


async def test_a_popped_message_past_max_reconsume_times_skips_the_listener(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock
) -> None:
    """A copy the broker hands out with more reconsume times than the consumer allows (its limit was
    lowered, or another member has a higher one) goes to the DLQ at once, without a listener call
    (Java acks it at pop time: ``DefaultMQPushConsumerImpl.processPopResult``)."""
    calls: list[bytes] = []

    async def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        calls.extend(m.body for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    broker._store.append(Message(TOPIC, b"tired"), 0, reconsume_times=5)
    broker.put_messages(0, [Message(TOPIC, b"fresh")])
    async with make(broker, listener, max_reconsume_times=4):
        await wait_until(lambda: len(broker.pop.acks) == 2)
    assert calls == [b"fresh"]
    assert [m.body for m in broker.messages(dlq_topic(GROUP), 0)] == [b"tired"]
