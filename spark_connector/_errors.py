"""The connector's errors, both in rocketmq-py's one error tree (:mod:`rocketmq_py.errors`)."""

from __future__ import annotations

from rocketmq_py.errors import ClientError, RocketMQError

__all__ = ["DataLossError", "SparkOptionError"]


class SparkOptionError(ClientError):
    """A data source option is missing, conflicts with another, or has a value that does not parse.

    Attributes:
        option: the option's documented name (e.g. ``numPartitions``).
        problem: what is wrong with it.
    """

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f"option {option!r}: {problem}")
        self.option = option
        self.problem = problem


class DataLossError(RocketMQError):
    """Messages the query asked for are gone (below the queue's minimum offset, or the queue shrank).

    Raised only with ``failOnDataLoss`` true (the default); with ``false`` the reader skips to the
    queue's minimum and logs a warning instead.

    Attributes:
        queue: ``"topic/broker/queueId"``.
        requested: the offset asked for.
        available: the first offset the broker still has (or its max offset when the queue shrank).
    """

    def __init__(self, queue: str, requested: int, available: int, why: str) -> None:
        super().__init__(
            f"queue {queue}: offset {requested} requested but {why} (broker offset {available}); "
            "set failOnDataLoss=false to skip lost messages with a warning"
        )
        self.queue = queue
        self.requested = requested
        self.available = available
