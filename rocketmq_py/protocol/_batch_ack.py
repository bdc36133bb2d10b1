"""BATCH_ACK_MESSAGE (200151): many popped messages acknowledged in one request (brokers 5.1.3+).

The request has no custom header; its JSON body (Java ``BatchAckMessageRequestBody``) names the
broker and lists one :class:`BatchAck` per POP checkpoint: the messages one POP_MESSAGE took
from one queue share ``startOffset`` (the checkpoint's ``ckQueueOffset``), ``popTime``,
``invisibleTime``, ``reviveQueueId`` and ``retry``, and a bit set marks which of them are done
(bit ``i``: the message at ``startOffset + i``). The broker stores one revive record per entry
where ACK_MESSAGE stores one per message.

Java writes the entries with short keys and the bit set as Base64 of ``BitSet.toByteArray()``
(little-endian bytes, bit ``i`` is bit ``i % 8`` of byte ``i // 8``, no trailing zero bytes),
keys sorted::

    {"acks":[{"b":"CwIAgA==","c":"g1","it":60000,"pt":1700000000000,"q":1,"r":"0","rq":2,
    "so":100,"t":"t1"}],"brokerName":"broker-a"}

``t`` is the message's original topic: the broker finds the stored one from ``retry`` (the POP
retry topic for ``1`` and ``2``), unlike ACK_MESSAGE's header, which names the stored topic.
:func:`encode_batch_ack_body` writes exactly Java's bytes (``tests/protocol/test_batch_ack.py``
compares them with a body Java's ``encode()`` wrote).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from rocketmq_py.errors import MalformedBody
from rocketmq_py.protocol._pop import PopCheckpoint

__all__ = ["BatchAck", "batch_acks", "decode_batch_ack_body", "encode_batch_ack_body"]

#: The most messages one entry can mark: Java's bit index is an ``int``.
_MAX_BIT: Final = 2**31 - 1


@dataclass(frozen=True, slots=True)
class BatchAck:
    """One checkpoint's acknowledged messages (Java ``BatchAck``).

    Attributes:
        consumer_group: the group (as the broker knows it).
        topic: the messages' original topic (not the POP retry topic; see ``retry``).
        retry: the checkpoint's ``retry`` field: ``"0"``, ``"1"`` or ``"2"``.
        start_offset: the checkpoint's first offset (``ckQueueOffset``).
        queue_id: the queue.
        revive_queue_id: the checkpoint's revive queue.
        pop_time: when the broker popped them (epoch ms).
        invisible_time: how long they stay hidden (ms).
        offsets: the queue offsets acknowledged, each at least ``start_offset``.
    """

    consumer_group: str
    topic: str
    retry: str
    start_offset: int
    queue_id: int
    revive_queue_id: int
    pop_time: int
    invisible_time: int
    offsets: tuple[int, ...]

    def bits(self) -> bytes:
        """The bit set of ``offsets - start_offset``, as Java's ``BitSet.toByteArray()``.

        Raises:
            ValueError: an offset below ``start_offset`` or too far above it.
        """
        value = 0
        for offset in self.offsets:
            index = offset - self.start_offset
            if not 0 <= index < _MAX_BIT:
                raise ValueError(
                    f"offset {offset} is outside the checkpoint that starts at {self.start_offset}"
                )
            value |= 1 << index
        return value.to_bytes((value.bit_length() + 7) // 8, "little")

    def to_json(self) -> dict[str, Any]:
        """The entry with Java's keys."""
        return {
            "b": base64.b64encode(self.bits()).decode("ascii"),
            "c": self.consumer_group,
            "it": self.invisible_time,
            "pt": self.pop_time,
            "q": self.queue_id,
            "r": self.retry,
            "rq": self.revive_queue_id,
            "so": self.start_offset,
            "t": self.topic,
        }


def batch_acks(consumer_group: str, items: Iterable[tuple[str, PopCheckpoint]]) -> list[BatchAck]:
    """Group popped messages into one entry per checkpoint, as Java's ``batchAckMessageAsync`` does.

    ``items`` are ``(original topic, checkpoint)`` pairs; messages of one checkpoint share its
    retry mark, queue, first offset and pop time (Java's merge key). Entries keep the order in
    which their first message came.
    """
    merged: dict[tuple[str, str, int, int, int], tuple[PopCheckpoint, list[int]]] = {}
    for topic, ck in items:
        key = (topic, ck.retry, ck.queue_id, ck.ck_queue_offset, ck.pop_time)
        entry = merged.get(key)
        if entry is None:
            merged[key] = (ck, [ck.queue_offset])
        else:
            entry[1].append(ck.queue_offset)
    return [
        BatchAck(
            consumer_group=consumer_group,
            topic=topic,
            retry=ck.retry,
            start_offset=ck.ck_queue_offset,
            queue_id=ck.queue_id,
            revive_queue_id=ck.revive_qid,
            pop_time=ck.pop_time,
            invisible_time=ck.invisible_time,
            offsets=tuple(offsets),
        )
        for (topic, *_), (ck, offsets) in merged.items()
    ]


def encode_batch_ack_body(broker_name: str, acks: Sequence[BatchAck]) -> bytes:
    """The BATCH_ACK_MESSAGE body (Java ``BatchAckMessageRequestBody.encode()``'s bytes)."""
    document = {"acks": [ack.to_json() for ack in acks], "brokerName": broker_name}
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def decode_batch_ack_body(body: bytes) -> tuple[str, list[BatchAck]]:
    """Read a BATCH_ACK_MESSAGE body (a broker's side): the broker name and the entries.

    Raises:
        MalformedBody: not JSON of that shape, or a bit set that is not Base64.
    """
    try:
        document = json.loads(body)
        acks: list[BatchAck] = []
        for entry in document["acks"]:
            bits = int.from_bytes(base64.b64decode(entry["b"], validate=True), "little")
            start = int(entry["so"])
            acks.append(
                BatchAck(
                    consumer_group=str(entry["c"]),
                    topic=str(entry["t"]),
                    retry=str(entry["r"]),
                    start_offset=start,
                    queue_id=int(entry["q"]),
                    revive_queue_id=int(entry["rq"]),
                    pop_time=int(entry["pt"]),
                    invisible_time=int(entry["it"]),
                    offsets=tuple(start + i for i in range(bits.bit_length()) if bits >> i & 1),
                )
            )
        return str(document["brokerName"]), acks
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise MalformedBody(f"BATCH_ACK_MESSAGE body: {exc!r}") from exc
