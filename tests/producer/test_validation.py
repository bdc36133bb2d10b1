"""Send-time validation of topics, groups and messages (pure, protocol.md §7.1 and §4.2)."""

from __future__ import annotations

import pytest

from rocketmq_py.errors import (
    ClientError,
    EmptyBody,
    InvalidGroup,
    InvalidMessage,
    InvalidTopic,
    MessageTooLarge,
    ReservedProperty,
)
from rocketmq_py.producer._validation import (
    DEFAULT_PRODUCER_GROUP,
    FORBIDDEN_SEND_TOPICS,
    GROUP_MAX_LENGTH,
    MAX_MESSAGE_SIZE,
    RESERVED_PROPERTY_KEYS,
    RETRY_OR_DLQ_TOPIC_MAX_LENGTH,
    TOPIC_MAX_LENGTH,
    USER_SETTABLE_SYSTEM_KEYS,
    validate_group,
    validate_message,
    validate_producer_group,
    validate_topic,
)
from rocketmq_py.protocol import Message
from rocketmq_py.protocol._properties import SYSTEM_PROPERTY_KEYS, PropertyKey


def test_java_limits() -> None:
    assert MAX_MESSAGE_SIZE == 4194304
    assert TOPIC_MAX_LENGTH == 127
    assert GROUP_MAX_LENGTH == 120
    assert RETRY_OR_DLQ_TOPIC_MAX_LENGTH == 255


def test_errors_are_invalid_message_client_errors() -> None:
    for cls in (InvalidTopic, EmptyBody, MessageTooLarge, ReservedProperty):
        assert issubclass(cls, InvalidMessage)
    assert issubclass(InvalidGroup, ClientError)


# --- topics --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "topic",
    [
        "T",
        "Order_Topic-1",
        "a|b",
        "%RETRY%group",
        "%DLQ%group",
        "x" * 127,
        "%RETRY%" + "g" * 248,
        "RMQ_SYS_TRACE_TOPIC",
        "BenchmarkTest",
        "CHECKPOINT_TOPIC",
        "TBW1020",
    ],
)
def test_valid_topics(topic: str) -> None:
    validate_topic(topic)


@pytest.mark.parametrize(
    ("topic", "reason"),
    [
        ("", "blank"),
        ("   ", "blank"),
        ("a b", "illegal characters"),
        ("topic.with.dots", "illegal characters"),
        ("tópico", "illegal characters"),
        ("a/b", "illegal characters"),
        ("x" * 128, "128 characters, longer than the maximum of 127"),
        ("%RETRY%" + "g" * 249, "256 characters, longer than the maximum of 255"),
        ("%DLQ%" + "g" * 251, "longer than the maximum of 255"),
        ("TBW102", "system topic"),
        ("SCHEDULE_TOPIC_XXXX", "system topic"),
        ("RMQ_SYS_TRANS_HALF_TOPIC", "system topic"),
        ("RMQ_SYS_TRANS_OP_HALF_TOPIC", "system topic"),
        ("RMQ_SYS_SOMETHING_NEW", "system topic"),
        ("rmq_sys_SYNC_BROKER_MEMBER_broker-a", "system topic"),
        ("OFFSET_MOVED_EVENT", "system topic"),
        ("SELF_TEST_TOPIC", "system topic"),
        ("TRANS_CHECK_MAX_TIME_TOPIC", "system topic"),
    ],
)
def test_invalid_topics(topic: str, reason: str) -> None:
    with pytest.raises(InvalidTopic, match=reason) as caught:
        validate_topic(topic)
    assert caught.value.topic == topic
    assert repr(topic) in str(caught.value)


def test_every_forbidden_topic_is_rejected() -> None:
    for topic in FORBIDDEN_SEND_TOPICS:
        with pytest.raises(InvalidTopic):
            validate_topic(topic)


# --- groups --------------------------------------------------------------------------------------


@pytest.mark.parametrize("group", ["G", "please_rename_unique_group_name", "g|%-_9", "g" * 120])
def test_valid_groups(group: str) -> None:
    validate_group(group)
    validate_producer_group(group)


@pytest.mark.parametrize(
    ("group", "reason"),
    [("", "blank"), ("\t", "blank"), ("my group", "illegal"), ("g" * 121, "longer than the maximum of 120")],
)
def test_invalid_groups(group: str, reason: str) -> None:
    with pytest.raises(InvalidGroup, match=reason) as caught:
        validate_group(group)
    assert caught.value.group == group


def test_default_producer_group_is_refused_for_producers_only() -> None:
    validate_group(DEFAULT_PRODUCER_GROUP)
    with pytest.raises(InvalidGroup, match="placeholder"):
        validate_producer_group(DEFAULT_PRODUCER_GROUP)


# --- messages ------------------------------------------------------------------------------------


def test_valid_message_with_api_set_properties() -> None:
    message = Message("T", b"x", tags="TagA", keys=("k1", "k2"), delay_level=3)
    message.deliver_time_ms = 1_700_000_000_000
    message.wait_store_msg_ok = False
    message.sharding_key = "order-1"
    message.properties.update({"user": "v", PropertyKey.UNIQ_KEY: "AC1100..."})
    validate_message(message)


def test_empty_body() -> None:
    with pytest.raises(EmptyBody, match="empty"):
        validate_message(Message("T"))


def test_body_size_limit() -> None:
    validate_message(Message("T", b"x" * MAX_MESSAGE_SIZE))
    with pytest.raises(MessageTooLarge, match="4194305 bytes, above the maximum of 4194304") as caught:
        validate_message(Message("T", b"x" * (MAX_MESSAGE_SIZE + 1)))
    assert (caught.value.size, caught.value.max_size) == (MAX_MESSAGE_SIZE + 1, MAX_MESSAGE_SIZE)
    validate_message(Message("T", b"1234"), max_size=4)
    with pytest.raises(MessageTooLarge):
        validate_message(Message("T", b"12345"), max_size=4)


def test_topic_is_checked_first() -> None:
    with pytest.raises(InvalidTopic):
        validate_message(Message("TBW102"))


@pytest.mark.parametrize(
    "key",
    [
        PropertyKey.TRANSACTION_PREPARED,
        PropertyKey.PRODUCER_GROUP,
        PropertyKey.RETRY_TOPIC,
        PropertyKey.REAL_TOPIC,
        PropertyKey.REAL_QUEUE_ID,
        PropertyKey.RECONSUME_TIME,
        PropertyKey.MAX_RECONSUME_TIMES,
        PropertyKey.MIN_OFFSET,
        PropertyKey.CORRELATION_ID,
        PropertyKey.CRC32,
        PropertyKey.BORN_HOST,
    ],
)
def test_reserved_properties_are_refused(key: str) -> None:
    message = Message("T", b"x", properties={key: "1"})
    with pytest.raises(ReservedProperty, match="reserved") as caught:
        validate_message(message)
    assert caught.value.key == key
    validate_message(message, reserved=frozenset())  # internal senders pass their own set


def test_reserved_set_is_system_keys_minus_api_keys() -> None:
    assert RESERVED_PROPERTY_KEYS == SYSTEM_PROPERTY_KEYS - USER_SETTABLE_SYSTEM_KEYS
    assert USER_SETTABLE_SYSTEM_KEYS <= SYSTEM_PROPERTY_KEYS
    assert PropertyKey.SHARDING_KEY not in RESERVED_PROPERTY_KEYS
    assert PropertyKey.TRANSACTION_ID not in RESERVED_PROPERTY_KEYS


def test_the_first_reserved_key_is_reported() -> None:
    message = Message("T", b"x", properties={PropertyKey.REAL_TOPIC: "1", PropertyKey.PRODUCER_GROUP: "g"})
    with pytest.raises(ReservedProperty) as caught:
        validate_message(message)
    assert caught.value.key == PropertyKey.PRODUCER_GROUP


def test_light_queue_dispatch_may_not_contain_a_path_separator() -> None:
    validate_message(Message("T", b"x", properties={PropertyKey.INNER_MULTI_DISPATCH: "%LMQ%a,%LMQ%b"}))
    with pytest.raises(ReservedProperty, match="may not contain '/'"):
        validate_message(Message("T", b"x", properties={PropertyKey.INNER_MULTI_DISPATCH: "%LMQ%../x"}))
