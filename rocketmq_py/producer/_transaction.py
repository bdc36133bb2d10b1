"""Transactional messages: half message, local transaction, commit/rollback, and check-back.

``send_message_in_transaction`` (Java ``TransactionMQProducer.sendMessageInTransaction``):

1. send the message as a *half* message (property ``TRAN_MSG=true``, ``PGROUP``=group, sysFlag
   TRANSACTION_PREPARED): stored, but invisible to consumers;
2. run the local-transaction callback; its answer (or UNKNOWN when it raises) decides;
3. END_TRANSACTION (oneway) to the broker that stored it: COMMIT makes the message visible,
   ROLLBACK discards it, UNKNOWN leaves it to the broker's check-back.

Check-back: for a half message left unknown, the broker sends CHECK_TRANSACTION_STATE (oneway) on
the producer's connection with the stored message; the check callback answers and we send
END_TRANSACTION with ``fromTransactionCheck=true`` to the broker that stored it. The broker only
knows where to send checks once a heartbeat has registered the producer group.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import trio

from rocketmq_py._client._instance import ClientInstance
from rocketmq_py.errors import InvalidOption, RocketMQError
from rocketmq_py.producer._producer import Producer
from rocketmq_py.producer._types import LocalTransactionState, SendResult, SendStatus
from rocketmq_py.producer._validation import validate_message
from rocketmq_py.protocol import (
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
    Message,
    MessageExt,
    PropertyKey,
    RemotingCommand,
    RequestCode,
    decode_messages,
    decode_offset_msg_id,
    from_ext_fields,
    unwrap_name,
    wrap_name,
)

__all__ = ["CheckTransaction", "ExecuteLocalTransaction", "TransactionProducer", "TransactionSendResult"]

log = logging.getLogger("rocketmq_py.transaction")

#: ``execute(message, arg)``: run the local transaction; a plain function runs in a worker thread.
ExecuteLocalTransaction = Callable[[Message, Any], LocalTransactionState | Awaitable[LocalTransactionState]]
#: ``check(message)``: the state of the transaction of a half message the broker asks about.
CheckTransaction = Callable[[MessageExt], LocalTransactionState | Awaitable[LocalTransactionState]]


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionSendResult:
    """The half message's send result and what the local transaction decided."""

    send_result: SendResult
    local_transaction_state: LocalTransactionState

    @property
    def msg_id(self) -> str:
        """The half message's id (its ``UNIQ_KEY``), as in :attr:`SendResult.msg_id`."""
        return self.send_result.msg_id

    @property
    def transaction_id(self) -> str | None:
        """The transaction id the broker checks back with, as in :attr:`SendResult.transaction_id`."""
        return self.send_result.transaction_id


async def _call(fn: Callable[..., Any], *args: Any) -> LocalTransactionState:
    """Run a callback: awaited if it is a coroutine function, else in a worker thread."""
    if inspect.iscoroutinefunction(fn):
        result = await fn(*args)
    else:
        result = await trio.to_thread.run_sync(fn, *args)
        if inspect.isawaitable(result):
            result = await result
    if not isinstance(result, LocalTransactionState):
        raise TypeError(f"a transaction callback must return a LocalTransactionState, not {result!r}")
    return result


class TransactionProducer(Producer):
    """A producer of transactional messages (Java ``TransactionMQProducer``).

    Args:
        group: the producer group; the broker sends check-backs to any live member of it.
        execute_local_transaction: default local-transaction callback (may be given per call).
        check_local_transaction: answers the broker's check-back for half messages left UNKNOWN.
        **kwargs: as :class:`Producer`.
    """

    def __init__(
        self,
        group: str,
        *,
        check_local_transaction: CheckTransaction,
        execute_local_transaction: ExecuteLocalTransaction | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(group, **kwargs)
        self.check_local_transaction = check_local_transaction
        self.execute_local_transaction = execute_local_transaction
        self._reserved = self._reserved - {PropertyKey.TRANSACTION_PREPARED, PropertyKey.PRODUCER_GROUP}

    def _started(self, instance: ClientInstance) -> None:
        instance.register_handler(RequestCode.CHECK_TRANSACTION_STATE, self._on_check)

    async def send_message_in_transaction(
        self,
        message: Message,
        arg: Any = None,
        *,
        execute_local_transaction: ExecuteLocalTransaction | None = None,
    ) -> TransactionSendResult:
        """Send a half message, run the local transaction, and commit or roll back.

        Args:
            message: the message (no delay level: transactions ignore it, as in Java).
            arg: passed to the local-transaction callback.
            execute_local_transaction: overrides the producer's default callback.

        Returns:
            The half message's send result and the local transaction's decision.

        Raises:
            InvalidMessage: the message fails validation (nothing sent).
            InvalidOption: no local-transaction callback, here or given to the producer.
            BrokerError, TransportError, RequestTimeout: the half message could not be sent.
        """
        execute = execute_local_transaction or self.execute_local_transaction
        if execute is None:
            raise InvalidOption("send_message_in_transaction needs an execute_local_transaction callback")
        validate_message(message, self.max_message_size, reserved=self._reserved)
        message.delay_level = None
        message.properties[PropertyKey.TRANSACTION_PREPARED] = "true"
        message.properties[PropertyKey.PRODUCER_GROUP] = self.group
        result = await self.send(message)
        remark: str | None = None
        if result.status is SendStatus.SEND_OK:
            if result.transaction_id:
                message.properties[PropertyKey.TRANSACTION_ID] = result.transaction_id
            try:
                state = await _call(execute, message, arg)
            except Exception as exc:  # the local transaction failed: leave it to the check-back
                log.warning("local transaction of %s raised; state UNKNOWN: %r", result.msg_id, exc)
                state = LocalTransactionState.UNKNOWN
                remark = f"executeLocalTransactionBranch exception: {exc!r}"
        else:
            state = LocalTransactionState.ROLLBACK_MESSAGE
        await self._end(result, state, remark, message)
        return TransactionSendResult(send_result=result, local_transaction_state=state)

    async def _end(
        self,
        result: SendResult,
        state: LocalTransactionState,
        remark: str | None,
        message: Message | None = None,
    ) -> None:
        _, _, commit_log_offset = decode_offset_msg_id(result.offset_msg_id)
        address = self._client_instance.routes.master_address(result.queue.broker_name)
        if address is None:
            log.warning(
                "no master for %s: END_TRANSACTION of %s not sent", result.queue.broker_name, result.msg_id
            )
            return
        header = EndTransactionRequestHeader(
            producer_group=self.group,
            tran_state_table_offset=result.queue_offset,
            commit_log_offset=commit_log_offset,
            commit_or_rollback=int(state),
            msg_id=result.msg_id,
            topic=wrap_name(self.namespace, result.queue.topic),
            from_transaction_check=False,
            transaction_id=result.transaction_id,
            broker_name=result.queue.broker_name,
        )
        try:
            await self._client_instance.api.end_transaction(address, header, remark)
        except RocketMQError as exc:  # the broker will check back
            log.warning("END_TRANSACTION of %s to %s failed: %s", result.msg_id, address, exc)
        if self._trace is not None and message is not None:
            self._trace.end_transaction(
                group=self.group,
                message=message,
                msg_id=result.msg_id,
                broker_address=address,
                transaction_id=result.transaction_id,
                state=_java_state(state),
                from_check=False,
            )

    async def _on_check(self, request: RemotingCommand) -> RemotingCommand | None:
        """CHECK_TRANSACTION_STATE from a broker: ask the check callback, answer with END_TRANSACTION."""
        header = from_ext_fields(CheckTransactionStateRequestHeader, request.ext_fields)
        messages = decode_messages(request.body)
        if not messages:
            log.warning("CHECK_TRANSACTION_STATE without a message: %s", header)
            return None
        message = messages[0]
        wire_topic = message.topic
        # The callback sees the topic without the namespace (Java's checkTransactionState too).
        message.topic = unwrap_name(self.namespace, wire_topic)
        uniq = message.properties.get(PropertyKey.UNIQ_KEY) or header.msg_id or message.offset_msg_id
        transaction_id = header.transaction_id or message.properties.get(PropertyKey.TRANSACTION_ID) or uniq
        remark = None
        try:
            state = await _call(self.check_local_transaction, message)
        except Exception as exc:
            log.warning("transaction check of %s raised; answering UNKNOWN: %r", uniq, exc)
            state = LocalTransactionState.UNKNOWN
            remark = f"checkLocalTransactionState exception: {exc!r}"
        end = EndTransactionRequestHeader(
            producer_group=message.properties.get(PropertyKey.PRODUCER_GROUP, self.group),
            tran_state_table_offset=header.tran_state_table_offset,
            commit_log_offset=header.commit_log_offset,
            commit_or_rollback=int(state),
            msg_id=uniq,
            topic=header.topic or wire_topic,
            from_transaction_check=True,
            transaction_id=transaction_id,
            broker_name=header.broker_name,
        )
        # The broker that asked is the one that stored the message: its store address.
        address = message.store_host
        try:
            await self._client_instance.api.end_transaction(address, end, remark)
        except RocketMQError as exc:
            log.warning("END_TRANSACTION (check) of %s to %s failed: %s", uniq, address, exc)
        if self._trace is not None:
            self._trace.end_transaction(
                group=self.group,
                message=message,
                msg_id=uniq,
                broker_address=address,
                transaction_id=transaction_id,
                state=_java_state(state),
                from_check=True,
            )
        return None


def _java_state(state: LocalTransactionState) -> str:
    """Java's name of a verdict (``LocalTransactionState.UNKNOW``), as trace records carry it."""
    return "UNKNOW" if state is LocalTransactionState.UNKNOWN else state.name
