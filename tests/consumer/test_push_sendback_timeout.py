"""A send-back whose outcome is unknown (its reply comes after the timeout): at-least-once, as Java.

CONSUMER_SEND_MSG_BACK that times out may still have been stored by the broker. The consumer then
does what Java's ``sendMessageBack`` does after any failure: it re-sends the message to
``%RETRY%group`` with its inner producer. Two copies may then come back (a legitimate duplicate);
none is lost, and the original queue's offset moves on: the message is not also consumed again
locally. A reply that is slow but within the timeout causes no re-send.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from rocketmq_py.consumer._push import SEND_BACK_TIMEOUT, ConsumeStatus, PushConsumer
from rocketmq_py.protocol import (
    ConsumerSendMsgBackRequestHeader,
    MessageExt,
    RequestCode,
    ResponseCode,
    decode_properties,
    from_ext_fields,
)

if TYPE_CHECKING:
    from conftest import Cluster, Recorder

MakeConsumer = Callable[..., PushConsumer]
SEND_BACK = RequestCode.CONSUMER_SEND_MSG_BACK


def send_back_headers(cluster: Cluster) -> list[ConsumerSendMsgBackRequestHeader]:
    return [
        from_ext_fields(ConsumerSendMsgBackRequestHeader, cmd.ext_fields)
        for fb in cluster.brokers
        for cmd in fb.requests(SEND_BACK)
    ]


def retry_resends(cluster: Cluster) -> list[dict[str, str]]:
    """The V2 header fields of every SEND_MESSAGE_V2 (the inner producer's) to the retry topic."""
    return [
        dict(cmd.ext_fields)
        for fb in cluster.brokers
        for cmd in fb.requests(RequestCode.SEND_MESSAGE_V2)
        if cmd.ext_fields["b"] == cluster.retry
    ]


def retry_copies(cluster: Cluster) -> list[MessageExt]:
    return [m for fb in cluster.brokers for m in fb.messages(cluster.retry, 0)]


def fail_first_delivery(recorder: Recorder) -> None:
    async def hook(msgs: list[MessageExt]) -> None:
        first = all(m.reconsume_times == 0 for m in msgs)
        recorder.status = ConsumeStatus.RECONSUME_LATER if first else ConsumeStatus.CONSUME_SUCCESS

    recorder.hook = hook


async def test_send_back_reply_after_the_timeout_resends_to_the_retry_topic_once(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    cluster.a.delay(SEND_BACK, 60)  # stored at once, answered long after the client gave up
    fail_first_delivery(recorder)
    async with make_consumer() as consumer:
        (stored,) = cluster.put(a0, 1, tags="TagA")
        await cluster.wait_until(lambda: len(send_back_headers(cluster)) == 1, step=0.001)
        sent_back_at = trio.current_time()
        await cluster.wait_until(lambda: len(retry_resends(cluster)) == 1, step=0.001)
        # The fallback starts only once the send-back's full timeout has passed.
        assert trio.current_time() - sent_back_at == pytest.approx(SEND_BACK_TIMEOUT, abs=0.01)
        # Both copies (the broker's, from the late send-back, and the re-send) come back once each.
        await cluster.wait_until(lambda: len(recorder.messages) == 3)
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 1)
        await trio.sleep(10)  # nothing else: no local re-consumption, no further re-send
        assert len(recorder.messages) == 3

    (header,) = send_back_headers(cluster)
    assert header.offset == stored.commit_log_offset
    (fields,) = retry_resends(cluster)
    assert fields["a"] == "CLIENT_INNER_PRODUCER"
    assert fields["j"] == "1"  # reconsume times of the copy
    properties = decode_properties(fields["i"])
    assert properties["RETRY_TOPIC"] == cluster.topic
    assert properties["DELAY"] == "3"
    assert properties["ORIGIN_MESSAGE_ID"] == stored.msg_id

    assert len(retry_copies(cluster)) == 2  # the at-least-once duplicate, as Java would make it
    first, *again = recorder.messages
    assert first.reconsume_times == 0
    assert first.queue_offset == stored.queue_offset
    assert [m.reconsume_times for m in again] == [1, 1]
    assert {(m.topic, m.body) for m in recorder.messages} == {(cluster.topic, stored.body)}
    assert [m.properties["ORIGIN_MESSAGE_ID"] for m in again] == [stored.msg_id] * 2
    assert len({m.offset_msg_id for m in recorder.messages}) == 3  # three stored copies, each delivered once
    assert (consumer.failed, consumer.consumed) == (1, 2)


async def test_slow_send_back_within_the_timeout_makes_no_second_copy(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    fail_first_delivery(recorder)
    async with make_consumer() as consumer:
        cluster.a.delay(SEND_BACK, SEND_BACK_TIMEOUT * 0.9)
        cluster.put(a0, 1)
        await cluster.wait_until(lambda: len(recorder.messages) == 2)
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 1)
        await trio.sleep(10)
        assert len(recorder.messages) == 2

    assert len(send_back_headers(cluster)) == 1
    assert retry_resends(cluster) == []
    assert len(retry_copies(cluster)) == 1
    assert [m.reconsume_times for m in recorder.messages] == [0, 1]


async def test_send_back_timeout_and_failed_resend_consume_locally_without_losing_the_broker_copy(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    cluster.a.never_reply(SEND_BACK)  # the broker stores the copy, the answer never comes
    calls: list[int] = []

    async def hook(msgs: list[MessageExt]) -> None:
        calls.append(msgs[0].reconsume_times)
        recorder.status = ConsumeStatus.RECONSUME_LATER if len(calls) == 1 else ConsumeStatus.CONSUME_SUCCESS

    recorder.hook = hook
    async with make_consumer() as consumer:
        for fb in cluster.brokers:  # after start: the retry topic takes no re-send now
            fb.on_reply(RequestCode.SEND_MESSAGE_V2, ResponseCode.NO_PERMISSION, remark="no writes")
        (stored,) = cluster.put(a0, 1)
        # The local re-consumption (5 s later) and the broker's copy: the message is not lost.
        await cluster.wait_until(lambda: len(recorder.messages) == 3)
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 1)

    assert len(send_back_headers(cluster)) == 1
    assert len(retry_resends(cluster)) >= 1  # tried (the inner producer may retry the refused send)
    assert len(retry_copies(cluster)) == 1
    local = [m for m in recorder.messages[1:] if m.offset_msg_id == stored.offset_msg_id]
    broker_copy = [m for m in recorder.messages[1:] if m.offset_msg_id != stored.offset_msg_id]
    assert len(local) == 1
    assert [m.reconsume_times for m in broker_copy] == [1]
    assert broker_copy[0].properties["ORIGIN_MESSAGE_ID"] == stored.msg_id
    assert {(m.topic, m.body) for m in recorder.messages} == {(cluster.topic, stored.body)}
