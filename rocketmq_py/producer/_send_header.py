"""The SEND_MESSAGE_V2 header of one send: its short-key ``extFields``, and its binary frame.

The V2 header (Java ``SendMessageRequestHeaderV2``) names its fields ``a`` .. ``n``. Per producer,
four never change (group, default topic, its queue count, ``k`` unit mode); per send, the topic,
queue, flags and broker come back again and again, and the born timestamp ``g`` and properties
``i`` are new every time.

The hot path (:meth:`SendHeader.frame`) builds the binary (ROCKETMQ) frame directly: the constant
and recurring entries are encoded once per distinct combination (:class:`SendParts` minus the
fresh values) and cached as one byte string, so a send costs one dictionary lookup, the two fresh
entries and one ``struct`` pack. Connections with RPC hooks get the same header as an ``extFields``
map (:meth:`SendHeader.fields`); ``tests/producer`` checks both against the typed header.
"""

from __future__ import annotations

import struct
import time
from typing import Final, NamedTuple

from rocketmq_py._client._route import AUTO_CREATE_TOPIC_KEY
from rocketmq_py.errors import LocalProtocolError
from rocketmq_py.protocol import MessageQueue, RequestCode
from rocketmq_py.protocol._template import RequestTemplate

__all__ = ["Entries", "SendHeader", "SendParts"]

#: ``((key, value), ...)`` pairs of a header's varying part.
Entries = tuple[tuple[str, str], ...]

_BATCH: Final = (("m", "true"),)
_SINGLE: Final = (("m", "false"),)
#: Heads (constant + recurring entries) kept per producer; past this the cache starts over.
HEAD_CACHE_LIMIT: Final = 4096
_G_PREFIX: Final = b"\x00\x01g"
_I_PREFIX: Final = b"\x00\x01i"
_I32: Final = struct.Struct(">i")


class SendParts(NamedTuple):
    """What varies between the send headers of one producer, besides the queue."""

    sys_flag: int
    flag: int
    reconsume_times: str
    max_reconsume_times: str | None
    properties: str


class SendHeader:
    """A producer's V2 send header: the constant entries, and the varying ones of each send.

    Args:
        group: the producer group (``a``).
        default_topic_queue_nums: queues of an auto-created topic (``d``).
    """

    __slots__ = ("_batch_template", "_heads", "_single_template", "constant")

    def __init__(self, group: str, default_topic_queue_nums: int) -> None:
        #: The entries every send carries.
        self.constant: dict[str, str] = {
            "a": group,
            "c": AUTO_CREATE_TOPIC_KEY,
            "d": str(default_topic_queue_nums),
            "k": "false",
        }
        self._single_template = RequestTemplate(RequestCode.SEND_MESSAGE_V2, self.constant)
        self._batch_template = RequestTemplate(RequestCode.SEND_BATCH_MESSAGE, self.constant)
        self._heads: dict[tuple[object, ...], bytes] = {}

    def template(self, *, batch: bool) -> RequestTemplate:
        """The binary frame template of SEND_MESSAGE_V2, or SEND_BATCH_MESSAGE for a batch."""
        return self._batch_template if batch else self._single_template

    def frame(self, opaque: int, mq: MessageQueue, parts: SendParts, body: bytes, *, batch: bool) -> bytes:
        """The whole binary frame of one send (see the module docstring).

        Raises:
            LocalProtocolError: the properties are not encodable as UTF-8, or a value or the
                frame does not fit the encoding.
        """
        sys_flag, flag, reconsume_times, max_reconsume_times, properties = parts
        key = (
            batch,
            mq.topic,
            mq.queue_id,
            mq.broker_name,
            sys_flag,
            flag,
            reconsume_times,
            max_reconsume_times,
        )
        head = self._heads.get(key)
        if head is None:
            head = self._head(key, mq, parts, batch)
        born = b"%d" % (time.time_ns() // 1_000_000)
        try:
            encoded = properties.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise LocalProtocolError(f"properties are not encodable as UTF-8: {exc}") from None
        template = self._batch_template if batch else self._single_template
        if not encoded:  # null on the wire: left out, as encode_entry does
            return template.frame_from(opaque, b"".join((head, _G_PREFIX, _I32.pack(len(born)), born)), body)
        ext = b"".join(
            (head, _G_PREFIX, _I32.pack(len(born)), born, _I_PREFIX, _I32.pack(len(encoded)), encoded)
        )
        return template.frame_from(opaque, ext, body)

    def single_frame(self, opaque: int, mq: MessageQueue, parts: SendParts, body: bytes) -> bytes:
        """:meth:`frame` of SEND_MESSAGE_V2 (positional: an ``encode`` for ``request_frame``)."""
        return self.frame(opaque, mq, parts, body, batch=False)

    def batch_frame(self, opaque: int, mq: MessageQueue, parts: SendParts, body: bytes) -> bytes:
        """:meth:`frame` of SEND_BATCH_MESSAGE (positional: an ``encode`` for ``request_frame``)."""
        return self.frame(opaque, mq, parts, body, batch=True)

    def _head(self, key: tuple[object, ...], mq: MessageQueue, parts: SendParts, batch: bool) -> bytes:
        template = self._batch_template if batch else self._single_template
        head = template.encode_entries(self.recurring(mq, parts, batch=batch))
        if len(self._heads) >= HEAD_CACHE_LIMIT:
            self._heads.clear()
        self._heads[key] = head
        return head

    @staticmethod
    def recurring(mq: MessageQueue, parts: SendParts, *, batch: bool) -> Entries:
        """The entries whose values come back send after send (``b e f h j m n``, ``l`` if set)."""
        entries: Entries = (
            ("b", mq.topic),
            ("e", str(mq.queue_id)),
            ("f", str(parts.sys_flag)),
            ("h", str(parts.flag)),
            ("j", parts.reconsume_times),
            *(_BATCH if batch else _SINGLE),
            ("n", mq.broker_name),
        )
        if parts.max_reconsume_times:
            entries += (("l", parts.max_reconsume_times),)
        return entries

    def fields(self, mq: MessageQueue, parts: SendParts, *, batch: bool) -> dict[str, str]:
        """The whole header as an ``extFields`` map (the path of connections with RPC hooks)."""
        fields = dict(self.constant)
        fields.update(self.recurring(mq, parts, batch=batch))
        fields["g"] = str(time.time_ns() // 1_000_000)
        fields["i"] = parts.properties
        return fields
