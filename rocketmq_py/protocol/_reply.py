"""Request-reply: the properties of a request and its reply, and the reply a broker pushes.

A requester sends an ordinary message to an ordinary topic with three more properties:
``CORRELATION_ID`` (unique per request), ``REPLY_TO_CLIENT`` (the requester's client id, as in its
heartbeats) and ``TTL`` (the requester's timeout in ms). The broker that stores it adds
``CLUSTER``, its cluster name. A responder consumes it and sends a reply message:

    topic       ``<CLUSTER>_REPLY_TOPIC`` (every broker creates it for its own cluster)
    properties  ``MSG_TYPE=reply`` and the request's CORRELATION_ID, REPLY_TO_CLIENT, TTL
    code        SEND_REPLY_MESSAGE_V2 (325) with the SEND_MESSAGE_V2 header

The broker receiving the reply looks up the connection of the client named by REPLY_TO_CLIENT
among the producers that sent it heartbeats and sends it PUSH_REPLY_MESSAGE_TO_CLIENT (326):
:class:`ReplyMessageRequestHeader` (the reply's send header, the reply's born and store hosts and
the store time), the body as sent (compressed if ``sysFlag`` says so). The requester answers
SUCCESS; the broker answers the responder's send with SUCCESS once the push succeeded, with
SYSTEM_ERROR when it found no such client or the push failed. On success the answer carries
msgId ``"0"`` and queueOffset 0, unless the broker also stores the reply on its reply topic
(``storeReplyMessageEnable``, on by default), which gives the stored position instead.

The requester's client is known only to brokers it sent heartbeats to: Java's responder sends
the reply to any broker of the reply topic, and a broker that does not know the requester makes
the send fail with SYSTEM_ERROR, which the producer retries on another broker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Final

from rocketmq_py.errors import InvalidMessage
from rocketmq_py.protocol._codes import RequestCode
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.protocol._compression import decompress_body
from rocketmq_py.protocol._ext_fields import Int32, Int64, extra_field, prepare_headers, to_ext_fields
from rocketmq_py.protocol._message import Message, MessageExt, SysFlag
from rocketmq_py.protocol._properties import PropertyKey, decode_properties, encode_properties

__all__ = [
    "REPLY_MESSAGE_FLAG",
    "REPLY_TOPIC_POSTFIX",
    "ReplyMessageRequestHeader",
    "create_reply",
    "decode_pushed_reply",
    "is_reply",
    "pushed_reply_command",
    "reply_topic",
]

#: ``MSG_TYPE`` of a reply (Java ``MixAll.REPLY_MESSAGE_FLAG``).
REPLY_MESSAGE_FLAG: Final = "reply"
#: After ``<cluster>_`` in a cluster's reply topic (Java ``MixAll.REPLY_TOPIC_POSTFIX``).
REPLY_TOPIC_POSTFIX: Final = "REPLY_TOPIC"


def reply_topic(cluster: str) -> str:
    """The reply topic of ``cluster`` (``DefaultCluster`` -> ``DefaultCluster_REPLY_TOPIC``)."""
    return f"{cluster}_{REPLY_TOPIC_POSTFIX}"


def is_reply(message: Message) -> bool:
    """Whether ``message`` is a reply (``MSG_TYPE=reply``): sent with SEND_REPLY_MESSAGE_V2."""
    return message.properties.get(PropertyKey.MESSAGE_TYPE) == REPLY_MESSAGE_FLAG


def create_reply(request: Message, body: bytes) -> Message:
    """The reply to a request message a responder consumed (Java ``MessageUtil.createReplyMessage``).

    Send it with any started :class:`~rocketmq_py.Producer`'s ``send``: the broker pushes it to
    the requester, whose ``Producer.request`` returns it.

    Args:
        request: the request as consumed (the broker set its ``CLUSTER`` property).
        body: the reply's payload.

    Returns:
        A message to ``<cluster>_REPLY_TOPIC`` with ``MSG_TYPE=reply`` and the request's
        ``CORRELATION_ID``, ``REPLY_TO_CLIENT`` and ``TTL``.

    Raises:
        InvalidMessage: ``request`` has no ``CLUSTER`` property (it was not consumed from a
            broker), or no ``CORRELATION_ID`` / ``REPLY_TO_CLIENT`` (it is not a request).
    """
    properties = request.properties
    cluster = properties.get(PropertyKey.CLUSTER)
    if not cluster:
        raise InvalidMessage(
            f"cannot reply to a message of {request.topic!r} without the {PropertyKey.CLUSTER} property "
            "(brokers set it on the messages they store)"
        )
    correlation_id = properties.get(PropertyKey.CORRELATION_ID)
    reply_to = properties.get(PropertyKey.REPLY_TO_CLIENT)
    if not correlation_id or not reply_to:
        raise InvalidMessage(
            f"the message of {request.topic!r} is not a request: it has no "
            f"{PropertyKey.CORRELATION_ID} or {PropertyKey.REPLY_TO_CLIENT} property"
        )
    reply = Message(reply_topic(cluster), body)
    reply.properties[PropertyKey.MESSAGE_TYPE] = REPLY_MESSAGE_FLAG
    reply.properties[PropertyKey.CORRELATION_ID] = correlation_id
    reply.properties[PropertyKey.REPLY_TO_CLIENT] = reply_to
    ttl = properties.get(PropertyKey.MESSAGE_TTL)
    if ttl is not None:
        reply.properties[PropertyKey.MESSAGE_TTL] = ttl
    return reply


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplyMessageRequestHeader:
    """PUSH_REPLY_MESSAGE_TO_CLIENT (326, broker -> client, needs a reply); body: the reply's body."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT

    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: Int32
    queue_id: Int32
    sys_flag: Int32
    born_timestamp: Int64
    flag: Int32
    born_host: str
    store_host: str
    store_timestamp: Int64
    properties: str | None = None
    reconsume_times: Int32 | None = None
    unit_mode: bool = False
    extra: Mapping[str, str] = extra_field()


prepare_headers(ReplyMessageRequestHeader)


def decode_pushed_reply(
    header: ReplyMessageRequestHeader, body: bytes, *, arrive_time_ms: int | None = None
) -> MessageExt:
    """The reply message of a PUSH_REPLY_MESSAGE_TO_CLIENT (Java ``receiveReplyMessage``).

    Args:
        header: the request's header.
        body: the request's body (inflated here when ``sysFlag`` has the COMPRESSED bit).
        arrive_time_ms: when it arrived (epoch ms), stored as property ``ARRIVE_TIME``.

    Raises:
        MalformedMessage: a compressed body that does not inflate.
        ValueError: a host that is not ``ip:port``.
    """
    sys_flag = header.sys_flag
    if sys_flag & SysFlag.COMPRESSED:
        body = decompress_body(body, sys_flag)
        sys_flag &= ~SysFlag.COMPRESSED
    properties = decode_properties(header.properties or "")
    if arrive_time_ms is not None:
        properties[PropertyKey.REPLY_MESSAGE_ARRIVE_TIME] = str(arrive_time_ms)
    return MessageExt(
        header.topic,
        body,
        flag=header.flag,
        properties=properties,
        queue_id=header.queue_id,
        sys_flag=sys_flag,
        born_timestamp=header.born_timestamp,
        born_host=header.born_host,
        store_timestamp=header.store_timestamp,
        store_host=header.store_host,
        reconsume_times=header.reconsume_times or 0,
    )


def pushed_reply_command(
    reply: Message, *, born_host: str, store_host: str, store_timestamp: int, producer_group: str = "replier"
) -> RemotingCommand:
    """The PUSH_REPLY_MESSAGE_TO_CLIENT a broker sends for ``reply`` (for fake brokers and tests)."""
    header = ReplyMessageRequestHeader(
        producer_group=producer_group,
        topic=reply.topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=0,
        sys_flag=0,
        born_timestamp=store_timestamp,
        flag=reply.flag,
        born_host=born_host,
        store_host=store_host,
        store_timestamp=store_timestamp,
        properties=encode_properties(reply.properties),
    )
    return RemotingCommand.request(
        RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, to_ext_fields(header), reply.body
    )
