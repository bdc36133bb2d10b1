"""The Admin's requests about single messages: QUERY_MESSAGE by key or unique key, and
CONSUME_MESSAGE_DIRECTLY through the broker that stores a message, as ``mqadmin`` sends them."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rocketmq_py._client._route import master_addresses
from rocketmq_py._errors_broker import broker_error_for
from rocketmq_py.errors import ClientError, MalformedMessage
from rocketmq_py.protocol import (
    ConsumeMessageDirectlyResult,
    ConsumeMessageDirectlyResultRequestHeader,
    MessageExt,
    QueryMessageRequestHeader,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    decode_body,
    decode_messages,
    decode_offset_msg_id,
    to_ext_fields,
)

if TYPE_CHECKING:
    from rocketmq_py.admin._calls import AdminCalls as Calls

__all__ = ["consume_directly", "query", "store_address"]

#: The ext field that makes QUERY_MESSAGE look a unique key (UNIQ_KEY) up (Java ``MixAll.UNIQUE_MSG_QUERY_FLAG``).
_UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"
#: Request timeouts QUERY_MESSAGE and CONSUME_MESSAGE_DIRECTLY may take (a broker's index walk; a
#: member's listener call), as Java's admin waits.
_SLOW_CALL = 3


def store_address(msg_id: str) -> tuple[str, int]:
    """The broker address and commit log offset an offset message id names.

    Raises:
        ClientError: ``msg_id`` is not an offset message id.
    """
    try:
        host, port, offset = decode_offset_msg_id(msg_id)
    except (ValueError, MalformedMessage) as exc:
        raise ClientError(f"{msg_id!r} is not an offset message id: {exc}") from None
    if not 0 < port < 65536:
        # A producer's id (UNIQ_KEY) has as many hex digits: its process id and class loader hash
        # land where the port is.
        raise ClientError(
            f"{msg_id!r} is not an offset message id (it names port {port}); a producer's message "
            "id (SendResult.msg_id, a unique key) is looked up with message_by_unique_key(topic, key)"
        )
    return f"{host}:{port}", offset


async def query(
    calls: Calls,
    topic: str,
    key: str,
    max_messages: int,
    *,
    unique: bool = False,
    begin_ms: int = 0,
    end_ms: int | None = None,
) -> list[MessageExt]:
    """QUERY_MESSAGE for ``key`` (a unique key when ``unique``) on each master of ``topic``: what
    they found, unsorted."""
    header = QueryMessageRequestHeader(
        topic=topic,
        key=key,
        max_num=max_messages,
        begin_timestamp=begin_ms,
        end_timestamp=end_ms if end_ms is not None else int(time.time() * 1000) + 1000,
    )
    fields = to_ext_fields(header)
    if unique:
        fields[_UNIQUE_KEY_QUERY] = "true"
    api = calls.api
    found: list[MessageExt] = []
    for name, address in sorted(master_addresses(await calls.route(topic)).items()):
        # The unique-key flag is no header field: the command is built from the fields.
        command = RemotingCommand.request(
            RequestCode.QUERY_MESSAGE, fields, b"", serialize_type=api.serialize_type
        )
        reply = await api.pool.request(address, command, timeout=api.timeout * _SLOW_CALL)
        if reply.code == ResponseCode.QUERY_NOT_FOUND:
            continue
        if reply.code != ResponseCode.SUCCESS:
            raise broker_error_for(reply.code, reply.remark)
        found.extend(decode_messages(reply.body, broker_name=name))
    return found


async def consume_directly(
    calls: Calls, group: str, client_id: str, msg_id: str, topic: str | None
) -> ConsumeMessageDirectlyResult:
    """CONSUME_MESSAGE_DIRECTLY to the broker storing the message ``msg_id`` (an offset id), which
    reads it and hands it to the member ``client_id`` of ``group``; the member's answer."""
    address, _ = store_address(msg_id)
    header = ConsumeMessageDirectlyResultRequestHeader(
        consumer_group=group, client_id=client_id, msg_id=msg_id, topic=topic
    )
    api = calls.api
    reply = await api.call(
        address, RequestCode.CONSUME_MESSAGE_DIRECTLY, header, timeout=api.timeout * _SLOW_CALL
    )
    return decode_body(ConsumeMessageDirectlyResult, reply.body)
