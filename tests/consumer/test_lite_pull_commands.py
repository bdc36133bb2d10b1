"""LitePullConsumer answering the broker: running info, offset reset, no direct consumption."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio
import trio.testing

from rocketmq_py.consumer._lite_pull import LitePullConsumer
from rocketmq_py.protocol import (
    PROP_ALLOCATE_STRATEGY,
    PROP_CONSUME_TYPE,
    PROP_CONSUMER_START_TIMESTAMP,
    PROP_NAMESERVER_ADDR,
    ConsumeMessageDirectlyResultRequestHeader,
    ConsumerRunningInfo,
    GetConsumerRunningInfoRequestHeader,
    MessageExt,
    MessageQueue,
    RemotingCommand,
    RequestCode,
    ResetOffsetBody,
    ResetOffsetRequestHeader,
    ResponseCode,
    decode_body,
    encode_body,
    encode_stored_message,
    to_ext_fields,
)

if TYPE_CHECKING:
    from conftest import Cluster

ME = "127.0.0.1@me"
OTHER = "127.0.0.1@other"  # sorts after ME: AVG gives ME the first half


def lite(cluster: Cluster, **options: Any) -> LitePullConsumer:
    """A lite consumer of ``cluster.group`` with client id ``127.0.0.1@me``, from the first offset."""
    defaults = {"instance_name": "me", "client_ip": "127.0.0.1"}
    return LitePullConsumer(
        cluster.group,
        namesrv=cluster.namesrv.address,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        **(defaults | options),
    )


async def poll_n(consumer: LitePullConsumer, count: int) -> list[MessageExt]:
    got: list[MessageExt] = []
    with trio.fail_after(120):
        while len(got) < count:
            got.extend(await consumer.poll(timeout=1))
    return got


def running_info_request(group: str) -> RemotingCommand:
    header = GetConsumerRunningInfoRequestHeader(consumer_group=group, client_id=ME)
    return RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, to_ext_fields(header))


def reset_request(cluster: Cluster, offsets: dict[MessageQueue, int], *, oneway: bool) -> RemotingCommand:
    header = ResetOffsetRequestHeader(topic=cluster.topic, group=cluster.group, timestamp=0, is_force=True)
    body = encode_body(ResetOffsetBody(offset_table=offsets))
    return RemotingCommand.request(
        RequestCode.RESET_CONSUMER_CLIENT_OFFSET, to_ext_fields(header), body, oneway=oneway
    )


async def test_running_info_over_the_connection_describes_the_assigned_queues(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    a0, a1, _, _ = cluster.queues()
    cluster.put(a0, 12)
    async with lite(cluster, strategy="AVG_BY_CIRCLE", pull_batch_size=4) as consumer:
        consumer.assign([a0, a1])
        assert len(await consumer.poll()) == 4
        await consumer.commit()
        await cluster.wait_until(lambda: consumer._queues[a0].pq.msg_count == 8)
        reply = await cluster.a.send_to_client(running_info_request(cluster.group))
        assert reply is not None
        assert reply.code == ResponseCode.SUCCESS
        info = decode_body(ConsumerRunningInfo, reply.body)
    props = info.properties
    # mqadmin consumerStatus reads these two: a lite consumer is a pull (active) consumer.
    assert props[PROP_CONSUME_TYPE] == "CONSUME_ACTIVELY"
    assert int(props[PROP_CONSUMER_START_TIMESTAMP]) > 0
    assert props[PROP_NAMESERVER_ADDR] == cluster.namesrv.address
    assert props[PROP_ALLOCATE_STRATEGY].endswith("AllocateMessageQueueAveragelyByCircle")
    assert props["consumerGroup"] == cluster.group
    assert props["messageModel"] == "CLUSTERING"
    assert props["subscriptionType"] == "ASSIGN"
    assert props["pullBatchSize"] == "4"
    assert props["autoCommit"] == "true"
    assert [sub.topic for sub in info.subscription_set] == [cluster.topic]
    assert set(info.mq_table) == {a0, a1}
    a0_info = info.mq_table[a0]
    assert a0_info.commit_offset == 4
    assert a0_info.cached_msg_count == 8
    assert (a0_info.cached_msg_min_offset, a0_info.cached_msg_max_offset) == (4, 11)
    assert not a0_info.dropped
    assert not a0_info.locked
    assert a0_info.last_pull_timestamp > 0
    assert info.mq_table[a1].cached_msg_count == 0
    assert info.status_table == {}  # as Java's lite consumer: no consume rates


async def test_running_info_in_subscribe_mode_lists_the_subscription_and_the_share(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    cluster.answer_consumer_ids(ME, OTHER)
    consumer = lite(cluster)
    consumer.subscribe(cluster.topic, "TagA || TagB")
    async with consumer:
        await cluster.wait_until(lambda: len(consumer.assignment()) == 2)
        info = consumer._running_info()
    assert info.properties["subscriptionType"] == "SUBSCRIBE"
    (sub,) = info.subscription_set
    assert (sub.topic, sub.sub_string) == (cluster.topic, "TagA || TagB")
    assert set(info.mq_table) == set(cluster.queues()[:2])


async def test_commands_for_another_group_or_direct_consumption_are_refused(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    a0 = cluster.queues()[0]
    (msg,) = cluster.put(a0, 1)
    async with lite(cluster) as consumer:
        consumer.assign([a0])
        await poll_n(consumer, 1)
        other = await cluster.a.send_to_client(running_info_request("another-group"))
        assert other is not None
        assert other.code == ResponseCode.SYSTEM_ERROR
        assert other.remark == "The Consumer Group <another-group> not exist in this consumer"
        header = ConsumeMessageDirectlyResultRequestHeader(
            consumer_group=cluster.group, client_id=ME, msg_id=msg.msg_id, broker_name="broker-a"
        )
        direct = await cluster.a.send_to_client(
            RemotingCommand.request(
                RequestCode.CONSUME_MESSAGE_DIRECTLY, to_ext_fields(header), encode_stored_message(msg)
            )
        )
        assert direct is not None
        assert direct.code == ResponseCode.SYSTEM_ERROR
        assert direct.remark is not None
        assert "disabled" in direct.remark


async def test_the_broker_resets_assigned_queues_like_a_seek_and_the_offset_is_written(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    a0, a1, b0, _ = cluster.queues()
    cluster.put(a0, 10)
    cluster.put(b0, 3)
    async with lite(cluster, auto_commit=False, pull_batch_size=3) as consumer:
        consumer.assign([a0, b0])
        got = await poll_n(consumer, 13)
        cluster.put(a0, 4)  # 10..13: pulled into the buffer, not polled
        await cluster.wait_until(lambda: consumer._queues[a0].pq.msg_count == 4)
        # a1 is not ours: its owner gets the same request; b0 is not named.
        await cluster.a.send_to_client(
            reset_request(cluster, {a0: 7, a1: 0}, oneway=True), expect_reply=False
        )
        await cluster.wait_until(lambda: cluster.offset_updates(cluster.a, a0) != [])
        # Written at once, synchronously, though auto-commit is off.
        assert cluster.offset_updates(cluster.a, a0) == [(7, False)]
        assert cluster.offset_updates(cluster.a, a1) == []
        again = await poll_n(consumer, 7)
        assert [(m.queue_id, m.queue_offset) for m in again if m.topic == cluster.topic] == [
            (0, offset) for offset in range(7, 14)
        ]
        assert await consumer.poll(timeout=2) == []  # b0 stayed where it was
        assert consumer._queues[b0].consumed == 3
    assert len(got) == 13


async def test_reset_offsets_answers_a_request_that_wants_a_reply_and_skips_negative_offsets(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    a0, a1, _, _ = cluster.queues()
    cluster.put(a0, 5)
    cluster.put(a1, 5)
    async with lite(cluster) as consumer:
        consumer.assign([a0, a1])
        await poll_n(consumer, 10)
        reply = await cluster.a.send_to_client(reset_request(cluster, {a0: 1, a1: -1}, oneway=False))
        assert reply is not None
        assert reply.code == ResponseCode.SUCCESS
        assert cluster.a.consumer_offsets[(cluster.group, cluster.topic, 0)] == 1
        assert (1, False) not in cluster.offset_updates(cluster.a, a1)
        again = await poll_n(consumer, 4)
        assert [(m.queue_id, m.queue_offset) for m in again] == [(0, 1), (0, 2), (0, 3), (0, 4)]
        assert consumer._queues[a1].consumed == 5
