"""POP acknowledgements: BATCH_ACK_MESSAGE to 5.1.3+ brokers, coalesced; ACK_MESSAGE otherwise.

The fake's POP behaviour, and the broker methods it is read from: ``rocketmq_py/testing/_fake_pop.py``;
the same behaviour on the real broker: ``integration/test_pop.py`` and ``integration/test_pop_modes.py``.
"""

from __future__ import annotations

from collections import Counter

import trio
import trio.testing

from rocketmq_py.protocol import RequestCode, ResponseCode
from rocketmq_py.protocol._versions import release_ordinal
from rocketmq_py.testing._fake_broker import FakeBroker
from tests.consumer.test_push_pop import GROUP, TOPIC, Listener, make, put, wait_until


def _acked_offsets(fb: FakeBroker) -> Counter[tuple[int, int]]:
    return Counter((ack.queue_id, ack.offset) for ack in fb.pop.acks)


async def _consume(fb: FakeBroker, count: int, **options: object) -> tuple[Listener, int]:
    fb.add_topic(TOPIC, queues=2)
    fb.add_topic("%RETRY%" + GROUP, queues=1)
    bodies = put(fb, count)
    listener = Listener(work=0.01)
    async with make(fb, listener, **options) as consumer:
        await wait_until(lambda: len(fb.pop.acks) >= count)
        assert consumer._pop is not None
        pop = consumer._pop
        await wait_until(lambda: all(q.waiting_ack == 0 for q in pop.queues.values()))
        assert pop._acker is not None
        batch_requests = pop._acker.batch_requests
    assert listener.bodies() == bodies
    return listener, batch_requests


async def test_acks_of_concurrent_calls_share_batch_requests(autojump_clock: trio.testing.MockClock) -> None:
    async with FakeBroker(broker_name="broker-a") as fb:
        listener, batch_requests = await _consume(fb, 200, consume_concurrency=20)
        requests = fb.requests(RequestCode.BATCH_ACK_MESSAGE)
    assert len(listener.messages) == 200
    assert _acked_offsets(fb) == Counter((q, o) for q in (0, 1) for o in range(100))  # each once
    assert fb.requests(RequestCode.ACK_MESSAGE) == []
    assert batch_requests == len(requests) == len(fb.pop.batch_acks)
    # One listener call per message, far fewer requests: calls that end while one request is on
    # the wire share the next.
    assert len(requests) < 200 / 4, len(requests)
    entries = [entry for batch in fb.pop.batch_acks for entry in batch]
    assert all(entry.consumer_group == GROUP and entry.topic == TOPIC for entry in entries)
    assert any(len(entry.offsets) > 1 for entry in entries)  # messages of one pop in one entry


async def test_a_broker_before_5_1_3_gets_one_ack_message_per_message(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with FakeBroker(broker_name="broker-a", version=release_ordinal("5.1.2")) as fb:
        await _consume(fb, 20, consume_concurrency=4)
        assert fb.requests(RequestCode.BATCH_ACK_MESSAGE) == []
        assert len(fb.requests(RequestCode.ACK_MESSAGE)) == 20
    assert _acked_offsets(fb) == Counter((q, o) for q in (0, 1) for o in range(10))


async def test_a_broker_refusing_batch_acks_gets_them_one_by_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with FakeBroker(broker_name="broker-a") as fb:  # a 5.3.3 that does not take the code
        fb.on_reply(RequestCode.BATCH_ACK_MESSAGE, ResponseCode.REQUEST_CODE_NOT_SUPPORTED)
        await _consume(fb, 20, consume_concurrency=4)
        assert len(fb.requests(RequestCode.BATCH_ACK_MESSAGE)) == 1  # then never again
        assert len(fb.requests(RequestCode.ACK_MESSAGE)) == 20
    assert _acked_offsets(fb) == Counter((q, o) for q in (0, 1) for o in range(10))


async def test_a_failed_batch_ack_leaves_the_messages_to_reappear(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with FakeBroker(broker_name="broker-a") as fb:
        fb.add_topic(TOPIC, queues=2)
        fb.add_topic("%RETRY%" + GROUP, queues=1)
        put(fb, 2)
        fb.on_reply(RequestCode.BATCH_ACK_MESSAGE, ResponseCode.SYSTEM_ERROR, remark="disk full")
        listener = Listener()
        async with make(fb, listener, pop_invisible_time=10) as consumer:
            await wait_until(lambda: len(listener.messages) >= 4)  # both again after 10 s
            assert consumer._pop is not None
        assert fb.requests(RequestCode.ACK_MESSAGE) == []
    deliveries = Counter(m.body for m in listener.messages)
    assert set(deliveries) == {b"m-0", b"m-1"}
    assert min(deliveries.values()) >= 2
