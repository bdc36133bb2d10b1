"""The background writer of trace records (Java ``AsyncTraceDispatcher``), on trio.

Clients with ``enable_trace=True`` hand their records to a :class:`TraceDispatcher` without
waiting (:meth:`TraceDispatcher.append`: a bounded queue; when it is full the record is dropped
and counted, as Java drops it, so tracing never slows or blocks a send or a listener). Its task
sends them with a sender of its own (group ``_INNER_TRACE_PRODUCER-<group>``, the client's
settings: NameServer, ACL, TLS) to the trace topic: as soon as ``batch_num`` records wait, else
every ``flush_interval`` seconds; the records of one batch are grouped by the topic they are
about, joined into bodies of at most ``max_message_size`` bytes, and each body is sent with the
traced messages' ids and keys as its ``KEYS`` (``mqadmin queryMsgTraceById`` looks them up by
those). A failed send is logged and counted; its records are not retried (Java neither). On close,
what is queued is flushed within ``close_timeout`` seconds.

The client gives the dispatcher an :class:`OpenTraceSender` to open that sender with (``Producer``
itself is one), so that this package never imports the producer, which imports it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import deque
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Protocol

import trio

from rocketmq_py._client._config import ClientConfig
from rocketmq_py._transport._nursery import open_service_nursery
from rocketmq_py.errors import RocketMQError
from rocketmq_py.protocol import Message
from rocketmq_py.protocol._trace import TRACE_TOPIC, TraceRecord, trace_keys

__all__ = ["OpenTraceSender", "TraceDispatcher", "TraceSender", "TraceStatistics"]

log = logging.getLogger("rocketmq_py.trace")

#: Records per flush. Java's ``traceMsgBatchNum`` is 10 (at most 20); a trace message costs the
#: traced client about what one of its sends costs, so fewer, fuller ones keep tracing cheap.
DEFAULT_BATCH_NUM = 100
#: Bytes per trace message (Java ``AsyncTraceDispatcher.maxMsgSize``).
DEFAULT_MAX_MESSAGE_SIZE = 128_000
#: Seconds a record may wait for a batch to fill (Java ``flushTraceInterval``, 5 s).
DEFAULT_FLUSH_INTERVAL = 5.0
#: Records kept waiting at most; more are dropped (Java ``queueSize``, 2048).
DEFAULT_QUEUE_SIZE = 2048
#: Seconds given to the last flush when the client closes.
DEFAULT_CLOSE_TIMEOUT = 3.0


class TraceSender(Protocol):
    """What the dispatcher sends trace messages with (a started ``Producer``)."""

    async def send(self, message: Message) -> object:
        """Send ``message`` and wait for the broker to store it (raises a RocketMQError if not)."""
        ...


class OpenTraceSender(Protocol):
    """Makes the dispatcher's sender: ``async with open_sender(group, config=config) as sender``.

    ``Producer`` is one (its constructor); the dispatcher calls it once per :meth:`TraceDispatcher.run`.
    """

    def __call__(self, group: str, *, config: ClientConfig) -> AbstractAsyncContextManager[TraceSender]:
        """A sender of producer group ``group`` with the client settings ``config``, not yet started."""
        ...


@dataclass(slots=True)
class TraceStatistics:
    """What the dispatcher did: records queued, dropped (queue full), sent and lost (failed sends)."""

    appended: int = 0
    dropped: int = 0
    records_sent: int = 0
    records_failed: int = 0
    messages_sent: int = 0


class TraceDispatcher:
    """Queues trace records and writes them to the trace topic in the background.

    Args:
        group: the traced client's group (names the dispatcher's own producer group).
        config: the traced client's settings; the dispatcher's sender uses a copy under its own
            instance name.
        open_sender: makes that sender (e.g. ``Producer``).
        trace_topic: where records go (default ``RMQ_SYS_TRACE_TOPIC``).
    """

    def __init__(
        self,
        group: str,
        config: ClientConfig,
        *,
        open_sender: OpenTraceSender,
        trace_topic: str | None = None,
        batch_num: int = DEFAULT_BATCH_NUM,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        flush_interval: float = DEFAULT_FLUSH_INTERVAL,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    ) -> None:
        self.group = group
        self.trace_topic = trace_topic or TRACE_TOPIC
        self.batch_num = batch_num
        self.max_message_size = max_message_size
        self.flush_interval = flush_interval
        self.queue_size = queue_size
        self.close_timeout = close_timeout
        self._config = dataclasses.replace(config, instance_name=None)
        self._open_sender = open_sender
        self._queue: deque[TraceRecord] = deque()
        self._wake = trio.Event()
        self._closing = False
        self.statistics = TraceStatistics()

    def append(self, record: TraceRecord) -> None:
        """Queue a record (never waits: dropped and counted when ``queue_size`` records wait)."""
        stats = self.statistics
        if len(self._queue) >= self.queue_size:
            stats.dropped += 1
            return
        self._queue.append(record)
        stats.appended += 1
        if len(self._queue) >= self.batch_num:
            self._wake.set()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The dispatcher's task for the duration of the block; leaving it flushes what is queued."""
        async with open_service_nursery() as nursery:
            await nursery.start(self.run)
            try:
                yield
            finally:
                self._closing = True  # run() flushes within close_timeout, then closes its sender
                self._wake.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Open the sender, then flush until :meth:`running` ends (a last flush, ``close_timeout``)."""
        self._closing = False
        async with self._open_sender(f"_INNER_TRACE_PRODUCER-{self.group}", config=self._config) as sender:
            task_status.started()
            while not self._closing:
                with trio.move_on_after(self.flush_interval):
                    await self._wake.wait()
                self._wake = trio.Event()
                if self._closing:
                    break
                await self.flush(sender)
            with trio.move_on_after(self.close_timeout):
                await self.flush(sender)
            if self._queue:
                self.statistics.records_failed += len(self._queue)
                log.warning("%s: %d trace records not sent before closing", self.group, len(self._queue))
                self._queue.clear()

    async def flush(self, sender: TraceSender) -> None:
        """Send every queued record now, ``batch_num`` at a time."""
        while self._queue:
            batch = [self._queue.popleft() for _ in range(min(self.batch_num, len(self._queue)))]
            by_topic: dict[str, list[TraceRecord]] = {}
            for record in batch:
                topic = getattr(record, "topic", "")
                by_topic.setdefault(topic, []).append(record)
            for records in by_topic.values():
                for body, keys, count in self._bodies(records):
                    await self._send(sender, body, keys, count)

    def _bodies(self, records: list[TraceRecord]) -> list[tuple[str, list[str], int]]:
        bodies: list[tuple[str, list[str], int]] = []
        parts: list[str] = []
        keys: dict[str, None] = {}
        size = 0
        for record in records:
            data = record.encode()
            parts.append(data)
            keys[record.msg_id] = None
            if record.keys:
                keys.update(dict.fromkeys(trace_keys(record)))
            size += len(data)
            if size >= self.max_message_size:
                bodies.append(("".join(parts), list(keys), len(parts)))
                parts, keys, size = [], {}, 0
        if parts:
            bodies.append(("".join(parts), list(keys), len(parts)))
        return bodies

    async def _send(self, sender: TraceSender, body: str, keys: list[str], count: int) -> None:
        stats = self.statistics
        message = Message(self.trace_topic, body.encode("utf-8"), keys=keys)
        try:
            await sender.send(message)
        except RocketMQError as exc:
            stats.records_failed += count
            log.warning(
                "%s: %d trace records could not be sent to %s: %s", self.group, count, self.trace_topic, exc
            )
            return
        stats.records_sent += count
        stats.messages_sent += 1
