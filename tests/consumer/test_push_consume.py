"""PushConsumer consumption against fake brokers: failures and send-back, retry topic, filter."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from rocketmq_py.consumer._concurrent import DEADLINE_SLACK
from rocketmq_py.consumer._push import ConsumeStatus, PushConsumer
from rocketmq_py.consumer._start_offset import parse_consume_timestamp
from rocketmq_py.protocol import (
    ConsumerSendMsgBackRequestHeader,
    Message,
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


def send_backs(cluster: Cluster) -> list[ConsumerSendMsgBackRequestHeader]:
    return [
        from_ext_fields(ConsumerSendMsgBackRequestHeader, cmd.ext_fields)
        for fb in cluster.brokers
        for cmd in fb.requests(SEND_BACK)
    ]


def retry_sends(cluster: Cluster) -> list[dict[str, str]]:
    """The V2 header fields of every SEND_MESSAGE_V2 to the group's retry topic."""
    return [
        dict(cmd.ext_fields)
        for fb in cluster.brokers
        for cmd in fb.requests(RequestCode.SEND_MESSAGE_V2)
        if cmd.ext_fields["b"] == cluster.retry
    ]


async def _return_later(msgs: list[MessageExt]) -> ConsumeStatus:
    return ConsumeStatus.RECONSUME_LATER


async def _raise(msgs: list[MessageExt]) -> None:
    raise RuntimeError("the listener broke")


async def _hang(msgs: list[MessageExt]) -> None:
    await trio.sleep(3600)


FAILURES = {"reconsume_later": _return_later, "exception": _raise, "timeout": _hang}


def fail_first_delivery(
    recorder: Recorder, failure: Callable[[list[MessageExt]], object]
) -> Callable[[list[MessageExt]], object]:
    """A hook that fails (as ``failure`` does) on a message's first delivery only."""

    async def hook(msgs: list[MessageExt]) -> None:
        if all(m.reconsume_times == 0 for m in msgs):
            result = await failure(msgs)  # type: ignore[misc]
            if result is ConsumeStatus.RECONSUME_LATER:
                recorder.status = ConsumeStatus.RECONSUME_LATER
                return
        recorder.status = ConsumeStatus.CONSUME_SUCCESS

    return hook


# --- failures --------------------------------------------------------------------------------------


@pytest.mark.parametrize("failure", sorted(FAILURES))
async def test_failed_message_is_sent_back_and_comes_again_from_the_retry_topic(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
    failure: str,
) -> None:
    a0 = cluster.queues()[0]
    recorder.hook = fail_first_delivery(recorder, FAILURES[failure])
    async with make_consumer(consume_timeout=2) as consumer:
        (stored,) = cluster.put(a0, 1, tags="TagA", keys="k1")
        await cluster.wait_until(lambda: len(recorder.messages) == 2)
        first, again = recorder.messages
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 1)
        assert consumer.failed == 1
        assert consumer.consumed == 1

    (header,) = send_backs(cluster)
    assert header.offset == stored.commit_log_offset
    assert header.group == cluster.group
    assert header.delay_level == 0  # the broker picks 3 + reconsume times
    assert header.max_reconsume_times == 16
    assert header.origin_msg_id == stored.msg_id
    assert header.origin_topic == cluster.topic
    assert header.broker_name == "broker-a"
    assert cluster.a.requests(SEND_BACK)  # to the master of the message's broker
    assert retry_sends(cluster) == []

    # The broker re-queued it in %RETRY%group; delivered with its own topic, one more try.
    (requeued,) = cluster.a.messages(cluster.retry, 0)
    assert requeued.properties["RETRY_TOPIC"] == cluster.topic
    assert first.topic == again.topic == cluster.topic
    assert again.body == first.body == stored.body
    assert (first.reconsume_times, again.reconsume_times) == (0, 1)
    assert again.tags == "TagA"
    assert again.keys == ("k1",)
    assert again.properties["RETRY_TOPIC"] == cluster.topic


async def test_consume_timeout_counts_from_the_listener_call(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    calls: list[float] = []

    async def hook(msgs: list[MessageExt]) -> None:
        calls.append(trio.current_time())
        if msgs[0].reconsume_times == 0:
            await trio.sleep(3600)

    recorder.hook = hook
    async with make_consumer(consume_timeout=30):
        cluster.put(a0, 1)
        await cluster.wait_until(lambda: len(send_backs(cluster)) == 1)
        # From the call's start: at least the timeout, at most DEADLINE_SLACK more (one scope per worker).
        assert 30 <= trio.current_time() - calls[0] <= 30 + DEADLINE_SLACK + 0.1
        await cluster.wait_until(lambda: len(calls) == 2)


async def test_send_back_failure_resends_to_the_retry_topic(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    for fb in cluster.brokers:
        fb.on_reply(SEND_BACK, ResponseCode.SYSTEM_ERROR, remark="no send back today")
    recorder.hook = fail_first_delivery(recorder, _return_later)
    async with make_consumer() as consumer:
        (stored,) = cluster.put(a0, 1, tags="TagA")
        await cluster.wait_until(lambda: len(recorder.messages) == 2)
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 1)

    assert len(send_backs(cluster)) == 1
    (fields,) = retry_sends(cluster)
    assert fields["a"] == "CLIENT_INNER_PRODUCER"
    properties = decode_properties(fields["i"])
    assert properties["RETRY_TOPIC"] == cluster.topic
    assert properties["ORIGIN_MESSAGE_ID"] == stored.msg_id
    assert properties["DELAY"] == "3"  # 3 + reconsume times
    assert properties["TAGS"] == "TagA"
    # RECONSUME_TIME and MAX_RECONSUME_TIMES travel in the header for %RETRY% topics (j, l).
    assert fields["j"] == "1"
    assert fields["l"] == "16"
    first, again = recorder.messages
    assert again.topic == cluster.topic  # restored from RETRY_TOPIC
    assert again.reconsume_times == 1
    assert again.body == first.body


async def test_when_resending_fails_too_the_message_is_consumed_again_5_s_later(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    for fb in cluster.brokers:
        fb.on_reply(SEND_BACK, ResponseCode.SYSTEM_ERROR)
    calls: list[tuple[float, int]] = []

    async def hook(msgs: list[MessageExt]) -> None:
        calls.append((trio.current_time(), msgs[0].queue_offset))
        recorder.status = ConsumeStatus.RECONSUME_LATER if len(calls) == 1 else ConsumeStatus.CONSUME_SUCCESS

    recorder.hook = hook
    async with make_consumer() as consumer:
        for fb in cluster.brokers:  # after start: the retry topic has no writable broker now
            fb.on_reply(RequestCode.SEND_MESSAGE_V2, ResponseCode.NO_PERMISSION, remark="no writes")
        cluster.put(a0, 1)
        await cluster.wait_until(lambda: len(calls) == 1)
        await trio.sleep(4)
        assert consumer._offset_store.get(a0) == 0  # held back while the message waits
        await cluster.wait_until(lambda: len(calls) == 2)
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 1)

    assert retry_sends(cluster)  # the re-send was tried
    (t1, offset1), (t2, offset2) = calls
    assert offset1 == offset2 == 0
    assert 5 <= t2 - t1 < 6
    assert recorder.messages[1].topic == cluster.topic
    assert recorder.messages[1].reconsume_times == 1  # the same message again, counted as a redelivery (Java)


# --- retry topic and filter ------------------------------------------------------------------------


async def test_retry_topic_messages_are_delivered_with_their_original_topic(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    retry_b = cluster.queues(cluster.retry)[1]
    async with make_consumer() as consumer:
        cluster.put(retry_b, 1, properties={"RETRY_TOPIC": "OtherTopic"})
        cluster.put(retry_b, 1)  # no RETRY_TOPIC: left as it is
        await cluster.wait_until(lambda: len(recorder.messages) == 2)
        await cluster.wait_until(lambda: consumer._offset_store.get(retry_b) == 2)
    restored, plain = sorted(recorder.messages, key=lambda m: m.queue_offset)
    assert restored.topic == "OtherTopic"
    assert plain.topic == cluster.retry
    assert restored.queue_id == 0


async def test_tag_filter_is_checked_again_on_the_client(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    async with make_consumer("TagA || TagC") as consumer:
        cluster.put(a0, 1, tags="TagA")
        cluster.put(a0, 1, tags="TagB")
        cluster.put(a0, 1)  # no tag
        cluster.put(a0, 1, tags="TagC")
        cluster.put(a0, 1, tags="TagB")
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 5)
        await trio.sleep(1)
    # The pulls did not carry the expression (postSubscriptionWhenPull is off), so the fake
    # returned every message; the client kept only the subscribed tags.
    assert all(pull.subscription is None for pull in cluster.pulls(cluster.a, a0))
    assert sorted(recorder.offsets(a0)) == [0, 3]
    assert sorted(m.tags or "" for m in recorder.messages) == ["TagA", "TagC"]


# --- start offsets ---------------------------------------------------------------------------------


def max_offset_asks(cluster: Cluster, topic: str) -> int:
    return sum(
        1
        for fb in cluster.brokers
        for cmd in fb.requests(RequestCode.GET_MAX_OFFSET)
        if cmd.ext_fields["topic"] == topic
    )


async def test_first_offset_starts_at_zero_when_the_group_has_no_offset(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    cluster.put(a0, 5)
    async with make_consumer(consume_from_where="CONSUME_FROM_FIRST_OFFSET"):
        await cluster.wait_until(lambda: len(recorder.messages) == 5)
    assert sorted(recorder.offsets(a0)) == [0, 1, 2, 3, 4]
    assert max_offset_asks(cluster, cluster.topic) == 0
    assert cluster.pulls(cluster.a, a0)[0].queue_offset == 0


async def test_last_offset_starts_at_the_max_offset_when_the_group_has_no_offset(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    cluster.first_messages_out_of_memory()  # QUERY_CONSUMER_OFFSET: QUERY_NOT_FOUND
    cluster.put(a0, 5)
    async with make_consumer() as consumer:
        assert consumer._offset_store.get(a0) == -1
        assert cluster.pulls(cluster.a, a0)[0].queue_offset == 5
        cluster.put(a0, 2)
        await cluster.wait_until(lambda: len(recorder.messages) == 2)
    assert sorted(recorder.offsets(a0)) == [5, 6]
    asked = [cmd.ext_fields for cmd in cluster.a.requests(RequestCode.GET_MAX_OFFSET)]
    # Every queue of the topic with no offset (a 5.x broker has none for an empty one either); not
    # the retry topic, which starts at 0.
    assert sorted((f["topic"], f["queueId"]) for f in asked) == [(cluster.topic, "0"), (cluster.topic, "1")]


async def test_timestamp_starts_at_the_first_message_stored_since(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    retry_a = cluster.queues(cluster.retry)[0]
    text = "20240102030405"
    since = parse_consume_timestamp(text)
    cluster.first_messages_out_of_memory()  # so that the timestamp decides the start
    fb = cluster.a
    fb.put_messages(0, [Message(cluster.topic, b"old")] * 2, store_timestamp=since - 60_000)
    fb.put_messages(0, [Message(cluster.topic, b"new")], store_timestamp=since)
    fb.put_messages(0, [Message(cluster.topic, b"newer")], store_timestamp=since + 60_000)
    cluster.put(retry_a, 3)
    async with make_consumer(consume_from_where="CONSUME_FROM_TIMESTAMP", consume_timestamp_ms=since):
        await cluster.wait_until(lambda: len(recorder.messages) == 2)
        await trio.sleep(1)
    assert sorted(recorder.bodies()) == [b"new", b"newer"]
    searches = [c.ext_fields for c in fb.requests(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP)]
    assert {f["timestamp"] for f in searches} == {str(since)}
    # Both queues of the topic: neither has an offset (on a 5.x broker an empty one has none either).
    assert sorted((f["topic"], f["queueId"]) for f in searches) == [
        (cluster.topic, "0"),
        (cluster.topic, "1"),
    ]
    assert cluster.pulls(fb, a0)[0].queue_offset == 2
    # The retry topic is not searched by time: it starts at its max offset (each broker's queue).
    assert max_offset_asks(cluster, cluster.retry) == 2
    assert cluster.pulls(fb, retry_a)[0].queue_offset == 3


async def test_a_stored_offset_wins_over_consume_from_where(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    cluster.put(a0, 5)
    cluster.a.consumer_offsets[(cluster.group, cluster.topic, 0)] = 3
    async with make_consumer(consume_from_where="CONSUME_FROM_FIRST_OFFSET"):
        await cluster.wait_until(lambda: len(recorder.messages) == 2)
        await trio.sleep(1)
    assert sorted(recorder.offsets(a0)) == [3, 4]
    assert max_offset_asks(cluster, cluster.topic) == 0


async def test_retry_topic_with_last_offset_starts_at_zero(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    retry_a = cluster.queues(cluster.retry)[0]
    cluster.put(retry_a, 2, properties={"RETRY_TOPIC": cluster.topic})
    async with make_consumer():
        await cluster.wait_until(lambda: len(recorder.messages) == 2)
    assert max_offset_asks(cluster, cluster.retry) == 0
    assert [m.topic for m in recorder.messages] == [cluster.topic, cluster.topic]


# --- listener kinds --------------------------------------------------------------------------------


async def test_plain_function_listener_runs_in_a_thread(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    a0 = cluster.queues()[0]
    seen: list[tuple[int, bool]] = []

    def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        seen.extend((m.queue_offset, threading.current_thread() is threading.main_thread()) for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    async with make_consumer(listener=listener) as consumer:
        cluster.put(a0, 2)
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 2)
    assert sorted(seen) == [(0, False), (1, False)]


async def test_async_callable_object_listener_is_awaited(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    a0 = cluster.queues()[0]

    class Listener:
        def __init__(self) -> None:
            self.offsets: list[int] = []

        async def __call__(self, msgs: list[MessageExt]) -> None:
            await trio.lowlevel.checkpoint()  # an async def: trio would refuse it in a thread
            self.offsets.extend(m.queue_offset for m in msgs)

    listener = Listener()
    async with make_consumer(listener=listener) as consumer:
        cluster.put(a0, 2)
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 2)
    assert sorted(listener.offsets) == [0, 1]
    assert consumer.failed == 0
