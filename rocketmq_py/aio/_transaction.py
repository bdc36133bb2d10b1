"""The asyncio :class:`TransactionProducer`: :class:`rocketmq_py.TransactionProducer` on the asyncio loop."""

from __future__ import annotations

from typing import Any

from rocketmq_py.aio._client import AioClient
from rocketmq_py.aio._producer import Producer
from rocketmq_py.producer._transaction import (
    CheckTransaction,
    ExecuteLocalTransaction,
    TransactionSendResult,
)
from rocketmq_py.producer._transaction import TransactionProducer as AsyncTransactionProducer
from rocketmq_py.protocol import Message

__all__ = ["TransactionProducer"]


class TransactionProducer(Producer):
    """Transactional messages from asyncio code (Java ``TransactionMQProducer``).

    Callbacks may be ``async def`` (asyncio coroutines run on the producer's loop) or plain
    functions (run in a worker thread).

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
        AioClient.__init__(
            self,
            AsyncTransactionProducer(
                group,
                check_local_transaction=self._on_loop(check_local_transaction),
                execute_local_transaction=(
                    None if execute_local_transaction is None else self._on_loop(execute_local_transaction)
                ),
                **kwargs,
            ),
        )

    async def send_message_in_transaction(
        self,
        message: Message,
        arg: Any = None,
        *,
        execute_local_transaction: ExecuteLocalTransaction | None = None,
    ) -> TransactionSendResult:
        """Send a half message, run the local transaction, commit or roll back."""
        return await self._call(
            self._client.send_message_in_transaction,
            message,
            arg,
            execute_local_transaction=(
                None if execute_local_transaction is None else self._on_loop(execute_local_transaction)
            ),
        )
