"""Bulk sending: many messages through one started producer, batched, ordered where asked, bounded.

:func:`send_many` feeds the messages to a :class:`~rocketmq_py.producer._batcher.Batcher` and sends
the chunks it completes: unordered chunks concurrently (``max_in_flight`` requests at most), the
chunks of each ordered lane (messages with a sharding key, to the queue Java's
``SelectMessageQueueByHash`` picks for it, and messages given with the queue they go to) one at a
time in order, with one attempt each as Java's ordered sends. It returns once every request was
answered. Used by the Spark sink (every row of a
task, failing at the first error) and by the CLI's ``send --count`` (counting failures and going on).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

import trio

from rocketmq_py.errors import (
    BrokerError,
    InvalidMessage,
    InvalidOption,
    RocketMQError,
    TransportError,
    first_of_ours,
)
from rocketmq_py.producer._batcher import Batcher, Chunk
from rocketmq_py.producer._producer import Producer
from rocketmq_py.producer._selectors import select_by_sharding_key
from rocketmq_py.producer._types import SendResult
from rocketmq_py.protocol import Message, MessageQueue

__all__ = ["DEFAULT_BATCH_SIZE", "DEFAULT_MAX_IN_FLIGHT", "SendCounts", "send_many"]

#: Messages per batch send (Java's batches are unbounded in count; 4 MiB in size).
DEFAULT_BATCH_SIZE: Final = 64
#: Send requests kept in flight (Java has no equivalent: its sync sends are one at a time).
DEFAULT_MAX_IN_FLIGHT: Final = 16
_LANE_BUFFER: Final = 2  # chunks queued per ordered lane before the feeding loop waits

#: ``on_sent(result, chunk)``: a request of ``chunk`` was acknowledged.
OnSent = Callable[[SendResult, Chunk], None]
#: ``on_failure(error, chunk)``: a request failed with a broker or transport error; sending goes on.
OnFailure = Callable[[RocketMQError, Chunk], None]
#: ``describe(chunk)``: the note added to the error of a failed request when sending stops.
Describe = Callable[[Chunk], str]


@dataclass(slots=True)
class SendCounts:
    """What was sent: acknowledged messages, requests, body bytes, messages per topic; failures."""

    messages: int = 0
    requests: int = 0
    body_bytes: int = 0
    topics: dict[str, int] = field(default_factory=dict)
    failed_messages: int = 0


def _describe(chunk: Chunk) -> str:
    first, last = chunk.first_index, chunk.last_index
    which = f"message {first}" if first == last else f"messages {first}..{last}"
    return f"send_many: sending {which} to topic {chunk.messages[0].topic!r} failed"


class _Loop:
    def __init__(
        self,
        producer: Producer,
        nursery: trio.Nursery,
        max_in_flight: int,
        on_sent: OnSent | None,
        on_failure: OnFailure | None,
        describe: Describe,
    ) -> None:
        self.producer = producer
        self.nursery = nursery
        self.slots = trio.Semaphore(max_in_flight)
        self.on_sent = on_sent
        self.on_failure = on_failure
        self.describe = describe
        self.counts = SendCounts()
        self.lanes: dict[MessageQueue, trio.MemorySendChannel[Chunk]] = {}

    async def dispatch(self, chunk: Chunk) -> None:
        if chunk.queue is None:
            await self.slots.acquire()
            self.nursery.start_soon(self._send_and_release, chunk)
            return
        lane = self.lanes.get(chunk.queue)
        if lane is None:
            lane, receive = trio.open_memory_channel[Chunk](_LANE_BUFFER)
            self.lanes[chunk.queue] = lane
            self.nursery.start_soon(self._lane, receive)
        await lane.send(chunk)

    async def _lane(self, receive: trio.MemoryReceiveChannel[Chunk]) -> None:
        async with receive:
            async for chunk in receive:
                async with self.slots:
                    await self._send(chunk)

    async def _send_and_release(self, chunk: Chunk) -> None:
        try:
            await self._send(chunk)
        finally:
            self.slots.release()

    async def _send(self, chunk: Chunk) -> None:
        messages = chunk.messages
        try:
            if len(messages) == 1:
                result = await self.producer.send(messages[0], queue=chunk.queue)
            else:
                result = await self.producer.send_batch(messages, queue=chunk.queue)
        except (BrokerError, TransportError) as exc:
            if self.on_failure is None:
                exc.add_note(self.describe(chunk))
                raise
            self.counts.failed_messages += len(messages)
            self.on_failure(exc, chunk)
            return
        except RocketMQError as exc:
            exc.add_note(self.describe(chunk))
            raise
        counts = self.counts
        counts.requests += 1
        counts.messages += len(messages)
        counts.body_bytes += sum(len(m.body) for m in messages)
        counts.topics[messages[0].topic] = counts.topics.get(messages[0].topic, 0) + len(messages)
        if self.on_sent is not None:
            self.on_sent(result, chunk)

    async def close_lanes(self) -> None:
        for lane in self.lanes.values():
            await lane.aclose()


async def send_many(
    producer: Producer,
    messages: Iterable[Message | tuple[Message, MessageQueue]],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    on_sent: Callable[[SendResult, Chunk], None] | None = None,
    on_failure: Callable[[RocketMQError, Chunk], None] | None = None,
    describe: Callable[[Chunk], str] = _describe,
) -> SendCounts:
    """Send ``messages`` with a started ``producer``; return once every request was answered.

    A ``(message, queue)`` pair sends the message to that queue (plain names, as the producer's
    namespace has them), as a message with a sharding key goes to its key's queue: in order with
    the other messages for the queue, one request at a time, one attempt each. Other messages go
    where the producer's own queue selection sends them.

    Args:
        batch_size: most messages per request (1: plain sends); a message with a delay level or
            above the batch size limit goes alone.
        max_in_flight: most requests waiting for their answer at once.
        on_sent: called after each acknowledged request with its result and its
            :class:`~rocketmq_py.Chunk`.
        on_failure: when given, a request failing with a broker or transport error is reported here
            and counted (``failed_messages``) and sending goes on; other errors (an invalid
            message, a topic without a route) still stop everything.
        describe: the note added to the error that stops the sending (default names the messages'
            positions and topic).

    Raises:
        InvalidOption: ``batch_size`` or ``max_in_flight`` is below 1 (nothing sent).
        InvalidMessage: a pair's queue is of another topic, or not a queue the topic's route
            lets the producer write to (with the ``describe`` note; the messages before it are sent).
        RocketMQError: the first error that stopped the sending (the other requests are
            cancelled), not wrapped in an exception group, with the ``describe`` note.
    """
    if max_in_flight < 1:
        raise InvalidOption(f"max_in_flight must be at least 1, not {max_in_flight}")
    batcher = Batcher(batch_size)
    try:
        async with trio.open_nursery() as nursery:
            loop = _Loop(producer, nursery, max_in_flight, on_sent, on_failure, describe)
            for index, item in enumerate(messages):
                message, queue = item if isinstance(item, tuple) else (item, None)
                if queue is not None:
                    queue = await _named_queue(producer, message, queue, index, describe)
                elif message.sharding_key is not None:
                    queue = select_by_sharding_key(
                        await producer.fetch_publish_queues(message.topic), message, None
                    )
                for chunk in batcher.add(message, index, queue):
                    await loop.dispatch(chunk)
            for chunk in batcher.flush():
                await loop.dispatch(chunk)
            await loop.close_lanes()
    except BaseExceptionGroup as group:
        error = first_of_ours(group)
        if isinstance(error, Exception):
            raise error from None
        raise
    return loop.counts


async def _named_queue(
    producer: Producer, message: Message, queue: MessageQueue, index: int, describe: Describe
) -> MessageQueue:
    """``queue``, once checked against ``message`` and the topic's route.

    Raises:
        InvalidMessage: another topic's queue, or one the route has no writable queue for.
    """
    if queue.topic != message.topic:
        error = InvalidMessage(
            f"queue {queue.topic}/{queue.broker_name}/{queue.queue_id} is not of topic {message.topic!r}"
        )
    else:
        writable = await producer.fetch_publish_queues(message.topic)
        if queue in writable:
            return queue
        names = ", ".join(f"{q.broker_name}/{q.queue_id}" for q in writable)
        error = InvalidMessage(
            f"topic {message.topic!r} has no writable queue {queue.broker_name}/{queue.queue_id} (its queues: {names})"
        )
    error.add_note(describe(Chunk(messages=[message], first_index=index, indexes=[index])))
    raise error
