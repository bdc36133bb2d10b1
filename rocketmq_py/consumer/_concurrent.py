"""Concurrent consumption (Java ``ConsumeMessageConcurrentlyService``): workers, outcomes, send-back.

``consume_concurrency`` worker tasks take batches (at most ``consume_batch_max_size`` messages of
one queue) from a bounded channel the pull loops fill, and call the listener under
``consume_timeout``. Then, per batch:

- success: the messages leave the queue's cache; the offset to commit becomes the smallest
  offset still in flight (``ProcessQueue.remove_messages``);
- failure (RECONSUME_LATER, an exception or the timeout), CLUSTERING: each message goes back to
  the broker (CONSUMER_SEND_MSG_BACK: the retry topic, next delay level); if that fails, a copy is
  sent to ``%RETRY%group`` through the consumer's own client; if that fails too, the message is
  consumed again locally 5 s later (counted as a redelivery, as Java);
- failure, BROADCASTING: the messages are dropped with a warning (Java does the same).

A batch of a queue being handed off (revoked) is not started: the next owner pulls it again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

import trio

from rocketmq_py.consumer._flow import SEND_BACK_LOCAL_RETRY_DELAY_MS
from rocketmq_py.consumer._listener import ConsumeStatus, concurrent_status, consume_call
from rocketmq_py.consumer._queue_state import QueueState
from rocketmq_py.consumer._retry import retry_message
from rocketmq_py.errors import RocketMQError
from rocketmq_py.protocol import MessageExt

if TYPE_CHECKING:
    from rocketmq_py.consumer._push import PushConsumer

__all__ = ["CONSUME_CHANNEL_SIZE", "SEND_BACK_TIMEOUT", "ConcurrentService"]

log = logging.getLogger("rocketmq_py.consumer")

#: Seconds to wait for CONSUMER_SEND_MSG_BACK (Java: 5000 ms) before re-sending to the retry topic.
SEND_BACK_TIMEOUT: Final = 5.0
#: Batches waiting for a worker, over all queues (Java's consume executor queue is unbounded; the
#: per-queue flow-control limits keep this one far from full in practice).
CONSUME_CHANNEL_SIZE: Final = 10_000

_Batch = tuple[QueueState, list[MessageExt]]


class ConcurrentService:
    """The workers consuming a push consumer's messages concurrently."""

    def __init__(self, consumer: PushConsumer) -> None:
        self._consumer = consumer
        self._send: trio.MemorySendChannel[_Batch] | None = None

    def start(self, nursery: trio.Nursery) -> None:
        """Start the ``consume_concurrency`` workers in ``nursery``."""
        send, receive = trio.open_memory_channel[_Batch](CONSUME_CHANNEL_SIZE)
        self._send = send
        for _ in range(self._consumer.consume_concurrency):
            nursery.start_soon(self._worker, receive.clone())
        receive.close()

    async def hand_over(self, state: QueueState, msgs: Sequence[MessageExt]) -> None:
        """Queue ``msgs`` (just cached by ``state``'s pull loop) for the workers, batch by batch.

        Waits while the channel is full; the pull loop counts as alive meanwhile.
        """
        assert self._send is not None
        size = self._consumer.consume_batch_max_size
        state.handing_off = True  # busy workers are no reason to drop the queue as idle
        try:
            for start in range(0, len(msgs), size):
                await self._send.send((state, list(msgs[start : start + size])))
        finally:
            state.handing_off = False
            state.pq.last_pull_time = trio.current_time()

    async def _worker(self, receive: trio.MemoryReceiveChannel[_Batch]) -> None:
        async with receive:
            async for state, msgs in receive:
                if state.pq.dropped or state.revoking:
                    continue  # cached, never handed over: the next owner pulls it again
                state.begin()
                try:
                    await self._consume(state, msgs)
                finally:
                    state.end()

    async def _consume(self, state: QueueState, msgs: list[MessageExt]) -> None:
        consumer = self._consumer
        started = trio.current_time()
        assert consumer.listener is not None
        status = await consume_call(
            consumer.listener,
            msgs,
            group=consumer.group,
            queue=state.mq,
            timeout=consumer.consume_timeout,
            read=concurrent_status,
            failed=ConsumeStatus.RECONSUME_LATER,
        )
        state.pq.last_consume_time = trio.current_time()
        ok = status is ConsumeStatus.CONSUME_SUCCESS
        counters = consumer._counters
        counters.count_consume(state.mq.topic, len(msgs), ok, started)
        if state.pq.dropped:
            return
        retry_later: list[MessageExt] = []
        if ok:
            counters.consumed += len(msgs)
        elif consumer.broadcasting:
            counters.failed += len(msgs)
            log.warning(
                "%s: broadcasting consumption of %d messages of %s failed: dropped (%s)",
                consumer.group,
                len(msgs),
                state.mq,
                [m.msg_id for m in msgs],
            )
        else:
            counters.failed += len(msgs)
            for msg in msgs:
                if not await self._send_back(state, msg):
                    retry_later.append(msg)
        done = [m for m in msgs if m not in retry_later] if retry_later else msgs
        offset = state.pq.remove_messages(done)
        if offset >= 0 and not state.pq.dropped:
            consumer.offsets.update(state.mq, offset)
        if retry_later:
            consumer._running().start_soon(self._consume_later, state, retry_later)

    async def _consume_later(self, state: QueueState, msgs: list[MessageExt]) -> None:
        for msg in msgs:  # as Java: a local retry counts as a delivery
            msg.reconsume_times += 1
        await trio.sleep(SEND_BACK_LOCAL_RETRY_DELAY_MS / 1000)
        if not state.pq.dropped and not state.revoking:
            await self.hand_over(state, msgs)

    async def _send_back(self, state: QueueState, msg: MessageExt) -> bool:
        """Hand a failed message back: CONSUMER_SEND_MSG_BACK, else a re-send to the retry topic.

        As Java's ``sendMessageBack``, any send-back failure is followed by the re-send, a timeout
        included, although the broker may then have stored the message after all: two copies come
        back (at-least-once). Not re-sending would lose the message whenever the broker did not get
        it (its offset is committed), and consuming it again locally would duplicate it just the
        same. ``False`` (the re-send failed too): the caller consumes it again locally.
        """
        consumer = self._consumer
        instance = consumer.instance
        address = instance.routes.master_address(state.mq.broker_name) or msg.store_host
        try:
            await instance.api.consumer_send_msg_back(
                address,
                msg,
                consumer.group,
                delay_level=0,  # the broker picks 3 + reconsume times
                max_reconsume_times=consumer.max_reconsume_times,
                broker_name=state.mq.broker_name,
                timeout=SEND_BACK_TIMEOUT,
            )
            return True
        except RocketMQError as exc:
            log.warning(
                "send-back of %s to %s failed (%s): re-sending it to the retry topic",
                msg.msg_id,
                address,
                exc,
            )
        retry = retry_message(
            msg,
            consumer.group,
            reconsume_times=msg.reconsume_times + 1,
            max_reconsume_times=consumer.max_reconsume_times,
        )
        try:
            await consumer._inner().send(retry)
            return True
        except RocketMQError as exc:
            log.warning(
                "re-sending %s to %s failed: %s; consuming it again in 5 s", msg.msg_id, retry.topic, exc
            )
            return False
