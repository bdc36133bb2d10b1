"""A FakeBroker's POP consumption: QUERY_ASSIGNMENT, POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE and
CHANGE_MESSAGE_INVISIBLETIME.

Enough of the broker's POP mode for service tests, on the messages of the fake's
:class:`~rocketmq_py.testing._fake_store.FakeStore`:

- QUERY_ASSIGNMENT gives every client all the topic's queues, in the mode of
  :attr:`FakePop.modes` (POP unless a test says PULL), as a broker with ``popShareQueueNum`` -1;
- POP_MESSAGE hands out, from the start of the queue (``initMode`` 1) or from its end at the
  group's first pop (``initMode`` 0), the messages neither acknowledged nor hidden, up to
  ``maxMsgNums``, and hides them for ``invisibleTime`` ms (trio's clock). Each delivery after the
  first counts in the message's ``reconsumeTimes``. With nothing to hand out it waits for a new
  message or a hidden one to reappear, for at most ``pollTime`` ms, then answers
  PULL_NOT_FOUND. The real broker moves a message that reappears to a POP retry topic; the fake
  hands it out again from its queue (checkpoint ``retry`` field 0);
- ACK_MESSAGE marks the message done; so does each message a BATCH_ACK_MESSAGE entry marks
  (answered REQUEST_CODE_NOT_SUPPORTED, as a broker before 5.1.3 does, when the fake's
  ``version`` is older). :attr:`FakePop.acks` records every message acknowledged either way, as
  the ACK_MESSAGE header that would name it; :attr:`FakePop.batch_acks` the batch requests;
- CHANGE_MESSAGE_INVISIBLETIME hides it for the new time from now (recorded in
  :attr:`FakePop.changes`).
"""

from __future__ import annotations

import copy
import time
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import trio

from rocketmq_py.errors import MalformedHeader, broker_error_for
from rocketmq_py.protocol._batch_ack import BatchAck, decode_batch_ack_body
from rocketmq_py.protocol._bodies import MessageQueue
from rocketmq_py.protocol._codes import RequestCode, ResponseCode
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.protocol._ext_fields import CustomHeader, from_ext_fields, to_ext_fields
from rocketmq_py.protocol._json_body import decode_body, encode_body
from rocketmq_py.protocol._pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    MessageQueueAssignment,
    MessageRequestMode,
    PopCheckpoint,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    build_offset_info,
)
from rocketmq_py.protocol._stored import encode_stored_message
from rocketmq_py.protocol._versions import supports_batch_ack

if TYPE_CHECKING:
    from rocketmq_py.testing._fake_broker import BrokerHandler
    from rocketmq_py.testing._fake_store import FakeStore

__all__ = ["FakePop"]

_H = TypeVar("_H", bound=CustomHeader)


def _parse(cls: type[_H], request: RemotingCommand) -> _H:
    try:
        return from_ext_fields(cls, request.ext_fields)
    except MalformedHeader as exc:
        raise broker_error_for(ResponseCode.SYSTEM_ERROR, str(exc)) from exc


@dataclass
class _Popped:
    """One message's POP state for one group."""

    visible_at: float = 0.0  # trio time
    deliveries: int = 0
    acked: bool = False


@dataclass
class _GroupQueue:
    start: int
    messages: dict[int, _Popped] = field(default_factory=dict)


class FakePop:
    """The POP side of a fake broker (see the module docstring)."""

    def __init__(self, store: FakeStore) -> None:
        self._store = store
        #: (topic, group) -> mode QUERY_ASSIGNMENT reports (default POP).
        self.modes: dict[tuple[str, str], MessageRequestMode] = {}
        #: Every message acknowledged, in order: the ACK_MESSAGE header received, or the one that
        #: would name a message a BATCH_ACK_MESSAGE entry marks.
        self.acks: list[AckMessageRequestHeader] = []
        #: The entries of every BATCH_ACK_MESSAGE received, one list per request.
        self.batch_acks: list[list[BatchAck]] = []
        #: Every CHANGE_MESSAGE_INVISIBLETIME header received, in order.
        self.changes: list[ChangeInvisibleTimeRequestHeader] = []
        self._queues: dict[tuple[str, str, int], _GroupQueue] = {}
        self._changed = trio.Event()

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
        return sorted(o for o, p in state.messages.items() if p.acked) if state else []

    # --- handlers ------------------------------------------------------------------------------

    async def query_assignment(self, request: RemotingCommand) -> RemotingCommand | None:
        body = decode_body(QueryAssignmentRequestBody, request.body)
        config = self._store.topics.get(body.topic)
        mode = self.modes.get((body.topic, body.consumer_group), MessageRequestMode.POP)
        name = self._store._broker.broker_name
        queues = range(config.queues) if config is not None else range(0)
        reply = QueryAssignmentResponseBody(
            message_queue_assignments=tuple(
                MessageQueueAssignment(message_queue=MessageQueue(body.topic, name, q), mode=mode)
                for q in queues
            )
        )
        return RemotingCommand.response(request, ResponseCode.SUCCESS, None, None, encode_body(reply))

    async def pop_message(self, request: RemotingCommand) -> RemotingCommand | None:
        header = _parse(PopMessageRequestHeader, request)
        self._store._check_queue(header.topic, header.queue_id)
        key = (header.topic, header.queue_id)
        state = self._queues.get((header.consumer_group, *key))
        if state is None:
            size = len(self._store.queues.get(key, []))
            state = self._queues[(header.consumer_group, *key)] = _GroupQueue(
                0 if header.init_mode == 1 else size
            )
        with trio.move_on_after(header.poll_time / 1000):
            while True:
                offsets, wake_at = self._ready(state, key, header.max_msg_nums)
                if offsets:
                    return self._hand_out(request, header, state, offsets)
                arrival = self._store._arrivals.setdefault(key, trio.Event())
                with trio.move_on_at(wake_at):
                    await arrival.wait()
        header_out = PopMessageResponseHeader(
            pop_time=int(time.time() * 1000), invisible_time=0, revive_qid=0, rest_num=0
        )
        return RemotingCommand.response(request, ResponseCode.PULL_NOT_FOUND, None, to_ext_fields(header_out))

    def _ready(self, state: _GroupQueue, key: tuple[str, int], limit: int) -> tuple[list[int], float]:
        now = trio.current_time()
        wake_at = float("inf")
        ready: list[int] = []
        for offset in range(state.start, len(self._store.queues.get(key, []))):
            popped = state.messages.get(offset)
            if popped is None or (not popped.acked and popped.visible_at <= now):
                if len(ready) < limit:
                    ready.append(offset)
            elif not popped.acked:
                wake_at = min(wake_at, popped.visible_at)
        return ready, wake_at

    def _hand_out(
        self,
        request: RemotingCommand,
        header: PopMessageRequestHeader,
        state: _GroupQueue,
        offsets: list[int],
    ) -> RemotingCommand:
        queue = self._store.queues[(header.topic, header.queue_id)]
        records: list[bytes] = []
        for offset in offsets:
            popped = state.messages.setdefault(offset, _Popped())
            popped.visible_at = trio.current_time() + header.invisible_time / 1000
            msg = copy.copy(queue[offset])
            msg.reconsume_times = popped.deliveries
            popped.deliveries += 1
            records.append(encode_stored_message(msg, compress=False))
        out = PopMessageResponseHeader(
            pop_time=int(time.time() * 1000),
            invisible_time=header.invisible_time,
            revive_qid=0,
            rest_num=0,
            start_offset_info=build_offset_info([("0", header.queue_id, [offsets[0]])]),
            msg_offset_info=build_offset_info([("0", header.queue_id, offsets)]),
        )
        return RemotingCommand.response(
            request, ResponseCode.SUCCESS, None, to_ext_fields(out), b"".join(records)
        )

    def _popped(self, group: str, topic: str, extra_info: str) -> _Popped:
        try:
            ck = PopCheckpoint.parse(extra_info)
        except ValueError as exc:
            raise broker_error_for(ResponseCode.SYSTEM_ERROR, str(exc)) from None
        popped = self._queues.get((group, topic, ck.queue_id), _GroupQueue(0)).messages.get(ck.queue_offset)
        if popped is None:
            raise broker_error_for(
                ResponseCode.NO_MESSAGE, f"{topic} {ck.queue_id} {ck.queue_offset} was not popped"
            )
        return popped

    async def ack_message(self, request: RemotingCommand) -> RemotingCommand | None:
        header = _parse(AckMessageRequestHeader, request)
        self.acks.append(header)
        self._popped(header.consumer_group, header.topic, header.extra_info).acked = True
        return RemotingCommand.response(request, ResponseCode.SUCCESS, None)

    async def batch_ack_message(self, request: RemotingCommand) -> RemotingCommand | None:
        if not supports_batch_ack(self._store._broker.version):
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
        header = _parse(ChangeInvisibleTimeRequestHeader, request)
        self.changes.append(header)
        popped = self._popped(header.consumer_group, header.topic, header.extra_info)
        popped.visible_at = trio.current_time() + header.invisible_time / 1000
        out = ChangeInvisibleTimeResponseHeader(
            pop_time=int(time.time() * 1000), invisible_time=header.invisible_time, revive_qid=0
        )
        return RemotingCommand.response(request, ResponseCode.SUCCESS, None, to_ext_fields(out))
