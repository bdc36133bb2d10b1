"""A push consumer's settings as its parts read them: one frozen snapshot taken at start.

The public :class:`~rocketmq_py.consumer._push.PushConsumer` keeps its options as plain attributes
(set before ``async with``); the services, pull loops and the assignment get this snapshot
instead of the consumer, so that none of them can reach back into it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rocketmq_py.consumer._flow import FlowLimits
from rocketmq_py.consumer._listener import Listener, RebalanceListener
from rocketmq_py.consumer._pop_rules import (
    MAX_POP_INVISIBLE_TIME_MS,
    MIN_POP_INVISIBLE_TIME_MS,
    POP_BATCH_NUMS,
)
from rocketmq_py.errors import InvalidOption
from rocketmq_py.protocol import (
    PROP_CONSUME_ORDERLY,
    PROP_THREADPOOL_CORE_SIZE,
    ConsumeFromWhere,
    MessageQueue,
    unwrap_queue,
)

__all__ = ["PushSettings", "check_pop_options"]


def check_pop_options(pop_invisible_time: float, pop_batch_nums: int) -> None:
    """Raise ``InvalidOption`` for POP options the broker would refuse (Java's ranges)."""
    if not 0 < pop_batch_nums <= POP_BATCH_NUMS:
        raise InvalidOption(f"pop_batch_nums must be 1 to {POP_BATCH_NUMS}, not {pop_batch_nums}")
    if not MIN_POP_INVISIBLE_TIME_MS <= pop_invisible_time * 1000 <= MAX_POP_INVISIBLE_TIME_MS:
        raise InvalidOption(f"pop_invisible_time must be 5 to 300 seconds, not {pop_invisible_time}")


@dataclass(frozen=True, slots=True, kw_only=True)
class PushSettings:
    """What a started push consumer was configured with (see ``PushConsumer`` for each option)."""

    #: The group as the brokers know it (wrapped in the namespace).
    group: str
    namespace: str | None
    listener: Listener
    orderly: bool
    broadcasting: bool
    strategy_name: str
    consume_from_where: ConsumeFromWhere
    consume_timestamp_ms: int | None
    consume_concurrency: int
    consume_batch_max_size: int
    pull_batch_size: int
    max_reconsume_times: int
    consume_timeout: float
    flow_limits: FlowLimits
    persist_interval: float
    suspend_current_queue_time: float
    rebalance_listener: RebalanceListener | None
    handoff_timeout: float
    pull_max_idle_time: float
    pop_invisible_time: float
    pop_batch_nums: int
    #: The client's request timeout (the close's commits and unlocks get this long).
    request_timeout: float
    client_rebalance: bool

    @property
    def locks_queues(self) -> bool:
        """Whether queues are locked on their broker before they are consumed (orderly CLUSTERING)."""
        return self.orderly and not self.broadcasting

    @property
    def commits_answered(self) -> bool:
        """Whether offsets are committed only in requests whose answer is awaited, never with a pull.

        The broker stores a pull's commit offset on its pull executor and an UPDATE_CONSUMER_OFFSET
        on its consumer-manage executor, so an older offset sent before a handoff's commit may be
        stored after it, and what reads the queue next starts before where this member stopped.
        Where that must not happen: an orderly member (the next owner would break the order), and
        a member the brokers assign (``client_rebalance=False``), whose switch to POP hands its
        pulled queues to the pops (which start at the stored offset: the pulls' last messages
        came twice). Other CLUSTERING members commit with their pulls, as Java's do.
        """
        return self.locks_queues or (not self.client_rebalance and not self.broadcasting)

    def properties(self) -> dict[str, str]:
        """The push consumer's running-info properties (Java ``DefaultMQPushConsumer`` names)."""
        limits = self.flow_limits
        return {
            PROP_CONSUME_ORDERLY: "true" if self.orderly else "false",
            PROP_THREADPOOL_CORE_SIZE: str(self.consume_concurrency),
            "consumeThreadMin": str(self.consume_concurrency),
            "consumeThreadMax": str(self.consume_concurrency),
            "consumeMessageBatchMaxSize": str(self.consume_batch_max_size),
            "pullBatchSize": str(self.pull_batch_size),
            "pullThresholdForQueue": str(limits.pull_threshold_for_queue),
            "pullThresholdSizeForQueue": str(limits.pull_threshold_size_for_queue_mib),
            "pullThresholdForTopic": str(limits.pull_threshold_for_topic),
            "pullThresholdSizeForTopic": str(limits.pull_threshold_size_for_topic_mib),
            "consumeConcurrentlyMaxSpan": str(limits.consume_max_span),
            "maxReconsumeTimes": str(self.max_reconsume_times),
            "consumeTimeout": str(int(self.consume_timeout / 60)),  # Java: minutes
            "suspendCurrentQueueTimeMillis": str(int(self.suspend_current_queue_time * 1000)),
            "persistConsumerOffsetInterval": str(int(self.persist_interval * 1000)),
            "pullMaxIdleTimeMillis": str(int(self.pull_max_idle_time * 1000)),
            "clientRebalance": "true" if self.client_rebalance else "false",
            "popInvisibleTime": str(int(self.pop_invisible_time * 1000)),
            "popBatchNums": str(self.pop_batch_nums),
        }

    def user_queues(self, queues: Iterable[MessageQueue]) -> list[MessageQueue]:
        """Queues as the user knows them (the namespace taken off), in the given order."""
        namespace = self.namespace
        return list(queues) if namespace is None else [unwrap_queue(namespace, mq) for mq in queues]
