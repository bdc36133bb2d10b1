"""Send-time validation: whether a topic, group or message may be sent at all (no I/O).

Mirrors the Java client's ``Validators`` and the broker's ``TopicValidator`` (protocol.md §7.1):

* topics and groups use the characters ``[%|a-zA-Z0-9_-]`` only;
* a topic is at most :data:`TOPIC_MAX_LENGTH` characters, a retry/DLQ topic (``%RETRY%...``,
  ``%DLQ%...``) at most :data:`RETRY_OR_DLQ_TOPIC_MAX_LENGTH`; a group at most
  :data:`GROUP_MAX_LENGTH`, so that ``%RETRY%<group>`` stays a legal topic;
* a message has a non-empty body of at most ``max_size`` bytes.

Two rules go beyond the Java client, both documented with the constants they use:

* **System topics.** Java refuses to send to its ``NOT_ALLOWED_SEND_TOPIC_SET`` (the schedule,
  transaction half/op, self-test, offset-moved and 5.x sync topics). We refuse those, plus the
  auto-create template ``TBW102`` (sending there only stores messages nobody reads), every
  ``rmq_sys_*`` topic (Java's system-topic prefix) and every ``RMQ_SYS_*`` topic except
  ``RMQ_SYS_TRACE_TOPIC``, which trace dispatchers write to. ``BenchmarkTest`` and
  ``CHECKPOINT_TOPIC`` stay allowed, as in Java.
* **Reserved properties.** Java refuses system keys in ``Message.putUserProperty`` but lets its
  own setters (``setTags``, ``setDelayTimeLevel``...) write them; our :class:`Message` exposes one
  ``properties`` dict, so :func:`validate_message` refuses the keys of
  :data:`~rocketmq_py.protocol.SYSTEM_PROPERTY_KEYS` except those a Java application sets through
  the ``Message`` API (:data:`USER_SETTABLE_SYSTEM_KEYS`). Internal senders that legitimately set
  more (transactions, send-back to a retry topic, request/reply) pass their own ``reserved`` set.
"""

from __future__ import annotations

import re
from typing import Final

from rocketmq_py.errors import EmptyBody, InvalidGroup, InvalidTopic, MessageTooLarge, ReservedProperty
from rocketmq_py.protocol._message import Message
from rocketmq_py.protocol._names import is_group_topic
from rocketmq_py.protocol._properties import SYSTEM_PROPERTY_KEYS, PropertyKey

__all__ = [
    "DEFAULT_PRODUCER_GROUP",
    "FORBIDDEN_SEND_TOPICS",
    "GROUP_MAX_LENGTH",
    "MAX_MESSAGE_SIZE",
    "RESERVED_PROPERTY_KEYS",
    "RETRY_OR_DLQ_TOPIC_MAX_LENGTH",
    "TOPIC_MAX_LENGTH",
    "USER_SETTABLE_SYSTEM_KEYS",
    "validate_group",
    "validate_message",
    "validate_producer_group",
    "validate_topic",
]

#: Largest body a producer sends, in bytes (Java ``DefaultMQProducer.maxMessageSize`` = 4 MiB).
MAX_MESSAGE_SIZE: Final = 4 * 1024 * 1024
#: Longest topic name (Java ``Validators.TOPIC_MAX_LENGTH`` / ``TopicValidator.TOPIC_MAX_LENGTH`` = 127).
TOPIC_MAX_LENGTH: Final = 127
#: Longest ``%RETRY%``/``%DLQ%`` topic name (Java 5.x ``TopicValidator.RETRY_OR_DLQ_TOPIC_MAX_LENGTH`` = 255).
RETRY_OR_DLQ_TOPIC_MAX_LENGTH: Final = 255
#: Longest group name (Java 5.x broker ``TopicValidator.GROUP_MAX_LENGTH`` = 120, so that
#: ``%RETRY%<group>`` fits in 127; the Java client's own ``checkGroup`` allows 255).
GROUP_MAX_LENGTH: Final = 120
#: The placeholder producer group a real producer may not use (Java ``MixAll.DEFAULT_PRODUCER_GROUP``).
DEFAULT_PRODUCER_GROUP: Final = "DEFAULT_PRODUCER"

_LEGAL = re.compile(r"[%|a-zA-Z0-9_-]+")
_LEGAL_TEXT: Final = "^[%|a-zA-Z0-9_-]+$"

#: Topics Java refuses to send to (5.x ``TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET``) plus
#: ``TBW102``; see the module docstring for the ``rmq_sys_``/``RMQ_SYS_`` prefix rules.
FORBIDDEN_SEND_TOPICS: Final[frozenset[str]] = frozenset(
    {
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
        "RMQ_SYS_TOPIC_CONFIG_SYNC",
        "RMQ_SYS_CONSUMER_OFFSET_SYNC",
        "RMQ_SYS_DELAY_OFFSET_SYNC",
        "RMQ_SYS_SUBSCRIPTION_GROUP_SYNC",
        "RMQ_SYS_MESSAGE_MODE_SYNC",
        "RMQ_SYS_TIMER_METRICS_SYNC",
    }
)
_SYSTEM_PREFIX: Final = "rmq_sys_"  # Java TopicValidator.SYSTEM_TOPIC_PREFIX
_UPPER_SYSTEM_PREFIX: Final = "RMQ_SYS_"
_TRACE_TOPIC: Final = "RMQ_SYS_TRACE_TOPIC"  # Java TopicValidator.RMQ_SYS_TRACE_TOPIC

#: System keys a Java application sets through ``Message`` setters (tags, keys, delay level,
#: wait-store-ok, instance id, buyer id, 5.x timer delay/deliver time), plus ``UNIQ_KEY``: the
#: producer sets it only when absent, so a re-sent message keeps its id.
USER_SETTABLE_SYSTEM_KEYS: Final[frozenset[str]] = frozenset(
    {
        PropertyKey.TAGS,
        PropertyKey.KEYS,
        PropertyKey.DELAY_TIME_LEVEL,
        PropertyKey.WAIT_STORE_MSG_OK,
        PropertyKey.INSTANCE_ID,
        PropertyKey.BUYER_ID,
        PropertyKey.TIMER_DELAY_SEC,
        PropertyKey.TIMER_DELAY_MS,
        PropertyKey.TIMER_DELIVER_MS,
        PropertyKey.UNIQ_KEY,
    }
)
#: Property keys an application may not put on a message it sends.
RESERVED_PROPERTY_KEYS: Final[frozenset[str]] = SYSTEM_PROPERTY_KEYS - USER_SETTABLE_SYSTEM_KEYS


def _is_blank(text: str) -> bool:
    return not text.strip()


def validate_topic(topic: str) -> None:
    """Check that ``topic`` may be sent to.

    Args:
        topic: the topic name.

    Raises:
        InvalidTopic: the name is blank, has characters outside ``[%|a-zA-Z0-9_-]``, is longer
            than :data:`TOPIC_MAX_LENGTH` (:data:`RETRY_OR_DLQ_TOPIC_MAX_LENGTH` for retry/DLQ
            topics), or is a system topic (see the module docstring).
    """
    if _is_blank(topic):
        raise InvalidTopic(topic, "the topic is blank")
    if _LEGAL.fullmatch(topic) is None:
        raise InvalidTopic(topic, f"contains illegal characters, allowing only {_LEGAL_TEXT}")
    limit = RETRY_OR_DLQ_TOPIC_MAX_LENGTH if is_group_topic(topic) else TOPIC_MAX_LENGTH
    if len(topic) > limit:
        raise InvalidTopic(topic, f"{len(topic)} characters, longer than the maximum of {limit}")
    if (
        topic in FORBIDDEN_SEND_TOPICS
        or topic.startswith(_SYSTEM_PREFIX)
        or (topic.startswith(_UPPER_SYSTEM_PREFIX) and topic != _TRACE_TOPIC)
    ):
        raise InvalidTopic(topic, "sending to a system topic is forbidden")


# Topics that passed validate_topic: the check runs per message, the names repeat.
_VALID_TOPICS: set[str] = set()
_VALID_TOPICS_MAX = 4096


def validate_group(group: str) -> None:
    """Check a producer or consumer group name.

    Args:
        group: the group name.

    Raises:
        InvalidGroup: the name is blank, has characters outside ``[%|a-zA-Z0-9_-]`` or is longer
            than :data:`GROUP_MAX_LENGTH`.
    """
    if _is_blank(group):
        raise InvalidGroup(group, "the group is blank")
    if _LEGAL.fullmatch(group) is None:
        raise InvalidGroup(group, f"contains illegal characters, allowing only {_LEGAL_TEXT}")
    if len(group) > GROUP_MAX_LENGTH:
        raise InvalidGroup(group, f"{len(group)} characters, longer than the maximum of {GROUP_MAX_LENGTH}")


def validate_producer_group(group: str) -> None:
    """:func:`validate_group`, and not the placeholder :data:`DEFAULT_PRODUCER_GROUP`.

    Args:
        group: the producer group name.

    Raises:
        InvalidGroup: as :func:`validate_group`, or the group is ``"DEFAULT_PRODUCER"`` (Java's
            ``checkConfig`` refuses it too).
    """
    validate_group(group)
    if group == DEFAULT_PRODUCER_GROUP:
        raise InvalidGroup(group, "is the default placeholder, please name the producer group")


def validate_message(
    message: Message,
    max_size: int = MAX_MESSAGE_SIZE,
    *,
    reserved: frozenset[str] = RESERVED_PROPERTY_KEYS,
) -> None:
    """Check a message before it is sent (Java ``Validators.checkMessage``, plus reserved keys).

    Args:
        message: the message.
        max_size: the producer's maximum body size in bytes.
        reserved: property keys the caller may not set; internal senders that set system
            properties themselves pass a smaller set.

    Raises:
        InvalidTopic: see :func:`validate_topic`.
        EmptyBody: the body is empty.
        MessageTooLarge: the body is longer than ``max_size``.
        ReservedProperty: a property key is in ``reserved``, or ``INNER_MULTI_DISPATCH`` (light
            message queue names) contains a ``/``, which Java refuses as a path separator.
    """
    topic = message.topic
    if topic not in _VALID_TOPICS:
        validate_topic(topic)
        if len(_VALID_TOPICS) >= _VALID_TOPICS_MAX:
            _VALID_TOPICS.clear()
        _VALID_TOPICS.add(topic)
    body = message.body
    if not body:
        raise EmptyBody(f"the body of a message to topic {topic!r} is empty")
    if len(body) > max_size:
        raise MessageTooLarge(len(body), max_size)
    properties = message.properties
    if not properties:
        return
    if not reserved.isdisjoint(properties):
        raise ReservedProperty(sorted(properties.keys() & reserved)[0])
    dispatch = properties.get(PropertyKey.INNER_MULTI_DISPATCH)
    if dispatch is not None and "/" in dispatch:
        raise ReservedProperty(
            PropertyKey.INNER_MULTI_DISPATCH,
            f"property {PropertyKey.INNER_MULTI_DISPATCH!r} ({dispatch!r}) may not contain '/'",
        )
