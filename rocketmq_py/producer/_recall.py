"""Recalling a timer message: RECALL_MESSAGE to the broker its handle names (Java ``recallMessage``).

The handle (``SendResult.recall_handle``) is checked before any I/O: it must decode
(:class:`~rocketmq_py.protocol.RecallHandle`) and name the topic given. The broker it names is
found in the topic's route (fetched once if not cached); a broker older than 5.3.2 gets no request
(:class:`~rocketmq_py.errors.RecallNotSupported`), as its release is known from its replies (one
heartbeat tells it otherwise). The broker's refusals are its typed errors: ``NoPermission`` while
its ``recallMessageEnable`` is off, ``IllegalOperation`` once the delivery time has passed.
"""

from __future__ import annotations

import trio

from rocketmq_py._client._capabilities import broker_version
from rocketmq_py._client._instance import ClientInstance
from rocketmq_py.errors import InvalidRecallHandle, InvalidTopic, RecallNotSupported, RequestTimeout
from rocketmq_py.producer._validation import validate_topic
from rocketmq_py.protocol import (
    RecallHandle,
    RecallMessageRequestHeader,
    RecallMessageResponseHeader,
    RequestCode,
)
from rocketmq_py.protocol._ext_fields import from_ext_fields
from rocketmq_py.protocol._names import is_group_topic
from rocketmq_py.protocol._versions import release_name, supports_recall

__all__ = ["parse_recall_handle", "recall_message"]


def parse_recall_handle(topic: str, recall_handle: str) -> RecallHandle:
    """The decoded handle, checked against ``topic`` (no I/O).

    Raises:
        InvalidTopic: ``topic`` is not a valid topic name, or is a retry or DLQ topic.
        InvalidRecallHandle: the handle does not decode, or names another topic.
    """
    validate_topic(topic)
    if is_group_topic(topic):
        raise InvalidTopic(topic, "retry and dead-letter topics have no recallable messages")
    try:
        handle = RecallHandle.parse(recall_handle)
    except ValueError as exc:
        raise InvalidRecallHandle(recall_handle, str(exc)) from None
    if handle.topic != topic:
        raise InvalidRecallHandle(recall_handle, f"it is for topic {handle.topic!r}, not {topic!r}")
    return handle


async def recall_message(
    instance: ClientInstance,
    group: str,
    topic: str,
    recall_handle: str,
    *,
    timeout: float,  # noqa: ASYNC109
) -> str:
    """Recall the message ``recall_handle`` stands for; returns its message id.

    Raises:
        InvalidTopic, InvalidRecallHandle: see :func:`parse_recall_handle` (nothing sent).
        RecallNotSupported: the broker is older than 5.3.2 (nothing sent).
        RouteNotFound: the handle's broker is not in the topic's route.
        RequestTimeout: no answer within ``timeout`` seconds.
        BrokerError: the broker refused (``NoPermission``: recall is disabled on it;
            ``IllegalOperation``: the delivery time has passed or the handle is not its own).
    """
    handle = parse_recall_handle(topic, recall_handle)
    with trio.move_on_after(timeout):
        address = await instance.routes.require_master(topic, handle.broker_name)
        version = await broker_version(instance, address)
        if not supports_recall(version):
            raise RecallNotSupported(handle.broker_name, release_name(version) or f"version {version}")
        header = RecallMessageRequestHeader(
            topic=topic, recall_handle=recall_handle, producer_group=group, broker_name=handle.broker_name
        )
        reply = await instance.api.call(address, RequestCode.RECALL_MESSAGE, header, timeout=timeout)
        answer = from_ext_fields(RecallMessageResponseHeader, reply.ext_fields)
        return answer.msg_id or handle.message_id
    raise RequestTimeout(f"recalling a message of {topic} did not finish within {timeout:g} s")
