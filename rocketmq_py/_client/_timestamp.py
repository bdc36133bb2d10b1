"""Positioning by time: the offset of the first message stored at or after a timestamp, on any broker.

SEARCH_OFFSET_BY_TIMESTAMP does not answer the same question on every release
(:mod:`rocketmq_py.protocol._versions`):

* 5.1.1 and later (``BoundaryType.LOWER``, the default) answer exactly that: the first message whose
  store timestamp is at or after the time, or the queue's max offset when every message is older.
* Older brokers (4.x, 5.0.x) binary-search the consume queue and answer the message *nearest* to the
  time: the one before it when that is closer, the last message (not the max offset) when every
  message is older, and any one of several messages that share the timestamp.

:func:`offset_for_timestamp` asks the broker, reads the ``version`` of its reply, and when the
broker is older than 5.1.1 corrects the answer by the stored timestamps: it pulls a few messages
around the broker's answer (a window starting one before it) and moves to the first message at or
after the time. Usually that is one pull; a wrong guess costs a bisection over the queue with
windowed pulls. The decision is :class:`TimestampSearch`, pure (offsets in, offsets out); the
pulls are here too, through :class:`RemotingApi`, under the caller's consumer group (the broker
needs one to serve a pull; nothing is committed for it).

Store timestamps are assumed not to decrease along a queue (the broker stamps messages under its
commit-log lock); if a clock step makes them do so, the answer is still an offset of the queue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from rocketmq_py._client._api import RemotingApi
from rocketmq_py.protocol import (
    MessageQueue,
    PullMessageResponseHeader,
    RequestCode,
    ResponseCode,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    decode_messages,
    from_ext_fields,
    pull_request_header,
)
from rocketmq_py.protocol._versions import supports_boundary_search

__all__ = [
    "MAX_READS",
    "READ_BATCH",
    "TimestampSearch",
    "Window",
    "offset_for_timestamp",
    "read_stamps",
    "search_offset",
]

#: Messages read by one correcting pull (Java's ``pullBatchSize`` default, 32).
READ_BATCH: Final = 32
#: Pulls after which a correction stops and answers the best offset it knows (a bisection over
#: 2**64 offsets with 32-message windows needs fewer).
MAX_READS: Final = 64
#: ``boundaryType`` we ask for: the first message at or after the time (Java ``BoundaryType.LOWER``;
#: brokers before 5.1.4 ignore the field).
_LOWER: Final = "lower"
#: Seconds a correcting pull may take (the broker does not hold it: no suspend flag).
_READ_TIMEOUT: Final = 10.0


@dataclass(frozen=True, slots=True)
class Window:
    """One read of a queue: ``(queue offset, store timestamp)`` of consecutive messages, and its bounds.

    ``stamps`` may be empty (the read was outside ``[min_offset, max_offset)``).
    """

    stamps: Sequence[tuple[int, int]]
    min_offset: int
    max_offset: int


class TimestampSearch:
    """The first offset whose store timestamp is at or after ``target``, from a hint and reads (pure).

    ``search.next_read()`` names the offset to read (``READ_BATCH`` messages from there), or ``None``
    when :attr:`result` is known; ``search.feed(window)`` takes what was read. It keeps
    ``lo`` (the highest offset known older than the target, or ``min - 1``) and ``hi`` (the lowest
    known at or after it, or the max offset); the answer is ``hi`` once ``hi == lo + 1``.

    Args:
        target: epoch ms.
        hint: the broker's answer; the first read starts one message before it.
    """

    def __init__(self, target: int, hint: int) -> None:
        self.target = target
        self.hint = hint
        self.reads = 0
        self._lo: int | None = None
        self._hi: int | None = None

    def next_read(self) -> int | None:
        """The offset to read next, or ``None`` when the search is over."""
        if self._lo is None or self._hi is None:
            return max(self.hint - 1, 0)
        if self._hi - self._lo <= 1 or self.reads >= MAX_READS:
            return None
        if self._hi - self._lo - 1 <= READ_BATCH:
            return self._lo + 1
        return (self._lo + self._hi) // 2

    def feed(self, window: Window) -> None:
        """Narrow the search with one read."""
        self.reads += 1
        lo = window.min_offset - 1 if self._lo is None else max(self._lo, window.min_offset - 1)
        hi = window.max_offset if self._hi is None else min(self._hi, window.max_offset)
        for offset, stored_at in window.stamps:
            if stored_at < self.target:
                lo = max(lo, offset)
            else:
                hi = min(hi, offset)
        if lo >= hi:  # timestamps not in order, or the queue's bounds moved between reads
            lo = hi - 1
        self._lo, self._hi = lo, hi

    @property
    def result(self) -> int:
        """The offset found (``hint`` before any read)."""
        return self.hint if self._hi is None else self._hi


async def search_offset(
    api: RemotingApi, address: str, mq: MessageQueue, timestamp_ms: int
) -> tuple[int, int]:
    """SEARCH_OFFSET_BY_TIMESTAMP (boundary LOWER) as the broker answers it: ``(offset, broker version)``."""
    header = SearchOffsetRequestHeader(
        topic=mq.topic,
        queue_id=mq.queue_id,
        timestamp=timestamp_ms,
        boundary_type=_LOWER,
        broker_name=mq.broker_name,
    )
    reply = await api.call(address, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header)
    return from_ext_fields(SearchOffsetResponseHeader, reply.ext_fields).offset, reply.version


async def offset_for_timestamp(
    api: RemotingApi, address: str, mq: MessageQueue, timestamp_ms: int, *, group: str
) -> int:
    """The offset of the first message of ``mq`` stored at or after ``timestamp_ms``; the max offset if none.

    The same answer from every broker release (see the module docstring): a broker older than 5.1.1
    has its answer corrected with pulls under ``group``.

    Raises:
        RocketMQError: the broker could not be asked, or a correcting pull failed.
    """
    hint, version = await search_offset(api, address, mq, timestamp_ms)
    if supports_boundary_search(version):
        return hint
    search = TimestampSearch(timestamp_ms, hint)
    while (offset := search.next_read()) is not None:
        search.feed(await read_stamps(api, address, mq, offset, group))
    return search.result


async def read_stamps(
    api: RemotingApi, address: str, mq: MessageQueue, offset: int, group: str, *, count: int = READ_BATCH
) -> Window:
    """The store timestamps of up to ``count`` messages of ``mq`` from ``offset``, read by a pull
    under ``group`` (every message, the expression in the request; no commit, no long polling).

    Raises:
        RocketMQError: the broker could not be asked.
    """
    header = pull_request_header(
        group, mq, offset=offset, max_msgs=count, expression_type="TAG", subscription="*"
    )
    reply = await api.pull_message(address, header, timeout=_READ_TIMEOUT)
    head = from_ext_fields(PullMessageResponseHeader, reply.ext_fields)
    stamps: list[tuple[int, int]] = []
    if reply.code == ResponseCode.SUCCESS:
        stamps = [(m.queue_offset, m.store_timestamp) for m in decode_messages(reply.body)]
    return Window(stamps, head.min_offset, head.max_offset)
