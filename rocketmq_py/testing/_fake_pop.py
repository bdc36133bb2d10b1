"""A FakeBroker's POP consumption: QUERY_ASSIGNMENT, POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE and
CHANGE_MESSAGE_INVISIBLETIME, on the messages of the fake's
:class:`~rocketmq_py.testing._fake_store.FakeStore` (which it takes; it never sees the broker).

Each behaviour is read from the broker's source (5.3.3, ``broker/.../processor/``), named here so
that a test relying on it can cite it, and so that the fake cannot drift into agreeing with a
misreading of the client's own:

- QUERY_ASSIGNMENT gives every client all the topic's queues in the mode of :attr:`FakePop.modes`
  (POP unless a test says PULL), as a broker with ``popShareQueueNum`` -1
  (``QueryAssignmentProcessor.doLoadBalance``). The real broker lists the queues of every broker
  of the topic, from its route (``TopicRouteInfoManager.getTopicSubscribeInfo``); the fake lists
  its own unless :attr:`FakePop.route_queues` gives the route's.
- POP_MESSAGE reads from the group's **consumer offset** of the queue, the same table PULL and
  UPDATE_CONSUMER_OFFSET use, and commits the offset after what it hands out at once
  (``PopMessageProcessor.getPopOffset`` and ``popMsgFromQueue``): a group switched from PULL to
  POP goes on where its pulls were committed, and back again. A group with no offset starts as
  ``getInitOffset`` decides and commits that start: ``initMode`` MIN (0) at the queue's min offset,
  MAX (1) at max offset - 1, except that with ``initPopOffsetByCheckMsgInMem`` (the broker's
  default, :attr:`FakePop.init_offset_by_check_in_mem`) a queue whose first message is still in
  memory (always, in the fake) starts at 0; a retry topic always starts at its min offset.
  Handed-out messages stay hidden for ``invisibleTime`` ms (trio's clock).
- A hidden message neither acknowledged nor re-timed when its time runs out is **revived**: a copy
  is stored in the group's POP retry topic ``%RETRY%<group>_<topic>``, queue 0, with reconsume
  times + 1 and ``1ST_POP_TIME`` (``PopReviveService.reviveRetry``; the real broker does it on its
  revive scan, a few seconds late; the fake's :meth:`FakePop.revive_loop` on time). POP_MESSAGE hands out the topic's
  queue first and fills the rest of the batch from the retry topic, whose messages carry their
  ``POP_CK`` and the original topic's name (the broker's path for the 80 % of pops that do not try
  the retry topic first, ``popFromRetryProbability`` 20; ``popResponseReturnActualRetryTopic``
  off). With nothing to hand out it waits for a message or a revival, at most ``pollTime`` ms,
  then answers PULL_NOT_FOUND.
- ACK_MESSAGE marks the message done; so does each message a BATCH_ACK_MESSAGE entry marks
  (answered REQUEST_CODE_NOT_SUPPORTED, as a broker before 5.1.3 does, when the fake's ``version``
  is older). An ack that comes after the revival changes nothing (the copy is out). :attr:`acks`
  records every message acknowledged either way, as the ACK_MESSAGE header that would name it;
  :attr:`batch_acks` the batch requests.
- CHANGE_MESSAGE_INVISIBLETIME hides it for the new time from now (recorded in :attr:`changes`).
"""

from __future__ import annotations

import copy
import time
from collections.abc import MutableMapping
from dataclasses import dataclass, field

import trio

from rocketmq_py.errors import broker_error_for
from rocketmq_py.protocol._batch_ack import BatchAck, decode_batch_ack_body
from rocketmq_py.protocol._bodies import MessageQueue
from rocketmq_py.protocol._codes import RequestCode, ResponseCode
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.protocol._ext_fields import to_ext_fields
from rocketmq_py.protocol._json_body import decode_body, encode_body
from rocketmq_py.protocol._message import Message, MessageExt
from rocketmq_py.protocol._pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    ConsumeInitMode,
    MessageQueueAssignment,
    MessageRequestMode,
    PopCheckpoint,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    build_offset_info,
    pop_retry_topic,
    retry_mark,
)
from rocketmq_py.protocol._properties import PropertyKey
from rocketmq_py.protocol._stored import encode_stored_message
from rocketmq_py.protocol._versions import supports_batch_ack
from rocketmq_py.testing._fake_handlers import BrokerHandler, parse_header
from rocketmq_py.testing._fake_store import FakeStore

__all__ = ["FakePop"]

_RETRY_PREFIX = "%RETRY%"
#: The fake's revive queue id (a real broker has several: ``reviveQueueNum``, 8).
_REVIVE_QID = 0


async def _first_of(events: list[trio.Event]) -> None:
    """Return once any of ``events`` is set."""
    async with trio.open_nursery() as nursery:

        async def wait(event: trio.Event) -> None:
            await event.wait()
            nursery.cancel_scope.cancel()

        for event in events:
            nursery.start_soon(wait, event)


@dataclass
class _Popped:
    """One handed-out message of one group: hidden until ``visible_at`` (trio time)."""

    topic: str  # the topic the message was popped for (the original, for a retry copy)
    pop_time: int  # epoch ms
    visible_at: float
    acked: bool = False
    revived: bool = False


@dataclass
class _GroupQueue:
    popped: dict[int, _Popped] = field(default_factory=dict)  # by queue offset


class FakePop:
    """The POP side of a fake broker (see the module docstring)."""

    def __init__(self, store: FakeStore) -> None:
        self._store = store
        #: (topic, group) -> mode QUERY_ASSIGNMENT reports (default POP).
        self.modes: dict[tuple[str, str], MessageRequestMode] = {}
        #: topic -> the queues QUERY_ASSIGNMENT lists, as the route gives them (default: this
        #: fake's own queues of the topic).
        self.route_queues: dict[str, list[MessageQueue]] = {}
        #: The broker's ``initPopOffsetByCheckMsgInMem`` (default true): a new group in MAX mode
        #: starts at 0 when the queue's first message is in memory (always, in the fake).
        self.init_offset_by_check_in_mem = True
        #: Every message acknowledged, in order: the ACK_MESSAGE header received, or the one that
        #: would name a message a BATCH_ACK_MESSAGE entry marks.
        self.acks: list[AckMessageRequestHeader] = []
        #: The entries of every BATCH_ACK_MESSAGE received, one list per request.
        self.batch_acks: list[list[BatchAck]] = []
        #: Every CHANGE_MESSAGE_INVISIBLETIME header received, in order.
        self.changes: list[ChangeInvisibleTimeRequestHeader] = []
        #: Every message revived into a POP retry topic, as stored there.
        self.revived: list[MessageExt] = []
        self._queues: dict[tuple[str, str, int], _GroupQueue] = {}
        self._wake = trio.Event()  # wakes the revive loop: a message was hidden or re-timed

    def install(self, handlers: MutableMapping[int, BrokerHandler]) -> None:
        """Register the five handlers."""
        handlers[RequestCode.QUERY_ASSIGNMENT] = self.query_assignment
        handlers[RequestCode.POP_MESSAGE] = self.pop_message
        handlers[RequestCode.ACK_MESSAGE] = self.ack_message
        handlers[RequestCode.BATCH_ACK_MESSAGE] = self.batch_ack_message
        handlers[RequestCode.CHANGE_MESSAGE_INVISIBLETIME] = self.change_invisible_time

    def acked(self, group: str, topic: str, queue_id: int) -> list[int]:
        """The offsets of ``topic``/``queue_id`` that ``group`` acknowledged, sorted."""
        state = self._queues.get((group, topic, queue_id))
        return sorted(o for o, p in state.popped.items() if p.acked) if state else []

    def init_offset(self, topic: str, queue_id: int, init_mode: int) -> int:
        """Where a group with no offset starts (``PopMessageProcessor.getInitOffset``)."""
        size = len(self._store.queues.get((topic, queue_id), []))
        min_offset = 0  # the fake deletes nothing
        if init_mode == ConsumeInitMode.MIN or topic.startswith(_RETRY_PREFIX):
            return min_offset
        if self.init_offset_by_check_in_mem and min_offset <= 0 and size > 0:
            return 0
        return max(size - 1, 0)

    # --- handlers ------------------------------------------------------------------------------

    async def query_assignment(self, request: RemotingCommand) -> RemotingCommand | None:
        body = decode_body(QueryAssignmentRequestBody, request.body)
        config = self._store.topics.get(body.topic)
        mode = self.modes.get((body.topic, body.consumer_group), MessageRequestMode.POP)
        name = self._store.broker.broker_name
        queues = self.route_queues.get(body.topic) or [
            MessageQueue(body.topic, name, q) for q in range(config.queues if config is not None else 0)
        ]
        reply = QueryAssignmentResponseBody(
            message_queue_assignments=tuple(
                MessageQueueAssignment(message_queue=mq, mode=mode) for mq in queues
            )
        )
        return RemotingCommand.response(request, ResponseCode.SUCCESS, None, None, encode_body(reply))

    async def pop_message(self, request: RemotingCommand) -> RemotingCommand | None:
        header = parse_header(PopMessageRequestHeader, request)
        self._store.check_queue(header.topic, header.queue_id)
        group, topic = header.consumer_group, header.topic
        retry = pop_retry_topic(topic, group)
        with trio.move_on_after(header.poll_time / 1000):
            while True:
                wake_at = self._revive(group)
                taken = self._take(header, topic, header.queue_id, header.max_msg_nums)
                if len(taken) < header.max_msg_nums and (retry, 0) in self._store.queues:
                    taken += self._take(header, retry, 0, header.max_msg_nums - len(taken))
                if taken:
                    return self._hand_out(request, header, taken)
                # A new message or a revived one wakes the long poll (the broker notifies the
                # topic's pops of its retry topic's arrivals too).
                arrivals = self._store.arrivals
                events = [
                    arrivals.setdefault(key, trio.Event()) for key in ((topic, header.queue_id), (retry, 0))
                ]
                with trio.move_on_at(wake_at):
                    await _first_of(events)
        header_out = PopMessageResponseHeader(
            pop_time=int(time.time() * 1000), invisible_time=0, revive_qid=0, rest_num=0
        )
        return RemotingCommand.response(request, ResponseCode.PULL_NOT_FOUND, None, to_ext_fields(header_out))

    def _take(
        self, header: PopMessageRequestHeader, topic: str, queue_id: int, limit: int
    ) -> list[tuple[str, MessageExt]]:
        """Up to ``limit`` messages of ``topic``/``queue_id`` from the group's offset, which moves past them."""
        store = self._store
        key = (header.consumer_group, topic, queue_id)
        offset = store.consumer_offsets.get(key, -1)
        if offset < 0:
            offset = store.consumer_offsets[key] = self.init_offset(topic, queue_id, header.init_mode)
        queue = store.queues.get((topic, queue_id), [])
        taken = queue[offset : offset + limit]
        if not taken:
            return []
        store.consumer_offsets[key] = offset + len(taken)
        state = self._queues.setdefault(key, _GroupQueue())
        now = trio.current_time()
        pop_time = int(time.time() * 1000)
        for msg in taken:
            state.popped[msg.queue_offset] = _Popped(
                header.topic, pop_time, now + header.invisible_time / 1000
            )
        self._wake.set()
        return [(topic, msg) for msg in taken]

    def _hand_out(
        self,
        request: RemotingCommand,
        header: PopMessageRequestHeader,
        taken: list[tuple[str, MessageExt]],
    ) -> RemotingCommand:
        pop_time = int(time.time() * 1000)
        broker_name = self._store.broker.broker_name
        records: list[bytes] = []
        starts: dict[tuple[str, int], int] = {}
        offsets: dict[tuple[str, int], list[int]] = {}
        for stored_topic, stored in taken:
            key = (retry_mark(stored_topic), stored.queue_id)
            starts.setdefault(key, stored.queue_offset)
            offsets.setdefault(key, []).append(stored.queue_offset)
            msg = stored
            if stored_topic != header.topic:  # a retry copy: its checkpoint, the original topic
                msg = copy.copy(stored)
                ck = PopCheckpoint(
                    starts[key],
                    pop_time,
                    header.invisible_time,
                    _REVIVE_QID,
                    key[0],
                    broker_name,
                    stored.queue_id,
                    stored.queue_offset,
                )
                msg.properties = {**stored.properties, PropertyKey.POP_CK: ck.encode()}
                msg.topic = header.topic
            records.append(encode_stored_message(msg, compress=False))
        out = PopMessageResponseHeader(
            pop_time=pop_time,
            invisible_time=header.invisible_time,
            revive_qid=_REVIVE_QID,
            rest_num=0,
            start_offset_info=build_offset_info([(r, q, [o]) for (r, q), o in starts.items()]),
            msg_offset_info=build_offset_info([(r, q, o) for (r, q), o in offsets.items()]),
        )
        return RemotingCommand.response(
            request, ResponseCode.SUCCESS, None, to_ext_fields(out), b"".join(records)
        )

    async def revive_loop(self) -> None:
        """The broker's revive service, for every group: wakes when the next hidden message's time
        runs out (or a pop or a re-timing changed that) and stores the retry copies due."""
        while True:
            self._wake = trio.Event()
            wake_at = self._revive(None)
            with trio.move_on_at(wake_at):
                await self._wake.wait()

    def _revive(self, group: str | None) -> float:
        """Store a retry copy of each message of ``group`` (None: every group) whose time ran out;
        return when the next one's will."""
        now = trio.current_time()
        wake_at = float("inf")
        for (owner, topic, queue_id), state in list(self._queues.items()):
            if group is not None and owner != group:
                continue
            for offset, popped in state.popped.items():
                if popped.acked or popped.revived:
                    continue
                if popped.visible_at > now:
                    wake_at = min(wake_at, popped.visible_at)
                    continue
                popped.revived = True
                self._store_retry_copy(owner, popped, self._store.queues[(topic, queue_id)][offset])
        return wake_at

    def _store_retry_copy(self, group: str, popped: _Popped, stored: MessageExt) -> None:
        retry = pop_retry_topic(popped.topic, group)
        if retry not in self._store.topics:
            self._store.add_topic(retry, queues=1, perm=6)  # addRetryTopicIfNotExist
        properties = dict(stored.properties)
        if stored.reconsume_times == 0 or PropertyKey.FIRST_POP_TIME not in properties:
            properties[PropertyKey.FIRST_POP_TIME] = str(popped.pop_time)
        properties.pop(PropertyKey.POP_CK, None)
        copy_ = self._store.append(
            Message(retry, stored.body, flag=stored.flag, properties=properties),
            0,
            born_timestamp=stored.born_timestamp,
            sys_flag=stored.sys_flag,
            reconsume_times=stored.reconsume_times + 1,
        )
        self.revived.append(copy_)

    def _popped(self, group: str, topic: str, extra_info: str) -> _Popped:
        try:
            ck = PopCheckpoint.parse(extra_info)
        except ValueError as exc:
            raise broker_error_for(ResponseCode.SYSTEM_ERROR, str(exc)) from None
        state = self._queues.get((group, topic, ck.queue_id), _GroupQueue())
        popped = state.popped.get(ck.queue_offset)
        if popped is None:
            raise broker_error_for(
                ResponseCode.NO_MESSAGE, f"{topic} {ck.queue_id} {ck.queue_offset} was not popped"
            )
        return popped

    async def ack_message(self, request: RemotingCommand) -> RemotingCommand | None:
        header = parse_header(AckMessageRequestHeader, request)
        self.acks.append(header)
        self._popped(header.consumer_group, header.topic, header.extra_info).acked = True
        return RemotingCommand.response(request, ResponseCode.SUCCESS, None)

    async def batch_ack_message(self, request: RemotingCommand) -> RemotingCommand | None:
        if not supports_batch_ack(self._store.broker.version):
            return RemotingCommand.response(
                request, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f"request type {request.code} not supported"
            )
        broker_name, entries = decode_batch_ack_body(request.body)
        self.batch_acks.append(entries)
        for entry in entries:
            for offset in entry.offsets:
                ck = PopCheckpoint(
                    entry.start_offset,
                    entry.pop_time,
                    entry.invisible_time,
                    entry.revive_queue_id,
                    entry.retry,
                    broker_name,
                    entry.queue_id,
                    offset,
                )
                header = AckMessageRequestHeader(
                    consumer_group=entry.consumer_group,
                    topic=ck.stored_topic(entry.topic, entry.consumer_group),
                    queue_id=entry.queue_id,
                    extra_info=ck.encode(),
                    offset=offset,
                    broker_name=broker_name,
                )
                self.acks.append(header)
                self._popped(header.consumer_group, header.topic, header.extra_info).acked = True
        return RemotingCommand.response(request, ResponseCode.SUCCESS, None)

    async def change_invisible_time(self, request: RemotingCommand) -> RemotingCommand | None:
        header = parse_header(ChangeInvisibleTimeRequestHeader, request)
        self.changes.append(header)
        popped = self._popped(header.consumer_group, header.topic, header.extra_info)
        popped.visible_at = trio.current_time() + header.invisible_time / 1000
        self._wake.set()
        out = ChangeInvisibleTimeResponseHeader(
            pop_time=int(time.time() * 1000), invisible_time=header.invisible_time, revive_qid=_REVIVE_QID
        )
        return RemotingCommand.response(request, ResponseCode.SUCCESS, None, to_ext_fields(out))
