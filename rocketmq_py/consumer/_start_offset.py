"""Where a newly assigned queue starts: the push consumer's ``computePullFromWhere``, with no I/O.

Mirrors the Java client's ``RebalancePushImpl.computePullFromWhereWithException``
(protocol.md §8.5). The group's stored offset for the queue is read first (from the broker in
clustering mode): an offset >= 0, -1 when there is none (QUERY_NOT_FOUND), -2 when the read failed.
Then:

==========================  ===========  =================================================
consumeFromWhere            stored >= 0  stored = -1
==========================  ===========  =================================================
LAST (+ the 3 deprecated)   stored       ``%RETRY%`` topic: 0; else ask GET_MAX_OFFSET
FIRST                       stored       0
TIMESTAMP                   stored       ``%RETRY%`` topic: ask GET_MAX_OFFSET; else ask
                                         SEARCH_OFFSET_BY_TIMESTAMP(consumeTimestamp)
==========================  ===========  =================================================

Any other stored value is an error (Java throws, and the rebalance retries the queue next time).
The broker answers are used as returned. Since the broker calls are I/O,
:func:`compute_pull_from_where` returns a :class:`StartOffsetDecision` naming the call to make.

``consumeTimestamp`` is Java's ``yyyyMMddHHmmss`` text in the consumer's local time zone; the
default is the time the consumer was created minus 30 minutes (:func:`default_consume_timestamp`).
"""

from __future__ import annotations

import enum
import re
import time
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Final

from rocketmq_py._deprecation import warn_deprecated
from rocketmq_py.errors import InvalidOption
from rocketmq_py.protocol._bodies import ConsumeFromWhere
from rocketmq_py.protocol._names import is_retry_topic

__all__ = [
    "CONSUME_TIMESTAMP_FORMAT",
    "DEFAULT_CONSUME_TIMESTAMP_AGO_MS",
    "OFFSET_NOT_FOUND",
    "OFFSET_READ_FAILED",
    "StartFrom",
    "StartOffsetDecision",
    "compute_pull_from_where",
    "consume_timestamp_epoch_ms",
    "default_consume_timestamp",
    "format_consume_timestamp",
    "parse_consume_timestamp",
]

#: ``strftime`` form of Java's ``UtilAll.YYYYMMDDHHMMSS`` (``yyyyMMddHHmmss``).
CONSUME_TIMESTAMP_FORMAT: Final = "%Y%m%d%H%M%S"
#: The default consumeTimestamp lies this far before the consumer's creation (Java: 30 minutes).
DEFAULT_CONSUME_TIMESTAMP_AGO_MS: Final = 30 * 60 * 1000
#: Stored offset meaning "the group has no offset for this queue" (Java readOffset -1).
OFFSET_NOT_FOUND: Final = -1
#: Stored offset meaning "reading the offset failed" (Java readOffset -2).
OFFSET_READ_FAILED: Final = -2

_TIMESTAMP = re.compile(r"[0-9]{14}")


def format_consume_timestamp(epoch_ms: int, tz: tzinfo | None = None) -> str:
    """``epoch_ms`` as ``yyyyMMddHHmmss`` in ``tz`` (default: local time), seconds truncated."""
    return datetime.fromtimestamp(epoch_ms // 1000, tz).strftime(CONSUME_TIMESTAMP_FORMAT)


def parse_consume_timestamp(text: str, tz: tzinfo | None = None) -> int:
    """Epoch ms of a ``yyyyMMddHHmmss`` consumeTimestamp read in ``tz`` (default: local time).

    Stricter than Java's lenient ``SimpleDateFormat``, which rolls month 13 into the next year:
    exactly 14 digits naming a real date and time are required. A local time that a DST change
    skips or repeats resolves as Python's ``datetime.timestamp`` does (``fold=0``).

    Raises:
        ClientError: ``text`` is not a valid ``yyyyMMddHHmmss`` timestamp.
    """
    if not _TIMESTAMP.fullmatch(text):
        raise InvalidOption(f"consume timestamp {text!r} is not in the format yyyyMMddHHmmss")
    try:
        when = datetime.strptime(text, CONSUME_TIMESTAMP_FORMAT)
    except ValueError:
        raise InvalidOption(f"consume timestamp {text!r} is not a valid date and time") from None
    if tz is not None:
        when = when.replace(tzinfo=tz)
    return int(when.timestamp()) * 1000


def consume_timestamp_epoch_ms(text: str | None, epoch_ms: int | None) -> int | None:
    """A consumer's CONSUME_FROM_TIMESTAMP start as epoch ms, from ``consume_timestamp_ms`` or the
    deprecated ``yyyyMMddHHmmss`` ``consume_timestamp`` (local time, as Java reads it).

    Raises:
        InvalidOption: both were given, ``text`` is malformed, or ``epoch_ms`` is negative.
    """
    if text is None:
        if epoch_ms is not None and epoch_ms < 0:
            raise InvalidOption(f"consume_timestamp_ms must be epoch milliseconds >= 0, not {epoch_ms}")
        return epoch_ms
    if epoch_ms is not None:
        raise InvalidOption("give consume_timestamp_ms, not also the deprecated consume_timestamp")
    warn_deprecated(
        "consume_timestamp='yyyyMMddHHmmss' is deprecated; use consume_timestamp_ms (epoch ms, as "
        "seek_to_timestamp and offset_for_timestamp take)"
    )
    return parse_consume_timestamp(text)


def default_consume_timestamp(now_ms: int | None = None, tz: tzinfo | None = None) -> str:
    """Java's default consumeTimestamp: ``now_ms`` (default: the wall clock) minus 30 minutes."""
    if now_ms is None:
        now_ms = time.time_ns() // 1_000_000
    return format_consume_timestamp(now_ms - DEFAULT_CONSUME_TIMESTAMP_AGO_MS, tz)


class StartFrom(enum.Enum):
    """What :func:`compute_pull_from_where` decided."""

    STORED = "stored"  # start at the group's stored offset (``offset``)
    ZERO = "zero"  # start at offset 0 (``offset`` = 0)
    MAX_OFFSET = "max_offset"  # ask the broker GET_MAX_OFFSET and start there
    TIMESTAMP = "timestamp"  # ask SEARCH_OFFSET_BY_TIMESTAMP(``timestamp_ms``) and start there
    ERROR = "error"  # the stored offset could not be read: skip the queue, retry next rebalance


@dataclass(frozen=True, slots=True)
class StartOffsetDecision:
    """The start of a newly assigned queue, or the broker call that finds it.

    Attributes:
        start_from: the kind of decision.
        offset: the start offset for STORED and ZERO, else -1.
        timestamp_ms: for TIMESTAMP, the epoch ms to search, else -1.
        reason: for ERROR, why.
    """

    start_from: StartFrom
    offset: int = -1
    timestamp_ms: int = -1
    reason: str = ""

    @property
    def needs_broker(self) -> bool:
        """Whether the start offset still has to be asked from the broker."""
        return self.start_from in (StartFrom.MAX_OFFSET, StartFrom.TIMESTAMP)


_STORED_ERROR = "failed to query the consume offset from the offset store"


def compute_pull_from_where(
    consume_from_where: ConsumeFromWhere,
    topic: str,
    stored_offset: int,
    *,
    consume_timestamp: str | None = None,
    consume_timestamp_ms: int | None = None,
    now_ms: int | None = None,
    tz: tzinfo | None = None,
) -> StartOffsetDecision:
    """Decide where a push consumer starts pulling a newly assigned queue (the table above).

    Args:
        consume_from_where: the consumer's setting.
        topic: the queue's topic (``%RETRY%<group>`` topics have their own rules).
        stored_offset: the group's stored offset: >= 0, :data:`OFFSET_NOT_FOUND` (-1) or
            :data:`OFFSET_READ_FAILED` (-2, or any other negative value).
        consume_timestamp: the consumer's ``yyyyMMddHHmmss`` consumeTimestamp; ``None`` means
            :func:`default_consume_timestamp` of ``now_ms`` (Java fixes the default when the
            consumer is created: pass it from the consumer's settings to do the same).
        consume_timestamp_ms: the start as epoch ms; when given, ``consume_timestamp`` is not read.
        now_ms: wall-clock epoch ms for that default (default: the wall clock).
        tz: the time zone of ``consume_timestamp`` (default: local time, as Java).

    Returns:
        The decision; only TIMESTAMP reads ``consume_timestamp``.

    Raises:
        ClientError: TIMESTAMP mode needs ``consume_timestamp`` and it is malformed.
    """
    if stored_offset >= 0:
        return StartOffsetDecision(StartFrom.STORED, offset=stored_offset)
    if stored_offset != OFFSET_NOT_FOUND:
        return StartOffsetDecision(StartFrom.ERROR, reason=f"{_STORED_ERROR} (got {stored_offset})")
    is_retry = is_retry_topic(topic)
    if consume_from_where == ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
        return StartOffsetDecision(StartFrom.ZERO, offset=0)
    if consume_from_where == ConsumeFromWhere.CONSUME_FROM_TIMESTAMP:
        if is_retry:
            return StartOffsetDecision(StartFrom.MAX_OFFSET)
        if consume_timestamp_ms is not None:
            return StartOffsetDecision(StartFrom.TIMESTAMP, timestamp_ms=consume_timestamp_ms)
        text = consume_timestamp if consume_timestamp is not None else default_consume_timestamp(now_ms, tz)
        return StartOffsetDecision(StartFrom.TIMESTAMP, timestamp_ms=parse_consume_timestamp(text, tz))
    # CONSUME_FROM_LAST_OFFSET and the deprecated MIN_OFFSET, MAX_OFFSET and
    # LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST, which Java 5.x treats alike.
    if is_retry:
        return StartOffsetDecision(StartFrom.ZERO, offset=0)
    return StartOffsetDecision(StartFrom.MAX_OFFSET)
