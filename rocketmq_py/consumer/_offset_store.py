"""Consume offsets of a clustering consumer group, kept by the brokers (Java ``RemoteBrokerOffsetStore``).

The table holds, per owned queue, the offset to commit: the smallest offset still in flight (see
``ProcessQueue.remove_messages``), only ever moved forward by consumption. ``persist_all`` sends
every entry to its broker with a oneway UPDATE_CONSUMER_OFFSET (every 5 s, as Java; those of one
broker in one write), or, ``acknowledged``, each in a request whose answer it waits for (an
orderly member: see ``consumer/_assignment.py``); ``persist`` sends one synchronously (a queue
being dropped, shutdown). The broker is its master, or while the
master is down a slave of it (Java ``findBrokerAddressInSubscribe(name, MASTER_ID, false)``): the
slave keeps the group's offsets meanwhile, and queues assigned then still find where to start.

A commit that failed on a queue no longer in the table (given up while its broker was down or
restarting) is not forgotten, unlike Java's (``removeUnnecessaryMessageQueue`` persists, then
removes the offset): it is sent again with each ``persist_all`` until the broker takes it, for at
most :data:`UNSENT_TTL` seconds, and before the queue's offset is read again. A broker killed with
SIGKILL loses the offsets committed since its last flush (``flushConsumerOffsetInterval``, 5 s);
without the resend, whoever takes the queue after its restart consumes those seconds again.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable
from typing import Final

import trio

from rocketmq_py._client._api import RemotingApi
from rocketmq_py._client._route_service import RouteService
from rocketmq_py.errors import RocketMQError
from rocketmq_py.protocol import MessageQueue

__all__ = ["ACKNOWLEDGED_CONCURRENCY", "UNSENT_TTL", "RemoteOffsetStore"]

#: Acknowledged commits (``persist_all(acknowledged=True)``) waiting for their answers at once.
ACKNOWLEDGED_CONCURRENCY: Final = 16
#: Seconds a failed commit of a queue given up is sent again (an older one could undo the progress
#: of the queue's next owner).
UNSENT_TTL: Final = 300.0

log = logging.getLogger("rocketmq_py.offsets")


class RemoteOffsetStore:
    """Offsets of one consumer group, committed to the brokers."""

    def __init__(self, api: RemotingApi, routes: RouteService, group: str) -> None:
        self._api = api
        self._routes = routes
        self.group = group
        self._table: dict[MessageQueue, int] = {}
        # Failed commits: queue -> (offset, when it first failed); sent again once not in _table.
        self._unsent: dict[MessageQueue, tuple[int, float]] = {}

    def get(self, mq: MessageQueue) -> int:
        """The offset in memory (-1 when none)."""
        return self._table.get(mq, -1)

    def update(self, mq: MessageQueue, offset: int, *, increase_only: bool = True) -> None:
        if offset < 0:
            return
        current = self._table.get(mq)
        if current is None or not increase_only or offset > current:
            self._table[mq] = offset

    def remove(self, mq: MessageQueue) -> None:
        self._table.pop(mq, None)

    def snapshot(self) -> dict[MessageQueue, int]:
        return dict(self._table)

    async def _broker(self, mq: MessageQueue) -> str:
        return await self._routes.require_replica(mq.topic, mq.broker_name)

    async def read_from_broker(self, mq: MessageQueue) -> int:
        """The broker's stored offset (>= 0), -1 when it has none; also kept in memory.

        A failed commit of the queue (see the module docstring) is sent first.

        Raises:
            RocketMQError: the broker could not be asked (Java's -2: retry later).
        """
        if mq in self._unsent and mq not in self._table:
            await self._send_unsent(mq)
        offset = await self.read_persisted(mq)
        if offset >= 0:
            self.update(mq, offset, increase_only=False)
        return offset

    async def read_persisted(self, mq: MessageQueue) -> int:
        """The broker's stored offset (>= 0), -1 when it has none; the table in memory is untouched.

        Raises:
            RocketMQError: the broker could not be asked.
        """
        return await self._api.query_consumer_offset(
            await self._broker(mq), self.group, mq.topic, mq.queue_id, mq.broker_name
        )

    async def persist(self, mq: MessageQueue) -> None:
        """Commit one queue's offset now (synchronous UPDATE_CONSUMER_OFFSET)."""
        offset = self._table.get(mq)
        if offset is None:
            return
        try:
            await self._api.update_consumer_offset(
                await self._broker(mq), self.group, mq.topic, mq.queue_id, offset, mq.broker_name
            )
        except RocketMQError:
            _, since = self._unsent.get(mq, (offset, trio.current_time()))
            self._unsent[mq] = (offset, since)
            raise
        self._unsent.pop(mq, None)

    async def _send_unsent(self, mq: MessageQueue) -> bool:
        """Send the failed commit of ``mq`` again (synchronously); True once the broker took it.

        The periodic commit and a rebalance reading the queue's offset may send it at the same
        time, and a newer commit may fail meanwhile: only the entry sent is forgotten, if still there.
        """
        entry = self._unsent[mq]
        offset, since = entry
        if trio.current_time() - since > UNSENT_TTL:
            log.warning("%s: the offset %d of %s was never committed; given up", self.group, offset, mq)
            del self._unsent[mq]
            return False
        try:
            await self._api.update_consumer_offset(
                await self._broker(mq), self.group, mq.topic, mq.queue_id, offset, mq.broker_name
            )
        except RocketMQError as exc:
            log.info("%s: committing the offset %d of %s failed again: %s", self.group, offset, mq, exc)
            return False
        log.info("%s: committed the offset %d of %s (it failed before)", self.group, offset, mq)
        if self._unsent.get(mq) == entry:
            del self._unsent[mq]
        return True

    async def _send_all_unsent(self) -> None:
        """Send every failed commit of a queue not in the table again, at once (a queue in the
        table again has its newer offset committed instead)."""
        for mq in [mq for mq in self._unsent if mq in self._table]:
            del self._unsent[mq]
        limiter = trio.CapacityLimiter(ACKNOWLEDGED_CONCURRENCY)

        async def send(mq: MessageQueue) -> None:
            async with limiter:
                if mq in self._unsent:
                    await self._send_unsent(mq)

        async with trio.open_nursery() as nursery:
            for mq in list(self._unsent):
                nursery.start_soon(send, mq)

    async def persist_all(
        self,
        owned: Iterable[MessageQueue] | None = None,
        *,
        acknowledged: bool = False,
        hold: Collection[MessageQueue] = (),
    ) -> int:
        """Commit every offset in memory (oneway), dropping entries of queues no longer owned.

        ``acknowledged``: one UPDATE_CONSUMER_OFFSET per queue, :data:`ACKNOWLEDGED_CONCURRENCY` at
        a time, each answered before this returns (failures are logged).

        Returns:
            How many offsets were sent (``acknowledged``: stored).
        """
        if owned is not None:
            keep = set(owned)
            for mq in [mq for mq in self._table if mq not in keep]:
                del self._table[mq]
        # One write per broker: the oneway commits of all its queues go out together.
        by_broker: dict[str, list[tuple[MessageQueue, int]]] = {}
        for mq, offset in list(self._table.items()):
            if mq in hold:
                continue
            try:
                address = await self._broker(mq)
            except RocketMQError as exc:
                log.warning("persisting the offset of %s failed: %s", mq, exc)
                continue
            by_broker.setdefault(address, []).append((mq, offset))
        if acknowledged:
            stored = await self._commit_each(by_broker)
            await self._send_all_unsent()
            return stored
        sent = 0
        for address, entries in by_broker.items():
            try:
                await self._api.update_consumer_offsets_oneway(address, self.group, entries)
                sent += len(entries)
            except RocketMQError as exc:
                log.warning(
                    "persisting the offsets of %d queues to %s failed: %s", len(entries), address, exc
                )
        await self._send_all_unsent()
        return sent

    async def _commit_each(self, by_broker: dict[str, list[tuple[MessageQueue, int]]]) -> int:
        stored = 0
        limiter = trio.CapacityLimiter(ACKNOWLEDGED_CONCURRENCY)

        async def commit(address: str, mq: MessageQueue, offset: int) -> None:
            nonlocal stored
            async with limiter:
                try:
                    await self._api.update_consumer_offset(
                        address, self.group, mq.topic, mq.queue_id, offset, mq.broker_name
                    )
                except RocketMQError as exc:
                    log.warning("persisting the offset of %s failed: %s", mq, exc)
                    return
            stored += 1

        async with trio.open_nursery() as nursery:
            for address, entries in by_broker.items():
                for mq, offset in entries:
                    nursery.start_soon(commit, address, mq, offset)
        return stored
