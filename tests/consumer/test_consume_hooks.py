"""Consume hooks on the push consumer (concurrent and orderly) and the lite pull consumer: the
context's fields on success and on each kind of failure, a raising hook, no context without hooks."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing

from rocketmq_py.consumer._lite_pull import LitePullConsumer
from rocketmq_py.consumer._push import ConsumeOrderlyStatus, ConsumeStatus, PushConsumer
from rocketmq_py.hooks import ConsumeContext, Hook
from rocketmq_py.protocol import ConsumeType, MessageExt

if TYPE_CHECKING:
    from conftest import Cluster, Recorder

MakeConsumer = Callable[..., PushConsumer]


class Calls(Hook):
    """Records (method, context, success/status/return type at the time) of every consume call."""

    def __init__(self) -> None:
        self.log: list[tuple[str, ConsumeContext, tuple[Any, ...]]] = []

    def before_consume(self, ctx: ConsumeContext) -> None:
        self.log.append(("before", ctx, (ctx.success, ctx.status, ctx.return_type, ctx.elapsed)))

    def after_consume(self, ctx: ConsumeContext) -> None:
        self.log.append(("after", ctx, (ctx.success, ctx.status, ctx.return_type, ctx.exception)))

    def afters(self) -> list[ConsumeContext]:
        return [ctx for method, ctx, _ in self.log if method == "after"]


class Raising(Hook):
    def before_consume(self, ctx: ConsumeContext) -> None:
        raise RuntimeError("a broken hook")

    def after_consume(self, ctx: ConsumeContext) -> None:
        raise RuntimeError("a broken hook")


async def test_push_hooks_see_a_successful_call(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    a0 = cluster.queues()[0]
    calls = Calls()
    async with make_consumer(hooks=[calls]) as consumer:
        (stored,) = cluster.put(a0, 1, tags="TagA")
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 1)

    (before, ctx, at_before), (after, ctx_after, at_after) = calls.log
    assert (before, after) == ("before", "after")
    assert ctx is ctx_after
    assert at_before == (False, None, None, None)
    assert at_after == (True, "CONSUME_SUCCESS", "SUCCESS", None)
    assert ctx.consumer_group == cluster.group
    assert ctx.queue == a0
    assert [m.msg_id for m in ctx.messages] == [stored.msg_id]
    assert ctx.consume_type is ConsumeType.CONSUME_PASSIVELY
    assert ctx.orderly is False
    assert ctx.elapsed is not None
    assert ctx.elapsed >= 0


@pytest.mark.parametrize(
    ("failure", "return_type"),
    [("reconsume_later", "FAILED"), ("exception", "EXCEPTION"), ("timeout", "TIME_OUT")],
)
async def test_push_hooks_see_a_failed_call(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
    failure: str,
    return_type: str,
) -> None:
    async def fail(msgs: list[MessageExt]) -> ConsumeStatus | None:
        if msgs[0].reconsume_times:
            return ConsumeStatus.CONSUME_SUCCESS
        if failure == "exception":
            raise RuntimeError("the listener broke")
        if failure == "timeout":
            await trio.sleep(3600)
        return ConsumeStatus.RECONSUME_LATER

    a0 = cluster.queues()[0]
    calls = Calls()
    async with make_consumer(listener=fail, consume_timeout=2) as consumer:
        consumer.register_hook(calls)
        cluster.put(a0, 1)
        await cluster.wait_until(lambda: len(calls.afters()) == 2)

    first, again = calls.afters()
    assert first.success is False
    assert first.status == "RECONSUME_LATER"
    assert first.return_type == return_type
    if failure == "exception":
        assert isinstance(first.exception, RuntimeError)
    elif failure == "timeout":
        assert isinstance(first.exception, trio.Cancelled)
    else:
        assert first.exception is None
    # The redelivery (from the retry topic, topic restored) succeeded.
    assert again.success is True
    assert again.messages[0].topic == cluster.topic


async def test_orderly_hooks(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    answers = iter([ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT, ConsumeOrderlyStatus.SUCCESS])

    async def listener(msgs: list[MessageExt]) -> ConsumeOrderlyStatus:
        return next(answers)

    a0 = cluster.queues()[0]
    calls = Calls()
    async with make_consumer(orderly=True, listener=listener, hooks=[calls]) as consumer:
        cluster.put(a0, 1)
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 1)

    suspended, ok = calls.afters()
    assert suspended.orderly is True
    assert (suspended.success, suspended.status, suspended.return_type) == (
        False,
        "SUSPEND_CURRENT_QUEUE_A_MOMENT",
        "FAILED",
    )
    assert (ok.success, ok.status, ok.return_type) == (True, "SUCCESS", "SUCCESS")


async def test_orderly_hooks_see_a_timed_out_call_and_its_cancellation(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    async def listener(msgs: list[MessageExt]) -> ConsumeOrderlyStatus:
        if not msgs[0].reconsume_times:
            await trio.sleep(3600)
        return ConsumeOrderlyStatus.SUCCESS

    a0 = cluster.queues()[0]
    calls = Calls()
    async with make_consumer(orderly=True, listener=listener, hooks=[calls], consume_timeout=2) as consumer:
        cluster.put(a0, 1)
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 1)

    timed_out, ok = calls.afters()
    assert (timed_out.success, timed_out.status, timed_out.return_type) == (
        False,
        "SUSPEND_CURRENT_QUEUE_A_MOMENT",
        "TIME_OUT",
    )
    assert isinstance(timed_out.exception, trio.Cancelled)  # as the concurrent service reports it
    assert (ok.success, ok.return_type, ok.exception) == (True, "SUCCESS", None)


async def test_a_raising_hook_does_not_fail_the_consumption(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    a0 = cluster.queues()[0]
    calls = Calls()
    async with make_consumer(hooks=[Raising(), calls]) as consumer:
        cluster.put(a0, 2)
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 2)
        assert consumer.failed == 0

    assert len(recorder.messages) == 2
    assert all(ctx.success for ctx in calls.afters())
    assert caplog.text.count("hook Raising failed") == 4


async def test_no_hook_no_consume_context(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    autojump_clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import rocketmq_py.consumer._consume_hooks as consume_hooks

    built: list[object] = []

    def counting(**kwargs: Any) -> ConsumeContext:
        built.append(kwargs)
        return ConsumeContext(**kwargs)

    monkeypatch.setattr(consume_hooks, "ConsumeContext", counting)
    a0, a1 = cluster.queues()[:2]
    async with make_consumer() as consumer:
        cluster.put(a0, 3)
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 3)
    assert built == []
    async with make_consumer(orderly=True, hooks=[Hook()]) as consumer:
        cluster.put(a1, 1)
        await cluster.wait_until(lambda: consumer._offset_store.get(a1) == 1)
    assert len(built) == 1  # the counter does see the contexts built with a hook


async def test_lite_pull_hooks_report_each_poll(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    a0, _, _, b1 = cluster.queues()
    cluster.put(a0, 3)
    cluster.put(b1, 2)
    calls = Calls()
    consumer = LitePullConsumer(
        cluster.group,
        namesrv=cluster.namesrv.address,
        instance_name="me",
        client_ip="127.0.0.1",
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        hooks=[calls],
    )
    got: list[MessageExt] = []
    async with consumer:
        consumer.assign([a0, b1])
        with trio.fail_after(60):
            while len(got) < 5:
                got.extend(await consumer.poll(timeout=1))

    afters = calls.afters()
    assert sorted(m.msg_id for ctx in afters for m in ctx.messages) == sorted(m.msg_id for m in got)
    for ctx in afters:
        assert ctx.consume_type is ConsumeType.CONSUME_ACTIVELY
        assert (ctx.success, ctx.status, ctx.return_type) == (True, "CONSUME_SUCCESS", "SUCCESS")
        assert {(m.topic, m.queue_id) for m in ctx.messages} == {(ctx.queue.topic, ctx.queue.queue_id)}
    assert [method for method, _, _ in calls.log] == ["before", "after"] * len(afters)
