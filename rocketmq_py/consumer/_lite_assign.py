"""Which queues the lite pull consumer pulls: starting, seeking, releasing and re-assigning them.

Each assigned queue has a :class:`~rocketmq_py.consumer._lite_buffer.LiteQueue` in the consumer's
queue table and a pull task (:func:`~rocketmq_py.consumer._lite_pull_loop.queue_task`) in its
nursery. A seek replaces the queue's state and task; a revoke (``assign`` without the queue, or a
rebalance giving it to another member) stops the queue's pulls, discards its buffered messages and
commits its consumed offset before the queue is forgotten (synchronously in a rebalance). A queue
newly allocated by a rebalance reads its committed offset ``handoff_delay`` seconds (default 1)
after the rebalance began when the group has other members: the previous owner, rebalancing on the
same notification, has committed by then (as the push consumer does).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import trio

from rocketmq_py.consumer._allocate import sort_queues
from rocketmq_py.consumer._group_client import Allocation
from rocketmq_py.consumer._lite_buffer import LiteBuffer, LiteQueue
from rocketmq_py.consumer._lite_offsets import LiteCommits
from rocketmq_py.consumer._lite_pull_loop import LitePullParts, queue_task
from rocketmq_py.errors import ClientError, InvalidOption
from rocketmq_py.producer._validation import validate_topic
from rocketmq_py.protocol import ExpressionType, MessageQueue, SubscriptionData, unwrap_name, unwrap_queue

__all__ = ["LiteQueues", "assign_expressions"]

log = logging.getLogger("rocketmq_py.consumer.lite")


def assign_expressions(
    queues: Iterable[MessageQueue],
    expression: str | None,
    kind: ExpressionType,
    expressions: dict[str, tuple[str, ExpressionType]],
    subscriptions: Mapping[str, SubscriptionData],
    set_subscription: Callable[[str, str, ExpressionType], None],
) -> set[str]:
    """Record ``assign``'s filter for every topic among ``queues``; returns the topics it changed.

    ``expression`` ``None`` keeps each topic's expression (a new topic gets ``"*"``).

    Raises:
        ClientError: an invalid topic name.
    """
    changed: set[str] = set()
    for topic in sorted({mq.topic for mq in queues}):
        validate_topic(topic)
        if expression is not None and expressions.get(topic) != (expression, kind):
            expressions[topic] = (expression, kind)
            set_subscription(topic, expression, kind)
            changed.add(topic)
        elif topic not in subscriptions:
            set_subscription(topic, "*", ExpressionType.TAG)
    return changed


@dataclass(frozen=True, slots=True, kw_only=True)
class LiteQueues:
    """The queue table of a running lite consumer and what starts and stops its pull tasks."""

    nursery: trio.Nursery
    parts: LitePullParts
    commits: LiteCommits

    @property
    def buffer(self) -> LiteBuffer:
        """Where the pull tasks append (the consumer's buffer)."""
        return self.parts.buffer

    @property
    def queues(self) -> dict[MessageQueue, LiteQueue]:
        """The consumer's queue table (queues as the brokers know them), changed in place."""
        return self.commits.queues

    def discard(self, state: LiteQueue) -> None:
        """Stop the queue's pull task and drop its buffered messages (no I/O)."""
        state.scope.cancel()
        self.buffer.discard(state)
        if self.queues.get(state.mq) is state:
            del self.queues[state.mq]

    async def release(self, state: LiteQueue) -> None:
        """Revoke a queue: discard its buffer, commit its consumed offset, forget it."""
        self.discard(state)
        self.buffer.resume([state.mq])
        await self.commits.commit_released(state)

    def add(self, mq: MessageQueue, start_after: float | None = None) -> None:
        """Start pulling ``mq`` from its committed offset (read after ``start_after``, if given)."""
        state = LiteQueue(mq)
        self.queues[mq] = state
        self.nursery.start_soon(queue_task, self.parts, state, start_after)

    def seek(self, mq: MessageQueue, offset: int, *, moved: bool = True) -> None:
        """Pull ``mq`` from ``offset`` next, consumed there too; its buffered messages are dropped.

        ``moved``: ``commit()`` stores the offset (see :class:`LiteQueue`); a re-pull keeps the old one's.

        Raises:
            ClientError: ``mq`` is not assigned.
            InvalidOption: ``offset`` < 0.
        """
        old = self.queues.get(mq)
        if old is None:
            raise ClientError(f"{mq} is not assigned to this consumer")
        if offset < 0:
            raise InvalidOption(f"offset must be >= 0, got {offset}")
        self.discard(old)
        state = LiteQueue(mq, next_offset=offset, consumed=offset, moved=moved)
        self.queues[mq] = state
        self.nursery.start_soon(queue_task, self.parts, state)

    def reassign(self, assigned: list[MessageQueue], changed: set[str]) -> None:
        """``assign`` while running: re-pull the kept queues of ``changed`` topics, then apply."""
        kept = set(assigned)
        for mq, state in list(self.queues.items()):
            if mq.topic in changed and mq in kept and state.consumed >= 0:
                # A pull in flight carries the old expression.
                self.seek(mq, state.consumed, moved=state.moved)
        self.apply_assignment(assigned)

    def apply_assignment(self, assigned: Iterable[MessageQueue]) -> None:
        """Start the ``assigned`` queues not pulled yet; release the others (committing in a task)."""
        assigned = list(assigned)
        wanted = set(assigned)
        for mq, state in list(self.queues.items()):
            if mq not in wanted:
                self.discard(state)
                self.buffer.resume([mq])
                self.nursery.start_soon(self.commits.commit_released, state)
        for mq in assigned:
            if mq not in self.queues:
                self.parts.instance.routes.use_topic(mq.topic)
                self.add(mq)

    async def rebalance_topic(
        self,
        topic: str,
        allocation: Allocation,
        broadcasting: bool,
        handoff_start: Callable[[int], float | None],
        strategy: str,
    ) -> None:
        """Release ``topic``'s queues outside this member's share, then start the new ones.

        Nothing changes when the topic has no queues or the brokers list no member (unless
        ``broadcasting``): a route or heartbeat not there yet must not revoke everything.

        Args:
            topic: the rebalanced topic.
            allocation: its queues, the group's members and this member's share.
            broadcasting: every queue is this member's.
            handoff_start: when a new queue may read its committed offset, given the number of
                members (asked after the revokes).
            strategy: the allocation strategy's name, for the log.
        """
        if not (broadcasting or (allocation.mq_all and allocation.cid_all)):
            return
        allocated = allocation.allocated
        revoked = [s for mq, s in self.queues.items() if mq.topic == topic and mq not in allocated]
        for state in revoked:
            await self.release(state)
        added = sort_queues(allocated - self.queues.keys())
        after = handoff_start(len(allocation.cid_all))
        for mq in added:
            self.add(mq, after)
        if revoked or added:
            parts = self.parts
            namespace = parts.namespace
            parts.instance.emit(
                "rebalanced",
                topic=unwrap_name(namespace, topic),
                added=frozenset(mq if namespace is None else unwrap_queue(namespace, mq) for mq in added),
                removed=frozenset(
                    s.mq if namespace is None else unwrap_queue(namespace, s.mq) for s in revoked
                ),
            )
            log.info(
                "%s: %s rebalanced (%s): %d queues, revoked %s, added %s",
                self.parts.group,
                topic,
                strategy,
                len(allocated),
                [s.mq for s in revoked],
                added,
            )

    async def leave(self, timeout: float) -> None:  # noqa: ASYNC109
        """Closing: stop every pull task and the services, then commit quietly within ``timeout``."""
        for state in self.queues.values():
            state.dropped = True
            state.scope.cancel()
        self.nursery.cancel_scope.cancel()
        with trio.move_on_after(timeout) as scope:
            scope.shield = True
            await self.commits.commit_all(quiet=True)
