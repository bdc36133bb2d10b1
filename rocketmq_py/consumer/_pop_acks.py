"""Acknowledging popped messages: BATCH_ACK_MESSAGE per broker, coalesced, or ACK_MESSAGE each.

A POP consumer acknowledges every message it consumed. Java's push consumer sends one
ACK_MESSAGE per message, and the broker stores one revive record per ack. Brokers from 5.1.3
take BATCH_ACK_MESSAGE (:mod:`rocketmq_py.protocol._batch_ack`): one request for many messages,
one revive record per POP checkpoint. :class:`PopAcker` sends that to such brokers, coalescing
as the transport's writer does: a listener call's acks join the broker's pending batch; a sender
task sends the batch at once, and acks that arrive while one batch is on the wire go in the next
one. Nothing waits for a timer, and a burst of listener calls costs one request per round trip.
Each caller returns once the request holding its messages was answered.

A broker whose release is older (its replies' ``version``), or that answers
REQUEST_CODE_NOT_SUPPORTED, gets ACK_MESSAGE per message. A failed ack is logged and not retried:
the message reappears for the group after its invisible time, as when Java's ack fails.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import trio

from rocketmq_py.errors import RequestCodeNotSupported, RocketMQError
from rocketmq_py.protocol import (
    AckMessageRequestHeader,
    MessageExt,
    PopCheckpoint,
    PropertyKey,
    RequestCode,
    batch_acks,
    encode_batch_ack_body,
)
from rocketmq_py.protocol._versions import supports_batch_ack

if TYPE_CHECKING:
    from rocketmq_py._client._instance import ClientInstance

__all__ = ["ACK_TIMEOUT", "PopAcker", "checkpoint_of"]

log = logging.getLogger("rocketmq_py.consumer")

#: Seconds for ACK_MESSAGE, BATCH_ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME (Java ``ASYNC_TIMEOUT``).
ACK_TIMEOUT: Final = 3.0


def checkpoint_of(msg: MessageExt) -> tuple[str, PopCheckpoint] | None:
    """``msg``'s POP checkpoint string and its parsed form; ``None`` when it has none (or a bad one)."""
    text = msg.properties.get(PropertyKey.POP_CK)
    try:
        return (text, PopCheckpoint.parse(text)) if text else None
    except ValueError:
        return None


@dataclass(eq=False)
class _Batch:
    """Acks waiting for one broker's next BATCH_ACK_MESSAGE, and the event of its answer."""

    items: list[tuple[str, PopCheckpoint]] = field(default_factory=list)
    answered: trio.Event = field(default_factory=trio.Event)


class PopAcker:
    """Acknowledges a POP consumer's messages (see the module docstring).

    Args:
        instance: the consumer's client instance (routes, connections, broker releases).
        group: the consumer group as the brokers know it.
        wire_topic: a message's topic as the brokers know it (the namespace put back).
        nursery: where the sender tasks run (the POP service's).
    """

    def __init__(
        self,
        instance: ClientInstance,
        group: str,
        wire_topic: Callable[[MessageExt], str],
        nursery: trio.Nursery,
    ) -> None:
        self._instance = instance
        self._group = group
        self._wire_topic = wire_topic
        self._nursery = nursery
        self._pending: dict[tuple[str, str], _Batch] = {}  # (address, broker name) -> next batch
        self._sending: set[tuple[str, str]] = set()  # those with a sender task
        self._single_only: set[str] = set()  # addresses that refused BATCH_ACK_MESSAGE
        #: BATCH_ACK_MESSAGE requests answered (for tests and benchmarks).
        self.batch_requests = 0

    async def ack(self, msgs: Sequence[MessageExt]) -> None:
        """Acknowledge ``msgs``; returns once every broker answered (or failed: logged)."""
        batches: list[_Batch] = []
        singles: list[tuple[MessageExt, str, PopCheckpoint, str]] = []
        for msg in msgs:
            found = checkpoint_of(msg)
            if found is None:
                log.warning("%s: %s has no POP checkpoint to acknowledge", self._group, msg)
                continue
            text, ck = found
            topic = self._wire_topic(msg)
            try:
                address = await self._instance.routes.require_master(topic, ck.broker_name)
            except RocketMQError as exc:
                log.warning("%s: ACK_MESSAGE of %s failed: %s", self._group, msg, exc)
                continue
            version = self._instance.api.peer_versions.get(address)
            if version is None or not supports_batch_ack(version) or address in self._single_only:
                singles.append((msg, text, ck, address))
                continue
            batch = self._join(address, ck.broker_name)
            batch.items.append((topic, ck))
            if batch not in batches:  # (by identity)
                batches.append(batch)
        for msg, text, ck, address in singles:
            await self._ack_one(msg, text, ck, address)
        for batch in batches:
            await batch.answered.wait()

    def _join(self, address: str, broker_name: str) -> _Batch:
        key = (address, broker_name)
        batch = self._pending.get(key)
        if batch is None:
            batch = self._pending[key] = _Batch()
        if key not in self._sending:
            self._sending.add(key)
            self._nursery.start_soon(self._send_batches, key)
        return batch

    async def _send_batches(self, key: tuple[str, str]) -> None:
        """Send the pending batch of ``key`` until none is left (acks that came meanwhile go next)."""
        try:
            while (batch := self._pending.pop(key, None)) is not None:
                try:
                    await self._send_batch(key, batch)
                finally:
                    batch.answered.set()
        finally:
            self._sending.discard(key)

    async def _send_batch(self, key: tuple[str, str], batch: _Batch) -> None:
        address, broker_name = key
        body = encode_batch_ack_body(broker_name, batch_acks(self._group, batch.items))
        try:
            await self._instance.api.call(
                address, RequestCode.BATCH_ACK_MESSAGE, None, body, timeout=ACK_TIMEOUT
            )
        except RequestCodeNotSupported:
            log.info("%s: %s does not take BATCH_ACK_MESSAGE: acks one by one", self._group, address)
            self._single_only.add(address)
            for topic, ck in batch.items:
                await self._send_one(topic, ck.encode(), ck, address)
        except RocketMQError as exc:
            log.warning(
                "%s: BATCH_ACK_MESSAGE of %d messages to %s failed: %s",
                self._group,
                len(batch.items),
                address,
                exc,
            )
        else:
            self.batch_requests += 1

    async def _ack_one(self, msg: MessageExt, text: str, ck: PopCheckpoint, address: str) -> None:
        await self._send_one(self._wire_topic(msg), text, ck, address)

    async def _send_one(self, topic: str, text: str, ck: PopCheckpoint, address: str) -> None:
        header = AckMessageRequestHeader(
            consumer_group=self._group,
            topic=ck.stored_topic(topic, self._group),
            queue_id=ck.queue_id,
            extra_info=text,
            offset=ck.queue_offset,
            broker_name=ck.broker_name,
        )
        try:
            await self._instance.api.call(address, RequestCode.ACK_MESSAGE, header, timeout=ACK_TIMEOUT)
        except RocketMQError as exc:
            log.warning("%s: ACK_MESSAGE of %s %d failed: %s", self._group, topic, ck.queue_offset, exc)
