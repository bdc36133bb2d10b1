"""Typed calls to the NameServer and brokers: one async method per request code.

This is the only place producer and consumer code reaches the wire: it builds the command from a
typed header, sends it through the pool with the call's deadline, and turns the answer into a
typed value, or a typed :class:`~rocketmq_py.errors.BrokerError` for a non-success code.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Final, NamedTuple

from rocketmq_py._transport import ConnectionPool
from rocketmq_py.errors import MalformedHeader, UnsupportedByProxy, broker_error_for
from rocketmq_py.protocol import (
    ConsumerListBody,
    ConsumerSendMsgBackRequestHeader,
    CustomHeader,
    EndTransactionRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    GetRouteInfoRequestHeader,
    HeartbeatData,
    HeartbeatRequestHeader,
    LockBatchMqRequestHeader,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageExt,
    MessageQueue,
    PullMessageRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    SendMessageRequestHeader,
    SerializeType,
    TopicRouteData,
    UnlockBatchMqRequestHeader,
    UnlockBatchRequestBody,
    UnregisterClientRequestHeader,
    UpdateAndCreateTopicRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewMessageRequestHeader,
    decode_body,
    decode_messages,
    encode_body,
    from_ext_fields,
    send_header_to_v2,
    to_ext_fields,
)
from rocketmq_py.protocol._pull_request import PullFrames

__all__ = ["RemotingApi", "SendReply", "send_header_fields", "send_reply"]

#: What a reply refused by a server that does not take replies says to do (a 5.x Proxy: its
#: ``RemotingProtocolServer`` registers no SEND_REPLY_MESSAGE_V2, and the broker's push of the
#: reply to the requester could not reach a client connected to the Proxy anyway).
_NO_REPLIES: Final = (
    "it takes no replies, and request-reply needs both sides connected to the NameServer and brokers directly"
)
# Codes a send reply may carry and still mean "stored" (Java: SEND_OK and the three store warnings).
_SEND_OK_CODES = frozenset(
    {
        ResponseCode.SUCCESS,
        ResponseCode.FLUSH_DISK_TIMEOUT,
        ResponseCode.FLUSH_SLAVE_TIMEOUT,
        ResponseCode.SLAVE_NOT_AVAILABLE,
    }
)


_PULL_CODES = frozenset(
    {
        ResponseCode.SUCCESS,
        ResponseCode.PULL_NOT_FOUND,
        ResponseCode.PULL_RETRY_IMMEDIATELY,
        ResponseCode.PULL_OFFSET_MOVED,
    }
)


class SendReply(NamedTuple):
    """The broker's answer to a send: its code (one of the stored codes) and where it stored it."""

    code: int
    msg_id: str
    queue_id: int
    queue_offset: int
    transaction_id: str | None
    region_id: str | None
    recall_handle: str | None
    trace_on: bool


def send_header_fields(header: SendMessageRequestHeader) -> dict[str, str]:
    """The V2 short-key ``extFields`` of a send header (the typed path; the producer builds them directly)."""
    return to_ext_fields(send_header_to_v2(header))


def send_reply(reply: RemotingCommand) -> SendReply:
    """Read a successful send reply's header (hot path: no typed-header round trip).

    Raises:
        MalformedHeader: a required field is missing or not a number.
    """
    ext = reply.ext_fields
    try:
        return SendReply(
            reply.code,
            ext["msgId"],
            int(ext["queueId"]),
            int(ext["queueOffset"]),
            ext.get("transactionId"),
            ext.get("MSG_REGION"),
            ext.get("recallHandle"),
            ext.get("TRACE_ON") != "false",  # Java MQClientAPIImpl: off only when the broker says false
        )
    except (KeyError, ValueError) as exc:
        raise MalformedHeader(f"send reply header is missing or garbles {exc}: {dict(ext)}") from None


class RemotingApi:
    """Typed request/response calls over a :class:`ConnectionPool`.

    Args:
        pool: the open pool.
        timeout: default seconds per call (Java ``mqClientApiTimeout``).
        serialize_type: header encoding of requests.
    """

    def __init__(
        self, pool: ConnectionPool, *, timeout: float, serialize_type: SerializeType = SerializeType.JSON
    ) -> None:
        self.pool = pool
        self.timeout = timeout
        self.serialize_type = serialize_type
        #: The ``version`` of the last reply from each address: the server's ``MQVersion`` ordinal.
        self.peer_versions: dict[str, int] = {}
        self._pull_frames = PullFrames()

    def command(
        self, code: int, header: CustomHeader | None = None, body: bytes = b"", *, oneway: bool = False
    ) -> RemotingCommand:
        """A request command for ``code`` with ``header`` and ``body``, in this API's header encoding."""
        ext = to_ext_fields(header) if header is not None else None
        return RemotingCommand.request(code, ext, body, oneway=oneway, serialize_type=self.serialize_type)

    async def call(
        self,
        address: str,
        code: int,
        header: CustomHeader | None = None,
        body: bytes = b"",
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - an RPC deadline, as the pool's
        ok: Collection[int] = (ResponseCode.SUCCESS,),
    ) -> RemotingCommand:
        """Send one request and return the reply; a reply code outside ``ok`` raises its BrokerError."""
        reply = await self.pool.request(
            address, self.command(code, header, body), timeout=self.timeout if timeout is None else timeout
        )
        self.peer_versions[address] = reply.version
        if reply.code not in ok:
            raise broker_error_for(reply.code, reply.remark)
        return reply

    async def oneway(
        self, address: str, code: int, header: CustomHeader | None = None, body: bytes = b""
    ) -> None:
        """Send a request for ``code`` without waiting for an answer (none comes)."""
        await self.pool.oneway(address, self.command(code, header, body, oneway=True))

    # --- NameServer ----------------------------------------------------------------------------------

    async def get_route_info(self, namesrv: str, topic: str) -> TopicRouteData:
        """GET_ROUTEINFO_BY_TOPIC (standard JSON asked for). Raises TopicNotExist for unknown topics."""
        header = GetRouteInfoRequestHeader(topic=topic, accept_standard_json_only=True)
        reply = await self.call(namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, header)
        return decode_body(TopicRouteData, reply.body)

    # --- broker: producer side ---------------------------------------------------------------------

    def send_command(
        self,
        ext_fields: Mapping[str, str],
        body: bytes,
        *,
        batch: bool,
        oneway: bool = False,
        reply: bool = False,
    ) -> RemotingCommand:
        """SEND_MESSAGE_V2 (SEND_BATCH_MESSAGE for a batch, SEND_REPLY_MESSAGE_V2 for a reply to a
        request) with the V2 short-key header ``ext_fields``."""
        if reply:
            code = RequestCode.SEND_REPLY_MESSAGE_V2
        else:
            code = RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2
        return RemotingCommand.request(
            code, ext_fields, body, oneway=oneway, serialize_type=self.serialize_type
        )

    async def send_message(
        self,
        address: str,
        ext_fields: Mapping[str, str],
        body: bytes,
        *,
        batch: bool = False,
        reply: bool = False,
        timeout: float,  # noqa: ASYNC109
    ) -> SendReply:
        """Send a message (V2 header fields, see :func:`send_header_fields`); raises a failed send's BrokerError.

        ``reply``: the message is a reply to a request (sent as SEND_REPLY_MESSAGE_V2).
        """
        answer = await self.pool.request(
            address, self.send_command(ext_fields, body, batch=batch, reply=reply), timeout=timeout
        )
        self.peer_versions[address] = answer.version
        if answer.code not in _SEND_OK_CODES:
            if reply and answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                raise UnsupportedByProxy(address, RequestCode.SEND_REPLY_MESSAGE_V2, _NO_REPLIES)
            raise broker_error_for(answer.code, answer.remark)
        return send_reply(answer)

    async def send_message_frame(
        self,
        address: str,
        encode: Callable[..., bytes],
        args: tuple[Any, ...] = (),
        *,
        batch: bool = False,
        timeout: float,  # noqa: ASYNC109
    ) -> SendReply:
        """:meth:`send_message` with the frame built by ``encode(opaque, *args)``, on a live connection without hooks."""
        code = RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2
        reply = await self.pool.request_frame(address, encode, args, code=code, timeout=timeout)
        self.peer_versions[address] = reply.version
        if reply.code not in _SEND_OK_CODES:
            raise broker_error_for(reply.code, reply.remark)
        return send_reply(reply)

    async def send_message_oneway(
        self,
        address: str,
        ext_fields: Mapping[str, str],
        body: bytes,
        *,
        batch: bool = False,
        reply: bool = False,
    ) -> None:
        """A send (as :meth:`send_message`) without waiting for an answer."""
        await self.pool.oneway(
            address, self.send_command(ext_fields, body, batch=batch, oneway=True, reply=reply)
        )

    async def end_transaction(
        self, address: str, header: EndTransactionRequestHeader, remark: str | None
    ) -> None:
        """END_TRANSACTION, oneway like Java."""
        cmd = RemotingCommand.request(
            RequestCode.END_TRANSACTION,
            to_ext_fields(header),
            oneway=True,
            remark=remark,
            serialize_type=self.serialize_type,
        )
        await self.pool.oneway(address, cmd)

    # --- broker: client registration -----------------------------------------------------------------

    async def heartbeat(self, address: str, data: HeartbeatData) -> RemotingCommand:
        """HEART_BEAT with ``data`` (the client's producer and consumer groups); returns the reply."""
        return await self.call(address, RequestCode.HEART_BEAT, HeartbeatRequestHeader(), encode_body(data))

    async def unregister_client(
        self,
        address: str,
        client_id: str,
        *,
        producer_group: str | None = None,
        consumer_group: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> None:
        """UNREGISTER_CLIENT: the client leaves the producer and/or consumer group."""
        header = UnregisterClientRequestHeader(
            client_id=client_id, producer_group=producer_group, consumer_group=consumer_group
        )
        await self.call(address, RequestCode.UNREGISTER_CLIENT, header, timeout=timeout)

    async def get_consumer_list(self, address: str, group: str, *, timeout: float | None = None) -> list[str]:  # noqa: ASYNC109
        """GET_CONSUMER_LIST_BY_GROUP: the client ids of the group's members the broker knows."""
        header = GetConsumerListByGroupRequestHeader(consumer_group=group)
        reply = await self.call(address, RequestCode.GET_CONSUMER_LIST_BY_GROUP, header, timeout=timeout)
        return list(decode_body(ConsumerListBody, reply.body).consumer_id_list)

    # --- broker: queues and messages -----------------------------------------------------------------

    async def get_max_offset(
        self, address: str, topic: str, queue_id: int, broker_name: str | None = None
    ) -> int:
        """GET_MAX_OFFSET: the queue's offset after its last message."""
        header = GetMaxOffsetRequestHeader(topic=topic, queue_id=queue_id, broker_name=broker_name)
        reply = await self.call(address, RequestCode.GET_MAX_OFFSET, header)
        return from_ext_fields(GetMaxOffsetResponseHeader, reply.ext_fields).offset

    async def get_min_offset(
        self, address: str, topic: str, queue_id: int, broker_name: str | None = None
    ) -> int:
        """GET_MIN_OFFSET: the queue's first offset still stored."""
        header = GetMinOffsetRequestHeader(topic=topic, queue_id=queue_id, broker_name=broker_name)
        reply = await self.call(address, RequestCode.GET_MIN_OFFSET, header)
        return from_ext_fields(GetMinOffsetResponseHeader, reply.ext_fields).offset

    async def search_offset(
        self, address: str, topic: str, queue_id: int, timestamp_ms: int, broker_name: str | None = None
    ) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP, the broker's raw answer (4.x: the *nearest* message).

        Positioning code uses :func:`rocketmq_py.lowlevel.offset_for_timestamp`, which
        gives the first message stored at or after ``timestamp_ms`` on every release.
        """
        header = SearchOffsetRequestHeader(
            topic=topic, queue_id=queue_id, timestamp=timestamp_ms, broker_name=broker_name
        )
        reply = await self.call(address, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header)
        return from_ext_fields(SearchOffsetResponseHeader, reply.ext_fields).offset

    # --- broker: consumer side ---------------------------------------------------------------------

    async def pull_message(
        self,
        address: str,
        header: PullMessageRequestHeader,
        *,
        timeout: float,  # noqa: ASYNC109 - Java's CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND, longer than the broker's hold
    ) -> RemotingCommand:
        """PULL_MESSAGE; returns the reply for FOUND / NO_NEW_MSG / NO_MATCHED_MSG / OFFSET_MOVED, raises otherwise.

        On a live connection without RPC hooks the request goes as a binary frame from
        :class:`~rocketmq_py.protocol.PullFrames` (the consumers' hot path).
        """
        pool = self.pool
        if header.extra or pool.has_hooks() or not pool.is_connected(address):
            return await self.call(address, RequestCode.PULL_MESSAGE, header, timeout=timeout, ok=_PULL_CODES)
        reply = await pool.request_frame(
            address, self._pull_frames.frame, (header,), code=RequestCode.PULL_MESSAGE, timeout=timeout
        )
        self.peer_versions[address] = reply.version
        if reply.code not in _PULL_CODES:
            raise broker_error_for(reply.code, reply.remark)
        return reply

    async def query_consumer_offset(
        self, address: str, group: str, topic: str, queue_id: int, broker_name: str
    ) -> int:
        """The group's stored offset of a queue; -1 when the broker has none (QUERY_NOT_FOUND)."""
        header = QueryConsumerOffsetRequestHeader(
            consumer_group=group, topic=topic, queue_id=queue_id, broker_name=broker_name
        )
        reply = await self.call(
            address,
            RequestCode.QUERY_CONSUMER_OFFSET,
            header,
            ok=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND),
        )
        if reply.code == ResponseCode.QUERY_NOT_FOUND:
            return -1
        return from_ext_fields(QueryConsumerOffsetResponseHeader, reply.ext_fields).offset

    def _update_offset_header(
        self, group: str, topic: str, queue_id: int, offset: int, broker_name: str
    ) -> UpdateConsumerOffsetRequestHeader:
        return UpdateConsumerOffsetRequestHeader(
            consumer_group=group,
            topic=topic,
            queue_id=queue_id,
            commit_offset=offset,
            broker_name=broker_name,
        )

    async def update_consumer_offset(
        self, address: str, group: str, topic: str, queue_id: int, offset: int, broker_name: str
    ) -> None:
        """UPDATE_CONSUMER_OFFSET: commit ``offset`` of one queue for ``group``."""
        header = self._update_offset_header(group, topic, queue_id, offset, broker_name)
        await self.call(address, RequestCode.UPDATE_CONSUMER_OFFSET, header)

    async def update_consumer_offset_oneway(
        self, address: str, group: str, topic: str, queue_id: int, offset: int, broker_name: str
    ) -> None:
        """:meth:`update_consumer_offset` without waiting for an answer."""
        header = self._update_offset_header(group, topic, queue_id, offset, broker_name)
        await self.oneway(address, RequestCode.UPDATE_CONSUMER_OFFSET, header)

    async def update_consumer_offsets_oneway(
        self, address: str, group: str, entries: Sequence[tuple[MessageQueue, int]]
    ) -> None:
        """UPDATE_CONSUMER_OFFSET oneway for each ``(queue, offset)`` of ``entries``, in one write."""
        commands = [
            self.command(
                RequestCode.UPDATE_CONSUMER_OFFSET,
                self._update_offset_header(group, mq.topic, mq.queue_id, offset, mq.broker_name),
                oneway=True,
            )
            for mq, offset in entries
        ]
        await self.pool.send_many(address, commands)

    async def consumer_send_msg_back(
        self,
        address: str,
        message: MessageExt,
        group: str,
        *,
        delay_level: int,
        max_reconsume_times: int,
        broker_name: str | None,
        origin_topic: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - an RPC deadline, as the pool's
    ) -> None:
        """CONSUMER_SEND_MSG_BACK: the broker re-queues ``message`` to the group's retry topic (or DLQ).

        ``origin_topic`` (default ``message.topic``) is the topic as the broker knows it (a
        consumer in a namespace shows its listener the unwrapped one).
        """
        header = ConsumerSendMsgBackRequestHeader(
            offset=message.commit_log_offset,
            group=group,
            delay_level=delay_level,
            origin_msg_id=message.msg_id,
            origin_topic=origin_topic or message.topic,
            unit_mode=False,
            max_reconsume_times=max_reconsume_times,
            broker_name=broker_name,
        )
        await self.call(address, RequestCode.CONSUMER_SEND_MSG_BACK, header, timeout=timeout)

    async def lock_batch_mq(
        self,
        address: str,
        group: str,
        client_id: str,
        queues: Collection[MessageQueue],
        *,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> frozenset[MessageQueue]:
        """LOCK_BATCH_MQ (orderly consumption): the subset of ``queues`` the broker now locks for us."""
        body = encode_body(
            LockBatchRequestBody(consumer_group=group, client_id=client_id, mq_set=frozenset(queues))
        )
        reply = await self.call(
            address, RequestCode.LOCK_BATCH_MQ, LockBatchMqRequestHeader(), body, timeout=timeout
        )
        return decode_body(LockBatchResponseBody, reply.body).lock_ok_mq_set

    async def unlock_batch_mq(
        self,
        address: str,
        group: str,
        client_id: str,
        queues: Collection[MessageQueue],
        *,
        oneway: bool = False,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> None:
        """UNLOCK_BATCH_MQ: release our locks on ``queues`` (synchronous unless ``oneway``)."""
        body = encode_body(
            UnlockBatchRequestBody(consumer_group=group, client_id=client_id, mq_set=frozenset(queues))
        )
        if oneway:
            await self.oneway(address, RequestCode.UNLOCK_BATCH_MQ, UnlockBatchMqRequestHeader(), body)
            return
        await self.call(
            address, RequestCode.UNLOCK_BATCH_MQ, UnlockBatchMqRequestHeader(), body, timeout=timeout
        )

    async def view_message(self, address: str, commit_log_offset: int) -> MessageExt:
        """VIEW_MESSAGE_BY_ID: the message stored at ``commit_log_offset``."""
        header = ViewMessageRequestHeader(offset=commit_log_offset)
        reply = await self.call(address, RequestCode.VIEW_MESSAGE_BY_ID, header)
        return decode_messages(reply.body)[0]

    async def create_topic(self, address: str, header: UpdateAndCreateTopicRequestHeader) -> None:
        """UPDATE_AND_CREATE_TOPIC on one broker (admin)."""
        await self.call(address, RequestCode.UPDATE_AND_CREATE_TOPIC, header)
