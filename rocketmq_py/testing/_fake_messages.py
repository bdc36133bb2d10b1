"""A FakeBroker's default handlers for routes, sends, pulls and queue bounds, on its FakeStore::

    GET_ROUTEINFO_BY_TOPIC  (105)  TopicRouteData of add_topic()/set_route() topics (standard
                                   JSON); an unknown topic is TOPIC_NOT_EXIST
    SEND_MESSAGE (10),             append to (topic, queue) at the next queue offset, and answer a
    SEND_MESSAGE_V2 (310)          SendMessageResponseHeader: offset msgId (store host + commit-log
                                   offset), queueId, queueOffset, MSG_REGION, TRACE_ON (of
                                   ``trace_on``)
    SEND_BATCH_MESSAGE (320)       append every entry of the batch body to one queue; the msgId is
                                   the entries' offset msgIds joined by commas, the queueOffset the
                                   first entry's; a body that does not decode is MESSAGE_ILLEGAL
    PULL_MESSAGE (11)              FOUND with stored-message records; PULL_NOT_FOUND at the end of
                                   the queue (held up to suspendTimeoutMillis when the SUSPEND flag
                                   is set, like long polling); PULL_OFFSET_MOVED outside [min, max];
                                   PULL_RETRY_IMMEDIATELY when the tag filter matched nothing
    GET_MAX_OFFSET (30),           the queue's bounds (min is always 0: nothing is ever deleted)
    GET_MIN_OFFSET (31)
    SEARCH_OFFSET_BY_TIMESTAMP     the first offset stored at or after the timestamp, else the
    (29)                           queue's max offset; a broker built with a version before 5.1.1
                                   answers as 4.x: the nearest message (see ``nearest_by_time``)

A send to ``%RETRY%<group>`` whose reconsumeTimes header reached maxReconsumeTimes is stored in
``%DLQ%<group>`` instead, as the broker's send processor does (orderly consumers' DLQ path).

Malformed request headers are answered SYSTEM_ERROR, as the broker does.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Final

import trio

from rocketmq_py.errors import MalformedMessage, broker_error_for
from rocketmq_py.protocol._admin_headers import GetRouteInfoRequestHeader
from rocketmq_py.protocol._batch import decode_batch
from rocketmq_py.protocol._codes import RequestCode, ResponseCode
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.protocol._headers import (
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    send_header_from_v2,
)
from rocketmq_py.protocol._json_body import encode_body
from rocketmq_py.protocol._message import Message, MessageExt
from rocketmq_py.protocol._names import is_retry_topic
from rocketmq_py.protocol._properties import decode_properties
from rocketmq_py.protocol._versions import V5_1_1
from rocketmq_py.testing._fake_handlers import BrokerHandler, answer, parse_header
from rocketmq_py.testing._fake_store import DEFAULT_PERM, GROUP_TOPIC_QUEUES, FakeStore

__all__ = ["MessageHandlers", "nearest_by_time"]

#: PullSysFlag bit: the broker may hold the request until a message arrives (long polling).
PULL_FLAG_SUSPEND: Final = 0x2


def nearest_by_time(stamps: list[int], timestamp: int) -> int:
    """4.9.7's ``ConsumeQueue.getOffsetInQueueByTime``: a binary search that stops at any message
    stored exactly then, else answers the nearer of its two neighbours (the earlier on a tie), the
    last message when all are older, and 0 for an empty queue."""
    low, high = 0, len(stamps) - 1
    left = right = -1
    while low <= high:
        mid = (low + high) // 2
        if stamps[mid] == timestamp:
            return mid
        if stamps[mid] > timestamp:
            high, right = mid - 1, mid
        else:
            low, left = mid + 1, mid
    if left == -1:
        return max(right, 0)
    if right == -1:
        return left
    return right if timestamp - stamps[left] > stamps[right] - timestamp else left


class MessageHandlers:
    """The route, send, pull and queue-bound handlers of one store (see the module docstring)."""

    def __init__(self, store: FakeStore) -> None:
        self._store = store

    def install(self, handlers: MutableMapping[int, BrokerHandler]) -> None:
        """Register the handlers (codes listed in the module docstring)."""
        handlers[RequestCode.GET_ROUTEINFO_BY_TOPIC] = self.get_route
        handlers[RequestCode.SEND_MESSAGE] = self.send_message
        handlers[RequestCode.SEND_MESSAGE_V2] = self.send_message
        handlers[RequestCode.SEND_BATCH_MESSAGE] = self.send_batch_message
        handlers[RequestCode.PULL_MESSAGE] = self.pull_message
        handlers[RequestCode.GET_MAX_OFFSET] = self.get_max_offset
        handlers[RequestCode.GET_MIN_OFFSET] = self.get_min_offset
        handlers[RequestCode.SEARCH_OFFSET_BY_TIMESTAMP] = self.search_offset

    async def get_route(self, request: RemotingCommand) -> RemotingCommand | None:
        store = self._store
        header = parse_header(GetRouteInfoRequestHeader, request)
        route = store.route(header.topic)
        if route is None:
            raise broker_error_for(
                ResponseCode.TOPIC_NOT_EXIST,
                f"No topic route info in name server for the topic: {header.topic}",
            )
        return answer(request, body=encode_body(route))

    def _send_header(self, request: RemotingCommand) -> tuple[SendMessageRequestHeader, int]:
        """The request's send header (long or V2 form) and the queue the message goes to."""
        store = self._store
        if request.code == RequestCode.SEND_MESSAGE:
            header = parse_header(SendMessageRequestHeader, request)
        else:
            header = send_header_from_v2(parse_header(SendMessageRequestHeaderV2, request))
        queue_id = header.queue_id
        if queue_id < 0:  # "any queue": the broker picks one; the fake is deterministic
            config = store.check_queue(header.topic, 0, default_queues=header.default_topic_queue_nums)
            queue_id = sum(len(store.queues.get((header.topic, q), ())) for q in range(config.queues))
            queue_id %= config.queues
        store.check_queue(header.topic, queue_id, default_queues=header.default_topic_queue_nums)
        return header, queue_id

    async def send_message(self, request: RemotingCommand) -> RemotingCommand | None:
        store = self._store
        header, queue_id = self._send_header(request)
        topic = header.topic
        max_times = header.max_reconsume_times if header.max_reconsume_times is not None else 16
        if is_retry_topic(topic) and (header.reconsume_times or 0) >= max_times:
            topic = "%DLQ%" + topic.removeprefix("%RETRY%")  # the broker's handleRetryAndDLQ
            if topic not in store.topics:
                store.add_topic(topic, queues=GROUP_TOPIC_QUEUES, perm=DEFAULT_PERM)
            queue_id = 0
        message = Message(
            topic,
            request.body,
            flag=header.flag,
            properties=decode_properties(header.properties or ""),
        )
        stored = store.append(
            message,
            queue_id,
            born_timestamp=header.born_timestamp,
            sys_flag=header.sys_flag,
            reconsume_times=header.reconsume_times or 0,
        )
        response = SendMessageResponseHeader(
            msg_id=stored.offset_msg_id,
            queue_id=queue_id,
            queue_offset=stored.queue_offset,
            extra={"MSG_REGION": "DefaultRegion", "TRACE_ON": "true" if store.trace_on else "false"},
        )
        return answer(request, header=response)

    async def send_batch_message(self, request: RemotingCommand) -> RemotingCommand | None:
        store = self._store
        header, queue_id = self._send_header(request)
        try:
            messages = decode_batch(request.body, header.topic)
        except MalformedMessage as exc:
            raise broker_error_for(ResponseCode.MESSAGE_ILLEGAL, f"bad batch body: {exc}") from exc
        if not messages:
            raise broker_error_for(ResponseCode.MESSAGE_ILLEGAL, "empty batch body")
        stored = [
            store.append(message, queue_id, born_timestamp=header.born_timestamp, sys_flag=header.sys_flag)
            for message in messages
        ]
        response = SendMessageResponseHeader(
            msg_id=",".join(entry.offset_msg_id for entry in stored),
            queue_id=queue_id,
            queue_offset=stored[0].queue_offset,
            extra={"MSG_REGION": "DefaultRegion", "TRACE_ON": "true" if store.trace_on else "false"},
        )
        return answer(request, header=response)

    async def pull_message(self, request: RemotingCommand) -> RemotingCommand | None:
        store = self._store
        header = parse_header(PullMessageRequestHeader, request)
        store.check_queue(header.topic, header.queue_id)
        response = self._pull_once(request, header)
        if (
            response is not None
            and response.code == ResponseCode.PULL_NOT_FOUND
            and header.sys_flag & PULL_FLAG_SUSPEND
            and header.suspend_timeout_millis > 0
        ):
            key = (header.topic, header.queue_id)
            with trio.move_on_after(header.suspend_timeout_millis / 1000):
                while response.code == ResponseCode.PULL_NOT_FOUND:
                    arrival = store.arrivals.setdefault(key, trio.Event())
                    await arrival.wait()
                    response = self._pull_once(request, header)
                    assert response is not None
        return response

    def _pull_once(
        self, request: RemotingCommand, header: PullMessageRequestHeader
    ) -> RemotingCommand | None:
        store = self._store
        key = (header.topic, header.queue_id)
        queue = store.queues.get(key, [])
        records = store.records.get(key, [])
        max_offset = len(queue)
        offset = header.queue_offset

        def reply(code: int, next_offset: int, body: bytes = b"") -> RemotingCommand | None:
            bounds = PullMessageResponseHeader(
                suggest_which_broker_id=0, next_begin_offset=next_offset, min_offset=0, max_offset=max_offset
            )
            return answer(request, code, bounds, body)

        if offset < 0:
            return reply(ResponseCode.PULL_OFFSET_MOVED, 0)
        if offset == max_offset:
            return reply(ResponseCode.PULL_NOT_FOUND, offset)
        if offset > max_offset:
            return reply(ResponseCode.PULL_OFFSET_MOVED, max_offset)
        matches = _tag_filter(header.subscription, header.expression_type)
        found: list[bytes] = []
        position = offset
        while position < max_offset and len(found) < header.max_msg_nums:
            if matches(queue[position]):
                found.append(records[position])
            position += 1
        if not found:
            return reply(ResponseCode.PULL_RETRY_IMMEDIATELY, position)
        return reply(ResponseCode.SUCCESS, position, b"".join(found))

    async def get_max_offset(self, request: RemotingCommand) -> RemotingCommand | None:
        store = self._store
        header = parse_header(GetMaxOffsetRequestHeader, request)
        offset = len(store.queues.get((header.topic, header.queue_id), ()))
        return answer(request, header=GetMaxOffsetResponseHeader(offset=offset))

    async def get_min_offset(self, request: RemotingCommand) -> RemotingCommand | None:
        parse_header(GetMinOffsetRequestHeader, request)
        return answer(request, header=GetMinOffsetResponseHeader(offset=0))

    async def search_offset(self, request: RemotingCommand) -> RemotingCommand | None:
        store = self._store
        header = parse_header(SearchOffsetRequestHeader, request)
        queue = store.queues.get((header.topic, header.queue_id), [])
        if store.broker.version < V5_1_1:
            offset = nearest_by_time([m.store_timestamp for m in queue], header.timestamp)
        else:
            offset = next(
                (m.queue_offset for m in queue if m.store_timestamp >= header.timestamp), len(queue)
            )
        return answer(request, header=SearchOffsetResponseHeader(offset=offset))


def _tag_filter(subscription: str | None, expression_type: str | None) -> Callable[[MessageExt], bool]:
    """The broker's tag filter: ``*`` (or nothing) matches all, else ``"a || b"`` matches those tags."""
    if expression_type not in (None, "TAG") or subscription is None or subscription.strip() in ("", "*"):
        return lambda message: True
    wanted = {tag.strip() for tag in subscription.split("||") if tag.strip()}
    return lambda message: message.tags in wanted
