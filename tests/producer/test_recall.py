"""Recalling a timer message: the handle, the request, and what is refused before any I/O.

The real broker's side (a recalled message is never delivered; recall disabled on the broker; the
Java client's handles) is in ``integration/test_recall.py``.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator

import pytest
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py.errors import (
    IllegalOperation,
    InvalidRecallHandle,
    InvalidTopic,
    NoPermission,
    RecallNotSupported,
)
from rocketmq_py.producer._producer import Producer
from rocketmq_py.protocol import Message, RecallHandle, RequestCode, ResponseCode
from rocketmq_py.protocol._versions import V5_3_2, V5_3_3, release_ordinal
from rocketmq_py.testing._fake_broker import FakeBroker

TOPIC = "TimerTopic"
MSG_ID = "7F00000100002A9F0000000000000001"
# What Java's RecallMessageHandle.HandleV1.buildHandle makes: URL-safe base64 (padded) of the five words.
JAVA_HANDLE = base64.urlsafe_b64encode(f"v1 {TOPIC} broker-a 1764000000001 {MSG_ID}".encode()).decode()

_word = st.text(st.characters(codec="utf-8", exclude_characters=" ", exclude_categories=["Cs"]), min_size=1)


@given(_word, _word, _word, _word)
def test_a_handle_decodes_to_what_was_encoded(topic: str, broker: str, timestamp: str, msg_id: str) -> None:
    handle = RecallHandle(topic, broker, timestamp, msg_id)
    assert RecallHandle.parse(handle.encode()) == handle


def test_a_java_handle_decodes_padded_or_not() -> None:
    expected = RecallHandle(TOPIC, "broker-a", "1764000000001", MSG_ID)
    assert RecallHandle.parse(JAVA_HANDLE) == expected
    assert RecallHandle.parse(JAVA_HANDLE.rstrip("=")) == expected
    assert expected.encode() == JAVA_HANDLE


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not base64!",
        base64.urlsafe_b64encode(b"v2 t b 1 id").decode(),
        base64.urlsafe_b64encode(b"v1 t b").decode(),
    ],
)
def test_a_bad_handle_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError, match="recall handle"):
        RecallHandle.parse(text)


@pytest.fixture
async def broker() -> AsyncIterator[FakeBroker]:
    async with FakeBroker(version=V5_3_3) as fb:
        fb.add_topic(TOPIC, queues=2)
        yield fb


async def test_recall_sends_the_handle_to_its_broker_and_returns_the_message_id(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock
) -> None:
    broker.on_reply(RequestCode.RECALL_MESSAGE, ext_fields={"msgId": MSG_ID})
    async with Producer("pg-recall", namesrv=broker.address) as producer:
        assert await producer.recall(TOPIC, JAVA_HANDLE) == MSG_ID
    [request] = broker.requests(RequestCode.RECALL_MESSAGE)
    assert request.ext_fields == {
        "topic": TOPIC,
        "recallHandle": JAVA_HANDLE,
        "producerGroup": "pg-recall",
        "bname": "broker-a",
    }


async def test_the_send_result_carries_the_brokers_recall_handle(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock
) -> None:
    broker.on_reply(
        RequestCode.SEND_MESSAGE_V2,
        ext_fields={"msgId": "offset-id", "queueId": "1", "queueOffset": "7", "recallHandle": JAVA_HANDLE},
    )
    async with Producer("pg-recall", namesrv=broker.address) as producer:
        message = Message(TOPIC, b"later")
        message.delay_time_sec = 30
        result = await producer.send(message)
        assert result.recall_handle == JAVA_HANDLE
        batch = await producer.send_batch([Message(TOPIC, b"a"), Message(TOPIC, b"b")])
        assert batch.recall_handle is None  # brokers never give batches one
    [sent, _] = broker.requests(RequestCode.SEND_MESSAGE_V2) + broker.requests(RequestCode.SEND_BATCH_MESSAGE)
    assert sent.ext_fields["i"].count("TIMER_DELAY_SEC\x0130\x02") == 1


@pytest.mark.parametrize(
    ("topic", "handle", "error"),
    [
        (TOPIC, "garbage!", InvalidRecallHandle),
        ("OtherTopic", JAVA_HANDLE, InvalidRecallHandle),
        ("%RETRY%some-group", JAVA_HANDLE, InvalidTopic),
        ("bad topic name", JAVA_HANDLE, InvalidTopic),
    ],
)
async def test_a_bad_topic_or_handle_is_refused_before_any_io(
    broker: FakeBroker,
    autojump_clock: trio.testing.MockClock,
    topic: str,
    handle: str,
    error: type[Exception],
) -> None:
    async with Producer("pg-recall", namesrv=broker.address) as producer:
        with pytest.raises(error):
            await producer.recall(topic, handle)
    assert broker.requests(RequestCode.RECALL_MESSAGE) == []


async def test_a_broker_older_than_5_3_2_gets_no_request(autojump_clock: trio.testing.MockClock) -> None:
    assert release_ordinal("5.3.1") < V5_3_2
    async with FakeBroker(version=release_ordinal("5.3.1")) as old:
        old.add_topic(TOPIC, queues=2)
        async with Producer("pg-recall", namesrv=old.address) as producer:
            with pytest.raises(RecallNotSupported) as caught:
                await producer.recall(TOPIC, JAVA_HANDLE)
        assert old.requests(RequestCode.RECALL_MESSAGE) == []
    assert (caught.value.broker_name, caught.value.broker_version) == ("broker-a", "5.3.1")
    assert "5.3.2" in str(caught.value)


@pytest.mark.parametrize(
    ("code", "remark", "error"),
    [
        (ResponseCode.NO_PERMISSION, "recall failed, operation is forbidden", NoPermission),
        (ResponseCode.ILLEGAL_OPERATION, "recall failed, timestamp invalid", IllegalOperation),
    ],
)
async def test_the_brokers_refusal_is_its_typed_error(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock, code: int, remark: str, error: type[Exception]
) -> None:
    broker.on_reply(RequestCode.RECALL_MESSAGE, code, remark=remark)
    async with Producer("pg-recall", namesrv=broker.address) as producer:
        with pytest.raises(error, match=remark):
            await producer.recall(TOPIC, JAVA_HANDLE)


def test_delay_in_seconds_and_milliseconds_are_the_timer_properties() -> None:
    message = Message(TOPIC, b"x")
    assert (message.delay_time_sec, message.delay_time_ms) == (0, 0)
    message.delay_time_sec = 10
    message.delay_time_ms = 2500
    assert message.properties == {"TIMER_DELAY_SEC": "10", "TIMER_DELAY_MS": "2500"}
    assert (message.delay_time_sec, message.delay_time_ms) == (10, 2500)
    message.delay_time_sec = None
    message.delay_time_ms = 0
    assert message.properties == {}
