"""FakeBroker's consumer-side defaults: group members, send-back, search by time."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from rocketmq_py._transport import Connection, open_connection
from rocketmq_py.protocol import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumerListBody,
    ConsumerSendMsgBackRequestHeader,
    ConsumeType,
    GetConsumerListByGroupRequestHeader,
    HeartbeatData,
    Message,
    MessageModel,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    SendMessageRequestHeader,
    UnregisterClientRequestHeader,
    build_subscription_data,
    decode_body,
    encode_body,
    from_ext_fields,
    send_header_to_v2,
    to_ext_fields,
)
from rocketmq_py.testing._fake_broker import FakeBroker

TOPIC = "TopicTest"
GROUP = "cg"


@pytest.fixture
async def broker() -> AsyncIterator[FakeBroker]:
    async with FakeBroker() as fb:
        fb.add_topic(TOPIC, queues=2)
        yield fb


@pytest.fixture
async def conn(broker: FakeBroker) -> AsyncIterator[Connection]:
    async with open_connection(broker.address) as connection:
        yield connection


async def _heartbeat(conn: Connection, client_id: str, *groups: str) -> RemotingCommand:
    data = HeartbeatData(
        client_id=client_id,
        consumer_data_set=tuple(
            ConsumerData(
                group_name=group,
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=MessageModel.CLUSTERING,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
                subscription_data_set=(build_subscription_data(TOPIC, "*", sub_version=1),),
            )
            for group in groups
        ),
    )
    return await conn.request(
        RemotingCommand.request(RequestCode.HEART_BEAT, body=encode_body(data)), timeout=3
    )


async def _members(conn: Connection, group: str = GROUP) -> RemotingCommand:
    ext = to_ext_fields(GetConsumerListByGroupRequestHeader(consumer_group=group))
    return await conn.request(RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, ext), timeout=3)


async def _send_back(
    conn: Connection, offset: int, *, delay_level: int = 0, max_times: int = 16
) -> RemotingCommand:
    header = ConsumerSendMsgBackRequestHeader(
        offset=offset, group=GROUP, delay_level=delay_level, origin_topic=TOPIC, max_reconsume_times=max_times
    )
    command = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, to_ext_fields(header))
    return await conn.request(command, timeout=3)


async def test_group_members_come_from_heartbeats_and_leave_by_unregister(
    broker: FakeBroker, conn: Connection
) -> None:
    empty = await _members(conn)
    assert empty.code == ResponseCode.SYSTEM_ERROR
    assert empty.remark == f"no consumer for this group, {GROUP}"

    assert (await _heartbeat(conn, "10.0.0.1@b", GROUP)).code == ResponseCode.SUCCESS
    await _heartbeat(conn, "10.0.0.1@a", GROUP, "other")
    await _heartbeat(conn, "10.0.0.1@b", GROUP)  # again: no duplicate
    reply = await _members(conn)
    assert reply.code == ResponseCode.SUCCESS
    assert decode_body(ConsumerListBody, reply.body).consumer_id_list == ("10.0.0.1@b", "10.0.0.1@a")
    assert broker.consumers == {GROUP: ["10.0.0.1@b", "10.0.0.1@a"], "other": ["10.0.0.1@a"]}
    # As the broker does, a consumer group's first heartbeat creates its retry topic (1 queue).
    assert broker.messages("%RETRY%cg", 0) == []
    route = await conn.request(
        RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "%RETRY%cg"}), timeout=3
    )
    assert route.code == ResponseCode.SUCCESS

    ext = to_ext_fields(UnregisterClientRequestHeader(client_id="10.0.0.1@b", consumer_group=GROUP))
    unregistered = await conn.request(RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, ext), timeout=3)
    assert unregistered.code == ResponseCode.SUCCESS
    reply = await _members(conn)
    assert decode_body(ConsumerListBody, reply.body).consumer_id_list == ("10.0.0.1@a",)


async def test_send_back_requeues_the_message_in_the_retry_topic(
    broker: FakeBroker, conn: Connection
) -> None:
    _, stored = broker.put_messages(
        1,
        [Message(TOPIC, b"first"), Message(TOPIC, b"payload", tags="TagA", keys="k1", properties={"p": "v"})],
    )
    assert stored.commit_log_offset > 0
    reply = await _send_back(conn, stored.commit_log_offset)
    assert reply.code == ResponseCode.SUCCESS
    (retry,) = broker.messages("%RETRY%cg", 0)
    assert retry.body == b"payload"
    assert retry.reconsume_times == 1
    assert retry.tags == "TagA"
    assert retry.keys == ("k1",)
    assert retry.properties["p"] == "v"
    assert retry.properties["RETRY_TOPIC"] == TOPIC
    assert retry.properties["ORIGIN_MESSAGE_ID"] == stored.offset_msg_id
    assert retry.properties["DELAY"] == "3"  # level 0: 3 + reconsume times

    # Back again from the retry topic: one more try, the first topic and message id kept.
    await _send_back(conn, retry.commit_log_offset, delay_level=5)
    _, again = broker.messages("%RETRY%cg", 0)
    assert again.reconsume_times == 2
    assert again.properties["RETRY_TOPIC"] == TOPIC
    assert again.properties["ORIGIN_MESSAGE_ID"] == stored.offset_msg_id
    assert again.properties["DELAY"] == "5"


async def test_send_back_goes_to_the_dlq_after_max_reconsume_times(
    broker: FakeBroker, conn: Connection
) -> None:
    (stored,) = broker.put_messages(0, [Message(TOPIC, b"x")])
    await _send_back(conn, stored.commit_log_offset, max_times=1)
    (retry,) = broker.messages("%RETRY%cg", 0)
    await _send_back(conn, retry.commit_log_offset, max_times=1)  # reconsume times 1 >= 1
    (dead,) = broker.messages("%DLQ%cg", 0)
    assert dead.body == b"x"
    assert dead.reconsume_times == 2
    assert "DELAY" not in dead.properties
    (stored2,) = broker.put_messages(0, [Message(TOPIC, b"y")])
    await _send_back(conn, stored2.commit_log_offset, delay_level=-1)  # straight to the DLQ
    assert [m.body for m in broker.messages("%DLQ%cg", 0)] == [b"x", b"y"]


async def test_send_back_of_an_unknown_offset_is_a_system_error(conn: Connection) -> None:
    reply = await _send_back(conn, 123456)
    assert reply.code == ResponseCode.SYSTEM_ERROR
    assert reply.remark == "look message by offset failed, 123456"


async def test_retry_topic_send_keeps_the_reconsume_times_of_the_header(
    broker: FakeBroker, conn: Connection
) -> None:
    broker.add_topic("%RETRY%cg", queues=1)
    header = SendMessageRequestHeader(
        producer_group="p",
        topic="%RETRY%cg",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=0,
        sys_flag=0,
        born_timestamp=0,
        flag=0,
        reconsume_times=4,
    )
    ext = to_ext_fields(send_header_to_v2(header))
    reply = await conn.request(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, b"b"), timeout=3)
    assert reply.code == ResponseCode.SUCCESS
    (stored,) = broker.messages("%RETRY%cg", 0)
    assert stored.reconsume_times == 4


@pytest.mark.parametrize(
    ("timestamp", "offset"),
    [(0, 0), (1_000, 0), (1_001, 1), (2_000, 1), (2_500, 3), (3_000, 3), (3_001, 4)],
)
async def test_search_offset_by_timestamp(
    broker: FakeBroker, conn: Connection, timestamp: int, offset: int
) -> None:
    broker.put_messages(0, [Message(TOPIC, b"a")], store_timestamp=1_000)
    broker.put_messages(0, [Message(TOPIC, b"b"), Message(TOPIC, b"c")], store_timestamp=2_000)
    broker.put_messages(0, [Message(TOPIC, b"d")], store_timestamp=3_000)
    ext = to_ext_fields(SearchOffsetRequestHeader(topic=TOPIC, queue_id=0, timestamp=timestamp))
    reply = await conn.request(
        RemotingCommand.request(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, ext), timeout=3
    )
    assert reply.code == ResponseCode.SUCCESS
    assert from_ext_fields(SearchOffsetResponseHeader, reply.ext_fields).offset == offset
