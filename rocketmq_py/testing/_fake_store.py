"""The in-memory state behind :class:`~rocketmq_py.testing.FakeBroker`'s default handlers.

One FakeBroker plays NameServer and broker at once: the routes it hands out point at itself.
The default handlers answer like a real 5.x broker, minus persistence, replication and filters
beyond tags::

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
    QUERY_CONSUMER_OFFSET (14),    a committed-offset table per (group, topic, queue); a group with
    UPDATE_CONSUMER_OFFSET (15)    no offset gets 0 while the queue's first message is in memory
                                   (``first_in_memory``, default true: a young broker; a 4.x fake
                                   also for an empty queue), else QUERY_NOT_FOUND
    GET_MAX_OFFSET (30),           the queue's bounds (min is always 0: nothing is ever deleted)
    GET_MIN_OFFSET (31)
    SEARCH_OFFSET_BY_TIMESTAMP     the first offset stored at or after the timestamp, else the
    (29)                           queue's max offset; a broker built with a version before 5.1.1
                                   answers as 4.x: the nearest message (see ``nearest_by_time``)
    QUERY_ASSIGNMENT (400),        POP consumption: see ``_fake_pop`` (every queue assigned to
    POP_MESSAGE, ACK_MESSAGE,      every client; pop hides messages for the invisible time)
    CHANGE_MESSAGE_INVISIBLETIME
    HEART_BEAT (34)                SUCCESS; registers the client ids of its consumer groups and
                                   creates each group's ``%RETRY%<group>`` topic (1 queue)
    UNREGISTER_CLIENT (35)         SUCCESS; forgets the client in its consumer group
    GET_CONSUMER_LIST_BY_GROUP     ConsumerListBody of the client ids registered by heartbeat;
    (38)                           SYSTEM_ERROR "no consumer for this group" when there are none
    CONSUMER_SEND_MSG_BACK (36)    the message at the commit-log offset is stored again in
                                   ``%RETRY%<group>`` (``%DLQ%<group>`` once its reconsume times
                                   reach maxReconsumeTimes or delayLevel < 0) with reconsume times
                                   + 1, RETRY_TOPIC, ORIGIN_MESSAGE_ID and DELAY (3 + reconsume
                                   times for level 0) as the broker sets them; delivered at once
                                   (the fake has no delay queues); an unknown offset is SYSTEM_ERROR
    LOCK_BATCH_MQ (41)             LockBatchResponseBody: the requested queues not locked by another
                                   client of the group (a lock lapses 60 s after its last renewal,
                                   broker ``rebalanceLockMaxLiveTime``); they become (stay) ours
    UNLOCK_BATCH_MQ (42)           releases the queues the client holds; SUCCESS

A send to ``%RETRY%<group>`` whose reconsumeTimes header reached maxReconsumeTimes is stored in
``%DLQ%<group>`` instead, as the broker's send processor does (orderly consumers' DLQ path).

Malformed request headers are answered SYSTEM_ERROR, as the broker does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeVar

import trio

from rocketmq_py.errors import MalformedBody, MalformedHeader, MalformedMessage, broker_error_for
from rocketmq_py.protocol._admin_headers import GetRouteInfoRequestHeader
from rocketmq_py.protocol._batch import decode_batch
from rocketmq_py.protocol._bodies import (
    BrokerData,
    ConsumerListBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    QueueData,
    TopicRouteData,
    UnlockBatchRequestBody,
)
from rocketmq_py.protocol._codes import RequestCode, ResponseCode
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.protocol._ext_fields import CustomHeader, from_ext_fields, to_ext_fields
from rocketmq_py.protocol._headers import (
    ConsumerSendMsgBackRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    send_header_from_v2,
)
from rocketmq_py.protocol._json_body import decode_body, encode_body
from rocketmq_py.protocol._message import Message, MessageExt
from rocketmq_py.protocol._names import dlq_topic, is_retry_topic, retry_topic
from rocketmq_py.protocol._properties import PropertyKey, decode_properties
from rocketmq_py.protocol._stored import encode_stored_message
from rocketmq_py.protocol._versions import V5_0_0, V5_1_1
from rocketmq_py.testing._fake_pop import FakePop

if TYPE_CHECKING:
    from rocketmq_py.testing._fake_broker import BrokerHandler, FakeBroker

__all__ = ["FakeStore"]

#: PullSysFlag bit: the broker may hold the request until a message arrives (long polling).
PULL_FLAG_SUSPEND: Final = 0x2
#: Read and write permission (PermName.PERM_READ | PERM_WRITE), the broker's default.
DEFAULT_PERM: Final = 6
#: The born host the fake records: the handler does not see the client's address.
_BORN_HOST: Final = "127.0.0.1:0"
#: Queues of a group's retry and dead-letter topics (broker ``retryQueueNums``, ``DLQ_NUMS_PER_GROUP``).
_GROUP_TOPIC_QUEUES: Final = 1
#: Seconds a queue lock lives without renewal (broker ``rebalanceLockMaxLiveTime`` = 60000 ms).
LOCK_MAX_LIVE_TIME: Final = 60.0

_H = TypeVar("_H", bound=CustomHeader)


@dataclass(frozen=True, slots=True)
class _Topic:
    queues: int
    perm: int


def _parse(cls: type[_H], request: RemotingCommand) -> _H:
    try:
        return from_ext_fields(cls, request.ext_fields)
    except MalformedHeader as exc:
        raise broker_error_for(ResponseCode.SYSTEM_ERROR, str(exc)) from exc


def _answer(
    request: RemotingCommand,
    code: int = ResponseCode.SUCCESS,
    header: CustomHeader | None = None,
    body: bytes = b"",
    remark: str | None = None,
) -> RemotingCommand | None:
    if request.is_oneway:
        return None
    ext = to_ext_fields(header) if header is not None else None
    return RemotingCommand.response(request, code, remark, ext, body)


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


class FakeStore:
    """Topics, queues of stored messages and committed offsets of one FakeBroker."""

    def __init__(self, broker: FakeBroker, *, auto_create_topics: bool = False) -> None:
        self._broker = broker
        self.auto_create_topics = auto_create_topics
        self.topics: dict[str, _Topic] = {}
        self.routes: dict[str, TopicRouteData] = {}
        self.queues: dict[tuple[str, int], list[MessageExt]] = {}
        self.consumer_offsets: dict[tuple[str, str, int], int] = {}
        #: Client ids per consumer group, as registered by heartbeats (in registration order).
        self.consumers: dict[str, list[str]] = {}
        self._by_commit_log_offset: dict[int, MessageExt] = {}
        self._records: dict[tuple[str, int], list[bytes]] = {}
        self._arrivals: dict[tuple[str, int], trio.Event] = {}
        self._commit_log_offset = 0
        #: Queue locks: (group, queue) -> (client id, trio time of the last lock or renewal).
        self.locks: dict[tuple[str, MessageQueue], tuple[str, float]] = {}
        #: Whether each queue's first message is still in the broker's memory (page cache): true on
        #: a young broker. QUERY_CONSUMER_OFFSET then answers 0 for a group with no offset on a
        #: queue that holds messages, so a new group starts at the beginning whatever its
        #: consume-from-where; false models a broker whose first messages left memory.
        self.first_in_memory = True
        #: What send replies say in ``TRACE_ON`` (the broker's ``traceOn`` setting, default true).
        self.trace_on = True
        #: POP consumption (QUERY_ASSIGNMENT, POP_MESSAGE, ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME).
        self.pop = FakePop(self)

    def install(self, handlers: MutableMapping[int, BrokerHandler]) -> None:
        """Register the default handlers (codes listed in the module docstring)."""
        handlers[RequestCode.GET_ROUTEINFO_BY_TOPIC] = self.get_route
        handlers[RequestCode.SEND_MESSAGE] = self.send_message
        handlers[RequestCode.SEND_MESSAGE_V2] = self.send_message
        handlers[RequestCode.SEND_BATCH_MESSAGE] = self.send_batch_message
        handlers[RequestCode.PULL_MESSAGE] = self.pull_message
        handlers[RequestCode.QUERY_CONSUMER_OFFSET] = self.query_consumer_offset
        handlers[RequestCode.UPDATE_CONSUMER_OFFSET] = self.update_consumer_offset
        handlers[RequestCode.GET_MAX_OFFSET] = self.get_max_offset
        handlers[RequestCode.GET_MIN_OFFSET] = self.get_min_offset
        handlers[RequestCode.SEARCH_OFFSET_BY_TIMESTAMP] = self.search_offset
        handlers[RequestCode.HEART_BEAT] = self.heartbeat
        handlers[RequestCode.UNREGISTER_CLIENT] = self.unregister_client
        handlers[RequestCode.GET_CONSUMER_LIST_BY_GROUP] = self.get_consumer_list
        handlers[RequestCode.CONSUMER_SEND_MSG_BACK] = self.consumer_send_msg_back
        handlers[RequestCode.LOCK_BATCH_MQ] = self.lock_batch_mq
        handlers[RequestCode.UNLOCK_BATCH_MQ] = self.unlock_batch_mq
        self.pop.install(handlers)

    # --- state -----------------------------------------------------------------------------------

    def add_topic(self, topic: str, *, queues: int, perm: int) -> None:
        self.topics[topic] = _Topic(queues, perm)

    def route(self, topic: str) -> TopicRouteData | None:
        explicit = self.routes.get(topic)
        if explicit is not None:
            return explicit
        config = self.topics.get(topic)
        if config is None:
            return None
        broker = self._broker
        return TopicRouteData(
            queue_datas=(
                QueueData(
                    broker_name=broker.broker_name,
                    read_queue_nums=config.queues,
                    write_queue_nums=config.queues,
                    perm=config.perm,
                ),
            ),
            broker_datas=(
                BrokerData(
                    cluster=broker.cluster_name,
                    broker_name=broker.broker_name,
                    broker_addrs={0: broker.address},
                ),
            ),
        )

    def append(
        self,
        message: Message,
        queue_id: int,
        *,
        born_timestamp: int = 0,
        sys_flag: int = 0,
        reconsume_times: int = 0,
        store_timestamp: int | None = None,
    ) -> MessageExt:
        """Store ``message`` at the end of its queue and wake long-polling pulls.

        ``store_timestamp`` (epoch ms) defaults to the wall clock.
        """
        key = (message.topic, queue_id)
        queue = self.queues.setdefault(key, [])
        stored = MessageExt(
            message.topic,
            message.body,
            flag=message.flag,
            properties=message.properties,
            queue_id=queue_id,
            queue_offset=len(queue),
            commit_log_offset=self._commit_log_offset,
            sys_flag=sys_flag,
            born_timestamp=born_timestamp,
            born_host=_BORN_HOST,
            store_timestamp=int(time.time() * 1000) if store_timestamp is None else store_timestamp,
            store_host=self._broker.address,
            reconsume_times=reconsume_times,
        )
        # The body is stored as sent (already compressed when the COMPRESSED flag says so).
        record = encode_stored_message(stored, compress=False)
        self._commit_log_offset += len(record)
        queue.append(stored)
        self._by_commit_log_offset[stored.commit_log_offset] = stored
        self._records.setdefault(key, []).append(record)
        arrival = self._arrivals.pop(key, None)
        if arrival is not None:
            arrival.set()
        return stored

    def _check_queue(self, topic: str, queue_id: int, *, default_queues: int | None = None) -> _Topic:
        config = self.topics.get(topic)
        if config is None:
            if default_queues is None or not self.auto_create_topics:
                raise broker_error_for(
                    ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!"
                )
            config = self.topics[topic] = _Topic(default_queues, DEFAULT_PERM)
        if not 0 <= queue_id < config.queues:
            raise broker_error_for(
                ResponseCode.SYSTEM_ERROR,
                f"queueId[{queue_id}] is illegal, topic:[{topic}] queues:[{config.queues}]",
            )
        return config

    # --- handlers ----------------------------------------------------------------------------------

    async def get_route(self, request: RemotingCommand) -> RemotingCommand | None:
        header = _parse(GetRouteInfoRequestHeader, request)
        route = self.route(header.topic)
        if route is None:
            raise broker_error_for(
                ResponseCode.TOPIC_NOT_EXIST,
                f"No topic route info in name server for the topic: {header.topic}",
            )
        return _answer(request, body=encode_body(route))

    def _send_header(self, request: RemotingCommand) -> tuple[SendMessageRequestHeader, int]:
        """The request's send header (long or V2 form) and the queue the message goes to."""
        if request.code == RequestCode.SEND_MESSAGE:
            header = _parse(SendMessageRequestHeader, request)
        else:
            header = send_header_from_v2(_parse(SendMessageRequestHeaderV2, request))
        queue_id = header.queue_id
        if queue_id < 0:  # "any queue": the broker picks one; the fake is deterministic
            config = self._check_queue(header.topic, 0, default_queues=header.default_topic_queue_nums)
            queue_id = sum(len(self.queues.get((header.topic, q), ())) for q in range(config.queues))
            queue_id %= config.queues
        self._check_queue(header.topic, queue_id, default_queues=header.default_topic_queue_nums)
        return header, queue_id

    async def send_message(self, request: RemotingCommand) -> RemotingCommand | None:
        header, queue_id = self._send_header(request)
        topic = header.topic
        max_times = header.max_reconsume_times if header.max_reconsume_times is not None else 16
        if is_retry_topic(topic) and (header.reconsume_times or 0) >= max_times:
            topic = "%DLQ%" + topic.removeprefix("%RETRY%")  # the broker's handleRetryAndDLQ
            if topic not in self.topics:
                self.add_topic(topic, queues=_GROUP_TOPIC_QUEUES, perm=DEFAULT_PERM)
            queue_id = 0
        message = Message(
            topic,
            request.body,
            flag=header.flag,
            properties=decode_properties(header.properties or ""),
        )
        stored = self.append(
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
            extra={"MSG_REGION": "DefaultRegion", "TRACE_ON": "true" if self.trace_on else "false"},
        )
        return _answer(request, header=response)

    async def send_batch_message(self, request: RemotingCommand) -> RemotingCommand | None:
        header, queue_id = self._send_header(request)
        try:
            messages = decode_batch(request.body, header.topic)
        except MalformedMessage as exc:
            raise broker_error_for(ResponseCode.MESSAGE_ILLEGAL, f"bad batch body: {exc}") from exc
        if not messages:
            raise broker_error_for(ResponseCode.MESSAGE_ILLEGAL, "empty batch body")
        stored = [
            self.append(message, queue_id, born_timestamp=header.born_timestamp, sys_flag=header.sys_flag)
            for message in messages
        ]
        response = SendMessageResponseHeader(
            msg_id=",".join(entry.offset_msg_id for entry in stored),
            queue_id=queue_id,
            queue_offset=stored[0].queue_offset,
            extra={"MSG_REGION": "DefaultRegion", "TRACE_ON": "true" if self.trace_on else "false"},
        )
        return _answer(request, header=response)

    async def pull_message(self, request: RemotingCommand) -> RemotingCommand | None:
        header = _parse(PullMessageRequestHeader, request)
        self._check_queue(header.topic, header.queue_id)
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
                    arrival = self._arrivals.setdefault(key, trio.Event())
                    await arrival.wait()
                    response = self._pull_once(request, header)
                    assert response is not None
        return response

    def _pull_once(
        self, request: RemotingCommand, header: PullMessageRequestHeader
    ) -> RemotingCommand | None:
        key = (header.topic, header.queue_id)
        queue = self.queues.get(key, [])
        records = self._records.get(key, [])
        max_offset = len(queue)
        offset = header.queue_offset

        def reply(code: int, next_offset: int, body: bytes = b"") -> RemotingCommand | None:
            bounds = PullMessageResponseHeader(
                suggest_which_broker_id=0, next_begin_offset=next_offset, min_offset=0, max_offset=max_offset
            )
            return _answer(request, code, bounds, body)

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

    async def query_consumer_offset(self, request: RemotingCommand) -> RemotingCommand | None:
        header = _parse(QueryConsumerOffsetRequestHeader, request)
        committed = self.consumer_offsets.get((header.consumer_group, header.topic, header.queue_id))
        if committed is None:
            # As the broker (ConsumerManageProcessor.queryConsumerOffset), for a group with no offset
            # on a queue whose min offset is 0 (the fake deletes nothing): 5.x answers 0 while the
            # queue's first message is in memory (checkInMemByConsumeOffset: false for an empty
            # queue), unless told not to; 4.x answers 0 unless that message is on disk only
            # (!checkInDiskByConsumeOffset: true for an empty queue). Else: not found.
            held = bool(self.queues.get((header.topic, header.queue_id)))
            if self._broker.version >= V5_0_0:
                zero = header.set_zero_if_not_found is not False and held and self.first_in_memory
            else:
                zero = not held or self.first_in_memory
            if not zero:
                raise broker_error_for(
                    ResponseCode.QUERY_NOT_FOUND, "Not found, maybe this group consumer boot first"
                )
            committed = 0
        return _answer(request, header=QueryConsumerOffsetResponseHeader(offset=committed))

    async def update_consumer_offset(self, request: RemotingCommand) -> RemotingCommand | None:
        header = _parse(UpdateConsumerOffsetRequestHeader, request)
        self.consumer_offsets[(header.consumer_group, header.topic, header.queue_id)] = header.commit_offset
        return _answer(request)

    async def get_max_offset(self, request: RemotingCommand) -> RemotingCommand | None:
        header = _parse(GetMaxOffsetRequestHeader, request)
        offset = len(self.queues.get((header.topic, header.queue_id), ()))
        return _answer(request, header=GetMaxOffsetResponseHeader(offset=offset))

    async def get_min_offset(self, request: RemotingCommand) -> RemotingCommand | None:
        _parse(GetMinOffsetRequestHeader, request)
        return _answer(request, header=GetMinOffsetResponseHeader(offset=0))

    async def search_offset(self, request: RemotingCommand) -> RemotingCommand | None:
        header = _parse(SearchOffsetRequestHeader, request)
        queue = self.queues.get((header.topic, header.queue_id), [])
        if self._broker.version < V5_1_1:
            offset = nearest_by_time([m.store_timestamp for m in queue], header.timestamp)
        else:
            offset = next(
                (m.queue_offset for m in queue if m.store_timestamp >= header.timestamp), len(queue)
            )
        return _answer(request, header=SearchOffsetResponseHeader(offset=offset))

    async def heartbeat(self, request: RemotingCommand) -> RemotingCommand | None:
        if not request.body:  # nothing to register (some tests send bare heartbeats)
            return _answer(request)
        try:
            data = decode_body(HeartbeatData, request.body)
        except MalformedBody as exc:
            raise broker_error_for(ResponseCode.SYSTEM_ERROR, f"bad heartbeat body: {exc}") from exc
        for consumer in data.consumer_data_set:
            members = self.consumers.setdefault(consumer.group_name, [])
            if data.client_id not in members:
                members.append(data.client_id)
            retry = retry_topic(consumer.group_name)
            if retry not in self.topics:  # as the broker: created with the group's first heartbeat
                self.add_topic(retry, queues=_GROUP_TOPIC_QUEUES, perm=DEFAULT_PERM)
        return _answer(request)

    async def unregister_client(self, request: RemotingCommand) -> RemotingCommand | None:
        header = _parse(UnregisterClientRequestHeader, request)
        members = self.consumers.get(header.consumer_group or "", [])
        if header.client_id in members:
            members.remove(header.client_id)
        return _answer(request)

    async def get_consumer_list(self, request: RemotingCommand) -> RemotingCommand | None:
        header = _parse(GetConsumerListByGroupRequestHeader, request)
        members = self.consumers.get(header.consumer_group)
        if not members:
            raise broker_error_for(
                ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {header.consumer_group}"
            )
        return _answer(request, body=encode_body(ConsumerListBody(consumer_id_list=tuple(members))))

    async def consumer_send_msg_back(self, request: RemotingCommand) -> RemotingCommand | None:
        header = _parse(ConsumerSendMsgBackRequestHeader, request)
        original = self._by_commit_log_offset.get(header.offset)
        if original is None:
            raise broker_error_for(
                ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {header.offset}"
            )
        properties = dict(original.properties)
        properties.setdefault(PropertyKey.RETRY_TOPIC, original.topic)
        properties.setdefault(PropertyKey.ORIGIN_MESSAGE_ID, original.offset_msg_id)
        max_times = header.max_reconsume_times if header.max_reconsume_times is not None else 16
        delay_level = header.delay_level
        if original.reconsume_times >= max_times or delay_level < 0:
            topic = dlq_topic(header.group)
            properties.pop(PropertyKey.DELAY_TIME_LEVEL, None)
        else:
            topic = retry_topic(header.group)
            properties[PropertyKey.DELAY_TIME_LEVEL] = str(delay_level or 3 + original.reconsume_times)
        if topic not in self.topics:
            self.add_topic(topic, queues=_GROUP_TOPIC_QUEUES, perm=DEFAULT_PERM)
        message = Message(topic, original.body, flag=original.flag, properties=properties)
        self.append(
            message, 0, born_timestamp=original.born_timestamp, reconsume_times=original.reconsume_times + 1
        )
        return _answer(request)

    async def lock_batch_mq(self, request: RemotingCommand) -> RemotingCommand | None:
        try:
            body = decode_body(LockBatchRequestBody, request.body)
        except MalformedBody as exc:
            raise broker_error_for(ResponseCode.SYSTEM_ERROR, f"bad lock body: {exc}") from exc
        now = trio.current_time()
        locked: set[MessageQueue] = set()
        for mq in body.mq_set:
            holder = self.locks.get((body.consumer_group, mq))
            if holder is None or holder[0] == body.client_id or now - holder[1] > LOCK_MAX_LIVE_TIME:
                self.locks[(body.consumer_group, mq)] = (body.client_id, now)
                locked.add(mq)
        reply = LockBatchResponseBody(lock_ok_mq_set=frozenset(locked))
        return _answer(request, body=encode_body(reply))

    async def unlock_batch_mq(self, request: RemotingCommand) -> RemotingCommand | None:
        try:
            body = decode_body(UnlockBatchRequestBody, request.body)
        except MalformedBody as exc:
            raise broker_error_for(ResponseCode.SYSTEM_ERROR, f"bad unlock body: {exc}") from exc
        for mq in body.mq_set:
            holder = self.locks.get((body.consumer_group, mq))
            if holder is not None and holder[0] == body.client_id:
                del self.locks[(body.consumer_group, mq)]
        return _answer(request)


def _tag_filter(subscription: str | None, expression_type: str | None) -> Callable[[MessageExt], bool]:
    """The broker's tag filter: ``*`` (or nothing) matches all, else ``"a || b"`` matches those tags."""
    if expression_type not in (None, "TAG") or subscription is None or subscription.strip() in ("", "*"):
        return lambda message: True
    wanted = {tag.strip() for tag in subscription.split("||") if tag.strip()}
    return lambda message: message.tags in wanted
