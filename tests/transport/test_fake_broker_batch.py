"""FakeBroker's SEND_BATCH_MESSAGE and UNREGISTER_CLIENT default handlers, on the raw connection."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from rocketmq_py._transport import Connection, open_connection
from rocketmq_py.protocol import (
    Message,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
    UnregisterClientRequestHeader,
    encode_batch,
    encode_properties,
    from_ext_fields,
    send_header_to_v2,
    to_ext_fields,
)
from rocketmq_py.testing._fake_broker import FakeBroker

TOPIC = "BatchTopic"


@pytest.fixture
async def broker() -> AsyncIterator[FakeBroker]:
    async with FakeBroker() as fb:
        fb.add_topic(TOPIC, queues=2)
        yield fb


@pytest.fixture
async def conn(broker: FakeBroker) -> AsyncIterator[Connection]:
    async with open_connection(broker.address) as connection:
        yield connection


def _batch_request(body: bytes, queue_id: int = 1, *, topic: str = TOPIC) -> RemotingCommand:
    header = SendMessageRequestHeader(
        producer_group="pg",
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=1_700_000_000_000,
        flag=0,
        properties=encode_properties({"WAIT": "true"}),
        batch=True,
    )
    return RemotingCommand.request(
        RequestCode.SEND_BATCH_MESSAGE, to_ext_fields(send_header_to_v2(header)), body
    )


async def test_batch_entries_are_stored_one_by_one(broker: FakeBroker, conn: Connection) -> None:
    await conn.request(_batch_request(encode_batch([Message(TOPIC, b"before")])), timeout=3)
    messages = [
        Message(TOPIC, b"one", tags="A", properties={"UNIQ_KEY": "K1"}),
        Message(TOPIC, b"two", flag=3, properties={"UNIQ_KEY": "K2"}),
    ]
    response = await conn.request(_batch_request(encode_batch(messages)), timeout=3)

    assert response.code == ResponseCode.SUCCESS
    header = from_ext_fields(SendMessageResponseHeader, response.ext_fields)
    stored = broker.messages(TOPIC, 1)
    assert [(m.body, m.queue_offset) for m in stored] == [(b"before", 0), (b"one", 1), (b"two", 2)]
    assert (header.queue_id, header.queue_offset) == (1, 1)  # the batch's first entry
    assert header.msg_id == f"{stored[1].offset_msg_id},{stored[2].offset_msg_id}"
    assert [m.uniq_key for m in stored[1:]] == ["K1", "K2"]
    assert stored[1].tags == "A"
    assert stored[2].flag == 3


@pytest.mark.parametrize("body", [b"", b"\x00\x00\x00\x05garbage"])
async def test_a_bad_batch_body_is_message_illegal(broker: FakeBroker, conn: Connection, body: bytes) -> None:
    response = await conn.request(_batch_request(body), timeout=3)
    assert response.code == ResponseCode.MESSAGE_ILLEGAL
    assert broker.messages(TOPIC, 1) == []


async def test_batch_to_an_unknown_topic(broker: FakeBroker, conn: Connection) -> None:
    body = encode_batch([Message("Nope", b"x")])
    response = await conn.request(_batch_request(body, topic="Nope"), timeout=3)
    assert response.code == ResponseCode.TOPIC_NOT_EXIST


async def test_unregister_client_is_answered_success(broker: FakeBroker, conn: Connection) -> None:
    header = UnregisterClientRequestHeader(client_id="127.0.0.1@1", producer_group="pg")
    request = RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, to_ext_fields(header))
    response = await conn.request(request, timeout=3)
    assert response.code == ResponseCode.SUCCESS
    (received,) = broker.requests(RequestCode.UNREGISTER_CLIENT)
    assert from_ext_fields(UnregisterClientRequestHeader, received.ext_fields) == header
