"""Names with a meaning on the wire: a consumer group's retry and dead-letter topics.

Java ``MixAll``: a clustering consumer group ``G`` also consumes ``%RETRY%G`` (its failed messages
come back from there, after a delay), and messages that failed too often go to ``%DLQ%G``. The
producer, the consumers, the Spark source and the CLI all recognise these names through here.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DLQ_GROUP_TOPIC_PREFIX",
    "RETRY_GROUP_TOPIC_PREFIX",
    "dlq_topic",
    "is_group_topic",
    "is_retry_topic",
    "retry_topic",
]

#: Prefix of a group's retry topic (Java ``MixAll.RETRY_GROUP_TOPIC_PREFIX``).
RETRY_GROUP_TOPIC_PREFIX: Final = "%RETRY%"
#: Prefix of a group's dead-letter topic (Java ``MixAll.DLQ_GROUP_TOPIC_PREFIX``).
DLQ_GROUP_TOPIC_PREFIX: Final = "%DLQ%"


def retry_topic(group: str) -> str:
    """``%RETRY%<group>``: where a consumer group's failed messages come back from."""
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    """``%DLQ%<group>``: where a group's messages go once they failed too often."""
    return DLQ_GROUP_TOPIC_PREFIX + group


def is_retry_topic(topic: str) -> bool:
    """``topic`` is some group's retry topic."""
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX)


def is_group_topic(topic: str) -> bool:
    """``topic`` is some group's retry or dead-letter topic."""
    return topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX))
