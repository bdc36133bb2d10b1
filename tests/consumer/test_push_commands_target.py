"""PushConsumer as the target of the broker's commands: running info, offset reset, direct consumption."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import trio
import trio.testing

from rocketmq_py.consumer._push import ConsumeStatus, PushConsumer
from rocketmq_py.protocol import (
    PROP_CONSUME_ORDERLY,
    PROP_CONSUME_TYPE,
    PROP_CONSUMER_START_TIMESTAMP,
    PROP_NAMESERVER_ADDR,
    PROP_THREADPOOL_CORE_SIZE,
    ConsumeResult,
    ConsumerRunningInfo,
    GetConsumerRunningInfoRequestHeader,
    MessageExt,
    RemotingCommand,
    RequestCode,
    ResetOffsetBody,
    ResetOffsetRequestHeader,
    ResponseCode,
    decode_body,
    encode_body,
    to_ext_fields,
)

if TYPE_CHECKING:
    from conftest import Cluster, Recorder

MakeConsumer = Callable[..., PushConsumer]
ME = "127.0.0.1@me"


def bodies_of(recorder: Recorder, prefix: str) -> list[str]:
    return [m.body.decode() for m in recorder.messages if m.body.decode().startswith(prefix)]


async def test_running_info_describes_config_subscriptions_queues_and_rates(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    async with make_consumer(pull_batch_size=16, strategy="AVG_BY_CIRCLE") as consumer:
        cluster.put(a0, 4)
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 4)
        await trio.sleep(2)
        info = consumer._running_info()
    props = info.properties
    assert props[PROP_CONSUME_TYPE] == "CONSUME_PASSIVELY"
    assert props[PROP_CONSUME_ORDERLY] == "false"
    assert props[PROP_NAMESERVER_ADDR] == cluster.namesrv.address
    assert props[PROP_THREADPOOL_CORE_SIZE] == "20"
    assert int(props[PROP_CONSUMER_START_TIMESTAMP]) > 0
    assert props["allocateMessageQueueStrategy"].endswith("AllocateMessageQueueAveragelyByCircle")
    assert props["messageModel"] == "CLUSTERING"
    assert props["consumeFromWhere"] == "CONSUME_FROM_LAST_OFFSET"
    assert props["pullBatchSize"] == "16"
    assert {sub.topic for sub in info.subscription_set} == {cluster.topic, cluster.retry}
    assert set(info.mq_table) == set(cluster.queues()) | set(cluster.queues(cluster.retry))
    a0_info = info.mq_table[a0]
    assert a0_info.commit_offset == 4
    assert a0_info.cached_msg_count == 0
    assert not a0_info.locked
    assert not a0_info.dropped
    assert a0_info.last_pull_timestamp > 0
    assert set(info.status_table) == {cluster.topic, cluster.retry}
    rates = info.status_table[cluster.topic]
    assert rates.consume_ok_tps > 0
    assert rates.pull_tps > 0
    assert rates.consume_failed_msgs == 0
    # What the broker would carry back to mqadmin decodes to the same.
    assert ConsumerRunningInfo.decode(info.encode()).mq_table[a0].commit_offset == 4


async def test_consume_directly_orderly_names_the_orderly_status(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    (msg,) = cluster.put(cluster.queues()[0], 1)
    recorder.status = None
    async with make_consumer(orderly=True) as consumer:
        result = await consumer._consume_directly(msg, "broker-a")
    assert result.order
    assert result.consume_result is ConsumeResult.CR_SUCCESS
    assert result.remark == "SUCCESS"


async def test_the_broker_gets_running_info_over_the_connection(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    async with make_consumer(orderly=True) as consumer:
        header = GetConsumerRunningInfoRequestHeader(consumer_group=cluster.group, client_id=ME)
        request = RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, to_ext_fields(header))
        reply = await cluster.a.send_to_client(request)
        assert reply is not None
        assert reply.code == ResponseCode.SUCCESS
        info = decode_body(ConsumerRunningInfo, reply.body)
        assert info.properties[PROP_CONSUME_ORDERLY] == "true"
        assert set(info.mq_table) == set(consumer.assignment())
        assert all(pq.locked for pq in info.mq_table.values())


async def test_reset_offsets_restarts_the_named_owned_queues_from_the_new_offsets(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0, a1, b0, _ = cluster.queues()
    async with make_consumer() as consumer:
        cluster.put(a0, 5)
        cluster.put(a1, 3)
        await cluster.wait_until(
            lambda: consumer._offset_store.get(a0) == 5 and consumer._offset_store.get(a1) == 3
        )
        await consumer._reset_offsets(cluster.topic, {a0: 2, b0: 0})
        # Written to the broker synchronously, before the queue comes back.
        assert cluster.offset_updates(cluster.a, a0)[-1] == (2, False)
        assert cluster.a.consumer_offsets[(cluster.group, cluster.topic, 0)] == 2
        await cluster.wait_until(lambda: len(bodies_of(recorder, "broker-a/0-")) == 8)
        assert bodies_of(recorder, "broker-a/0-")[5:] == ["broker-a/0-2", "broker-a/0-3", "broker-a/0-4"]
        assert len(bodies_of(recorder, "broker-a/1-")) == 3  # not in the table: untouched
        assert a0 in consumer.assignment()
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 5)


async def test_the_broker_resets_offsets_with_a_oneway_request(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    async with make_consumer() as consumer:
        cluster.put(a0, 3)
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 3)
        header = ResetOffsetRequestHeader(
            topic=cluster.topic, group=cluster.group, timestamp=0, is_force=True
        )
        body = encode_body(ResetOffsetBody(offset_table={a0: 0}))
        request = RemotingCommand.request(
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET, to_ext_fields(header), body, oneway=True
        )
        await cluster.a.send_to_client(request, expect_reply=False)
        await cluster.wait_until(lambda: len(bodies_of(recorder, "broker-a/0-")) == 6)
        assert cluster.offset_updates(cluster.a, a0)[0] == (0, False)


async def test_consume_directly_calls_the_listener_once_and_reports_the_result(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    (msg,) = cluster.put(cluster.queues()[0], 1)
    cluster.a.consumer_offsets[(cluster.group, cluster.topic, 0)] = 1  # not pulled by the consumer
    cluster.a.consumer_offsets[(cluster.group, cluster.topic, 1)] = 0

    async with make_consumer() as consumer:
        result = await consumer._consume_directly(msg, "broker-a")
        assert result.consume_result is ConsumeResult.CR_SUCCESS
        assert not result.order
        assert result.spent_time_mills >= 0
        assert recorder.calls == 1
        assert recorder.messages[0].body == msg.body

        assert result.remark == "CONSUME_SUCCESS"

        recorder.status = None  # success: the remark names the status it stands for
        none = await consumer._consume_directly(msg, "broker-a")
        assert none.consume_result is ConsumeResult.CR_SUCCESS
        assert none.remark == "CONSUME_SUCCESS"

        recorder.status = ConsumeStatus.RECONSUME_LATER
        later = await consumer._consume_directly(msg, "broker-a")
        assert later.consume_result is ConsumeResult.CR_LATER
        assert later.remark == "RECONSUME_LATER"

        def boom(msgs: list[MessageExt]) -> None:
            raise ValueError("listener bug")

        recorder.hook = boom
        failed = await consumer._consume_directly(msg, "broker-a")
        assert failed.consume_result is ConsumeResult.CR_THROW_EXCEPTION
        assert failed.remark is not None
        assert "listener bug" in failed.remark
        await trio.sleep(10)
        assert recorder.calls == 4  # once each, no retry
    # Nothing was sent back.
    assert cluster.a.messages(cluster.retry, 0) == []
    assert cluster.b.messages(cluster.retry, 0) == []
