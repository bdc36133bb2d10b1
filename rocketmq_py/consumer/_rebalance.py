"""The rebalance plan of one topic: which owned queues go, which are rebuilt, which start (pure).

Java ``RebalanceImpl.updateProcessQueueTableInRebalance``, as a decision over plain data. Given
the queues a push consumer owns (with what the plan needs to know of each), the queues the
allocation strategy gave it, and the clock:

- an owned queue no longer allocated is **revoked** (it leaves: graceful handoff);
- an allocated queue whose pull loop has not tried a pull for ``max_idle`` seconds is **rebuilt**
  (dropped and started again: its pull loop was lost). A loop waiting for the consume workers
  to take its messages is alive, not idle;
- an allocated queue not owned is **started**;
- a queue already leaving (revoking) is left alone: it is neither revoked twice nor started
  again before it is gone.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Protocol

from rocketmq_py.consumer._allocate import sort_queues
from rocketmq_py.protocol._bodies import MessageQueue

__all__ = ["OwnedQueue", "RebalancePlan", "plan_rebalance"]


class OwnedQueue(Protocol):
    """What the plan reads of an owned queue."""

    @property
    def revoking(self) -> bool:
        """The queue is being handed off already."""
        ...

    @property
    def handing_off(self) -> bool:
        """Its pull loop waits for the consume workers (alive)."""
        ...

    @property
    def last_pull_time(self) -> float:
        """Clock time of its pull loop's last attempt."""
        ...


@dataclass(frozen=True, slots=True)
class RebalancePlan:
    """What one rebalance of a topic does, each list in queue order."""

    revoke: list[MessageQueue]
    rebuild: list[MessageQueue]
    start: list[MessageQueue]

    @property
    def changed(self) -> bool:
        """Anything at all changes hands."""
        return bool(self.revoke or self.rebuild or self.start)


def plan_rebalance(
    topic: str,
    owned: Mapping[MessageQueue, OwnedQueue],
    allocated: Set[MessageQueue],
    *,
    now: float,
    max_idle: float,
) -> RebalancePlan:
    """Plan the rebalance of ``topic`` (queues of other topics in ``owned`` are ignored).

    Args:
        topic: the topic being rebalanced.
        owned: the consumer's queues (all topics), each with its state.
        allocated: this member's share of ``topic``'s queues.
        now: the clock time now (the clock of ``last_pull_time``).
        max_idle: seconds without a pull attempt after which a queue's loop counts as lost.
    """
    revoke: list[MessageQueue] = []
    rebuild: list[MessageQueue] = []
    for mq, queue in owned.items():
        if mq.topic != topic or queue.revoking:
            continue
        if mq not in allocated:
            revoke.append(mq)
        elif not queue.handing_off and now - queue.last_pull_time > max_idle:
            rebuild.append(mq)
    start = [mq for mq in sort_queues(allocated) if mq.topic == topic and mq not in owned]
    return RebalancePlan(sort_queues(revoke), sort_queues(rebuild), start)
