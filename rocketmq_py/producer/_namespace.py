"""A producer in a namespace: what it sends carries wrapped names, what it returns plain ones.

Java's ``DefaultMQProducer`` wraps the message's topic in place before a send; we send a shallow
copy instead (same body and properties dict, so a UNIQ_KEY made during the send still shows on the
caller's message), leaving the caller's message as it was given. The queue list a selector sees,
and the queue of a result, are unwrapped (Java's ``sendSelectImpl`` and ``processSendResponse``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from rocketmq_py.producer._selectors import SelectQueue
from rocketmq_py.producer._types import SendResult
from rocketmq_py.protocol import Message, MessageQueue, unwrap_queue, wrap_name, wrap_queue

__all__ = ["user_result", "wire_message", "wire_queue", "wire_selector"]


def wire_message(namespace: str, message: Message) -> Message:
    """``message`` with its topic wrapped: a copy sharing body and properties (or itself)."""
    topic = wrap_name(namespace, message.topic)
    if topic == message.topic:
        return message
    wire = Message.__new__(Message)
    wire.topic = topic
    wire.body = message.body
    wire.flag = message.flag
    wire.properties = message.properties
    return wire


def wire_queue(namespace: str, queue: MessageQueue | None) -> MessageQueue | None:
    """A queue the caller named, as the broker knows it."""
    return None if queue is None else wrap_queue(namespace, queue)


def wire_selector(namespace: str, selector: SelectQueue | None, message: Message) -> SelectQueue | None:
    """``selector`` seeing plain queues and the caller's ``message``; its choice wrapped again."""
    if selector is None:
        return None

    def select(queues: Sequence[MessageQueue], _wire: Message, arg: Any) -> MessageQueue:
        chosen = selector([unwrap_queue(namespace, mq) for mq in queues], message, arg)
        return wrap_queue(namespace, chosen)

    return select


def user_result(namespace: str, result: SendResult) -> SendResult:
    """``result`` with its queue's topic unwrapped."""
    queue = unwrap_queue(namespace, result.queue)
    return result if queue is result.queue else dataclasses.replace(result, queue=queue)
