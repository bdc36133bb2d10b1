"""POP consumption (RocketMQ 5.x): headers, QUERY_ASSIGNMENT bodies and the per-message checkpoint.

In POP mode the broker, not the client, decides who reads what. A consumer asks a broker which
queues are its own (QUERY_ASSIGNMENT, 400; JSON body :class:`QueryAssignmentRequestBody`, reply
:class:`QueryAssignmentResponseBody`), then long-polls each with POP_MESSAGE (200050,
:class:`PopMessageRequestHeader`). The broker hands out up to ``maxMsgNums`` messages and hides
them from everybody for ``invisibleTime`` ms; a message not acknowledged by then is popped
again (by anyone). ACK_MESSAGE (200051, :class:`AckMessageRequestHeader`) settles one message,
CHANGE_MESSAGE_INVISIBLETIME (200053, :class:`ChangeInvisibleTimeRequestHeader`) re-times it
(a consumer that failed asks to see it again later). All codes exceed int16: these requests
only fit the JSON header encoding (the default).

The checkpoint string (Java's ``ExtraInfoUtil``, property ``POP_CK``)
----------------------------------------------------------------------
Ack and change-invisible-time name the message by its checkpoint: eight fields joined by one
space::

    ckQueueOffset popTime invisibleTime reviveQid retry brokerName queueId queueOffset

``ckQueueOffset`` is the first offset the pop took from that queue, ``popTime``,
``invisibleTime`` and ``reviveQid`` come from :class:`PopMessageResponseHeader`, ``retry`` is
``0`` for the topic itself, ``1`` for the v1 retry topic ``%RETRY%<group>_<topic>`` and ``2``
for the v2 one ``%RETRY%<group>+<topic>`` (:func:`retry_mark`). The response header lists, per
``retry@queueId`` key, the start offset (``startOffsetInfo``: ``retry queueId offset`` items
joined by ``;``) and the popped offsets (``msgOffsetInfo``: ``retry queueId o1,o2,...``);
:func:`pop_checkpoints` builds each message's string from them as the Java client does
(``MQClientAPIImpl.processPopResponse``; messages that already carry ``POP_CK`` keep it; with no
``startOffsetInfo`` (old brokers) the first message's offset of each queue is the start).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Final

from rocketmq_py.protocol._bodies import MessageModel, MessageQueue
from rocketmq_py.protocol._codes import RequestCode
from rocketmq_py.protocol._ext_fields import Int32, Int64, extra_field, prepare_headers, wire_key
from rocketmq_py.protocol._json_body import JsonBody, prepare_bodies
from rocketmq_py.protocol._message import MessageExt
from rocketmq_py.protocol._properties import PropertyKey

__all__ = [
    "AckMessageRequestHeader",
    "ChangeInvisibleTimeRequestHeader",
    "ChangeInvisibleTimeResponseHeader",
    "ConsumeInitMode",
    "MessageQueueAssignment",
    "MessageRequestMode",
    "PopCheckpoint",
    "PopMessageRequestHeader",
    "PopMessageResponseHeader",
    "QueryAssignmentRequestBody",
    "QueryAssignmentResponseBody",
    "build_offset_info",
    "parse_offset_info",
    "pop_checkpoints",
    "pop_retry_topic",
    "retry_mark",
]

_RETRY_PREFIX: Final = "%RETRY%"
_SEPARATOR: Final = " "  # MessageConst.KEY_SEPARATOR

#: ``retry`` field values: the topic itself, the v1 and v2 POP retry topics.
RETRY_NONE: Final = "0"
RETRY_V1: Final = "1"
RETRY_V2: Final = "2"


class ConsumeInitMode(enum.IntEnum):
    """POP_MESSAGE's ``initMode``: where a group with no offset on a queue starts (Java
    ``common/constant/ConsumeInitMode``; the broker's ``PopMessageProcessor.getInitOffset``).

    ``MIN`` starts at the queue's first message. ``MAX`` starts at its last one (max offset - 1),
    unless the broker's ``initPopOffsetByCheckMsgInMem`` (on by default) finds the queue's first
    message still in memory, when it starts at 0. A retry topic always starts at its first message.
    """

    MIN = 0
    MAX = 1


class MessageRequestMode(enum.StrEnum):
    """How a group reads a topic's queues (per topic and group, set by ``mqadmin setConsumeMode``)."""

    PULL = "PULL"
    POP = "POP"


# --- QUERY_ASSIGNMENT ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryAssignmentRequestBody(JsonBody):
    """QUERY_ASSIGNMENT (400) body: which of ``topic``'s queues are ``client_id``'s."""

    topic: str
    consumer_group: str
    client_id: str
    strategy_name: str
    message_model: MessageModel = MessageModel.CLUSTERING


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageQueueAssignment(JsonBody):
    """One assigned queue and how to read it (POP, or PULL for a group in the default mode)."""

    message_queue: MessageQueue | None = None
    mode: MessageRequestMode = MessageRequestMode.PULL
    attachments: Mapping[str, str] | None = field(default=None, hash=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryAssignmentResponseBody(JsonBody):
    """QUERY_ASSIGNMENT reply: the assignments (an empty set when the client has none)."""

    message_queue_assignments: tuple[MessageQueueAssignment, ...] = ()


prepare_bodies(QueryAssignmentRequestBody, MessageQueueAssignment, QueryAssignmentResponseBody)


# --- headers -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class PopMessageRequestHeader:
    """POP_MESSAGE (200050) request header.

    ``queue_id`` -1 pops from any of the topic's queues on that broker. ``poll_time`` is the
    long-poll time in ms; ``init_mode`` is a :class:`ConsumeInitMode` (0 starts a new group at the
    queue's first message, 1 at its end).
    """

    REQUEST_CODE: ClassVar[int | None] = RequestCode.POP_MESSAGE

    consumer_group: str
    topic: str
    queue_id: Int32
    max_msg_nums: Int32
    invisible_time: Int64
    poll_time: Int64
    born_time: Int64
    init_mode: Int32
    exp_type: str | None = None
    exp: str | None = None
    order: bool | None = None
    attempt_id: str | None = None
    broker_name: str | None = field(default=None, metadata=wire_key("bname"))
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class PopMessageResponseHeader:
    """Reply to POP_MESSAGE: the checkpoint parts (see the module docstring)."""

    REQUEST_CODE: ClassVar[int | None] = None

    pop_time: Int64
    invisible_time: Int64
    revive_qid: Int32
    rest_num: Int64
    start_offset_info: str | None = None
    msg_offset_info: str | None = None
    order_count_info: str | None = None
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class AckMessageRequestHeader:
    """ACK_MESSAGE (200051) request header: one popped message is done with.

    ``topic`` is the topic the message was stored in (the retry topic for ``retry`` 1 or 2),
    ``extra_info`` its checkpoint string, ``offset`` its queue offset.
    """

    REQUEST_CODE: ClassVar[int | None] = RequestCode.ACK_MESSAGE

    consumer_group: str
    topic: str
    queue_id: Int32
    extra_info: str
    offset: Int64
    broker_name: str | None = field(default=None, metadata=wire_key("bname"))
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeInvisibleTimeRequestHeader:
    """CHANGE_MESSAGE_INVISIBLETIME (200053) request header: show the message again in ``invisible_time`` ms."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.CHANGE_MESSAGE_INVISIBLETIME

    consumer_group: str
    topic: str
    queue_id: Int32
    extra_info: str
    offset: Int64
    invisible_time: Int64
    broker_name: str | None = field(default=None, metadata=wire_key("bname"))
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeInvisibleTimeResponseHeader:
    """Reply to CHANGE_MESSAGE_INVISIBLETIME: the new checkpoint's parts."""

    REQUEST_CODE: ClassVar[int | None] = None

    pop_time: Int64
    invisible_time: Int64
    revive_qid: Int32
    extra: Mapping[str, str] = extra_field()


prepare_headers(
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
)


# --- the checkpoint string -----------------------------------------------------------------------


def pop_retry_topic(topic: str, group: str, *, v2: bool = False) -> str:
    """The topic a broker revives ``group``'s unacknowledged POP messages of ``topic`` into.

    ``%RETRY%<group>_<topic>`` (v1, the default), or ``%RETRY%<group>+<topic>`` on brokers with
    ``enableRetryTopicV2`` (Java ``KeyBuilder.buildPopRetryTopic``).
    """
    return f"{_RETRY_PREFIX}{group}{'+' if v2 else '_'}{topic}"


def retry_mark(topic: str) -> str:
    """The checkpoint's ``retry`` field for a message stored in ``topic``."""
    if topic.startswith(_RETRY_PREFIX):
        return RETRY_V2 if "+" in topic else RETRY_V1
    return RETRY_NONE


@dataclass(frozen=True, slots=True)
class PopCheckpoint:
    """A popped message's checkpoint (the ``POP_CK`` string, parsed).

    Attributes:
        ck_queue_offset: the first offset that pop took from the queue.
        pop_time: when the broker popped it (epoch ms).
        invisible_time: how long it stays hidden (ms).
        revive_qid: the broker's revive queue for the checkpoint.
        retry: ``"0"``, ``"1"`` or ``"2"`` (see :func:`retry_mark`).
        broker_name: the broker that popped it.
        queue_id: the queue.
        queue_offset: the message's own offset.
    """

    ck_queue_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    retry: str
    broker_name: str
    queue_id: int
    queue_offset: int

    @classmethod
    def parse(cls, text: str) -> PopCheckpoint:
        """Read a checkpoint string.

        Raises:
            ValueError: not eight space-separated fields with numbers where numbers belong.
        """
        parts = text.split(_SEPARATOR)
        if len(parts) != 8:
            raise ValueError(f"POP checkpoint {text!r} does not have 8 fields")
        ck, pop_time, invisible, revive, retry, broker, queue_id, offset = parts
        if retry not in (RETRY_NONE, RETRY_V1, RETRY_V2) or not broker:
            raise ValueError(f"POP checkpoint {text!r} is malformed")
        try:
            numbers = [int(n) for n in (ck, pop_time, invisible, revive, queue_id, offset)]
        except ValueError:
            raise ValueError(f"POP checkpoint {text!r} has a field that is not a number") from None
        return cls(numbers[0], numbers[1], numbers[2], numbers[3], retry, broker, numbers[4], numbers[5])

    def encode(self) -> str:
        """The checkpoint string (what ack and change-invisible-time send as ``extraInfo``)."""
        return _SEPARATOR.join(
            str(v)
            for v in (
                self.ck_queue_offset,
                self.pop_time,
                self.invisible_time,
                self.revive_qid,
                self.retry,
                self.broker_name,
                self.queue_id,
                self.queue_offset,
            )
        )

    def stored_topic(self, topic: str, group: str) -> str:
        """The topic the message is stored in, given its original ``topic`` and the group."""
        if self.retry == RETRY_NONE:
            return topic
        return pop_retry_topic(topic, group, v2=self.retry == RETRY_V2)


def parse_offset_info(text: str | None) -> dict[str, tuple[int, ...]]:
    """Parse ``startOffsetInfo`` / ``msgOffsetInfo`` / ``orderCountInfo`` into ``{"retry@queueId": numbers}``.

    Raises:
        ValueError: an item is not three space-separated fields, or a key repeats.
    """
    result: dict[str, tuple[int, ...]] = {}
    if not text:
        return result
    for item in text.split(";"):
        parts = item.split(_SEPARATOR)
        if len(parts) != 3:
            raise ValueError(f"offset info item {item!r} does not have 3 fields")
        key = f"{parts[0]}@{parts[1]}"
        if key in result:
            raise ValueError(f"offset info repeats {key!r}")
        result[key] = tuple(int(n) for n in parts[2].split(","))
    return result


def build_offset_info(items: Sequence[tuple[str, int, Sequence[int]]]) -> str:
    """The inverse of :func:`parse_offset_info`: ``(retry, queue_id, numbers)`` items (a broker's side)."""
    return ";".join(f"{retry} {queue_id} {','.join(map(str, numbers))}" for retry, queue_id, numbers in items)


def _queue_key(msg: MessageExt) -> str:
    ck = msg.properties.get(PropertyKey.POP_CK)
    mark = ck.split(_SEPARATOR)[4] if ck and len(ck.split(_SEPARATOR)) > 4 else retry_mark(msg.topic)
    return f"{mark}@{msg.queue_id}"


def pop_checkpoints(msgs: Sequence[MessageExt], header: PopMessageResponseHeader, broker_name: str) -> None:
    """Set ``POP_CK`` (and ``1ST_POP_TIME`` when absent) on each popped message, as Java's client does.

    ``msgs`` are the decoded messages of one POP_MESSAGE reply (before their topic is restored).

    Raises:
        ValueError: the header's offset lists do not cover a message.
    """
    starts = parse_offset_info(header.start_offset_info)
    offsets = parse_offset_info(header.msg_offset_info)
    if not starts:
        first: dict[str, int] = {}
        for msg in msgs:
            key = f"{msg.topic}{msg.queue_id}"
            ck = first.setdefault(key, msg.queue_offset)
            msg.properties[PropertyKey.POP_CK] = PopCheckpoint(
                ck,
                header.pop_time,
                header.invisible_time,
                header.revive_qid,
                retry_mark(msg.topic),
                broker_name,
                msg.queue_id,
                msg.queue_offset,
            ).encode()
    else:
        seen: dict[str, list[int]] = {}
        for msg in msgs:
            seen.setdefault(_queue_key(msg), []).append(msg.queue_offset)
        for msg in msgs:
            if PropertyKey.POP_CK in msg.properties:
                continue
            key = f"{retry_mark(msg.topic)}@{msg.queue_id}"
            try:
                start = starts[key][0]
                offset = offsets[key][seen[key].index(msg.queue_offset)]
            except (KeyError, IndexError, ValueError):
                raise ValueError(
                    f"POP reply has no offset info for {key} offset {msg.queue_offset}"
                ) from None
            msg.properties[PropertyKey.POP_CK] = PopCheckpoint(
                start,
                header.pop_time,
                header.invisible_time,
                header.revive_qid,
                retry_mark(msg.topic),
                broker_name,
                msg.queue_id,
                offset,
            ).encode()
    for msg in msgs:
        msg.properties.setdefault(PropertyKey.FIRST_POP_TIME, str(header.pop_time))
