"""A push consumer's POP consumption (``client_rebalance=False``): whether it pops, and the POP
step of its rebalance round of a topic.

The broker assigns the queues (QUERY_ASSIGNMENT, :class:`~rocketmq_py.consumer._pop.PopService`):
those the group reads in POP mode are popped, those it reads in PULL mode are allocated on the
client and pulled as by any push consumer. The group subscribes a topic's POP retry topic only
while it pulls the topic (POP_MESSAGE serves it while the topic is popped), and a topic that goes
from pulled to popped hands its pulled queues off first, so that their running calls end and
their offsets are committed before the first pop reads them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from rocketmq_py.consumer._assignment import Assignment
from rocketmq_py.consumer._pop import PopService
from rocketmq_py.consumer._runtime import PushRuntime
from rocketmq_py.protocol import pop_retry_topic

__all__ = ["PopStep", "pops_topics"]

log = logging.getLogger("rocketmq_py.consumer")


def pops_topics(group: str, *, client_rebalance: bool, orderly: bool, broadcasting: bool) -> bool:
    """Whether the topics the group reads in POP mode are popped: asked for (``client_rebalance``
    off) by a concurrent CLUSTERING consumer; others rebalance on the client (logged)."""
    if not client_rebalance:
        if orderly or broadcasting:
            log.warning("%s: POP consumption is concurrent CLUSTERING only: client rebalance", group)
        else:
            return True
    return False


@dataclass(frozen=True, slots=True, kw_only=True)
class PopStep:
    """The POP step of a rebalance round of one topic (not a retry topic) of a member that pops."""

    group: str
    runtime: PushRuntime
    pop: PopService
    assignment: Assignment
    #: Subscribe a topic with ``"*"`` (TAG); stop subscribing it.
    subscribe: Callable[[str], None]
    unsubscribe: Callable[[str], None]

    async def run(self, topic: str) -> bool:
        """Pop what the broker assigns of ``topic``; whether the group pulls queues of it too (to be
        allocated on the client now)."""
        assigned = await self.pop.query_assignment(topic)
        if assigned is None:
            return False
        popped, pulled = assigned
        await self._follow_pop_retry_topic(topic, popped=bool(popped), pulled=bool(pulled))
        if not pulled:
            # Popped now (or not ours): hand the pulled queues off first, so that their running
            # calls end and their offsets are committed before the first pop reads them.
            await self.assignment.drop_topic(topic)
        self.pop.apply_assignment(topic, popped, pulled)  # pops stop before pulls start, too
        return bool(pulled)

    async def _follow_pop_retry_topic(self, topic: str, *, popped: bool, pulled: bool) -> None:
        """Subscribe ``topic``'s POP retry topic while the group pulls the topic, not while it pops it
        (Java ``RebalanceImpl.updateMessageQueueAssignment``)."""
        retry = pop_retry_topic(topic, self.group)
        instance = self.runtime.instance
        if pulled and not popped and retry not in self.runtime.subscriptions:
            log.info(
                "%s: %s is pulled: subscribing %s for what was popped and revived", self.group, topic, retry
            )
            self.subscribe(retry)
            instance.routes.use_topic(retry)
            instance.heartbeat_soon()
            self.runtime.request_rebalance()
        elif popped and not pulled and retry in self.runtime.subscriptions:
            log.info("%s: %s is popped: unsubscribing %s (POP_MESSAGE serves it)", self.group, topic, retry)
            self.unsubscribe(retry)
            instance.heartbeat_soon()
            await self.assignment.drop_topic(retry)
