"""What a pull answer means and what the pull loop does next, with no I/O.

Mirrors three pieces of the Java client (protocol.md §3.3, §3.4, §8.2, §8.4):

* ``PullSysFlag``: the ``sysFlag`` bits of a PULL_MESSAGE request (:func:`pull_sys_flag`);
  pulls from a slave clear the commit bit (:func:`clear_commit_offset_flag`).
* ``MQClientAPIImpl.processPullResponse``: response code → :class:`PullStatus`::

      0  SUCCESS                 FOUND           body = stored messages
      19 PULL_NOT_FOUND          NO_NEW_MSG      (also the end of a long poll)
      20 PULL_RETRY_IMMEDIATELY  NO_MATCHED_MSG  everything in range was filtered out
      21 PULL_OFFSET_MOVED       OFFSET_ILLEGAL  the requested offset is outside the queue
      anything else              error (a BrokerError from the registry)

* the push consumer's ``PullCallback`` (:func:`next_pull_action`): every status continues from
  the header's ``nextBeginOffset``. FOUND caches and dispatches the messages left after the tag
  re-check and pulls again (after ``pullInterval``; at once if none was left). NO_NEW_MSG and
  NO_MATCHED_MSG pull again at once, and if nothing is cached they store ``nextBeginOffset`` as
  the consumed offset (``correctTagsOffset``: nothing was skipped, so progress through filtered
  ranges is not lost). OFFSET_ILLEGAL drops the queue at once and 10 s later fixes the stored
  offset to ``nextBeginOffset``, persists it and forgets the queue, so the next rebalance
  starts it afresh. A failed pull is retried after 20 ms for FLOW_CONTROL, else after
  :data:`~rocketmq_py.consumer._flow.PULL_TIME_DELAY_WHEN_EXCEPTION_MS`.

and the per-message steps of ``PullAPIWrapper.processPullResult`` and of the consume services:
after decoding, FOUND messages are re-checked against the tags, then get properties MIN_OFFSET /
MAX_OFFSET from the header, the requested queue id, and ``offsetDelta`` added to their offset
(static topics) (:func:`process_found_messages`). Java sets ``brokerName`` to the pulled queue's
broker there too; here the decoder does it (``decode_messages(..., broker_name=...)``, one slot
per message rather than a second pass). Java also copies UNIQ_KEY to ``transactionId``
when TRAN_MSG is true; :attr:`MessageExt.transaction_id` already derives exactly that. Before a
listener sees them, messages of ``%RETRY%<group>`` get their original topic back from the
RETRY_TOPIC property (:func:`restore_retry_topic`) and a CONSUME_START_TIME
(:func:`set_consume_start_time`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from rocketmq_py.consumer._filter import MessageFilter
from rocketmq_py.consumer._flow import (
    OFFSET_ILLEGAL_FIX_DELAY_MS,
    PULL_INTERVAL_MS,
    PULL_TIME_DELAY_WHEN_BROKER_FLOW_CONTROL_MS,
    PULL_TIME_DELAY_WHEN_EXCEPTION_MS,
)
from rocketmq_py.errors import BrokerError, broker_error_for
from rocketmq_py.protocol._codes import ResponseCode
from rocketmq_py.protocol._message import MessageExt
from rocketmq_py.protocol._names import retry_topic
from rocketmq_py.protocol._namespace import unwrap_name
from rocketmq_py.protocol._properties import PropertyKey
from rocketmq_py.protocol._pull_request import PullSysFlag

__all__ = [
    "PullAction",
    "PullResult",
    "PullStatus",
    "clear_commit_offset_flag",
    "interpret_pull_response",
    "next_pull_action",
    "process_found_messages",
    "pull_error_delay_ms",
    "pull_status",
    "pull_status_for",
    "restore_retry_topic",
    "set_consume_start_time",
]


def clear_commit_offset_flag(sys_flag: int) -> int:
    """``sys_flag`` without COMMIT_OFFSET: a slave must not store the group's progress."""
    return sys_flag & ~PullSysFlag.COMMIT_OFFSET


# --- status --------------------------------------------------------------------------------------


class PullStatus(enum.Enum):
    """How a pull went (Java ``PullStatus``)."""

    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_STATUS_BY_CODE: Final[dict[int, PullStatus]] = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


def pull_status_for(code: int) -> PullStatus | None:
    """The status a pull response code stands for, or ``None`` when the code is an error."""
    return _STATUS_BY_CODE.get(code)


def pull_status(code: int, remark: str | None = None) -> PullStatus:
    """The status a pull response code stands for.

    Raises:
        BrokerError: (the registered subclass) for any code but 0, 19, 20 and 21.
    """
    status = _STATUS_BY_CODE.get(code)
    if status is None:
        raise broker_error_for(code, remark)
    return status


@dataclass(frozen=True, slots=True, kw_only=True)
class PullResult:
    """A pull answer's status and header (Java ``PullResultExt`` without the messages).

    Attributes:
        status: from the response code.
        next_begin_offset: where the next pull of the queue starts.
        min_offset, max_offset: the queue's bounds (``max_offset`` is the next write offset).
        suggest_which_broker_id: broker id (0 = master) to pull this queue from next time.
        offset_delta: static topics: add to every message's queue offset.
    """

    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    suggest_which_broker_id: int = 0
    offset_delta: int | None = None


def interpret_pull_response(
    code: int,
    *,
    remark: str | None = None,
    next_begin_offset: int,
    min_offset: int,
    max_offset: int,
    suggest_which_broker_id: int = 0,
    offset_delta: int | None = None,
) -> PullResult:
    """A :class:`PullResult` from a response code and the PullMessageResponseHeader fields.

    Raises:
        BrokerError: as :func:`pull_status`.
    """
    return PullResult(
        status=pull_status(code, remark),
        next_begin_offset=next_begin_offset,
        min_offset=min_offset,
        max_offset=max_offset,
        suggest_which_broker_id=suggest_which_broker_id,
        offset_delta=offset_delta,
    )


# --- the pull loop's next step -------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class PullAction:
    """What the pull loop of one queue does after an answer.

    Attributes:
        next_offset: the offset of the next pull (the header's ``nextBeginOffset``).
        delay_ms: wait before the next pull; with :attr:`drop_queue`, wait before fixing the
            offset.
        dispatch: cache the (filtered) messages and hand them to the consume service.
        correct_offset: nothing is cached, so store :attr:`next_offset` as the consumed offset
            (increase only).
        drop_queue: mark the process queue dropped and stop pulling; after :attr:`delay_ms`
            store :attr:`next_offset` (and freeze it), persist it and forget the queue.
        offset_went_back: the answer went behind the requested offset (Java logs this as a
            probable bug; the loop carries on).
    """

    next_offset: int
    delay_ms: int = 0
    dispatch: bool = False
    correct_offset: bool = False
    drop_queue: bool = False
    offset_went_back: bool = False

    @property
    def pull_again(self) -> bool:
        """Whether the loop pulls this queue again."""
        return not self.drop_queue


def next_pull_action(
    result: PullResult,
    *,
    request_offset: int,
    found_count: int = 0,
    first_message_offset: int | None = None,
    process_queue_empty: bool,
    pull_interval_ms: int = PULL_INTERVAL_MS,
) -> PullAction:
    """Decide the pull loop's next step (Java push ``PullCallback.onSuccess``).

    Args:
        result: the interpreted answer.
        request_offset: the offset the pull asked for.
        found_count: FOUND: messages left after :func:`process_found_messages`.
        first_message_offset: FOUND: the first such message's queue offset, if any.
        process_queue_empty: the queue's cache holds no message (``msg_count == 0``), read
            before the found messages are added.
        pull_interval_ms: the consumer's ``pullInterval``, applied after non-empty FOUND.
    """
    next_offset = result.next_begin_offset
    status = result.status
    if status is PullStatus.FOUND:
        went_back = next_offset < request_offset or (
            first_message_offset is not None and first_message_offset < request_offset
        )
        if found_count <= 0:
            return PullAction(next_offset=next_offset, offset_went_back=went_back)
        return PullAction(
            next_offset=next_offset,
            delay_ms=max(0, pull_interval_ms),
            dispatch=True,
            offset_went_back=went_back,
        )
    if status is PullStatus.OFFSET_ILLEGAL:
        return PullAction(next_offset=next_offset, delay_ms=OFFSET_ILLEGAL_FIX_DELAY_MS, drop_queue=True)
    # NO_NEW_MSG, NO_MATCHED_MSG
    return PullAction(next_offset=next_offset, correct_offset=process_queue_empty)


def pull_error_delay_ms(error: BaseException) -> int:
    """Wait before retrying a pull that failed with ``error`` (Java ``PullCallback.onException``).

    Returns:
        20 ms after a broker FLOW_CONTROL answer, else
        :data:`~rocketmq_py.consumer._flow.PULL_TIME_DELAY_WHEN_EXCEPTION_MS`.
    """
    if isinstance(error, BrokerError) and error.code == ResponseCode.FLOW_CONTROL:
        return PULL_TIME_DELAY_WHEN_BROKER_FLOW_CONTROL_MS
    return PULL_TIME_DELAY_WHEN_EXCEPTION_MS


# --- messages ------------------------------------------------------------------------------------


def process_found_messages(
    msgs: Iterable[MessageExt],
    result: PullResult,
    *,
    msg_filter: MessageFilter | None = None,
    queue_id: int | None = None,
) -> list[MessageExt]:
    """Re-check and annotate decoded FOUND messages, in place; return those kept.

    Steps, in Java's order: keep the messages ``msg_filter`` accepts (all when ``None``); set
    properties MIN_OFFSET and MAX_OFFSET to the header's bounds; set ``queue_id`` (the queue
    pulled, which differs from the stored one on static topics) when given; add
    ``result.offset_delta`` to each queue offset when present.

    Args:
        msgs: the decoded (decompressed, unwrapped) messages of the answer.
        result: the answer's header.
        msg_filter: the subscription's client-side tag check.
        queue_id: the id of the queue that was pulled.
    """
    kept = msg_filter.filter_messages(msgs) if msg_filter is not None else list(msgs)
    min_text = str(result.min_offset)
    max_text = str(result.max_offset)
    delta = result.offset_delta
    for msg in kept:
        properties = msg.properties
        properties[PropertyKey.MIN_OFFSET] = min_text
        properties[PropertyKey.MAX_OFFSET] = max_text
        if queue_id is not None:
            msg.queue_id = queue_id
        if delta:
            msg.queue_offset += delta
    return kept


def restore_retry_topic(
    msgs: Iterable[MessageExt], consumer_group: str, namespace: str | None = None
) -> None:
    """Give messages pulled from ``%RETRY%<group>`` their original topic back, in place.

    A message is changed only if its topic is this group's retry topic and it carries the
    RETRY_TOPIC property (Java ``resetRetryAndNamespace``, run before each listener call). In a
    ``namespace`` (``consumer_group`` is then the wrapped group), every topic also loses it.
    """
    group_topic = retry_topic(consumer_group)
    for msg in msgs:
        if msg.topic == group_topic:
            original = msg.properties.get(PropertyKey.RETRY_TOPIC)
            if original:
                msg.topic = original
        if namespace is not None:
            msg.topic = unwrap_name(namespace, msg.topic)


def set_consume_start_time(msgs: Iterable[MessageExt], now_ms: int) -> None:
    """Stamp CONSUME_START_TIME (wall-clock epoch ms) on messages about to be consumed, in place.

    The consume-timeout cleaner (:meth:`ProcessQueue.expired_messages`) reads it back.
    """
    text = str(now_ms)
    for msg in msgs:
        msg.properties[PropertyKey.CONSUME_START_TIMESTAMP] = text
