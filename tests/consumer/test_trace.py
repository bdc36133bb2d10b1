"""Message trace (``enable_trace=True``) against fakes: the records a send, a listener call and a
transaction's end write to the trace topic, as Java's trace hooks write them.

The real broker, ``mqadmin queryMsgTraceById`` and the Java client's records are in
``integration/test_trace.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio
import trio.testing

from rocketmq_py._client._config import ClientConfig
from rocketmq_py._tracing._dispatcher import TraceDispatcher
from rocketmq_py.consumer._push import ConsumeStatus, PushConsumer
from rocketmq_py.producer._producer import Producer
from rocketmq_py.producer._transaction import TransactionProducer
from rocketmq_py.producer._types import LocalTransactionState
from rocketmq_py.protocol import Message, MessageExt
from rocketmq_py.protocol._trace import (
    TRACE_TOPIC,
    ConsumeReturnType,
    EndTransactionTrace,
    PubTrace,
    SubAfterTrace,
    SubBeforeTrace,
    TraceMessageType,
    TraceRecord,
    decode_trace_data,
)

if TYPE_CHECKING:
    from conftest import Cluster

MakeConsumer = Callable[..., PushConsumer]


def _with_trace_topic(cluster: Cluster) -> None:
    cluster.a.add_topic(TRACE_TOPIC, queues=1)
    cluster.namesrv.set_route(TRACE_TOPIC, cluster.route(cluster.a, queues=1))


def _trace(cluster: Cluster) -> tuple[list[TraceRecord], list[MessageExt]]:
    messages = cluster.a.messages(TRACE_TOPIC, 0)
    return [r for m in messages for r in decode_trace_data(m.body.decode())], messages


async def test_sends_are_recorded_as_pub_records_keyed_by_message_id(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    _with_trace_topic(cluster)
    async with Producer("pg-trace", namesrv=cluster.namesrv.address, enable_trace=True) as producer:
        results = [
            await producer.send(Message(cluster.topic, b"body-%d" % i, tags="TagA", keys=[f"k{i}"]))
            for i in range(3)
        ]
        assert producer._trace is not None
        assert producer._trace.dispatcher.statistics.appended == 3
    records, messages = _trace(cluster)  # flushed when the producer closed
    assert len(messages) == 1
    assert [type(r) for r in records] == [PubTrace] * 3
    for record, result, i in zip(records, results, range(3), strict=True):
        assert isinstance(record, PubTrace)
        assert (record.group, record.topic, record.msg_id, record.offset_msg_id) == (
            "pg-trace",
            cluster.topic,
            result.msg_id,
            result.offset_msg_id,
        )
        assert (record.tags, record.keys, record.success, record.body_length) == ("TagA", f"k{i}", True, 6)
        assert record.msg_type is TraceMessageType.NORMAL
        assert record.store_host == cluster.broker(result.queue).address
    assert set(messages[0].keys) == {r.msg_id for r in results} | {"k0", "k1", "k2"}


async def test_a_listener_call_is_recorded_before_and_after_with_one_request_id(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    _with_trace_topic(cluster)
    a0 = cluster.queues()[0]
    calls = 0

    def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        nonlocal calls
        calls += 1
        return ConsumeStatus.RECONSUME_LATER if calls == 1 else ConsumeStatus.CONSUME_SUCCESS

    async with make_consumer(listener=listener, enable_trace=True, consume_batch_max_size=2) as consumer:
        stored = cluster.put(a0, 2, keys=["key-x"])
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 2)
    records, _ = _trace(cluster)
    befores = [r for r in records if isinstance(r, SubBeforeTrace)]
    afters = [r for r in records if isinstance(r, SubAfterTrace)]
    ids = sorted(m.msg_id for m in stored)
    assert sorted(r.msg_id for r in befores[:2]) == ids
    assert {r.group for r in befores} == {cluster.group}
    assert {r.keys for r in befores} == {"key-x"}
    first = afters[:2]
    assert len({r.request_id for r in first}) == 1
    assert first[0].request_id == befores[0].request_id
    assert [(r.success, r.context_code) for r in first] == [(False, ConsumeReturnType.FAILED)] * 2


async def test_a_transaction_end_is_recorded(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    _with_trace_topic(cluster)
    async with TransactionProducer(
        "pg-tx-trace",
        namesrv=cluster.namesrv.address,
        enable_trace=True,
        execute_local_transaction=lambda message, arg: LocalTransactionState.COMMIT_MESSAGE,
        check_local_transaction=lambda message: LocalTransactionState.COMMIT_MESSAGE,
    ) as producer:
        sent = await producer.send_message_in_transaction(Message(cluster.topic, b"tx", tags="T"))
    records, _ = _trace(cluster)
    [pub] = [r for r in records if isinstance(r, PubTrace)]
    [end] = [r for r in records if isinstance(r, EndTransactionTrace)]
    assert pub.msg_type is TraceMessageType.TRANSACTION_HALF
    assert (end.msg_id, end.state, end.from_check, end.tags) == (
        sent.send_result.msg_id,
        "COMMIT_MESSAGE",
        False,
        "T",
    )


async def test_a_full_queue_drops_records_and_counts_them() -> None:
    dispatcher = TraceDispatcher(
        "g", ClientConfig(namesrv="127.0.0.1:1"), open_sender=Producer, queue_size=2, batch_num=10
    )
    record = SubBeforeTrace(
        timestamp=1, region_id="R", group="g", request_id="r", msg_id="m", retry_times=0, keys=""
    )
    for _ in range(5):
        dispatcher.append(record)
    assert (dispatcher.statistics.appended, dispatcher.statistics.dropped) == (2, 3)


async def test_a_sub_after_record_is_stamped_with_the_end_of_the_call(
    cluster: Cluster, make_consumer: MakeConsumer
) -> None:  # (real time: the listener's thread sleeps on the wall clock)
    """Java stamps SubAfter with the time its context is made, after the listener returned
    (``ConsumeMessageTraceHookImpl.consumeMessageAfter``: ``new TraceContext()``); we stamped it
    with the call's start. A listener in a thread that takes 0.3 s of wall time shows it."""
    _with_trace_topic(cluster)
    a0 = cluster.queues()[0]

    def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        time.sleep(0.3)  # wall time: trace timestamps are epoch ms
        return ConsumeStatus.CONSUME_SUCCESS

    async with make_consumer(listener=listener, enable_trace=True) as consumer:
        cluster.put(a0, 1)
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 1)
    records, _ = _trace(cluster)
    [before] = [r for r in records if isinstance(r, SubBeforeTrace)]
    [after] = [r for r in records if isinstance(r, SubAfterTrace)]
    assert after.timestamp - before.timestamp >= 300
    assert after.cost_ms >= 300


async def test_a_broker_that_turns_traces_off_gets_no_pub_records(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    """A broker whose ``traceOn`` is false answers sends with ``TRACE_ON=false``; Java's
    ``SendMessageTraceHookImpl.sendMessageAfter`` then writes no record (``SendResult.isTraceOn``).
    We wrote one for every send."""
    _with_trace_topic(cluster)
    cluster.a.trace_on = False
    async with Producer("pg-trace-off", namesrv=cluster.namesrv.address, enable_trace=True) as producer:
        result = await producer.send(Message(cluster.topic, b"untraced"), queue=cluster.queues()[0])
        assert result.trace_on is False
        assert producer._trace is not None
        assert producer._trace.dispatcher.statistics.appended == 0
    cluster.a.trace_on = True
    async with Producer("pg-trace-off", namesrv=cluster.namesrv.address, enable_trace=True) as producer:
        assert (await producer.send(Message(cluster.topic, b"traced"), queue=cluster.queues()[0])).trace_on
    records, _ = _trace(cluster)
    assert [type(r) for r in records] == [PubTrace]
