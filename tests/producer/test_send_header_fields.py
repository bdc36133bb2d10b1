"""The producer builds SEND_MESSAGE_V2 header fields directly; they equal the typed header's."""

from __future__ import annotations

import pytest

from rocketmq_py._client._api import send_header_fields
from rocketmq_py.producer._producer import Producer
from rocketmq_py.protocol import (
    Message,
    MessageQueue,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    encode_properties,
    from_ext_fields,
)
from rocketmq_py.testing import FakeBroker


@pytest.mark.parametrize(
    ("topic", "properties", "batch", "body"),
    [
        ("T", {"TAGS": "a", "KEYS": "k1 k2", "u": "ü"}, False, b"x"),
        ("T", {}, True, b"batch-body"),
        ("T", {"TRAN_MSG": "true", "PGROUP": "g"}, False, b"x" * 5000),
        ("%RETRY%grp", {"RECONSUME_TIME": "3", "MAX_RECONSUME_TIMES": "16", "RETRY_TOPIC": "T"}, False, b"x"),
    ],
)
async def test_direct_fields_equal_the_typed_header(
    topic: str, properties: dict[str, str], batch: bool, body: bytes
) -> None:
    async with FakeBroker() as fb:
        fb.add_topic(topic, queues=2)
        async with Producer("hdr-test", namesrv=fb.address) as producer:
            await producer._client_instance.routes.update(topic)
            message = Message(topic, body, properties=properties)
            mq = MessageQueue(topic, fb.broker_name, 1)
            _, fields, sent_body = await producer._prepare(message, mq, batch=batch)
    sent_properties = dict(message.properties)
    reconsume = sent_properties.pop("RECONSUME_TIME", None) if topic.startswith("%RETRY%") else None
    max_times = sent_properties.pop("MAX_RECONSUME_TIMES", None) if topic.startswith("%RETRY%") else None
    typed = SendMessageRequestHeader(
        producer_group="hdr-test",
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=1,
        sys_flag=int(fields["f"]),
        born_timestamp=int(fields["g"]),
        flag=0,
        properties=encode_properties(sent_properties),
        reconsume_times=int(reconsume) if reconsume else 0,
        max_reconsume_times=int(max_times) if max_times else None,
        batch=batch,
        broker_name=fb.broker_name,
    )
    assert fields == send_header_fields(typed)
    from_ext_fields(SendMessageRequestHeaderV2, fields)  # parses as a V2 header
    expected_flag = (0x301 if len(body) >= 4096 and not batch else 0) | (
        0x4 if properties.get("TRAN_MSG") == "true" else 0
    )
    assert int(fields["f"]) == expected_flag
    assert (sent_body != body) == (expected_flag & 1 == 1)
