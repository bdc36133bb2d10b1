"""Namespaces: topics and groups of one tenant share a cluster under a ``<namespace>%`` prefix.

A client given a namespace (Java ``ClientConfig.setNamespace``) speaks the wrapped names on the wire
and shows the plain ones to its user; a Java client with the same namespace reads and writes the
same topics. The layout, as the Java client's ``NamespaceUtil`` (remoting module) writes it::

    topic / group              orders          ->  ns%orders
    a group's retry topic      %RETRY%g        ->  %RETRY%ns%g
    a group's dead letters     %DLQ%g          ->  %DLQ%ns%g
    system topics and groups   rmq_sys_x, TBW102, SCHEDULE_TOPIC_XXXX, CID_RMQ_SYS_x  (never wrapped)

Wrapping is idempotent: a name that already carries the namespace (after any ``%RETRY%`` /
``%DLQ%`` prefix) stays as it is. Unwrapping removes only the given namespace; a name of another
namespace, or of none, comes back unchanged. No namespace (``None`` or ``""``) leaves every name
alone.
"""

from __future__ import annotations

import re
from typing import Final

from rocketmq_py.protocol._bodies import MessageQueue
from rocketmq_py.protocol._names import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX

__all__ = [
    "NAMESPACE_SEPARATOR",
    "SYSTEM_GROUP_PREFIX",
    "SYSTEM_TOPICS",
    "SYSTEM_TOPIC_PREFIX",
    "is_system_resource",
    "namespace_of",
    "unwrap_name",
    "unwrap_queue",
    "validate_namespace",
    "wrap_name",
    "wrap_queue",
]

#: Between the namespace and the name (Java ``NamespaceUtil.NAMESPACE_SEPARATOR``).
NAMESPACE_SEPARATOR: Final = "%"
#: Topics starting with this are the broker's own (Java ``TopicValidator.SYSTEM_TOPIC_PREFIX``).
SYSTEM_TOPIC_PREFIX: Final = "rmq_sys_"
#: Groups starting with this are the broker's own (Java ``MixAll.CID_RMQ_SYS_PREFIX``).
SYSTEM_GROUP_PREFIX: Final = "CID_RMQ_SYS_"
#: The broker's fixed system topics (Java ``TopicValidator``'s system topic set).
SYSTEM_TOPICS: Final = frozenset(
    {
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "BenchmarkTest",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRACE_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
        "CHECKPOINT_TOPIC",
    }
)

_NAMESPACE = re.compile(r"[A-Za-z0-9_-]+")
_PREFIXES: Final = (RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)


def validate_namespace(namespace: str | None) -> str | None:
    """``namespace`` checked: ``None`` (or ``""``: no namespace) or letters, digits, ``_`` and ``-``.

    A ``%`` would make wrapped names ambiguous (the first ``%`` ends the namespace).

    Raises:
        ValueError: the namespace holds another character.
    """
    if not namespace:
        return None
    if _NAMESPACE.fullmatch(namespace) is None:
        raise ValueError(f"namespace {namespace!r} may hold only letters, digits, '_' and '-'")
    return namespace


def is_system_resource(name: str) -> bool:
    """``name`` is a system topic or group, which a namespace never wraps."""
    return name in SYSTEM_TOPICS or name.startswith((SYSTEM_TOPIC_PREFIX, SYSTEM_GROUP_PREFIX))


def _split_prefix(name: str) -> tuple[str, str]:
    """(``%RETRY%`` / ``%DLQ%`` / ``""``, the rest)."""
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            return prefix, name[len(prefix) :]
    return "", name


def wrap_name(namespace: str | None, name: str) -> str:
    """``name`` as the brokers know it in ``namespace`` (Java ``NamespaceUtil.wrapNamespace``).

    ``orders`` -> ``ns%orders``, ``%RETRY%g`` -> ``%RETRY%ns%g``, ``%DLQ%g`` -> ``%DLQ%ns%g``;
    system names, empty names and names already in ``namespace`` are returned unchanged.
    """
    if not namespace or not name or is_system_resource(name):
        return name
    prefix, rest = _split_prefix(name)
    if rest.startswith(namespace + NAMESPACE_SEPARATOR):
        return name
    return f"{prefix}{namespace}{NAMESPACE_SEPARATOR}{rest}"


def unwrap_name(namespace: str | None, name: str) -> str:
    """``name`` as the user of ``namespace`` knows it (Java ``NamespaceUtil.withoutNamespace``).

    The inverse of :func:`wrap_name`: ``ns%orders`` -> ``orders``, ``%RETRY%ns%g`` ->
    ``%RETRY%g``. A name of another namespace (or of none) is returned unchanged.
    """
    if not namespace or not name or is_system_resource(name):
        return name
    prefix, rest = _split_prefix(name)
    head = namespace + NAMESPACE_SEPARATOR
    if not rest.startswith(head):
        return name
    return prefix + rest[len(head) :]


def namespace_of(name: str) -> str:
    """The namespace in a wrapped name, ``""`` if none (Java ``getNamespaceFromResource``)."""
    if not name or is_system_resource(name):
        return ""
    rest = _split_prefix(name)[1]
    index = rest.find(NAMESPACE_SEPARATOR)
    return rest[:index] if index > 0 else ""


def wrap_queue(namespace: str | None, mq: MessageQueue) -> MessageQueue:
    """``mq`` with its topic wrapped (the same object when nothing changes)."""
    topic = wrap_name(namespace, mq.topic)
    return (
        mq
        if topic == mq.topic
        else MessageQueue(topic=topic, broker_name=mq.broker_name, queue_id=mq.queue_id)
    )


def unwrap_queue(namespace: str | None, mq: MessageQueue) -> MessageQueue:
    """``mq`` with its topic unwrapped (the same object when nothing changes)."""
    topic = unwrap_name(namespace, mq.topic)
    return (
        mq
        if topic == mq.topic
        else MessageQueue(topic=topic, broker_name=mq.broker_name, queue_id=mq.queue_id)
    )
