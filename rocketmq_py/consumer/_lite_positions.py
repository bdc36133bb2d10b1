"""The lite pull consumer's positions: paused queues, seeks, the queues' ends, commits.

:class:`LitePositions` is a base of :class:`~rocketmq_py.consumer._lite_pull.LitePullConsumer`
that holds this part of its public API (the API reference and the facades read these methods
from the consumer class). What the methods do is in the parts they call: the buffer pauses
(:mod:`._lite_buffer`), :class:`~rocketmq_py.consumer._lite_assign.LiteQueues` seeks,
:class:`~rocketmq_py.consumer._lite_offsets.LiteCommits` commits, :mod:`._lite_offsets` and
:mod:`._lag` ask the brokers for offsets. What the methods work with is the consumer's, declared
below: its group, buffer, client instance and those parts, and its queue names (the namespace).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import trio

from rocketmq_py._client._instance import ClientInstance
from rocketmq_py._deprecation import warn_deprecated
from rocketmq_py.consumer._lag import queue_ends
from rocketmq_py.consumer._lite_assign import LiteQueues
from rocketmq_py.consumer._lite_buffer import LiteBuffer
from rocketmq_py.consumer._lite_offsets import LiteCommits, max_offset, min_offset, timestamp_offset
from rocketmq_py.protocol import MessageQueue

__all__ = ["LitePositions"]


class LitePositions:
    """Pause, seek and commit the queues of a lite pull consumer (see the module docstring)."""

    # --- what the positions work with (the consumer's: LitePullConsumer and GroupMember) --------

    group: str  # the group the offsets are committed for, as the brokers know it
    _buffer: LiteBuffer  # pulled batches waiting for poll (pausing is the buffer's)

    @property
    def _client_instance(self) -> ClientInstance:
        raise NotImplementedError

    def _running(self) -> trio.Nursery:
        raise NotImplementedError

    def _wire_queue(self, mq: MessageQueue) -> MessageQueue:
        raise NotImplementedError

    def _user_queues(self, queues: Iterable[MessageQueue]) -> list[MessageQueue]:
        raise NotImplementedError

    def _lite_queues(self) -> LiteQueues:
        raise NotImplementedError

    def _commits(self) -> LiteCommits:
        raise NotImplementedError

    # --- pause, seek, commit ---------------------------------------------------------------------

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        """Stop pulling ``queues`` and keep their buffered messages from poll until resumed."""
        self._buffer.pause(self._wire_queue(mq) for mq in queues)

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        """Undo :meth:`pause`."""
        self._buffer.resume(self._wire_queue(mq) for mq in queues)

    def paused(self) -> frozenset[MessageQueue]:
        """The queues paused now."""
        return frozenset(self._user_queues(self._buffer.paused()))

    def seek(self, mq: MessageQueue, offset: int) -> None:
        """Pull ``mq`` from ``offset`` next; its buffered messages are discarded.

        The consumed offset moves to ``offset`` too, so the next commit stores it. An offset
        outside the queue is corrected by the broker to the nearest end (OFFSET_ILLEGAL).

        Raises:
            StateError: the consumer is not running.
            ClientError: ``mq`` is not assigned to this consumer.
            InvalidOption: ``offset`` < 0 (a :class:`~rocketmq_py.errors.ClientError`).
        """
        self._lite_queues().seek(self._wire_queue(mq), offset)

    async def seek_to_beginning(self, mq: MessageQueue) -> None:
        """Seek to the queue's smallest offset (GET_MIN_OFFSET); aiokafka's name.

        Raises:
            StateError: the consumer is not running.
            ClientError: ``mq`` is not assigned to this consumer.
        """
        self._running()
        self.seek(mq, await min_offset(self._client_instance, self._wire_queue(mq)))

    async def seek_to_begin(self, mq: MessageQueue) -> None:
        """Deprecated: :meth:`seek_to_beginning`, the same seek under aiokafka's name."""
        warn_deprecated("LitePullConsumer.seek_to_begin is deprecated; use seek_to_beginning")
        await self.seek_to_beginning(mq)

    async def seek_to_end(self, mq: MessageQueue) -> None:
        """Seek past the queue's last message (GET_MAX_OFFSET): only new messages follow."""
        self._running()
        self.seek(mq, await max_offset(self._client_instance, self._wire_queue(mq)))

    async def seek_to_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> None:
        """Seek to the first message stored at or after ``timestamp_ms`` (SEARCH_OFFSET_BY_TIMESTAMP)."""
        self._running()
        self.seek(mq, await self.offset_for_timestamp(mq, timestamp_ms))

    async def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """The offset of the first message of ``mq`` stored at or after ``timestamp_ms``; the max offset if none.

        The same answer from every broker release (an older broker's is corrected by reading the
        stored timestamps near it).
        """
        return await timestamp_offset(self._client_instance, self._wire_queue(mq), timestamp_ms, self.group)

    async def end_offsets(self, queues: Iterable[MessageQueue]) -> dict[MessageQueue, int]:
        """Each queue's offset after its last message (GET_MAX_OFFSET), assigned or not; aiokafka's name.

        Raises:
            StateError: the consumer is not started.
            RocketMQError: a queue's broker could not be asked (the first such error).
        """
        return await self._queue_ends(queues, end=True)

    async def beginning_offsets(self, queues: Iterable[MessageQueue]) -> dict[MessageQueue, int]:
        """Each queue's first offset still stored (GET_MIN_OFFSET), assigned or not; aiokafka's name.

        Raises:
            StateError: the consumer is not started.
            RocketMQError: a queue's broker could not be asked (the first such error).
        """
        return await self._queue_ends(queues, end=False)

    async def _queue_ends(self, queues: Iterable[MessageQueue], *, end: bool) -> dict[MessageQueue, int]:
        named = {self._wire_queue(mq): mq for mq in queues}
        found = await queue_ends(self._client_instance, named, end=end)
        return {named[mq]: found[mq] for mq in named}

    async def committed(self, mq: MessageQueue) -> int:
        """The group's committed offset of ``mq`` as stored (broker, or local file); -1 if none."""
        return await self._commits().committed(self._wire_queue(mq))

    async def commit(self, offsets: Mapping[MessageQueue, int] | None = None) -> None:
        """Commit now, synchronously.

        Args:
            offsets: queue -> offset of the next message to consume; default the consumed
                offset (the one after the last message returned by poll) of every assigned
                queue that poll returned messages from or a seek moved (as Java's ``commitSync``).

        Raises:
            RocketMQError: a broker did not accept an offset (or the local file failed).
        """
        self._running()
        if offsets is None:
            await self._commits().commit_all(quiet=False)
        else:
            await self._commits().commit_offsets((self._wire_queue(mq), o) for mq, o in offsets.items())
