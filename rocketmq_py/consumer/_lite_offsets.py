"""The lite pull consumer's offsets: committing them, reading the committed one, the queue's ends.

A queue's consumed offset (the one after the last message ``poll`` returned) is written to the
offset store (the brokers, or a local file when broadcasting) by :meth:`LiteCommits.commit`: on
:meth:`~rocketmq_py.LitePullConsumer.commit`, on a revoke and on close; with auto-commit, also
every ``auto_commit_interval`` seconds (:meth:`LiteCommits.commit_consumed`) and as soon as a
queue's start position is resolved (so a member taking it over starts there too). The ends (GET_MIN_OFFSET / GET_MAX_OFFSET) are
asked of the queue's master broker for ``seek_to_beginning`` / ``seek_to_end``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import trio

from rocketmq_py._client._instance import ClientInstance
from rocketmq_py._client._timestamp import offset_for_timestamp
from rocketmq_py.consumer._lite_buffer import LiteQueue
from rocketmq_py.consumer._offset_store_api import OffsetStore
from rocketmq_py.errors import RocketMQError
from rocketmq_py.protocol import MessageQueue

__all__ = ["LiteCommits", "max_offset", "min_offset", "timestamp_offset"]

log = logging.getLogger("rocketmq_py.consumer.lite")


@dataclass(frozen=True, slots=True, kw_only=True)
class LiteCommits:
    """Commits the consumed offsets of the assigned queues (``queues``, the consumer's live table)."""

    store: OffsetStore
    group: str
    auto_commit: bool
    queues: dict[MessageQueue, LiteQueue]

    async def commit(self, state: LiteQueue, *, quiet: bool) -> None:
        """Write ``state``'s consumed offset (without auto-commit and ``quiet``: what is stored).

        Raises:
            RocketMQError: not ``quiet`` and the write failed (``quiet``: logged instead).
        """
        store = self.store
        if self.auto_commit or not quiet:
            store.update(state.mq, state.consumed, increase_only=False)
        if store.get(state.mq) < 0:
            return
        try:
            await store.persist(state.mq)
        except RocketMQError as exc:
            if not quiet:
                raise
            log.warning("%s: committing the offset of %s failed: %s", self.group, state.mq, exc)

    async def commit_released(self, state: LiteQueue) -> None:
        """Commit a revoked queue quietly, then forget its offset unless it was assigned again."""
        await self.commit(state, quiet=True)
        if state.mq not in self.queues:
            self.store.remove(state.mq)

    async def commit_offsets(self, offsets: Iterable[tuple[MessageQueue, int]]) -> None:
        """Write the given ``(queue, offset)`` pairs (queues as the brokers know them), in order.

        Raises:
            RocketMQError: a broker did not accept an offset (or the local file failed).
        """
        store = self.store
        for mq, offset in offsets:
            store.update(mq, offset, increase_only=False)
            await store.persist(mq)

    async def committed(self, mq: MessageQueue) -> int:
        """The group's stored offset of ``mq``, -1 if none; an unassigned queue is not kept."""
        offset = await self.store.read_from_broker(mq)
        if mq not in self.queues:
            self.store.remove(mq)  # reading is not owning: keep it out of the auto-commits
        return offset

    async def commit_all(self, *, quiet: bool) -> None:
        """:meth:`commit` every assigned queue, one after another.

        Not ``quiet`` (``commit()``), only the queues whose consumed offset moved (see
        ``LiteQueue.moved``), as Java's ``DefaultLitePullConsumerImpl.commitAll``: a queue nothing
        was taken from has no progress to store, and its broker may not know the group yet (through
        a 5.x Proxy a broker learns it from the group's first pull; until then it answers an offset
        commit SUBSCRIPTION_GROUP_NOT_EXIST: ``ConsumerManageProcessor.updateConsumerOffset``).

        Raises:
            RocketMQError: not ``quiet`` and a write failed.
        """
        for state in list(self.queues.values()):
            if quiet or state.moved:
                await self.commit(state, quiet=quiet)

    async def commit_consumed(self) -> None:
        """One auto-commit round: every assigned queue's consumed offset, written together."""
        store = self.store
        for state in list(self.queues.values()):
            if state.consumed >= 0:
                store.update(state.mq, state.consumed, increase_only=False)
        # Only assigned queues: a queue read by committed() or released meanwhile is not ours
        # to overwrite (its new owner may have moved on).
        await store.persist_all(self.queues.keys())

    async def auto_commit_loop(self, interval: Callable[[], float]) -> None:
        """Every ``interval()`` seconds (read at each round), :meth:`commit_consumed`."""
        while True:
            await trio.sleep(interval())
            await self.commit_consumed()


async def min_offset(instance: ClientInstance, mq: MessageQueue) -> int:
    """The smallest offset of ``mq`` (GET_MIN_OFFSET to its master broker)."""
    address = await instance.routes.require_master(mq.topic, mq.broker_name)
    return await instance.api.get_min_offset(address, mq.topic, mq.queue_id, mq.broker_name)


async def max_offset(instance: ClientInstance, mq: MessageQueue) -> int:
    """The offset after the last message of ``mq`` (GET_MAX_OFFSET to its master broker)."""
    address = await instance.routes.require_master(mq.topic, mq.broker_name)
    return await instance.api.get_max_offset(address, mq.topic, mq.queue_id, mq.broker_name)


async def timestamp_offset(instance: ClientInstance, mq: MessageQueue, timestamp_ms: int, group: str) -> int:
    """The offset of the first message of ``mq`` stored at or after ``timestamp_ms``; the max if none."""
    address = await instance.routes.require_master(mq.topic, mq.broker_name)
    return await offset_for_timestamp(instance.api, address, mq, timestamp_ms, group=group)
