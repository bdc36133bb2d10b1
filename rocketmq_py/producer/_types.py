"""Producer value types: a send's status and result, and a local transaction's verdict.

:class:`SendStatus` is decided by the SEND_MESSAGE response code: 0 (stored), or one of the three
codes with which a broker reports that it stored the message but could not meet its durability
promise (10 flush-disk timeout, 12 flush-slave timeout, 11 slave not available). Every other code
is an error (:func:`rocketmq_py.errors.broker_error_for`).

:class:`LocalTransactionState` values are the ``commitOrRollback`` ints of the
END_TRANSACTION header (Java ``MessageSysFlag`` transaction types).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from rocketmq_py.protocol._bodies import MessageQueue

__all__ = ["LocalTransactionState", "SendResult", "SendStatus"]


class SendStatus(enum.Enum):
    """How a successful send was stored; the value is the response code (Java ``SendStatus``)."""

    SEND_OK = 0
    FLUSH_DISK_TIMEOUT = 10
    FLUSH_SLAVE_TIMEOUT = 12
    SLAVE_NOT_AVAILABLE = 11

    @classmethod
    def from_response_code(cls, code: int) -> SendStatus | None:
        """The status a SEND_MESSAGE response code stands for.

        Args:
            code: the response code.

        Returns:
            The status, or ``None`` if ``code`` is an error (build it with
            :func:`rocketmq_py.errors.broker_error_for`).
        """
        try:
            return cls(code)
        except ValueError:
            return None


@dataclass(frozen=True, slots=True, kw_only=True)
class SendResult:
    """The outcome of a successful send (Java ``SendResult``).

    Attributes:
        status: how the broker stored the message.
        msg_id: the client-side id (property ``UNIQ_KEY``); for a batch, the inner messages'
            ids joined by commas.
        offset_msg_id: the broker's id (store address + commit-log offset), comma-joined for a
            batch, as the broker returned it.
        queue: the queue the message went to.
        queue_offset: its offset in that queue (the first message's, for a batch).
        transaction_id: the transaction id of a half message, else ``None``.
        region_id: the broker's region (``MSG_REGION``), if it reported one.
        recall_handle: for a message with a delivery time stored by a 5.3.2+ broker, the handle
            :meth:`rocketmq_py.Producer.recall` takes to cancel it before that time; else ``None``.
        trace_on: whether the broker wants message traces of its sends (its ``traceOn``, reply
            field ``TRACE_ON``): a traced producer writes no ``Pub`` record when it does not.
    """

    status: SendStatus
    msg_id: str
    offset_msg_id: str
    queue: MessageQueue
    queue_offset: int
    transaction_id: str | None = None
    region_id: str | None = None
    recall_handle: str | None = None
    trace_on: bool = True


class LocalTransactionState(enum.IntEnum):
    """A local transaction's verdict; the value is END_TRANSACTION's ``commitOrRollback``.

    ``UNKNOWN`` is Java's ``UNKNOW``: the broker will ask again later (CHECK_TRANSACTION_STATE).
    """

    UNKNOWN = 0  # MessageSysFlag.TRANSACTION_NOT_TYPE
    COMMIT_MESSAGE = 8  # MessageSysFlag.TRANSACTION_COMMIT_TYPE
    ROLLBACK_MESSAGE = 12  # MessageSysFlag.TRANSACTION_ROLLBACK_TYPE
