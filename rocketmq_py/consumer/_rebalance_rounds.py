"""When a group member's rebalance rounds run, and what one round does.

A round runs at start, every ``interval`` seconds, at once when :meth:`RebalanceRounds.request` is
called (the broker's NOTIFY_CONSUMER_IDS_CHANGED, a new subscription, a route that gained a
broker), and one second after a round that failed or could not take all its queues
(:meth:`RebalanceRounds.retry_soon`; Java's ``RebalanceService`` waits ``minInterval`` after a
round that is not balanced). A round rebalances each subscribed topic in turn; a topic's failure is
logged and does not stop the others.

The rounds get their collaborators as callables (the member's topics, how one topic is
rebalanced, what follows a round), never the member itself.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection

import trio

from rocketmq_py.consumer._flow import REBALANCE_MIN_INTERVAL_MS
from rocketmq_py.errors import RocketMQError
from rocketmq_py.protocol import is_retry_topic

__all__ = ["RebalanceRounds"]

log = logging.getLogger("rocketmq_py.consumer")


class RebalanceRounds:
    """The rebalance loop of one member of ``group``.

    Args:
        group: the consumer group (for the log).
        interval: seconds between rounds.
        handoff_delay: seconds after a round began before a queue it assigned reads its committed
            offset, when the group has other members (see :meth:`handoff_start`).
        broadcasting: every member consumes every queue (no handoff).
        topics: the subscribed topics, read at each step of a round (a round may drop one).
        rebalance_topic: takes ``topic``'s allocation.
        after_round: called after each round (no I/O).
        enabled: whether rounds allocate queues (a lite consumer given its queues does not).
    """

    def __init__(
        self,
        group: str,
        *,
        interval: float,
        handoff_delay: float,
        broadcasting: bool,
        topics: Callable[[], Collection[str]],
        rebalance_topic: Callable[[str], Awaitable[None]],
        after_round: Callable[[], None],
        enabled: Callable[[], bool],
    ) -> None:
        self._group = group
        self._interval = interval
        self._handoff_delay = handoff_delay
        self._broadcasting = broadcasting
        self._topics = topics
        self._rebalance_topic = rebalance_topic
        self._after_round = after_round
        self._enabled = enabled
        self._now = trio.Event()
        #: The last round failed or could not take every queue (orderly locks): the next in 1 s.
        self._retry = False
        self._round_started = 0.0

    def request(self) -> None:
        """Run a round now (the running loop wakes up)."""
        self._now.set()

    def retry_soon(self) -> None:
        """The current round could not take every queue: the next one in 1 s."""
        self._retry = True

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The first round, then ``started``, then a round at each interval or request, forever."""
        await self.round()
        task_status.started()
        while True:
            interval = REBALANCE_MIN_INTERVAL_MS / 1000 if self._retry else self._interval
            with trio.move_on_after(min(interval, self._interval)):
                await self._now.wait()
            self._now = trio.Event()
            await self.round()

    async def round(self) -> None:
        """Rebalance every subscribed topic now (errors are logged; another round follows in 1 s)."""
        if not self._enabled():
            return
        self._retry = False
        self._round_started = trio.current_time()
        for topic in list(self._topics()):
            if topic not in self._topics():
                continue  # dropped by this round (a POP retry topic, once the topic is popped)
            try:
                await self._rebalance_topic(topic)
            except RocketMQError as exc:
                log.warning("%s: rebalance of %s failed: %s", self._group, topic, exc)
                # Java: the round is not balanced (a retry topic's failure aside), the next in 1 s.
                self._retry = self._retry or not is_retry_topic(topic)
        self._after_round()

    def handoff_start(self, members: int) -> float | None:
        """When a queue assigned in this round may read its committed offset (None: at once).

        The previous owners rebalance on the same notification and commit first; one delay per
        round, not per topic. Only with other members, and never when broadcasting.
        """
        if self._broadcasting or members <= 1 or self._handoff_delay <= 0:
            return None
        return self._round_started + self._handoff_delay
