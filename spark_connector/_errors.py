"""The connector's errors, all in rocketmq-py's one error tree (:mod:`rocketmq_py.errors`)::

    RocketMQError
    ├── ClientError
    │   ├── InvalidOption (also a ValueError)
    │   │   └── SparkOptionError   an option is missing, conflicts with another or does not parse
    │   └── SparkSchemaError       a schema given with ``.schema(...)`` that the source cannot return
    ├── DataLossError          messages the query asked for are gone
    └── NoOffsetForTimestampError  a starting time no message of a queue matches
                                   (``startingOffsetsByTimestampStrategy=error``)

The two client errors are raised while Spark plans the query, before anything is read; so is
:class:`NoOffsetForTimestampError`, once the brokers have answered.
"""

from __future__ import annotations

from rocketmq_py.errors import ClientError, InvalidOption, RocketMQError

__all__ = ["DataLossError", "NoOffsetForTimestampError", "SparkOptionError", "SparkSchemaError"]


class SparkOptionError(InvalidOption):
    """A data source option is missing, conflicts with another, or has a value that does not parse.

    Attributes:
        option: the option's documented name (e.g. ``numPartitions``).
        problem: what is wrong with it.
    """

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f"option {option!r}: {problem}")
        self.option = option
        self.problem = problem


class SparkSchemaError(ClientError):
    """A schema given with ``spark.read.schema(...)`` / ``readStream.schema(...)`` that the source cannot return.

    The source returns a subset of its columns (:data:`~spark_connector.SCHEMA_DDL`), each under
    its own name and with its own type; the schema picks which ones and in what order.

    Attributes:
        column: the column at fault as the schema spells it (None: the schema names no column).
        expected: the type the source returns for that column, in DDL (e.g. ``BIGINT``), or the
            whole accepted schema (:data:`~spark_connector.SCHEMA_DDL`) for an unknown column or
            an empty schema.
        problem: what is wrong with it.
    """

    def __init__(self, column: str | None, expected: str, problem: str) -> None:
        super().__init__(f"the schema {problem}" if column is None else f"column {column!r}: {problem}")
        self.column = column
        self.expected = expected
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


class NoOffsetForTimestampError(RocketMQError):
    """A starting time matches no message of a queue: none was stored at or after it.

    Raised while Spark plans the query (a batch read, or the first batch of a stream) with
    ``startingOffsetsByTimestampStrategy=error``, as Spark's Kafka source fails by default when
    Kafka finds no offset for a time; with ``latest``, the default here, such queues start at their
    latest offset instead (a stream then reads the messages that arrive later).

    Attributes:
        option: the option that gave the time (``startingTimestamp`` or
            ``startingOffsetsByTimestamp``).
        queues: ``"topic/broker/queueId"`` of every queue without a match, in queue order.
        timestamps: the time asked of each of those queues (epoch ms), by queue.
    """

    def __init__(self, option: str, timestamps: dict[str, int]) -> None:
        shown = ", ".join(f"{queue} (at or after {ts})" for queue, ts in list(timestamps.items())[:5])
        more = f" and {len(timestamps) - 5} more" if len(timestamps) > 5 else ""
        super().__init__(
            f"option {option!r}: no message was stored at or after the time asked of queue {shown}{more}; "
            "set startingOffsetsByTimestampStrategy=latest to start such queues at their latest offset"
        )
        self.option = option
        self.queues = list(timestamps)
        self.timestamps = timestamps
