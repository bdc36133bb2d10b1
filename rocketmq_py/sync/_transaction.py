"""The blocking :class:`TransactionProducer`: :class:`rocketmq_py.TransactionProducer` in a trio thread."""

from __future__ import annotations

from typing import Any

from rocketmq_py.producer._transaction import (
    CheckTransaction,
    ExecuteLocalTransaction,
    TransactionSendResult,
)
from rocketmq_py.producer._transaction import TransactionProducer as AsyncTransactionProducer
from rocketmq_py.protocol import Message
from rocketmq_py.sync._facade import SyncClient
from rocketmq_py.sync._producer import Producer

__all__ = ["TransactionProducer"]


class TransactionProducer(Producer):
    """Transactional messages, blocking (Java ``TransactionMQProducer``).

    Callbacks may be plain functions (run in a worker thread of the client's loop) or async
    functions. They must not call this producer's blocking methods.

    Args: as :class:`rocketmq_py.TransactionProducer`.
    """

    _client: AsyncTransactionProducer

    def __init__(
        self,
        group: str,
        *,
        check_local_transaction: CheckTransaction,
        execute_local_transaction: ExecuteLocalTransaction | None = None,
        **kwargs: Any,
    ) -> None:
        SyncClient.__init__(
            self,
            AsyncTransactionProducer(
                group,
                check_local_transaction=check_local_transaction,
                execute_local_transaction=execute_local_transaction,
                **kwargs,
            ),
        )

    def send_message_in_transaction(
        self,
        message: Message,
        arg: Any = None,
        *,
        execute_local_transaction: ExecuteLocalTransaction | None = None,
    ) -> TransactionSendResult:
        """Send a half message, run the local transaction, commit or roll back (blocking)."""
        return self._call(
            self._client.send_message_in_transaction,
            message,
            arg,
            execute_local_transaction=execute_local_transaction,
        )
