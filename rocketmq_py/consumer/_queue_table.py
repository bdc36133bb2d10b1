"""The queues a push consumer owns (pulls), as its parts share them.

The assignment adds and forgets queues; the pull loops, the consume services and the statistics
read them. The per-queue flow limits live here too: the rebalance recomputes them from the topic
limits and the number of owned queues, the pull loops read them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from rocketmq_py.consumer._flow import FlowLimits
from rocketmq_py.consumer._queue_state import QueueState
from rocketmq_py.protocol import MessageQueue

__all__ = ["QueueTable"]


class QueueTable(Mapping[MessageQueue, QueueState]):
    """Owned queue -> its :class:`QueueState`; read as a mapping, changed by the assignment."""

    def __init__(self, limits: FlowLimits) -> None:
        self._states: dict[MessageQueue, QueueState] = {}
        #: Per-queue limits, recomputed from the topic limits after each rebalance round.
        self.limits = limits

    def __getitem__(self, mq: MessageQueue) -> QueueState:
        return self._states[mq]

    def __iter__(self) -> Iterator[MessageQueue]:
        return iter(self._states)

    def __len__(self) -> int:
        return len(self._states)

    def add(self, state: QueueState) -> None:
        """Own ``state``'s queue."""
        self._states[state.mq] = state

    def forget(self, state: QueueState) -> bool:
        """Forget ``state``'s queue if ``state`` is still its state (not a newer one); whether it was."""
        if self._states.get(state.mq) is state:
            del self._states[state.mq]
            return True
        return False

    def discard(self, mq: MessageQueue) -> None:
        """Forget ``mq`` whatever its state."""
        self._states.pop(mq, None)

    def of_topic(self, topic: str) -> list[QueueState]:
        """The owned queues of ``topic``."""
        return [state for mq, state in self._states.items() if mq.topic == topic]

    def clear(self) -> None:
        """Forget every queue (the consumer closed)."""
        self._states.clear()
