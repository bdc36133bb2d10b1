"""POP consumption (``client_rebalance=False``) runs the consume hooks as the concurrent service:
the context of each listener call on success and each kind of failure, no context without hooks,
trace records, and a namespace (plain topics for the listener and hooks, wrapped ones in acks).
Running info lists the popped queues (``mqPopTable``) and rates POP consumption.

The fake's POP behaviour, and the broker methods it is read from: ``rocketmq_py/testing/_fake_pop.py``;
the same behaviour on the real broker: ``integration/test_pop.py`` and ``integration/test_pop_modes.py``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing

from rocketmq_py.consumer._push import ConsumeStatus, PushConsumer
from rocketmq_py.hooks import ConsumeContext, Hook
from rocketmq_py.protocol import (
    ConsumerRunningInfo,
    Message,
    MessageExt,
    PopCheckpoint,
    PropertyKey,
    parse_fastjson,
)
from rocketmq_py.protocol._trace import (
    TRACE_TOPIC,
    ConsumeReturnType,
    SubAfterTrace,
    SubBeforeTrace,
    decode_trace_data,
)
from rocketmq_py.testing._fake_broker import FakeBroker
from tests.consumer._pop_fake import pop_member, wait_until

TOPIC = "PopTopic"
GROUP = "cg-pop-hooks"


@pytest.fixture
async def broker() -> AsyncIterator[FakeBroker]:
    async with FakeBroker(broker_name="broker-a") as fb:
        fb.add_topic(TOPIC, queues=1)
        fb.add_topic("%RETRY%" + GROUP, queues=1)
        yield fb


class Calls(Hook):
    """Records (method, context, success/status/return type at the time) of every consume call."""

    def __init__(self) -> None:
        self.log: list[tuple[str, ConsumeContext, tuple[Any, ...]]] = []

    def before_consume(self, ctx: ConsumeContext) -> None:
        topics = tuple(m.topic for m in ctx.messages)
        self.log.append(("before", ctx, (ctx.success, ctx.status, ctx.return_type, topics)))

    def after_consume(self, ctx: ConsumeContext) -> None:
        self.log.append(("after", ctx, (ctx.success, ctx.status, ctx.return_type, ctx.exception)))

    def afters(self) -> list[ConsumeContext]:
        return [ctx for method, ctx, _ in self.log if method == "after"]


def make(fb: FakeBroker, listener: Any, group: str = GROUP, **options: Any) -> PushConsumer:
    return pop_member(fb, listener, group, TOPIC, **options)


async def test_pop_hooks_see_a_successful_call(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock
) -> None:
    broker.put_messages(0, [Message(TOPIC, b"a"), Message(TOPIC, b"b")])
    calls = Calls()

    async def listener(msgs: list[MessageExt]) -> None:
        return None

    async with make(broker, listener, hooks=[calls], consume_batch_max_size=2) as consumer:
        await wait_until(lambda: len(broker.pop.acks) == 2)
        assert consumer._pop is not None
        (mq,) = consumer._pop.queues

    (before, ctx, at_before), (after, ctx_after, at_after) = calls.log
    assert (before, after) == ("before", "after")
    assert ctx is ctx_after
    assert at_before == (False, None, None, (TOPIC, TOPIC))
    assert at_after == (True, "CONSUME_SUCCESS", "SUCCESS", None)
    assert ctx.consumer_group == GROUP
    assert ctx.queue == mq
    assert ctx.orderly is False
    assert ctx.namespace == ""
    assert [m.body for m in ctx.messages] == [b"a", b"b"]
    assert ctx.elapsed is not None
    assert ctx.elapsed >= 0


@pytest.mark.parametrize(
    ("failure", "return_type"),
    [("reconsume_later", "FAILED"), ("exception", "EXCEPTION"), ("timeout", "TIME_OUT")],
)
async def test_pop_hooks_see_a_failed_call(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock, failure: str, return_type: str
) -> None:
    async def fail(msgs: list[MessageExt]) -> ConsumeStatus:
        if msgs[0].reconsume_times:
            return ConsumeStatus.CONSUME_SUCCESS
        if failure == "exception":
            raise RuntimeError("the listener broke")
        if failure == "timeout":
            await trio.sleep(3600)
        return ConsumeStatus.RECONSUME_LATER

    broker.put_messages(0, [Message(TOPIC, b"x")])
    calls = Calls()
    async with make(broker, fail, consume_timeout=2, hooks=[calls]):
        await wait_until(lambda: len(broker.pop.acks) == 1)

    first, again = calls.afters()
    assert (first.success, first.status, first.return_type) == (False, "RECONSUME_LATER", return_type)
    if failure == "exception":
        assert isinstance(first.exception, RuntimeError)
    elif failure == "timeout":  # the cancellation that cut the call, as the concurrent service reports
        assert isinstance(first.exception, trio.Cancelled)
    else:
        assert first.exception is None
    assert len(broker.pop.changes) == 1  # re-timed, then redelivered
    assert (again.success, again.status, again.return_type) == (True, "CONSUME_SUCCESS", "SUCCESS")
    assert again.messages[0].reconsume_times == 1


async def test_pop_without_hooks_builds_no_context(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rocketmq_py.consumer._consume_hooks as consume_hooks

    built: list[object] = []

    def counting(**kwargs: Any) -> ConsumeContext:
        built.append(kwargs)
        return ConsumeContext(**kwargs)

    monkeypatch.setattr(consume_hooks, "ConsumeContext", counting)
    broker.put_messages(0, [Message(TOPIC, b"%d" % n) for n in range(3)])

    async def listener(msgs: list[MessageExt]) -> None:
        return None

    async with make(broker, listener):
        await wait_until(lambda: len(broker.pop.acks) == 3)
    assert built == []
    broker.put_messages(0, [Message(TOPIC, b"more")])
    async with make(broker, listener, hooks=[Hook()]):
        await wait_until(lambda: len(broker.pop.acks) == 4)
    assert len(built) == 1  # the counter does see a context built with a hook


async def test_pop_consumption_is_traced(broker: FakeBroker, autojump_clock: trio.testing.MockClock) -> None:
    broker.add_topic(TRACE_TOPIC, queues=1)
    # A producer's unique id: the failed delivery's retry copy (PopReviveService.reviveRetry copies
    # the properties) carries it too, so both deliveries trace under one msgId.
    unique = {PropertyKey.UNIQ_KEY: "7F0000010000000000000000000000AA"}
    broker.put_messages(0, [Message(TOPIC, b"p", keys=["key-p"], properties=unique)])
    calls = 0

    async def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        nonlocal calls
        calls += 1
        return ConsumeStatus.RECONSUME_LATER if calls == 1 else ConsumeStatus.CONSUME_SUCCESS

    async with make(broker, listener, enable_trace=True):
        await wait_until(lambda: len(broker.pop.acks) == 1)
    records = [r for m in broker.messages(TRACE_TOPIC, 0) for r in decode_trace_data(m.body.decode())]
    befores = [r for r in records if isinstance(r, SubBeforeTrace)]
    afters = [r for r in records if isinstance(r, SubAfterTrace)]
    assert len(befores) == len(afters) == 2
    (stored,) = broker.messages(TOPIC, 0)
    assert {(r.group, r.msg_id, r.keys) for r in befores} == {(GROUP, stored.msg_id, "key-p")}
    assert [b.request_id for b in befores] == [a.request_id for a in afters]
    assert [(a.success, a.context_code) for a in afters] == [
        (False, ConsumeReturnType.FAILED),
        (True, ConsumeReturnType.SUCCESS),
    ]


async def test_pop_in_a_namespace(autojump_clock: trio.testing.MockClock) -> None:
    wire_topic, wire_group = f"ns1%{TOPIC}", f"ns1%{GROUP}"
    got: list[str] = []

    async def listener(msgs: list[MessageExt]) -> None:
        got.extend(m.topic for m in msgs)

    calls = Calls()
    async with FakeBroker(broker_name="broker-a") as fb:
        fb.add_topic(wire_topic, queues=1)
        fb.add_topic("%RETRY%" + wire_group, queues=1)
        fb.put_messages(0, [Message(wire_topic, b"n")])
        async with make(fb, listener, hooks=[calls], namespace="ns1") as consumer:
            await wait_until(lambda: len(fb.pop.acks) == 1)
            ((mq, popped),) = [(s.queue, s.popped) for s in consumer.pop_statistics()]
        (ack,) = fb.pop.acks
    assert (mq.topic, mq.queue_id, popped) == (TOPIC, 0, 1)  # statistics name the plain topic too
    assert got == [TOPIC]  # the listener sees the plain topic
    ((_, ctx, at_before), _) = calls.log
    assert at_before[3] == (TOPIC,)  # so do the hooks, from before_consume on
    assert ctx.namespace == "ns1"
    assert ctx.consumer_group == wire_group
    assert ack.topic == wire_topic  # the ack names the topic as the broker stores it
    assert PopCheckpoint.parse(ack.extra_info).queue_id == 0


# --- running info and statistics -----------------------------------------------------------------


async def test_running_info_lists_popped_queues_and_counts_pop_consumption(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock
) -> None:
    release = trio.Event()
    broker.put_messages(0, [Message(TOPIC, b"%d" % n) for n in range(3)])

    async def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        await release.wait()
        await trio.sleep(0.5)
        return ConsumeStatus.CONSUME_SUCCESS

    async with make(broker, listener) as consumer:
        assert consumer._pop is not None
        await wait_until(lambda: consumer._pop is not None and consumer._pop.queues)
        (mq,) = consumer._pop.queues
        queue = consumer._pop.queues[mq]
        await wait_until(lambda: queue.waiting_ack == 3)
        held = consumer._running_info()
        release.set()
        await wait_until(lambda: len(broker.pop.acks) == 3)
        await trio.sleep(10)  # rates are per second of uptime
        done = consumer._running_info()
        wall_ms = time.time() * 1000

    assert mq.topic == TOPIC
    assert mq not in held.mq_table  # popped, not pulled
    pop_info = held.mq_pop_table[mq]
    assert (pop_info.wait_ack_count, pop_info.dropped) == (3, False)
    assert wall_ms - 60_000 < pop_info.last_pop_timestamp <= wall_ms
    assert done.mq_pop_table[mq].wait_ack_count == 0
    # What mqadmin consumerStatus reads: Java's PopProcessQueueInfo fields under object keys.
    body = parse_fastjson(done.encode())
    ((key, value),) = body["mqPopTable"].items()
    assert dict(key) == {"brokerName": "broker-a", "queueId": 0, "topic": TOPIC}
    assert set(value) == {"droped", "lastPopTimestamp", "waitAckCount"}
    assert ConsumerRunningInfo.decode(done.encode()).mq_pop_table == done.mq_pop_table
    status = done.status_table[TOPIC]
    assert status.consume_ok_tps > 0
    assert status.consume_failed_msgs == 0
    assert status.pull_tps > 0
    assert status.consume_rt >= 500  # ms: the calls waited for the release, then 0.5 s


async def test_a_rebalance_round_finishing_after_the_stop_starts_no_pop(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock
) -> None:
    """A round whose assignment answer arrives as the consumer stops must not start a pop loop: the
    POP service's nursery is closed by then (CI: ``RuntimeError: Nursery is closed to new
    arrivals`` out of ``test_three_consumers_on_two_queues_all_receive`` on 5.5.0)."""
    consumer = make(broker, lambda msgs: ConsumeStatus.CONSUME_SUCCESS)
    async with consumer:
        pop = consumer._pop
        assert pop is not None
        await wait_until(lambda: bool(pop.queues))
        assigned = set(pop.queues)
    pop.apply_assignment(TOPIC, assigned, set())  # the round's last step, after the block
    assert not pop.queues
