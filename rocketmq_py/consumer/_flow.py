"""Push-consumer defaults and the cache flow-control verdict, with no I/O.

Mirrors the Java client's ``DefaultMQPushConsumer`` defaults and the first step of
``DefaultMQPushConsumerImpl.pullMessage`` (protocol.md §8.1, §8.2):

* before each pull of a queue, its :class:`~rocketmq_py.consumer._process_queue.ProcessQueue` is
  checked against three limits, in this order: the number of cached messages
  (``msgCount > pullThresholdForQueue``), their body bytes in whole MiB
  (``msgSize / MiB > pullThresholdSizeForQueue``, integer division as in Java) and, for
  concurrent consumption only, the offset span of the cache (``maxSpan >
  consumeConcurrentlyMaxSpan``, our ``consume_max_span``). A queue over a limit is pulled again
  after :data:`PULL_TIME_DELAY_WHEN_CACHE_FLOW_CONTROL_MS`;
* topic-level limits (``pullThresholdForTopic`` / ``pullThresholdSizeForTopic``, -1 = off)
  override the per-queue ones after each rebalance with ``max(1, topic_limit // queues_held)``
  (``RebalancePushImpl.messageQueueChanged``).

The lite pull consumer's buffer is bounded by the same :class:`FlowLimits` (Java
``DefaultLitePullConsumer``: the per-queue limits, ``consumeMaxSpan``, and its own
``pullThresholdForAll`` over all queues instead of the topic-level limits).

:func:`flow_control` is the pure verdict; the pull loop sleeps for the verdict's delay and asks
again, so back-pressure comes from the cache itself (STYLE habit 5). Durations are in
milliseconds, like the Java names they mirror.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Final, Literal, Protocol, Self

from rocketmq_py._deprecation import warn_deprecated
from rocketmq_py.errors import InvalidOption

__all__ = [
    "BROKER_SUSPEND_MAX_TIME_MS",
    "CLEAN_EXPIRED_MAX_MESSAGES",
    "CONSUMER_TIMEOUT_WHEN_SUSPEND_MS",
    "CONSUME_CONCURRENCY",
    "CONSUME_MAX_SPAN",
    "CONSUME_MESSAGE_BATCH_MAX_SIZE",
    "CONSUME_TIMEOUT_MS",
    "HEARTBEAT_BROKER_INTERVAL_MS",
    "MAX_RECONSUME_TIMES",
    "MAX_RECONSUME_TIMES_ORDERLY",
    "MAX_TIME_CONSUME_CONTINUOUSLY_MS",
    "MIB",
    "OFFSET_ILLEGAL_FIX_DELAY_MS",
    "PERSIST_CONSUMER_OFFSET_FIRST_DELAY_MS",
    "PERSIST_CONSUMER_OFFSET_INTERVAL_MS",
    "PULL_BATCH_SIZE",
    "PULL_BATCH_SIZE_IN_BYTES",
    "PULL_INTERVAL_MS",
    "PULL_MAX_IDLE_TIME_MS",
    "PULL_THRESHOLD_FOR_ALL",
    "PULL_THRESHOLD_FOR_QUEUE",
    "PULL_THRESHOLD_FOR_TOPIC",
    "PULL_THRESHOLD_SIZE_FOR_QUEUE_MIB",
    "PULL_THRESHOLD_SIZE_FOR_TOPIC_MIB",
    "PULL_TIME_DELAY_WHEN_BROKER_FLOW_CONTROL_MS",
    "PULL_TIME_DELAY_WHEN_CACHE_FLOW_CONTROL_MS",
    "PULL_TIME_DELAY_WHEN_EXCEPTION_MS",
    "PULL_TIME_DELAY_WHEN_SUSPEND_MS",
    "REBALANCE_INTERVAL_MS",
    "REBALANCE_LOCK_INTERVAL_MS",
    "REBALANCE_LOCK_MAX_LIVE_TIME_MS",
    "REBALANCE_MIN_INTERVAL_MS",
    "SEND_BACK_LOCAL_RETRY_DELAY_MS",
    "SUSPEND_CURRENT_QUEUE_TIME_MS",
    "CacheCounters",
    "FlowLimits",
    "FlowReason",
    "FlowVerdict",
    "flow_control",
]

MIB: Final = 1024 * 1024

# --- cache limits (DefaultMQPushConsumer) --------------------------------------------------------

#: Most messages cached per queue before pulling pauses (Java ``pullThresholdForQueue`` = 1000).
PULL_THRESHOLD_FOR_QUEUE: Final = 1000
#: Most body MiB cached per queue before pulling pauses (Java ``pullThresholdSizeForQueue`` = 100).
PULL_THRESHOLD_SIZE_FOR_QUEUE_MIB: Final = 100
#: Consumer-wide message limit split over the queues held; -1 = off (Java ``pullThresholdForTopic``).
PULL_THRESHOLD_FOR_TOPIC: Final = -1
#: Consumer-wide MiB limit split over the queues held; -1 = off (Java ``pullThresholdSizeForTopic``).
PULL_THRESHOLD_SIZE_FOR_TOPIC_MIB: Final = -1
#: Largest offset span of a queue's cache; push: concurrent mode only (Java push
#: ``consumeConcurrentlyMaxSpan`` = 2000, Java lite ``consumeMaxSpan`` = 2000).
CONSUME_MAX_SPAN: Final = 2000
#: Lite pull consumer: buffered messages of all queues above which every pull waits (Java lite
#: ``pullThresholdForAll`` = 10000; Java counts buffered batches times ``pullBatchSize``, we count
#: messages). The push consumer has no such cap.
PULL_THRESHOLD_FOR_ALL: Final = 10000

# --- pulling -------------------------------------------------------------------------------------

#: Messages asked for per pull (Java ``pullBatchSize`` = 32).
PULL_BATCH_SIZE: Final = 32
#: Bytes asked for per pull, header ``maxMsgBytes`` (Java 5.x ``pullBatchSizeInBytes`` = 256 KiB).
PULL_BATCH_SIZE_IN_BYTES: Final = 256 * 1024
#: Pause between successful pulls of one queue (Java ``pullInterval`` = 0).
PULL_INTERVAL_MS: Final = 0
#: Retry delay when the local cache is over a limit (Java ``PULL_TIME_DELAY_MILLS_WHEN_CACHE_FLOW_CONTROL``).
PULL_TIME_DELAY_WHEN_CACHE_FLOW_CONTROL_MS: Final = 50
#: Retry delay after a FLOW_CONTROL (215) answer (Java ``PULL_TIME_DELAY_MILLS_WHEN_BROKER_FLOW_CONTROL``).
PULL_TIME_DELAY_WHEN_BROKER_FLOW_CONTROL_MS: Final = 20
#: Retry delay while the consumer is paused (Java ``PULL_TIME_DELAY_MILLS_WHEN_SUSPEND`` = 1000).
PULL_TIME_DELAY_WHEN_SUSPEND_MS: Final = 1000
#: Retry delay after any other pull failure. Java 4.x used a constant 3000; 5.x made it the
#: setting ``pullTimeDelayMillsWhenException`` with default 1000. We keep 3 s, as the issue asks:
#: a failing broker is asked a third as often.
PULL_TIME_DELAY_WHEN_EXCEPTION_MS: Final = 3000
#: After OFFSET_ILLEGAL the queue is dropped at once, and its offset fixed, persisted and the queue
#: removed this much later (Java ``executeTaskLater(..., 10000)`` in the pull callback).
OFFSET_ILLEGAL_FIX_DELAY_MS: Final = 10000
#: How long the broker may hold a pull open, header ``suspendTimeoutMillis``
#: (Java ``BROKER_SUSPEND_MAX_TIME_MILLIS`` = 15000).
BROKER_SUSPEND_MAX_TIME_MS: Final = 15000
#: RPC timeout of a long-polling pull (Java ``CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND`` = 30000).
CONSUMER_TIMEOUT_WHEN_SUSPEND_MS: Final = 30000
#: A queue not pulled for this long is dropped at the next rebalance
#: (Java ``PULL_MAX_IDLE_TIME``, property ``rocketmq.client.pull.pullMaxIdleTime`` = 120000).
PULL_MAX_IDLE_TIME_MS: Final = 120000

# --- consuming -----------------------------------------------------------------------------------

#: Consume calls in flight at once (Java ``consumeThreadMin`` = ``consumeThreadMax`` = 20 threads).
CONSUME_CONCURRENCY: Final = 20
#: Messages handed to one listener call (Java ``consumeMessageBatchMaxSize`` = 1).
CONSUME_MESSAGE_BATCH_MAX_SIZE: Final = 1
#: Deliveries before a message goes to the DLQ, concurrent mode (Java ``maxReconsumeTimes`` -1 → 16).
MAX_RECONSUME_TIMES: Final = 16
#: The same for orderly mode (Java -1 → ``Integer.MAX_VALUE``).
MAX_RECONSUME_TIMES_ORDERLY: Final = 2**31 - 1
#: A message consumed for longer is sent back, delay level 3 (Java ``consumeTimeout`` = 15 minutes).
CONSUME_TIMEOUT_MS: Final = 15 * 60 * 1000
#: Most messages the consume-timeout cleaner sends back per run (Java ``cleanExpiredMsg`` loop bound 16).
CLEAN_EXPIRED_MAX_MESSAGES: Final = 16
#: Local re-consume delay when even the fallback send-back failed (Java ``submitConsumeRequestLater``, 5000).
SEND_BACK_LOCAL_RETRY_DELAY_MS: Final = 5000
#: Orderly: pause of a queue after a failed consume (Java ``suspendCurrentQueueTimeMillis`` = 1000).
SUSPEND_CURRENT_QUEUE_TIME_MS: Final = 1000
#: Orderly: longest run of one queue before yielding (Java ``MAX_TIME_CONSUME_CONTINUOUSLY`` = 60000).
MAX_TIME_CONSUME_CONTINUOUSLY_MS: Final = 60000

# --- periodic services ---------------------------------------------------------------------------

#: Rebalance period (Java ``rocketmq.client.rebalance.waitInterval`` = 20000).
REBALANCE_INTERVAL_MS: Final = 20000
#: Shortest rebalance period, and the retry period while unbalanced (Java: 1000).
REBALANCE_MIN_INTERVAL_MS: Final = 1000
#: Orderly: period of LOCK_BATCH_MQ renewal (Java ``REBALANCE_LOCK_INTERVAL`` = 20000).
REBALANCE_LOCK_INTERVAL_MS: Final = 20000
#: Orderly: a queue counts as locked this long after its last lock (Java ``REBALANCE_LOCK_MAX_LIVE_TIME``).
REBALANCE_LOCK_MAX_LIVE_TIME_MS: Final = 30000
#: Offset persist period (Java ``persistConsumerOffsetInterval`` = 5000).
PERSIST_CONSUMER_OFFSET_INTERVAL_MS: Final = 5000
#: Delay of the first offset persist (Java: 10000).
PERSIST_CONSUMER_OFFSET_FIRST_DELAY_MS: Final = 10000
#: Heartbeat period (Java ``heartbeatBrokerInterval`` = 30000).
HEARTBEAT_BROKER_INTERVAL_MS: Final = 30000

# --- group topics --------------------------------------------------------------------------------

# Group topic names (%RETRY%, %DLQ%) live in protocol/_names.py.


# --- limits and verdict --------------------------------------------------------------------------


def _check_range(name: str, value: int, low: int, high: int, *, off_allowed: bool = False) -> None:
    if off_allowed and value == -1:
        return
    if not low <= value <= high:
        off = " or -1" if off_allowed else ""
        raise InvalidOption(f"{name} must be in [{low}, {high}]{off}, got {value}")


@dataclass(frozen=True, slots=True, kw_only=True, init=False)
class FlowLimits:
    """The cache limits a pull loop checks before each pull (Java field names in brackets).

    One set of limits for both consumers (``PushConsumer(flow_limits=...)``,
    ``LitePullConsumer(flow_limits=...)``); each reads the fields it can enforce and refuses, with
    :class:`~rocketmq_py.errors.InvalidOption`, a limit it cannot enforce that is set to anything
    but its default, so that no setting is silently ignored.

    Attributes:
        pull_threshold_for_queue: most cached messages per queue [pullThresholdForQueue].
        pull_threshold_size_for_queue_mib: most cached body MiB per queue [pullThresholdSizeForQueue].
        consume_max_span: largest cached offset span of a queue (last offset minus first). The push
            consumer checks it for concurrent consumption only (orderly consumption skips it)
            [push: consumeConcurrentlyMaxSpan, lite: consumeMaxSpan].
        pull_threshold_for_topic: push consumer only: consumer-wide message limit, split over the
            queues held after each rebalance; -1 = off [pullThresholdForTopic].
        pull_threshold_size_for_topic_mib: push consumer only: the same in MiB, -1 = off
            [pullThresholdSizeForTopic].
        pull_threshold_for_all: lite pull consumer only: most buffered messages of all queues
            together [pullThresholdForAll].

    ``consume_concurrently_max_span``, the earlier name of ``consume_max_span``, is still accepted
    as a keyword and readable as an attribute, with a :class:`DeprecationWarning`.
    """

    pull_threshold_for_queue: int = PULL_THRESHOLD_FOR_QUEUE
    pull_threshold_size_for_queue_mib: int = PULL_THRESHOLD_SIZE_FOR_QUEUE_MIB
    consume_max_span: int = CONSUME_MAX_SPAN
    pull_threshold_for_topic: int = PULL_THRESHOLD_FOR_TOPIC
    pull_threshold_size_for_topic_mib: int = PULL_THRESHOLD_SIZE_FOR_TOPIC_MIB
    pull_threshold_for_all: int = PULL_THRESHOLD_FOR_ALL

    def __init__(
        self,
        *,
        pull_threshold_for_queue: int = PULL_THRESHOLD_FOR_QUEUE,
        pull_threshold_size_for_queue_mib: int = PULL_THRESHOLD_SIZE_FOR_QUEUE_MIB,
        consume_max_span: int = CONSUME_MAX_SPAN,
        pull_threshold_for_topic: int = PULL_THRESHOLD_FOR_TOPIC,
        pull_threshold_size_for_topic_mib: int = PULL_THRESHOLD_SIZE_FOR_TOPIC_MIB,
        pull_threshold_for_all: int = PULL_THRESHOLD_FOR_ALL,
        consume_concurrently_max_span: int | None = None,
    ) -> None:
        """Keyword-only, as the fields (the dataclass's own ``__init__``, plus the old keyword).

        ``consume_concurrently_max_span``, when given, sets ``consume_max_span`` (it wins, so that
        ``dataclasses.replace(limits, consume_concurrently_max_span=n)`` changes the span too).
        """
        if consume_concurrently_max_span is not None:
            warn_deprecated(
                "FlowLimits(consume_concurrently_max_span=...) is deprecated; use consume_max_span"
            )
            consume_max_span = consume_concurrently_max_span
        # Frozen: the dataclass's own __init__ sets the fields the same way.
        object.__setattr__(self, "pull_threshold_for_queue", pull_threshold_for_queue)
        object.__setattr__(self, "pull_threshold_size_for_queue_mib", pull_threshold_size_for_queue_mib)
        object.__setattr__(self, "consume_max_span", consume_max_span)
        object.__setattr__(self, "pull_threshold_for_topic", pull_threshold_for_topic)
        object.__setattr__(self, "pull_threshold_size_for_topic_mib", pull_threshold_size_for_topic_mib)
        object.__setattr__(self, "pull_threshold_for_all", pull_threshold_for_all)

    @property
    def consume_concurrently_max_span(self) -> int:
        """Deprecated name of :attr:`consume_max_span`."""
        warn_deprecated("FlowLimits.consume_concurrently_max_span is deprecated; use consume_max_span")
        return self.consume_max_span

    def validate(self, *, consumer: Literal["push", "lite"] | None = None) -> None:
        """Check the ranges Java's ``checkConfig`` enforces on a user's settings.

        Not run on construction: :meth:`per_queue_from_topic` may derive per-queue values above
        the user-facing maximum, as Java's does.

        Args:
            consumer: also check that no limit the named consumer cannot enforce is changed from
                its default: ``"push"`` refuses ``pull_threshold_for_all``, ``"lite"`` the
                topic-level limits.

        Raises:
            InvalidOption: a value outside its range, or a limit ``consumer`` cannot enforce (a
                :class:`~rocketmq_py.errors.ClientError`).
        """
        if consumer == "push" and self.pull_threshold_for_all != PULL_THRESHOLD_FOR_ALL:
            raise InvalidOption(
                "pull_threshold_for_all is a LitePullConsumer limit: a PushConsumer has no cap over all "
                "queues (pull_threshold_for_topic splits one over the queues held)"
            )
        if consumer == "lite" and (
            self.pull_threshold_for_topic != -1 or self.pull_threshold_size_for_topic_mib != -1
        ):
            raise InvalidOption(
                "pull_threshold_for_topic and pull_threshold_size_for_topic_mib are PushConsumer limits: "
                "a LitePullConsumer caps all queues together with pull_threshold_for_all"
            )
        _check_range("pull_threshold_for_queue", self.pull_threshold_for_queue, 1, 65535)
        _check_range("pull_threshold_size_for_queue_mib", self.pull_threshold_size_for_queue_mib, 1, 1024)
        _check_range("consume_max_span", self.consume_max_span, 1, 65535)
        _check_range("pull_threshold_for_topic", self.pull_threshold_for_topic, 1, 6553500, off_allowed=True)
        _check_range(
            "pull_threshold_size_for_topic_mib",
            self.pull_threshold_size_for_topic_mib,
            1,
            102400,
            off_allowed=True,
        )
        if self.pull_threshold_for_all < 1:  # no upper bound: Java's lite consumer checks none
            raise InvalidOption(
                f"pull_threshold_for_all must be at least 1, got {self.pull_threshold_for_all}"
            )

    def per_queue_from_topic(self, queue_count: int) -> Self:
        """The limits after a rebalance left this consumer with ``queue_count`` queues.

        Each topic-level limit that is on replaces its per-queue limit with
        ``max(1, topic_limit // queue_count)``; with no queues held nothing changes (Java
        ``RebalancePushImpl.messageQueueChanged``, which counts every queue the consumer holds).
        """
        if queue_count <= 0:
            return self
        changes: dict[str, int] = {}
        if self.pull_threshold_for_topic != -1:
            changes["pull_threshold_for_queue"] = max(1, self.pull_threshold_for_topic // queue_count)
        if self.pull_threshold_size_for_topic_mib != -1:
            changes["pull_threshold_size_for_queue_mib"] = max(
                1, self.pull_threshold_size_for_topic_mib // queue_count
            )
        return replace(self, **changes) if changes else self


class FlowReason(enum.StrEnum):
    """Which cache limit stopped a pull."""

    COUNT = "count"  # cached messages
    SIZE = "size"  # cached body MiB
    SPAN = "span"  # last cached offset - first cached offset


@dataclass(frozen=True, slots=True)
class FlowVerdict:
    """A queue must not be pulled now: ``value`` exceeded ``limit``; ask again after ``delay_ms``."""

    reason: FlowReason
    value: int
    limit: int
    delay_ms: int = PULL_TIME_DELAY_WHEN_CACHE_FLOW_CONTROL_MS


class CacheCounters(Protocol):
    """What the flow check reads of a queue's cache (a ``ProcessQueue``, which imports this module)."""

    @property
    def msg_count(self) -> int:
        """Messages held."""
        ...

    @property
    def msg_size(self) -> int:
        """Their body bytes."""
        ...

    @property
    def max_span(self) -> int:
        """Last minus first queue offset held (0 when empty)."""
        ...


def flow_control(pq: CacheCounters, limits: FlowLimits, *, orderly: bool) -> FlowVerdict | None:
    """Whether the cache of one queue is too full to pull it now (Java ``pullMessage`` step 1).

    Args:
        pq: the queue's cache.
        limits: the limits in force (after :meth:`FlowLimits.per_queue_from_topic`).
        orderly: orderly consumption skips the span check (a locked queue is consumed in order,
            so its span says nothing about one slow message).

    Returns:
        ``None`` when the pull may go ahead, else why not and when to ask again. The checks run
        in Java's order: count, size (whole MiB, rounded down), span.
    """
    count = pq.msg_count
    if count > limits.pull_threshold_for_queue:
        return FlowVerdict(FlowReason.COUNT, count, limits.pull_threshold_for_queue)
    size_mib = pq.msg_size // MIB
    if size_mib > limits.pull_threshold_size_for_queue_mib:
        return FlowVerdict(FlowReason.SIZE, size_mib, limits.pull_threshold_size_for_queue_mib)
    if not orderly:
        span = pq.max_span
        if span > limits.consume_max_span:
            return FlowVerdict(FlowReason.SPAN, span, limits.consume_max_span)
    return None
