"""The consumer's own re-sends (send-back fallback, orderly DLQ) go through its client instance.

Java's consumer re-sends a failed message through the client instance's inner producer
(``MQClientInstance.getDefaultMQProducer()``, group ``CLIENT_INNER_PRODUCER``): the same
connections, RPC hooks (ACL), TLS and timeouts as everything else the consumer does. The copy it
sends to ``%RETRY%group`` is a new message: it must not carry the prepared-transaction flag of a
committed transactional message, or the broker keeps it out of the consume queue for good.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import trio
import trio.testing

from rocketmq_py.consumer._orderly import ConsumeOrderlyStatus
from rocketmq_py.consumer._push import ConsumeStatus, PushConsumer
from rocketmq_py.protocol import (
    HeartbeatData,
    MessageExt,
    PropertyKey,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SysFlag,
    decode_body,
    decode_properties,
)

if TYPE_CHECKING:
    from conftest import Cluster, Recorder

MakeConsumer = Callable[..., PushConsumer]
SEND_BACK = RequestCode.CONSUMER_SEND_MSG_BACK


def retry_sends(cluster: Cluster) -> list[RemotingCommand]:
    """Every SEND_MESSAGE_V2 to the group's retry topic (the consumer's re-sends)."""
    return [
        cmd
        for fb in cluster.brokers
        for cmd in fb.requests(RequestCode.SEND_MESSAGE_V2)
        if cmd.ext_fields["b"] == cluster.retry
    ]


def fail_first_delivery(recorder: Recorder) -> None:
    async def hook(msgs: list[MessageExt]) -> None:
        first = all(m.reconsume_times == 0 for m in msgs)
        recorder.status = ConsumeStatus.RECONSUME_LATER if first else ConsumeStatus.CONSUME_SUCCESS

    recorder.hook = hook


async def test_send_back_fallback_of_a_committed_transactional_message_is_not_prepared(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    for fb in cluster.brokers:
        fb.on_reply(SEND_BACK, ResponseCode.SYSTEM_ERROR, remark="no send back today")
    fail_first_delivery(recorder)
    async with make_consumer():
        # A committed transactional message keeps TRAN_MSG=true among its stored properties.
        cluster.put(a0, 1, properties={PropertyKey.TRANSACTION_PREPARED: "true"})
        await cluster.wait_until(lambda: len(retry_sends(cluster)) == 1)

    (resend,) = retry_sends(cluster)
    properties = decode_properties(resend.ext_fields["i"])
    assert PropertyKey.TRANSACTION_PREPARED not in properties
    assert int(resend.ext_fields["f"]) & SysFlag.TRANSACTION_PREPARED_TYPE == 0


async def test_send_back_fallback_goes_signed_through_the_consumers_own_client(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    for fb in cluster.brokers:
        fb.on_reply(SEND_BACK, ResponseCode.SYSTEM_ERROR, remark="no send back today")
    fail_first_delivery(recorder)
    consumer = make_consumer(access_key="ak-1", secret_key="sk-1", request_timeout=7.0)
    async with consumer:
        cluster.put(a0, 1)
        await cluster.wait_until(lambda: len(retry_sends(cluster)) == 1)
        await cluster.wait_until(lambda: len(recorder.messages) == 2)
        client_id = consumer.client_id

    (resend,) = retry_sends(cluster)
    assert resend.ext_fields["a"] == "CLIENT_INNER_PRODUCER"
    assert resend.ext_fields["AccessKey"] == "ak-1"
    assert "Signature" in resend.ext_fields
    for fb in cluster.brokers:
        # One client: one connection per broker, and every heartbeat names the consumer's client id
        # (the inner producer group rides on it, as in Java's MQClientInstance).
        assert fb.accepted == 1
        beats = [decode_body(HeartbeatData, cmd.body) for cmd in fb.requests(RequestCode.HEART_BEAT)]
        assert beats
        assert {beat.client_id for beat in beats} == {client_id}
        assert all("AccessKey" in cmd.ext_fields for cmd in fb.requests(RequestCode.HEART_BEAT))
    assert any(
        "CLIENT_INNER_PRODUCER" in {p.group_name for p in beat.producer_data_set}
        for fb in cluster.brokers
        for beat in (decode_body(HeartbeatData, cmd.body) for cmd in fb.requests(RequestCode.HEART_BEAT))
    )


async def test_orderly_dlq_send_goes_signed_through_the_consumers_own_client(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    recorder.status = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT  # type: ignore[assignment]
    consumer = make_consumer(
        orderly=True,
        max_reconsume_times=1,
        access_key="ak-1",
        secret_key="sk-1",
        suspend_current_queue_time=0.1,
    )
    async with consumer:
        cluster.put(a0, 1, properties={PropertyKey.TRANSACTION_PREPARED: "true"})
        await cluster.wait_until(lambda: len(retry_sends(cluster)) == 1)
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 1)

    (resend,) = retry_sends(cluster)
    assert resend.ext_fields["a"] == "CLIENT_INNER_PRODUCER"
    assert resend.ext_fields["AccessKey"] == "ak-1"
    assert PropertyKey.TRANSACTION_PREPARED not in decode_properties(resend.ext_fields["i"])
    for fb in cluster.brokers:
        assert fb.accepted == 1
