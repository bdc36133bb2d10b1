"""A FakeBroker's default handlers for consumer groups, on its FakeStore::

    QUERY_CONSUMER_OFFSET (14),    a committed-offset table per (group, topic, queue); a group with
    UPDATE_CONSUMER_OFFSET (15)    no offset gets 0 while the queue's first message is in memory
                                   (``first_in_memory``, default true: a young broker; a 4.x fake
                                   also for an empty queue), else QUERY_NOT_FOUND
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

Malformed request headers and bodies are answered SYSTEM_ERROR, as the broker does.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Final

import trio

from rocketmq_py.errors import MalformedBody, broker_error_for
from rocketmq_py.protocol._bodies import (
    ConsumerListBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    UnlockBatchRequestBody,
)
from rocketmq_py.protocol._codes import RequestCode, ResponseCode
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.protocol._group_headers import (
    ConsumerSendMsgBackRequestHeader,
    GetConsumerListByGroupRequestHeader,
    UnregisterClientRequestHeader,
)
from rocketmq_py.protocol._headers import (
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketmq_py.protocol._json_body import decode_body, encode_body
from rocketmq_py.protocol._message import Message
from rocketmq_py.protocol._names import dlq_topic, retry_topic
from rocketmq_py.protocol._properties import PropertyKey
from rocketmq_py.protocol._versions import V5_0_0
from rocketmq_py.testing._fake_handlers import BrokerHandler, answer, parse_header
from rocketmq_py.testing._fake_store import DEFAULT_PERM, GROUP_TOPIC_QUEUES, FakeStore

__all__ = ["LOCK_MAX_LIVE_TIME", "GroupHandlers"]

#: Seconds a queue lock lives without renewal (broker ``rebalanceLockMaxLiveTime`` = 60000 ms).
LOCK_MAX_LIVE_TIME: Final = 60.0


class GroupHandlers:
    """The consumer-group handlers of one store (see the module docstring)."""

    def __init__(self, store: FakeStore) -> None:
        self._store = store

    def install(self, handlers: MutableMapping[int, BrokerHandler]) -> None:
        """Register the handlers (codes listed in the module docstring)."""
        handlers[RequestCode.QUERY_CONSUMER_OFFSET] = self.query_consumer_offset
        handlers[RequestCode.UPDATE_CONSUMER_OFFSET] = self.update_consumer_offset
        handlers[RequestCode.HEART_BEAT] = self.heartbeat
        handlers[RequestCode.UNREGISTER_CLIENT] = self.unregister_client
        handlers[RequestCode.GET_CONSUMER_LIST_BY_GROUP] = self.get_consumer_list
        handlers[RequestCode.CONSUMER_SEND_MSG_BACK] = self.consumer_send_msg_back
        handlers[RequestCode.LOCK_BATCH_MQ] = self.lock_batch_mq
        handlers[RequestCode.UNLOCK_BATCH_MQ] = self.unlock_batch_mq

    async def query_consumer_offset(self, request: RemotingCommand) -> RemotingCommand | None:
        store = self._store
        header = parse_header(QueryConsumerOffsetRequestHeader, request)
        committed = store.consumer_offsets.get((header.consumer_group, header.topic, header.queue_id))
        if committed is None:
            # As the broker (ConsumerManageProcessor.queryConsumerOffset), for a group with no offset
            # on a queue whose min offset is 0 (the fake deletes nothing): 5.x answers 0 while the
            # queue's first message is in memory (checkInMemByConsumeOffset: false for an empty
            # queue), unless told not to; 4.x answers 0 unless that message is on disk only
            # (!checkInDiskByConsumeOffset: true for an empty queue). Else: not found.
            held = bool(store.queues.get((header.topic, header.queue_id)))
            if store.broker.version >= V5_0_0:
                zero = header.set_zero_if_not_found is not False and held and store.first_in_memory
            else:
                zero = not held or store.first_in_memory
            if not zero:
                raise broker_error_for(
                    ResponseCode.QUERY_NOT_FOUND, "Not found, maybe this group consumer boot first"
                )
            committed = 0
        return answer(request, header=QueryConsumerOffsetResponseHeader(offset=committed))

    async def update_consumer_offset(self, request: RemotingCommand) -> RemotingCommand | None:
        store = self._store
        header = parse_header(UpdateConsumerOffsetRequestHeader, request)
        store.consumer_offsets[(header.consumer_group, header.topic, header.queue_id)] = header.commit_offset
        return answer(request)

    async def heartbeat(self, request: RemotingCommand) -> RemotingCommand | None:
        store = self._store
        if not request.body:  # nothing to register (some tests send bare heartbeats)
            return answer(request)
        try:
            data = decode_body(HeartbeatData, request.body)
        except MalformedBody as exc:
            raise broker_error_for(ResponseCode.SYSTEM_ERROR, f"bad heartbeat body: {exc}") from exc
        for consumer in data.consumer_data_set:
            members = store.consumers.setdefault(consumer.group_name, [])
            if data.client_id not in members:
                members.append(data.client_id)
            retry = retry_topic(consumer.group_name)
            if retry not in store.topics:  # as the broker: created with the group's first heartbeat
                store.add_topic(retry, queues=GROUP_TOPIC_QUEUES, perm=DEFAULT_PERM)
        return answer(request)

    async def unregister_client(self, request: RemotingCommand) -> RemotingCommand | None:
        store = self._store
        header = parse_header(UnregisterClientRequestHeader, request)
        members = store.consumers.get(header.consumer_group or "", [])
        if header.client_id in members:
            members.remove(header.client_id)
        return answer(request)

    async def get_consumer_list(self, request: RemotingCommand) -> RemotingCommand | None:
        store = self._store
        header = parse_header(GetConsumerListByGroupRequestHeader, request)
        members = store.consumers.get(header.consumer_group)
        if not members:
            raise broker_error_for(
                ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {header.consumer_group}"
            )
        return answer(request, body=encode_body(ConsumerListBody(consumer_id_list=tuple(members))))

    async def consumer_send_msg_back(self, request: RemotingCommand) -> RemotingCommand | None:
        store = self._store
        header = parse_header(ConsumerSendMsgBackRequestHeader, request)
        original = store.by_commit_log_offset.get(header.offset)
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
        if topic not in store.topics:
            store.add_topic(topic, queues=GROUP_TOPIC_QUEUES, perm=DEFAULT_PERM)
        message = Message(topic, original.body, flag=original.flag, properties=properties)
        store.append(
            message, 0, born_timestamp=original.born_timestamp, reconsume_times=original.reconsume_times + 1
        )
        return answer(request)

    async def lock_batch_mq(self, request: RemotingCommand) -> RemotingCommand | None:
        store = self._store
        try:
            body = decode_body(LockBatchRequestBody, request.body)
        except MalformedBody as exc:
            raise broker_error_for(ResponseCode.SYSTEM_ERROR, f"bad lock body: {exc}") from exc
        now = trio.current_time()
        locked: set[MessageQueue] = set()
        for mq in body.mq_set:
            holder = store.locks.get((body.consumer_group, mq))
            if holder is None or holder[0] == body.client_id or now - holder[1] > LOCK_MAX_LIVE_TIME:
                store.locks[(body.consumer_group, mq)] = (body.client_id, now)
                locked.add(mq)
        reply = LockBatchResponseBody(lock_ok_mq_set=frozenset(locked))
        return answer(request, body=encode_body(reply))

    async def unlock_batch_mq(self, request: RemotingCommand) -> RemotingCommand | None:
        store = self._store
        try:
            body = decode_body(UnlockBatchRequestBody, request.body)
        except MalformedBody as exc:
            raise broker_error_for(ResponseCode.SYSTEM_ERROR, f"bad unlock body: {exc}") from exc
        for mq in body.mq_set:
            holder = store.locks.get((body.consumer_group, mq))
            if holder is not None and holder[0] == body.client_id:
                del store.locks[(body.consumer_group, mq)]
        return answer(request)
