"""The ``rocketmq`` sink: each Spark task sends its rows with its executor process's rocketmq-py Producer.

Columns (names case-insensitive; other columns are ignored, as Spark's Kafka sink does)::

    body          BINARY or STRING          required (a string is sent as UTF-8)
    topic         STRING                    required unless option ``topic`` is set (the option wins)
    tags          STRING                    property TAGS
    keys          ARRAY<STRING> or STRING   property KEYS (a string is stored as is: spaces split it)
    properties    MAP<STRING,STRING>        user properties (system keys are refused by validation)
    delay_level   TINYINT/SMALLINT/INT/BIGINT  delayed delivery level 1..18 (0 or null: none)
    sharding_key  STRING                    ordered send: the queue Java's SelectMessageQueueByHash
                                            picks for the key; the key's rows keep their order
    broker_name   STRING                    with queue_id: the queue the row goes to (Kafka's
    queue_id      TINYINT/SMALLINT/INT/BIGINT  ``partition`` column); both null: the producer's
                                            own choice. The reader's columns of the same names,
                                            so a DataFrame read from one topic keeps its queues

Options (values are strings): ``namesrv`` (required), ``topic``, ``producerGroup``,
``deterministicKeys`` (see below), ``writeId``, ``sendTimeoutMs``, ``maxInFlight``, ``batchSize``,
``maxMessageSize``, ``accessKey`` / ``secretKey`` (ACL; both or neither), ``securityToken``, the
``tls`` options and the ``client.`` options (:func:`producer_keywords`).

A task keeps up to ``maxInFlight`` send requests in flight, with the producer its executor process
keeps for the sink's options (started by the first task, reused by the later ones, closed after
``clientCacheTimeout``, 10 minutes by default, without a task: :mod:`spark_connector._executor`). Rows without a
sharding key and without a delay are grouped into batch sends per topic (Java's rules forbid delays
in batches) of up to ``batchSize`` rows; every row keeps its own UNIQ_KEY in a batch (the producer
puts none on the batch itself, which the broker would copy onto every row). Rows with a
sharding key, or a queue named by ``broker_name`` / ``queue_id`` (which wins over a sharding key, as
Kafka's ``partition`` column wins over its key), go to their queue's lane, which sends one request
at a time in row order (one attempt each, as Java's ordered sends). A named queue the topic's route
does not have fails the task, naming the row. The task returns its commit message only after every request was
acknowledged; the first failure cancels the rest and fails the task with our typed error, with a
note naming the rows. An empty partition needs no producer.

``deterministicKeys=true`` gives every row a UNIQ_KEY (the msgId consumers see) derived from the
write, the Spark partition and the row's index in it, so a retried task (or a replayed streaming
batch) sends the same ids again and consumers can drop the duplicates. The write is the streaming
query id plus the batch id, or for a batch write option ``writeId`` (default: a random id fixed when
the write is planned, so all attempts of its tasks agree). Layout of such a key, in the UNIQ_KEY's
32 uppercase hex characters (``rocketmq_py.protocol._ids``)::

    +--------------------------------------+---------------------+------------------------+
    | "IP" + "pid" + "salt" (10 bytes)     | ms in month (int32) | counter (low 16 bits)  |
    | BLAKE2b(write, partition, row >> 16) | always 0            | row & 0xFFFF           |
    +--------------------------------------+---------------------+------------------------+

The time field is 0, so Java's ``getNearlyTimeFromID`` reads the start of the month: a lookup by
msgId (which searches from that time on) still finds the message.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import logging
import uuid
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import (
    StructType,
)

from rocketmq_py import Chunk, Producer, SendCounts, send_many
from rocketmq_py.errors import InvalidOption
from rocketmq_py.lowlevel import DEFAULT_BATCH_SIZE, DEFAULT_MAX_IN_FLIGHT
from rocketmq_py.protocol import Message, MessageQueue, PropertyKey
from spark_connector._executor import CLIENTS
from spark_connector._sink_arrow import arrow_rows
from spark_connector._sink_options import SinkOptions, parse_sink_options
from spark_connector._sink_rows import SinkColumns, message_maker, plan_columns, row_queue, row_to_message

__all__ = [
    "RocketMQCommitMessage",
    "RocketMQStreamWriter",
    "RocketMQWriter",
    "SendCounts",
    "SinkColumns",
    "SinkOptions",
    "deterministic_uniq_key",
    "effective_batch_size",
    "parse_sink_options",
    "plan_columns",
    "producer_keywords",
    "row_queue",
    "row_to_message",
    "send_messages",
]

log = logging.getLogger("spark_connector.sink")

_NO_ROW: Final = object()


def deterministic_uniq_key(write_id: str, partition_id: int, row_index: int) -> str:
    """A UNIQ_KEY for row ``row_index`` of Spark partition ``partition_id`` of one write.

    The same arguments always give the same 32 uppercase hex characters; see the module
    docstring for the layout.
    """
    digest = hashlib.blake2b(
        f"{write_id}\x00{partition_id}\x00{row_index >> 16}".encode(), digest_size=10
    ).hexdigest()
    return f"{digest.upper()}00000000{row_index & 0xFFFF:04X}"


def effective_batch_size(options: SinkOptions) -> int:
    """Rows per send request (``batchSize``; deterministic keys survive batching)."""
    return options.batch_size


# --- sending ---------------------------------------------------------------------------------------


def producer_keywords(options: SinkOptions) -> dict[str, Any]:
    """The keyword arguments (after the group) of every task's :class:`Producer`: the connector's
    own options, the security token, the TLS context (built now, its files read) and the
    ``client.`` options.

    Raises:
        SparkOptionError: a TLS file does not load (naming its option).
    """
    return {
        "namesrv": options.namesrv,
        "send_timeout": options.send_timeout,
        "max_message_size": options.max_message_size,
        "access_key": options.access_key,
        "secret_key": options.secret_key,
        "security_token": options.client.security_token,
        "ssl_context": options.client.ssl_context(),
        "namespace": options.namespace,
        "enable_trace": options.enable_trace,
        "trace_topic": options.trace_topic,
        **options.client.keywords,
    }


def sink_client_key(options: SinkOptions) -> Hashable:
    """What tells the executors' cached producers apart: every option a producer is made with."""
    return (
        "writer",
        options.producer_group,
        options.namesrv,
        options.send_timeout,
        options.max_message_size,
        options.access_key,
        options.secret_key,
        options.namespace,
        options.enable_trace,
        options.trace_topic,
        options.client.key(),
    )


def _describe(chunk: Chunk) -> str:
    first, last = chunk.first_index, chunk.last_index
    rows = f"row {last}" if len(chunk.messages) == 1 else f"rows {first}..{last}"
    return f"rocketmq sink: sending {rows} of this task to topic {chunk.messages[0].topic!r} failed"


async def send_messages(
    producer: Producer,
    messages: Iterable[Message | tuple[Message, MessageQueue]],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
) -> SendCounts:
    """Send one task's ``messages`` with a started producer (:func:`rocketmq_py.producer.send_many`);
    a ``(message, queue)`` pair goes to that queue.

    Raises:
        RocketMQError: the first send that failed (the others are cancelled), not wrapped in an
            exception group, with a note naming its rows.
    """
    return await send_many(
        producer, messages, batch_size=batch_size, max_in_flight=max_in_flight, describe=_describe
    )


# --- the Spark writers -----------------------------------------------------------------------------


@dataclass
class RocketMQCommitMessage(WriterCommitMessage):
    """A task's report to the driver: its partition and what it sent."""

    partition_id: int
    rows: int
    requests: int
    body_bytes: int
    topics: dict[str, int]


def _task_write_scope(default_write_id: str) -> tuple[str, int]:
    """(write id, partition id) of the running task: the streaming query and batch when there is one."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        return default_write_id, 0
    query = context.getLocalProperty("sql.streaming.queryId")
    batch = context.getLocalProperty("streaming.sql.batchId")
    scope = f"{query}/{batch}" if query and batch is not None else default_write_id
    return scope, context.partitionId()


class _SinkBase:
    """What the batch and the streaming writer share: options, columns, the task's send loop."""

    def __init__(self, options: Mapping[str, str], schema: StructType, overwrite: bool) -> None:
        if overwrite:
            raise InvalidOption("the rocketmq sink only appends messages; mode 'overwrite' is not supported")
        self.sink_options = parse_sink_options(options)
        self.columns = plan_columns(schema, self.sink_options.topic)
        # Fixed on the driver, so every attempt of every task of this write derives the same keys.
        self.write_id = self.sink_options.write_id or uuid.uuid4().hex

    def _write(self, rows: Iterator[Any]) -> RocketMQCommitMessage:
        scope, partition_id = _task_write_scope(self.write_id)
        first = next(rows, _NO_ROW)
        if first is _NO_ROW:  # empty partitions are common in micro-batches: no producer for them
            counts = SendCounts()
        else:
            opts = self.sink_options
            counts = CLIENTS.run(
                sink_client_key(opts),
                opts.client.cache_timeout,
                functools.partial(Producer, opts.producer_group, **producer_keywords(opts)),
                functools.partial(self._write_async, itertools.chain([first], rows), scope, partition_id),
            )
        return RocketMQCommitMessage(
            partition_id=partition_id,
            rows=counts.messages,
            requests=counts.requests,
            body_bytes=counts.body_bytes,
            topics=counts.topics,
        )

    def _messages(
        self, rows: Iterator[Any], scope: str, partition_id: int
    ) -> Iterator[Message | tuple[Message, MessageQueue]]:
        opts, columns = self.sink_options, self.columns
        make = message_maker(columns, opts.topic)
        deterministic = opts.deterministic_keys
        pinned = columns.broker_name is not None or columns.queue_id is not None
        for index, row in enumerate(rows):
            message = make(row, index)
            if deterministic:
                message.properties[PropertyKey.UNIQ_KEY] = deterministic_uniq_key(scope, partition_id, index)
            queue = row_queue(row, columns, message.topic, index) if pinned else None
            yield message if queue is None else (message, queue)

    async def _write_async(
        self, rows: Iterator[Any], scope: str, partition_id: int, producer: Producer
    ) -> SendCounts:
        opts = self.sink_options
        return await send_messages(
            producer,
            self._messages(rows, scope, partition_id),
            batch_size=effective_batch_size(opts),
            max_in_flight=opts.max_in_flight,
        )


def _log_totals(what: str, messages: Sequence[WriterCommitMessage | None]) -> None:
    reports = [m for m in messages if isinstance(m, RocketMQCommitMessage)]
    rows = sum(m.rows for m in reports)
    requests = sum(m.requests for m in reports)
    body = sum(m.body_bytes for m in reports)
    log.info(
        "%s: %d rows in %d send requests (%d body bytes) from %d tasks",
        what,
        rows,
        requests,
        body,
        len(reports),
    )


class RocketMQWriter(_SinkBase, DataSourceArrowWriter):
    """Batch writes (``df.write.format("rocketmq")``); see the module docstring. The rows arrive as
    Arrow batches (:mod:`spark_connector._sink_arrow`)."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> RocketMQCommitMessage:
        return self._write(arrow_rows(iterator, self.columns))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        _log_totals("rocketmq write committed", messages)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        _log_totals("rocketmq write aborted after sending (messages stay stored)", messages)


class RocketMQStreamWriter(_SinkBase, DataSourceStreamArrowWriter):
    """Streaming writes (``df.writeStream.format("rocketmq")``); see the module docstring. The rows
    arrive as Arrow batches (:mod:`spark_connector._sink_arrow`)."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> RocketMQCommitMessage:
        return self._write(arrow_rows(iterator, self.columns))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _log_totals(f"rocketmq micro-batch {batchId} committed", messages)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _log_totals(f"rocketmq micro-batch {batchId} aborted (sent messages stay stored)", messages)
