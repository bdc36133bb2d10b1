"""Message trace records as the Java client writes them to ``RMQ_SYS_TRACE_TOPIC`` (sans-IO).

A trace message's body is a run of records, each ended by ``\\x02`` (Java
``TraceConstants.FIELD_SPLITOR``), their fields separated by ``\\x01`` (``CONTENT_SPLITOR``); its
``KEYS`` are the traced messages' ids and keys, which is how ``mqadmin queryMsgTraceById`` finds
them. The record kinds and their fields, in order (Java ``TraceDataEncoder``):

- ``Pub``: timestamp (ms), region id, producer group, topic, message id, tags, keys, store host,
  body length, cost (ms), message type (:class:`TraceMessageType`), offset message id, success.
- ``SubBefore`` (one per message a listener call is given): timestamp, region id, consumer group,
  request id (shared by the call's ``SubBefore`` and ``SubAfter`` records), message id,
  reconsume times, keys.
- ``SubAfter`` (one per message): request id, message id, cost (ms, the call's time divided by its
  messages), success, keys, context code (:class:`ConsumeReturnType`), timestamp, consumer group.
- ``EndTransaction``: timestamp, region id, producer group, topic, message id, tags, keys, store
  host, message type, transaction id, transaction state (``COMMIT_MESSAGE``, ``ROLLBACK_MESSAGE``,
  ``UNKNOW``), from a transaction check.

Absent tags, keys and transaction ids are written as the text ``null``, as Java writes its null
strings (its decoder needs them: ``String.split`` drops trailing empty fields, so a record ending
in an empty field would be too short for it); :func:`decode_trace_data` reads ``null`` back as empty.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from rocketmq_py.protocol._properties import KEY_SEPARATOR

__all__ = [
    "CONTENT_SEPARATOR",
    "FIELD_SEPARATOR",
    "TRACE_TOPIC",
    "ConsumeReturnType",
    "EndTransactionTrace",
    "PubTrace",
    "SubAfterTrace",
    "SubBeforeTrace",
    "TraceMessageType",
    "TraceRecord",
    "decode_trace_data",
    "encode_trace_data",
    "trace_keys",
]

#: The default trace topic (Java ``TopicValidator.RMQ_SYS_TRACE_TOPIC``).
TRACE_TOPIC: Final = "RMQ_SYS_TRACE_TOPIC"
#: Between a record's fields (Java ``TraceConstants.CONTENT_SPLITOR``).
CONTENT_SEPARATOR: Final = "\x01"
#: After each record (Java ``TraceConstants.FIELD_SPLITOR``).
FIELD_SEPARATOR: Final = "\x02"


class TraceMessageType(enum.IntEnum):
    """The kind of message a record is about (Java ``MessageType`` ordinals)."""

    NORMAL = 0
    TRANSACTION_HALF = 1
    TRANSACTION_COMMIT = 2
    DELAY = 3
    ORDER = 4


class ConsumeReturnType(enum.IntEnum):
    """How a listener call ended (Java ``ConsumeReturnType`` ordinals, a ``SubAfter`` context code)."""

    SUCCESS = 0
    TIME_OUT = 1
    EXCEPTION = 2
    RETURNNULL = 3
    FAILED = 4


@dataclass(slots=True, kw_only=True)
class PubTrace:
    """A send (``Pub``)."""

    timestamp: int
    region_id: str
    group: str
    topic: str
    msg_id: str
    tags: str
    keys: str
    store_host: str
    body_length: int
    cost_ms: int
    msg_type: TraceMessageType
    offset_msg_id: str
    success: bool

    def encode(self) -> str:
        """The record as Java's encoder writes it, separator included."""
        return (
            f"Pub\x01{self.timestamp}\x01{self.region_id}\x01{self.group}\x01{self.topic}\x01{self.msg_id}"
            f"\x01{self.tags or 'null'}\x01{self.keys or 'null'}\x01{self.store_host}\x01{self.body_length}"
            f"\x01{self.cost_ms}\x01{int(self.msg_type)}\x01{self.offset_msg_id}"
            f"\x01{'true' if self.success else 'false'}\x02"
        )


@dataclass(slots=True, kw_only=True)
class SubBeforeTrace:
    """A message handed to a listener (``SubBefore``)."""

    timestamp: int
    region_id: str
    group: str
    request_id: str
    msg_id: str
    retry_times: int
    keys: str

    def encode(self) -> str:
        """The record as Java's encoder writes it, separator included."""
        return (
            f"SubBefore\x01{self.timestamp}\x01{self.region_id}\x01{self.group}\x01{self.request_id}"
            f"\x01{self.msg_id}\x01{self.retry_times}\x01{self.keys or 'null'}\x02"
        )


@dataclass(slots=True, kw_only=True)
class SubAfterTrace:
    """How the listener's call ended for a message (``SubAfter``)."""

    request_id: str
    msg_id: str
    cost_ms: int
    success: bool
    keys: str
    context_code: ConsumeReturnType
    timestamp: int
    group: str

    def encode(self) -> str:
        """The record as Java's encoder writes it, separator included."""
        return (
            f"SubAfter\x01{self.request_id}\x01{self.msg_id}\x01{self.cost_ms}"
            f"\x01{'true' if self.success else 'false'}\x01{self.keys or 'null'}\x01{int(self.context_code)}"
            f"\x01{self.timestamp}\x01{self.group}\x02"
        )


@dataclass(slots=True, kw_only=True)
class EndTransactionTrace:
    """A transaction's end (``EndTransaction``); ``state`` is Java's name of the verdict."""

    timestamp: int
    region_id: str
    group: str
    topic: str
    msg_id: str
    tags: str
    keys: str
    store_host: str
    msg_type: TraceMessageType
    transaction_id: str
    state: str
    from_check: bool

    def encode(self) -> str:
        """The record as Java's encoder writes it, separator included."""
        return (
            f"EndTransaction\x01{self.timestamp}\x01{self.region_id}\x01{self.group}\x01{self.topic}"
            f"\x01{self.msg_id}\x01{self.tags or 'null'}\x01{self.keys or 'null'}\x01{self.store_host}"
            f"\x01{int(self.msg_type)}\x01{self.transaction_id or 'null'}\x01{self.state}"
            f"\x01{'true' if self.from_check else 'false'}\x02"
        )


TraceRecord = PubTrace | SubBeforeTrace | SubAfterTrace | EndTransactionTrace


def encode_trace_data(records: Iterable[TraceRecord]) -> str:
    """The body of a trace message holding ``records``, as Java's dispatcher joins them."""
    return "".join([r.encode() for r in records])


def trace_keys(record: TraceRecord) -> list[str]:
    """The keys a record adds to its trace message: the message id and the message's keys."""
    keys = [record.msg_id]
    if record.keys:
        keys.extend(k for k in record.keys.split(KEY_SEPARATOR) if k)
    return keys


def _str(value: str) -> str:
    return "" if value == "null" else value


def _bool(value: str) -> bool:
    return value.lower() == "true"


#: Fields a record of each kind has at least (older Java clients wrote fewer trailing ones).
_MIN_FIELDS: Final = {"Pub": 13, "SubBefore": 8, "SubAfter": 6, "EndTransaction": 13}


def decode_trace_data(data: str) -> list[TraceRecord]:
    """The records of a trace message's body (Java's or ours); unknown record kinds are skipped.

    Raises:
        ValueError: a known record with too few fields or a field that is not a number.
    """
    records: list[TraceRecord] = []
    for chunk in data.split(FIELD_SEPARATOR):
        f = chunk.split(CONTENT_SEPARATOR)
        kind = f[0]
        if len(f) < _MIN_FIELDS.get(kind, 0):
            raise ValueError(f"a {kind} trace record has {len(f)} fields: {chunk!r}")
        if kind == "Pub":
            with_offset_id = len(f) >= 14
            records.append(
                PubTrace(
                    timestamp=int(f[1]),
                    region_id=f[2],
                    group=f[3],
                    topic=f[4],
                    msg_id=f[5],
                    tags=_str(f[6]),
                    keys=_str(f[7]),
                    store_host=f[8],
                    body_length=int(f[9]),
                    cost_ms=int(f[10]),
                    msg_type=TraceMessageType(int(f[11])),
                    offset_msg_id=f[12] if with_offset_id else "",
                    success=_bool(f[13] if with_offset_id else f[12]),
                )
            )
        elif kind == "SubBefore":
            records.append(
                SubBeforeTrace(
                    timestamp=int(f[1]),
                    region_id=f[2],
                    group=f[3],
                    request_id=f[4],
                    msg_id=f[5],
                    retry_times=int(f[6]),
                    keys=_str(f[7]),
                )
            )
        elif kind == "SubAfter":
            records.append(
                SubAfterTrace(
                    request_id=f[1],
                    msg_id=f[2],
                    cost_ms=int(f[3]),
                    success=_bool(f[4]),
                    keys=_str(f[5]),
                    context_code=ConsumeReturnType(int(f[6]))
                    if len(f) > 6 and f[6]
                    else ConsumeReturnType.SUCCESS,
                    timestamp=int(f[7]) if len(f) > 8 else 0,
                    group=f[8] if len(f) > 8 else "",
                )
            )
        elif kind == "EndTransaction":
            records.append(
                EndTransactionTrace(
                    timestamp=int(f[1]),
                    region_id=f[2],
                    group=f[3],
                    topic=f[4],
                    msg_id=f[5],
                    tags=_str(f[6]),
                    keys=_str(f[7]),
                    store_host=f[8],
                    msg_type=TraceMessageType(int(f[9])),
                    transaction_id=_str(f[10]),
                    state=f[11],
                    from_check=_bool(f[12]),
                )
            )
    return records
