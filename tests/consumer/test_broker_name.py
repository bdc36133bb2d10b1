"""MessageExt.broker_name on what consumers deliver: broker-a's queue 0 is not broker-b's queue 0.

Every message body names its queue (``b"<broker>/<queue>-<n>"``, see ``Cluster.put``), so each test
checks the attribute against where the message really was. The retry paths check that the name
stays off the wire: it is no property.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing

from rocketmq_py.consumer._lite_pull import LitePullConsumer
from rocketmq_py.consumer._push import ConsumeStatus, PushConsumer
from rocketmq_py.consumer._retry import retry_message
from rocketmq_py.protocol import MessageExt, MessageQueue, RequestCode, ResponseCode, decode_properties

if TYPE_CHECKING:
    from conftest import Cluster, Recorder

MakeConsumer = Callable[..., PushConsumer]


def queue_zeros(cluster: Cluster) -> tuple[MessageQueue, MessageQueue]:
    a0, _, b0, _ = cluster.queues()
    assert (a0.queue_id, b0.queue_id) == (0, 0)
    return a0, b0


def where(msgs: list[MessageExt]) -> set[tuple[str, int, bytes]]:
    return {(m.broker_name, m.queue_id, m.body) for m in msgs}


# Both queues 0, two messages each: (broker_name, queue_id, body) of what must be delivered.
EXPECTED = {
    ("broker-a", 0, b"broker-a/0-0"),
    ("broker-a", 0, b"broker-a/0-1"),
    ("broker-b", 0, b"broker-b/0-0"),
    ("broker-b", 0, b"broker-b/0-1"),
}


@pytest.mark.parametrize("orderly", [False, True], ids=["concurrent", "orderly"])
async def test_push_consumer_names_the_broker_of_each_message(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
    orderly: bool,
) -> None:
    async with make_consumer(orderly=orderly):
        for mq in queue_zeros(cluster):
            cluster.put(mq, 2)
        await cluster.wait_until(lambda: len(recorder.messages) == 4)
    assert where(recorder.messages) == EXPECTED


async def test_broadcasting_push_consumer_names_the_broker_of_each_message(
    cluster: Cluster, make_consumer: MakeConsumer, recorder: Recorder, tmp_path: Path
) -> None:
    # The real clock, as in test_push_broadcast.py: the offset file is written in worker threads.
    async with make_consumer(message_model="BROADCASTING", offsets_dir=str(tmp_path)):
        for mq in queue_zeros(cluster):
            cluster.put(mq, 2)
        await cluster.wait_until(lambda: len(recorder.messages) == 4)
    assert where(recorder.messages) == EXPECTED


@pytest.fixture
def make_lite(cluster: Cluster) -> Callable[..., LitePullConsumer]:
    def make(**options: Any) -> LitePullConsumer:
        options.setdefault("namesrv", cluster.namesrv.address)
        options.setdefault("instance_name", "me")
        options.setdefault("client_ip", "127.0.0.1")
        options.setdefault("consume_from_where", "CONSUME_FROM_FIRST_OFFSET")
        return LitePullConsumer(cluster.group, **options)

    return make


async def test_lite_pull_poll_and_getmany_name_the_broker_of_each_message(
    cluster: Cluster,
    make_lite: Callable[..., LitePullConsumer],
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0, b0 = queue_zeros(cluster)
    for mq in (a0, b0):
        cluster.put(mq, 2)
    async with make_lite() as consumer:
        consumer.assign([a0, b0])
        polled: list[MessageExt] = []
        with trio.fail_after(60):
            while len(polled) < 4:
                polled.extend(await consumer.poll(timeout=1))
        assert where(polled) == EXPECTED

        for mq in (a0, b0):
            cluster.put(mq, 1)
        await cluster.wait_until(lambda: sum(s.pq.msg_count for s in consumer._queues.values()) == 2)
        by_queue = await consumer.getmany()
    assert set(by_queue) == {a0, b0}
    for mq, msgs in by_queue.items():
        assert where(msgs) == {(mq.broker_name, 0, f"{mq.broker_name}/0-2".encode())}


async def test_a_resent_message_carries_no_broker_name_and_comes_back_named_by_the_retry_queue(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    # CONSUMER_SEND_MSG_BACK fails, so the client re-sends a copy to %RETRY%group itself.
    _, b0 = queue_zeros(cluster)
    for fb in cluster.brokers:
        fb.on_reply(RequestCode.CONSUMER_SEND_MSG_BACK, ResponseCode.SYSTEM_ERROR, remark="not today")

    async def fail_first(msgs: list[MessageExt]) -> None:
        first = all(m.reconsume_times == 0 for m in msgs)
        recorder.status = ConsumeStatus.RECONSUME_LATER if first else ConsumeStatus.CONSUME_SUCCESS

    recorder.hook = fail_first
    async with make_consumer():
        cluster.put(b0, 1)
        await cluster.wait_until(lambda: len(recorder.messages) == 2)
    first, again = recorder.messages
    assert first.broker_name == "broker-b"
    resends = [
        cmd
        for fb in cluster.brokers
        for cmd in fb.requests(RequestCode.SEND_MESSAGE_V2)
        if cmd.ext_fields["b"] == cluster.retry
    ]
    (resend,) = resends
    assert "broker-b" not in decode_properties(resend.ext_fields["i"]).values()
    assert "broker-b" not in resend.ext_fields["i"]
    # Stored in one of the retry topic's queues and pulled from there: named by that queue's broker.
    (retry_broker,) = [fb for fb in cluster.brokers if fb.messages(cluster.retry, 0)]
    assert (again.body, again.reconsume_times) == (first.body, 1)
    assert again.broker_name == retry_broker.broker_name


def test_the_retry_copy_is_a_plain_message_without_the_broker_name() -> None:
    # Concurrent send-back fallback and orderly DLQ both build the copy with retry_message.
    msg = MessageExt("T", b"x", tags="TagA", broker_name="broker-a", queue_id=0, queue_offset=3)
    copy = retry_message(msg, "g", reconsume_times=1, max_reconsume_times=16)
    assert not hasattr(copy, "broker_name")
    assert "broker-a" not in copy.properties.values()
