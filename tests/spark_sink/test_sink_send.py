"""The sink's use of the producer's bulk sender: its errors name the rows of the Spark task."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from rocketmq_py.errors import MessageIllegal, MessageTooLarge, broker_error_for
from rocketmq_py.protocol import Message, RemotingCommand, RequestCode, ResponseCode
from spark_connector._sink import send_messages

if TYPE_CHECKING:
    from conftest import BulkCluster

TOPIC = "SinkTopic"


async def test_a_refused_send_fails_with_the_broker_error_and_the_rows(bulk_cluster: BulkCluster) -> None:
    async def refuse(request: RemotingCommand) -> RemotingCommand | None:
        raise broker_error_for(ResponseCode.MESSAGE_ILLEGAL, "the message body size over max value")

    for fb in (bulk_cluster.a, bulk_cluster.b):
        fb.on(RequestCode.SEND_BATCH_MESSAGE, refuse)
    messages = [Message(TOPIC, f"m{i}".encode()) for i in range(10)]
    async with bulk_cluster.producer() as producer:
        with pytest.raises(MessageIllegal) as info:  # the typed error itself, not an exception group
            await send_messages(producer, messages, batch_size=4)
    assert "the message body size over max value" in str(info.value)
    (note,) = info.value.__notes__
    assert note.startswith("rocketmq sink: sending rows ")
    assert note.endswith(f"of this task to topic {TOPIC!r} failed")


async def test_an_oversized_row_fails_before_any_io_for_it(bulk_cluster: BulkCluster) -> None:
    messages = [Message(TOPIC, b"ok"), Message(TOPIC, b"x" * 2048)]
    async with bulk_cluster.producer(max_message_size=1024) as producer:
        with pytest.raises(MessageTooLarge, match="2048 bytes, above the maximum of 1024") as info:
            await send_messages(producer, messages, batch_size=1)
    assert info.value.__notes__ == [f"rocketmq sink: sending row 1 of this task to topic {TOPIC!r} failed"]
