"""Send hooks: called around every attempt, in order, with the attempt's context; a hook's
exception never fails a send; properties added in ``before_send`` reach the broker; no context is
built without hooks."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing

from rocketmq_py.errors import MessageIllegal
from rocketmq_py.hooks import Hook, SendContext
from rocketmq_py.producer._producer import Producer
from rocketmq_py.protocol import RequestCode, ResponseCode, decode_properties

if TYPE_CHECKING:
    from conftest import Cluster

MakeProducer = Callable[..., Producer]
SEND = RequestCode.SEND_MESSAGE_V2


class Calls(Hook):
    """Records (its name, the method, a snapshot of the context's fields) of every call."""

    def __init__(self, label: str, log: list[tuple[str, str, dict[str, Any]]]) -> None:
        self.label = label
        self.log = log

    def _note(self, method: str, ctx: SendContext) -> None:
        snapshot = {
            "group": ctx.producer_group,
            "topic": ctx.message.topic,
            "broker": ctx.broker_name,
            "address": ctx.broker_address,
            "attempt": ctx.attempt,
            "oneway": ctx.oneway,
            "batch": ctx.batch,
            "success": ctx.success,
            "result": ctx.result,
            "exception": ctx.exception,
            "elapsed": ctx.elapsed,
            "ctx": ctx,
        }
        self.log.append((self.label, method, snapshot))

    def before_send(self, ctx: SendContext) -> None:
        self._note("before_send", ctx)

    def after_send(self, ctx: SendContext) -> None:
        self._note("after_send", ctx)


class Raising(Hook):
    def before_send(self, ctx: SendContext) -> None:
        raise RuntimeError("a broken hook")

    def after_send(self, ctx: SendContext) -> None:
        raise RuntimeError("a broken hook")


class AddProperty(Hook):
    def before_send(self, ctx: SendContext) -> None:
        ctx.message.properties["traceparent"] = f"attempt-{ctx.attempt}"


async def test_hooks_run_in_order_around_a_successful_send(
    cluster: Cluster, make_producer: MakeProducer
) -> None:
    log: list[tuple[str, str, dict[str, Any]]] = []
    async with make_producer(hooks=[Calls("one", log)]) as producer:
        producer.register_hook(Calls("two", log))
        result = await producer.send(cluster.message())

    assert [(label, method) for label, method, _ in log] == [
        ("one", "before_send"),
        ("two", "before_send"),
        ("one", "after_send"),
        ("two", "after_send"),
    ]
    before, after = log[0][2], log[2][2]
    assert before["ctx"] is log[1][2]["ctx"] is after["ctx"]  # one context for the attempt
    assert before["group"] == cluster.group
    assert before["topic"] == cluster.topic
    assert before["broker"] == result.queue.broker_name
    assert before["address"] == cluster.broker(result.queue.broker_name).address
    assert before["attempt"] == 1
    assert (before["oneway"], before["batch"]) == (False, False)
    assert (before["success"], before["result"], before["elapsed"]) == (False, None, None)
    assert after["success"] is True
    assert after["result"] is result
    assert after["exception"] is None
    assert after["elapsed"] is not None
    assert after["elapsed"] >= 0
    # The id was set before the hooks ran: they see the message's UNIQ_KEY.
    assert after["ctx"].message.properties["UNIQ_KEY"] == result.msg_id


async def test_a_failed_attempt_and_its_retry_each_get_a_context(
    cluster: Cluster, make_producer: MakeProducer
) -> None:
    cluster.a.on_reply(SEND, ResponseCode.SYSTEM_BUSY, remark="busy")  # b stores
    log: list[tuple[str, str, dict[str, Any]]] = []
    async with make_producer(hooks=[Calls("h", log)]) as producer:
        for _ in range(4):  # round-robin over four queues: broker-a comes up first at least once
            await producer.send(cluster.message())

    afters = [snapshot for _, method, snapshot in log if method == "after_send"]
    retried = [s for s in afters if s["attempt"] == 2]
    assert retried, "no send was retried"
    index = afters.index(retried[0])
    failed, ok = afters[index - 1], afters[index]
    assert (failed["attempt"], failed["broker"]) == (1, "broker-a")
    assert failed["success"] is False
    assert failed["result"] is None
    assert failed["exception"] is not None
    assert failed["exception"].code == ResponseCode.SYSTEM_BUSY
    assert failed["ctx"] is not ok["ctx"]
    assert ok["broker"] == "broker-b"
    assert ok["success"] is True
    assert ok["result"].queue.broker_name == "broker-b"


async def test_a_refused_send_reaches_after_send_with_the_error(
    cluster: Cluster, make_producer: MakeProducer
) -> None:
    for fb in cluster.brokers:
        fb.on_reply(SEND, ResponseCode.MESSAGE_ILLEGAL, remark="no")
    log: list[tuple[str, str, dict[str, Any]]] = []
    async with make_producer(hooks=[Calls("h", log)]) as producer:
        with pytest.raises(MessageIllegal) as raised:
            await producer.send(cluster.message())

    assert [method for _, method, _ in log] == ["before_send", "after_send"]
    after = log[1][2]
    assert after["exception"] is raised.value
    assert after["success"] is False


async def test_a_raising_hook_fails_nothing(
    cluster: Cluster, make_producer: MakeProducer, caplog: pytest.LogCaptureFixture
) -> None:
    log: list[tuple[str, str, dict[str, Any]]] = []
    async with make_producer(hooks=[Raising(), Calls("after-it", log)]) as producer:
        result = await producer.send(cluster.message())
        await producer.send_oneway(cluster.message())

    stored = cluster.broker(result.queue.broker_name).messages(cluster.topic, result.queue.queue_id)
    assert result.msg_id in [m.uniq_key for m in stored]
    assert [method for _, method, _ in log] == ["before_send", "after_send"] * 2  # the next hook ran
    assert caplog.text.count("hook Raising failed") == 4


async def test_a_property_added_before_send_reaches_the_broker(
    cluster: Cluster, make_producer: MakeProducer
) -> None:
    async with make_producer(hooks=[AddProperty()]) as producer:
        result = await producer.send(cluster.message())
        await producer.send_batch([cluster.message(b"1"), cluster.message(b"2")])
        await producer.send_oneway(cluster.message(b"oneway"))

    requests = [cmd for fb in cluster.brokers for cmd in cluster.sends(fb)]
    assert len(requests) == 3
    assert all(decode_properties(cmd.ext_fields["i"])["traceparent"] == "attempt-1" for cmd in requests)
    (stored,) = [
        m
        for m in cluster.broker(result.queue.broker_name).messages(cluster.topic, result.queue.queue_id)
        if m.uniq_key == result.msg_id
    ]
    assert stored.properties["traceparent"] == "attempt-1"


async def test_oneway_send_hooks(cluster: Cluster, make_producer: MakeProducer) -> None:
    log: list[tuple[str, str, dict[str, Any]]] = []
    async with make_producer(hooks=[Calls("h", log)]) as producer:
        await producer.send_oneway(cluster.message())
    (_, _, before), (_, _, after) = log
    assert before["oneway"] is True
    assert after["success"] is True
    assert after["result"] is None


async def test_no_hook_no_context(
    cluster: Cluster, make_producer: MakeProducer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rocketmq_py.producer._send_hooks as send_hooks

    def refuse(**kwargs: Any) -> SendContext:
        raise AssertionError("a SendContext was built with no hook registered")

    monkeypatch.setattr(send_hooks, "SendContext", refuse)
    async with make_producer() as producer:
        await producer.send(cluster.message())
        await producer.send_batch([cluster.message(b"1"), cluster.message(b"2")])
        await producer.send_oneway(cluster.message())
        assert producer.statistics().sent == 3
    # With a hook, the (patched) class is used: the patch does reach the send path.
    async with make_producer(hooks=[Hook()]) as producer:
        with pytest.raises(AssertionError, match="no hook registered"):
            await producer.send(cluster.message())


def test_hooks_must_be_hooks() -> None:
    with pytest.raises(TypeError, match=r"rocketmq_py\.Hook"):
        Producer("g", hooks=[object()])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        Producer("g").register_hook(print)  # type: ignore[arg-type]


async def test_a_cancelled_send_reaches_after_send(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[tuple[str, str, dict[str, Any]]] = []
    for fb in cluster.brokers:
        fb.delay(SEND, 10)
    async with make_producer(hooks=[Calls("h", log)]) as producer:
        with trio.move_on_after(0.5):
            await producer.send(cluster.message())
    (_, _, _before), (_, _, after) = log
    assert isinstance(after["exception"], trio.Cancelled)
    assert after["success"] is False
