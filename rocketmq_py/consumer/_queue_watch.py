"""Watching topics' queue sets for the lite pull consumer (Java ``TopicMessageQueueChangeListener``).

A :class:`QueueWatcher` holds one listener per topic and the queue set each listener last heard
of. Its task, under the consumer's nursery, checks every watched topic once before the consumer's
``async with`` block runs, then every ``interval`` seconds, and at once after a registration while
running. A check asks the NameServer for the topic's route (never the cache: a topic that gained
queues on a broker shows them only in a fresh route) and takes its readable queues, as
:meth:`~rocketmq_py.consumer._lite_pull.LitePullConsumer.fetch_message_queues` does. The listener
is called with the topic and the new set when the set differs from the one it last heard of, and
always on the first check after it was registered (or after the consumer was opened again): Java
only records the set at registration; here the listener learns the starting point too, so that one
function both assigns the queues at start and follows their changes.

A listener is a plain function, called in the consumer's task (it may call the consumer's own
methods such as ``assign``; it should not block), or an ``async def``, awaited there. An exception
is logged and the check goes on; the set is kept as heard, so the listener is not called again
until the set changes once more. A failed route fetch is logged and retried at the next check.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable
from typing import Final, Protocol

import trio

from rocketmq_py._client._route_service import RouteService
from rocketmq_py.errors import RocketMQError
from rocketmq_py.producer._validation import validate_topic
from rocketmq_py.protocol import MessageQueue

__all__ = ["TOPIC_METADATA_CHECK_INTERVAL_MS", "QueueChangeListener", "QueueWatcher"]

log = logging.getLogger("rocketmq_py.consumer.lite")

#: Seconds between checks of the watched topics' queues (Java ``topicMetadataCheckIntervalMillis`` =
#: 30000; Java's first check comes 10 s after start, ours before the ``async with`` block runs).
TOPIC_METADATA_CHECK_INTERVAL_MS: Final = 30000


class QueueChangeListener(Protocol):
    """``listener(topic, queues)``: told a topic's readable queues, at first and when they change.

    Java ``TopicMessageQueueChangeListener.onChanged``. A plain function or an ``async def``
    (any callable of this shape); its result is ignored and an exception is logged.
    """

    def __call__(self, topic: str, queues: frozenset[MessageQueue], /) -> Awaitable[None] | None:
        """``queues`` (all readable queues of ``topic``) differ from the ones last announced."""
        ...


class QueueWatcher:
    """The topics a lite consumer watches, their listeners, and the queue sets last announced.

    Args:
        group: the consumer group (for the log).
        interval: seconds between checks.
    """

    def __init__(self, group: str, interval: float) -> None:
        self.group = group
        self.interval = interval
        self._listeners: dict[str, QueueChangeListener] = {}
        self._heard: dict[str, frozenset[MessageQueue]] = {}
        self._check_now = trio.Event()

    def register(self, topic: str, listener: QueueChangeListener) -> None:
        """Watch ``topic`` with ``listener`` (replacing an earlier one): the next check calls it."""
        validate_topic(topic)
        if not callable(listener):
            raise TypeError(f"a queue-change listener must be callable, got {listener!r}")
        if topic in self._listeners:
            log.warning("%s: the queue-change listener of %s is replaced", self.group, topic)
        self._listeners[topic] = listener
        self._heard.pop(topic, None)  # the new listener hears the current set at the next check
        self._check_now.set()

    def topics(self) -> frozenset[str]:
        """The watched topics."""
        return frozenset(self._listeners)

    async def run(
        self, routes: RouteService, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Check once (ready after it), then every :attr:`interval` seconds or after a registration."""
        self._heard.clear()  # opened (again): every listener hears the starting set
        self._check_now = trio.Event()
        await self.check(routes)
        task_status.started()
        while True:
            with trio.move_on_after(self.interval):
                await self._check_now.wait()
            self._check_now = trio.Event()
            await self.check(routes)

    async def check(self, routes: RouteService) -> None:
        """Fetch each watched topic's queues; call the listeners whose topic's set is new to them."""
        for topic, listener in list(self._listeners.items()):
            try:
                await routes.update(topic)
                queues = await routes.subscribe_queues(topic)
            except RocketMQError as exc:
                log.warning("%s: the queues of %s could not be fetched: %s", self.group, topic, exc)
                continue
            if self._listeners.get(topic) is not listener:
                continue  # replaced meanwhile: the new one is checked next (its registration woke us)
            old = self._heard.get(topic)
            if old == queues:
                continue
            self._heard[topic] = queues
            if old is not None:
                log.info("%s: the queues of %s changed: %d -> %d", self.group, topic, len(old), len(queues))
            await _notify(listener, topic, queues, self.group)


async def _notify(
    listener: QueueChangeListener, topic: str, queues: frozenset[MessageQueue], group: str
) -> None:
    try:
        result = listener(topic, queues)
        if inspect.isawaitable(result):
            await result
    except Exception:
        log.exception("%s: the queue-change listener of %s failed", group, topic)
