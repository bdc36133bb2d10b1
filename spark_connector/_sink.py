"""The ``rocketmq`` sink: each Spark task sends its rows with one rocketmq-py Producer.

Columns (names case-insensitive; other columns are ignored, as Spark's Kafka sink does)::

    body          BINARY or STRING          required (a string is sent as UTF-8)
    topic         STRING                    required unless option ``topic`` is set (the option wins)
    tags          STRING                    property TAGS
    keys          ARRAY<STRING> or STRING   property KEYS (a string is stored as is: spaces split it)
    properties    MAP<STRING,STRING>        user properties (system keys are refused by validation)
    delay_level   TINYINT/SMALLINT/INT/BIGINT  delayed delivery level 1..18 (0 or null: none)
    sharding_key  STRING                    ordered send: the queue Java's SelectMessageQueueByHash
                                            picks for the key; the key's rows keep their order

Options (values are strings): ``namesrv`` (required), ``topic``, ``producerGroup``,
``deterministicKeys`` (see below), ``writeId``, ``sendTimeoutMs``, ``maxInFlight``, ``batchSize``,
``maxMessageSize``, ``accessKey`` / ``secretKey`` (ACL; both or neither).

A task (one ``trio.run``) keeps up to ``maxInFlight`` send requests in flight. Rows without a
sharding key and without a delay are grouped into batch sends per topic (Java's rules forbid delays
in batches) of up to ``batchSize`` rows; every row keeps its own UNIQ_KEY in a batch (the producer
puts none on the batch itself, which the broker would copy onto every row). Rows with a
sharding key go to their queue's lane, which sends one request at a time in row order (one attempt
each, as Java's ordered sends). The task returns its commit message only after every request was
acknowledged; the first failure cancels the rest and fails the task with our typed error, with a
note naming the rows. An empty partition starts no producer.

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

import hashlib
import itertools
import logging
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import trio
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    ByteType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructType,
)

from rocketmq_py.errors import ClientError, InvalidMessage, RocketMQError, first_of_ours
from rocketmq_py.producer._producer import DEFAULT_SEND_TIMEOUT, Producer
from rocketmq_py.producer._selectors import select_by_sharding_key
from rocketmq_py.producer._validation import MAX_MESSAGE_SIZE, validate_producer_group, validate_topic
from rocketmq_py.protocol import Message, MessageQueue, PropertyKey
from spark_connector._errors import SparkOptionError
from spark_connector._options import parse_credentials

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
    "row_to_message",
    "send_messages",
]

log = logging.getLogger("spark_connector.sink")

#: Producer group of the sink's producers when option ``producerGroup`` is not given.
DEFAULT_PRODUCER_GROUP: Final = "spark-rocketmq-writer"
#: Send requests one task keeps in flight (Java has no equivalent: its sync sends are one at a time).
DEFAULT_MAX_IN_FLIGHT: Final = 16
#: Messages per batch send (Java's batches are unbounded in count; 4 MiB in size).
DEFAULT_BATCH_SIZE: Final = 64
#: Estimated bytes per batch send, well under the broker's 4 MiB maximum message size.
BATCH_BYTES: Final = 1024 * 1024
_PER_MESSAGE_OVERHEAD: Final = 64  # a batch entry's fixed fields (Java MessageDecoder.encodeMessage)
_LANE_BUFFER: Final = 2  # batches queued per ordered lane before the row loop waits

_INT_TYPES: Final = (ByteType, ShortType, IntegerType, LongType)
_NO_ROW: Final = object()


# --- options ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SinkOptions:
    """The sink's options, parsed (see the module docstring)."""

    namesrv: str
    topic: str | None = None
    producer_group: str = DEFAULT_PRODUCER_GROUP
    deterministic_keys: bool = False
    write_id: str | None = None
    send_timeout: float = DEFAULT_SEND_TIMEOUT
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    batch_size: int = DEFAULT_BATCH_SIZE
    max_message_size: int = MAX_MESSAGE_SIZE
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)


def _bool_option(options: Mapping[str, str], name: str, default: bool) -> bool:
    text = options.get(name.lower())
    if text is None:
        return default
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise SparkOptionError(name, f"must be 'true' or 'false', not {text!r}")
    return lowered == "true"


def _int_option(options: Mapping[str, str], name: str, default: int, *, minimum: int = 1) -> int:
    text = options.get(name.lower())
    if text is None:
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise SparkOptionError(name, f"must be an integer, not {text!r}") from None
    if value < minimum:
        raise SparkOptionError(name, f"must be at least {minimum}, not {value}")
    return value


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Parse the writer options (keys case-insensitive, values strings).

    Raises:
        SparkOptionError: ``namesrv`` is missing, or an option has a bad value (the error names it).
    """
    lowered = {key.lower(): value for key, value in options.items()}
    namesrv = (lowered.get("namesrv") or "").strip()
    if not namesrv:
        raise SparkOptionError("namesrv", "required by the rocketmq sink (e.g. '127.0.0.1:9876')")
    topic = lowered.get("topic")
    if topic is not None:
        topic = topic.strip()
        try:
            validate_topic(topic)
        except InvalidMessage as exc:
            raise SparkOptionError("topic", str(exc)) from None
    group = lowered.get("producergroup", DEFAULT_PRODUCER_GROUP).strip()
    try:
        validate_producer_group(group)
    except ClientError as exc:
        raise SparkOptionError("producerGroup", str(exc)) from None
    write_id = lowered.get("writeid")
    access_key, secret_key = parse_credentials(lowered)
    return SinkOptions(
        namesrv=namesrv,
        topic=topic,
        producer_group=group,
        deterministic_keys=_bool_option(lowered, "deterministicKeys", False),
        write_id=write_id.strip() if write_id and write_id.strip() else None,
        send_timeout=_int_option(lowered, "sendTimeoutMs", round(DEFAULT_SEND_TIMEOUT * 1000)) / 1000,
        max_in_flight=_int_option(lowered, "maxInFlight", DEFAULT_MAX_IN_FLIGHT),
        batch_size=_int_option(lowered, "batchSize", DEFAULT_BATCH_SIZE),
        max_message_size=_int_option(lowered, "maxMessageSize", MAX_MESSAGE_SIZE),
        access_key=access_key,
        secret_key=secret_key,
    )


# --- schema ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SinkColumns:
    """Where each known column sits in a row (``None``: absent) and how to read it."""

    body: int
    body_is_string: bool
    topic: int | None = None
    tags: int | None = None
    keys: int | None = None
    properties: int | None = None
    delay_level: int | None = None
    sharding_key: int | None = None


def _is_string_array(dtype: DataType) -> bool:
    return isinstance(dtype, ArrayType) and isinstance(dtype.elementType, StringType)


def _is_string_map(dtype: DataType) -> bool:
    return (
        isinstance(dtype, MapType)
        and isinstance(dtype.keyType, StringType)
        and isinstance(dtype.valueType, StringType)
    )


_EXPECTED: Final[dict[str, tuple[str, Callable[[DataType], bool]]]] = {
    "topic": ("STRING", lambda t: isinstance(t, StringType)),
    "tags": ("STRING", lambda t: isinstance(t, StringType)),
    "keys": ("ARRAY<STRING> or STRING", lambda t: isinstance(t, StringType) or _is_string_array(t)),
    "properties": ("MAP<STRING,STRING>", _is_string_map),
    "delay_level": ("an integer type", lambda t: isinstance(t, _INT_TYPES)),
    "sharding_key": ("STRING", lambda t: isinstance(t, StringType)),
}


def plan_columns(schema: StructType, topic_option: str | None) -> SinkColumns:
    """Check the DataFrame's schema against the sink's columns (see the module docstring).

    Raises:
        ClientError: no ``body`` column, no topic (neither column nor option), or a known column
            of the wrong type; the message names the column.
    """
    index: dict[str, int] = {}
    types: dict[str, DataType] = {}
    for i, f in enumerate(schema.fields):
        name = f.name.lower()
        if name in index:
            raise ClientError(f"the DataFrame has two columns named {name!r} (case-insensitively)")
        index[name] = i
        types[name] = f.dataType
    have = ", ".join(schema.fieldNames()) or "none"
    if "body" not in index:
        raise ClientError(
            f"the rocketmq sink needs a 'body' column (BINARY or STRING); the columns are: {have}"
        )
    body_type = types["body"]
    if not isinstance(body_type, BinaryType | StringType):
        raise ClientError(f"column 'body' must be BINARY or STRING, not {body_type.simpleString()}")
    for name, (wanted, accepts) in _EXPECTED.items():
        if name in types and not accepts(types[name]):
            raise ClientError(f"column {name!r} must be {wanted}, not {types[name].simpleString()}")
    if topic_option is None and "topic" not in index:
        raise ClientError(
            f"the rocketmq sink needs a 'topic' column or the 'topic' option; the columns are: {have}"
        )
    return SinkColumns(
        body=index["body"],
        body_is_string=isinstance(body_type, StringType),
        topic=index.get("topic"),
        tags=index.get("tags"),
        keys=index.get("keys"),
        properties=index.get("properties"),
        delay_level=index.get("delay_level"),
        sharding_key=index.get("sharding_key"),
    )


# --- rows -> messages ------------------------------------------------------------------------------


def _get(row: Sequence[Any], position: int | None) -> Any:
    return None if position is None else row[position]


def row_to_message(
    row: Sequence[Any], columns: SinkColumns, topic_option: str | None, row_index: int = 0
) -> Message:
    """The message for one row (a ``Row`` or any sequence in schema order).

    Raises:
        InvalidMessage: the row's body or topic is null (the message gives the row's index).
    """
    body = row[columns.body]
    if body is None:
        raise InvalidMessage(f"row {row_index}: column 'body' is null")
    if columns.body_is_string:
        body = body.encode()
    elif not isinstance(body, bytes):
        body = bytes(body)
    topic = topic_option or _get(row, columns.topic)
    if not topic:
        raise InvalidMessage(f"row {row_index}: column 'topic' is null and no 'topic' option is set")
    properties = _get(row, columns.properties)
    message = Message(
        topic, body, properties={k: v for k, v in properties.items() if v is not None} if properties else None
    )
    tags = _get(row, columns.tags)
    if tags:
        message.tags = tags
    keys = _get(row, columns.keys)
    if keys:
        message.keys = keys if isinstance(keys, str) else [k for k in keys if k]
    delay = _get(row, columns.delay_level)
    if delay:
        message.delay_level = delay
    sharding_key = _get(row, columns.sharding_key)
    if sharding_key is not None:
        message.sharding_key = sharding_key
    return message


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


@dataclass(slots=True)
class SendCounts:
    """What one task sent: messages, send requests, body bytes, messages per topic."""

    messages: int = 0
    requests: int = 0
    body_bytes: int = 0
    topics: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class _Chunk:
    messages: list[Message] = field(default_factory=list)
    first_row: int = 0
    size: int = 0


def _size(message: Message) -> int:
    props = sum(len(k) + len(v) + 2 for k, v in message.properties.items())
    return len(message.body) + len(message.topic) + props + _PER_MESSAGE_OVERHEAD


class _Sender:
    """One task's sends: batching, ordered lanes, the in-flight limit, the counts."""

    def __init__(self, producer: Producer, nursery: trio.Nursery, batch_size: int, max_in_flight: int):
        self.producer = producer
        self.nursery = nursery
        self.batch_size = batch_size
        self.slots = trio.Semaphore(max_in_flight)
        self.counts = SendCounts()
        self.pending: dict[str, _Chunk] = {}
        self.lanes: dict[MessageQueue, tuple[trio.MemorySendChannel[_Chunk], _Chunk]] = {}

    async def add(self, message: Message, row: int) -> None:
        if message.sharding_key is not None:
            await self._add_ordered(message, row)
            return
        size = _size(message)
        if self.batch_size == 1 or message.delay_level > 0 or size > BATCH_BYTES:
            await self._spawn(_Chunk([message], row, size), None)
            return
        chunk = self.pending.get(message.topic)
        if chunk is not None and chunk.size + size > BATCH_BYTES:
            await self._spawn(self.pending.pop(message.topic), None)
            chunk = None
        if chunk is None:
            chunk = self.pending[message.topic] = _Chunk(first_row=row)
        chunk.messages.append(message)
        chunk.size += size
        if len(chunk.messages) >= self.batch_size:
            await self._spawn(self.pending.pop(message.topic), None)

    async def _add_ordered(self, message: Message, row: int) -> None:
        info = await self.producer.instance.routes.publish_info(message.topic)
        queue = select_by_sharding_key(info.queues, message, None)
        lane = self.lanes.get(queue)
        if lane is None:
            send, receive = trio.open_memory_channel[_Chunk](_LANE_BUFFER)
            self.nursery.start_soon(self._lane, queue, receive)
            lane = self.lanes[queue] = (send, _Chunk())
        channel, chunk = lane
        size = _size(message)
        alone = message.delay_level > 0 or size > BATCH_BYTES or self.batch_size == 1
        if chunk.messages and (alone or chunk.size + size > BATCH_BYTES):
            await channel.send(chunk)
            chunk = _Chunk()
        if alone:
            await channel.send(_Chunk([message], row, size))
        else:
            if not chunk.messages:
                chunk.first_row = row
            chunk.messages.append(message)
            chunk.size += size
            if len(chunk.messages) >= self.batch_size:
                await channel.send(chunk)
                chunk = _Chunk()
        self.lanes[queue] = (channel, chunk)

    async def _lane(self, queue: MessageQueue, receive: trio.MemoryReceiveChannel[_Chunk]) -> None:
        async with receive:
            async for chunk in receive:
                async with self.slots:
                    await self._send(chunk, queue)

    async def _spawn(self, chunk: _Chunk, queue: MessageQueue | None) -> None:
        await self.slots.acquire()
        self.nursery.start_soon(self._send_and_release, chunk, queue)

    async def _send_and_release(self, chunk: _Chunk, queue: MessageQueue | None) -> None:
        try:
            await self._send(chunk, queue)
        finally:
            self.slots.release()

    async def _send(self, chunk: _Chunk, queue: MessageQueue | None) -> None:
        messages = chunk.messages
        try:
            if len(messages) == 1:
                await self.producer.send(messages[0], queue=queue)
            else:
                await self.producer.send_batch(messages, queue=queue)
        except RocketMQError as exc:
            last = chunk.first_row + len(messages) - 1
            rows = f"row {last}" if len(messages) == 1 else f"rows {chunk.first_row}..{last}"
            exc.add_note(f"rocketmq sink: sending {rows} of this task to topic {messages[0].topic!r} failed")
            raise
        counts = self.counts
        counts.requests += 1
        counts.messages += len(messages)
        counts.body_bytes += sum(len(m.body) for m in messages)
        counts.topics[messages[0].topic] = counts.topics.get(messages[0].topic, 0) + len(messages)

    async def finish(self) -> None:
        for topic in list(self.pending):
            await self._spawn(self.pending.pop(topic), None)
        for channel, chunk in self.lanes.values():
            if chunk.messages:
                await channel.send(chunk)
            await channel.aclose()


async def send_messages(
    producer: Producer,
    messages: Iterable[Message],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
) -> SendCounts:
    """Send ``messages`` with a started producer; return once every send is acknowledged.

    Raises:
        RocketMQError: the first send that failed (the others are cancelled), not wrapped in an
            exception group, with a note naming its rows.
    """
    try:
        async with trio.open_nursery() as nursery:
            sender = _Sender(producer, nursery, batch_size, max_in_flight)
            for row, message in enumerate(messages):
                await sender.add(message, row)
            await sender.finish()
    except BaseExceptionGroup as group:
        error = first_of_ours(group)
        if isinstance(error, Exception):
            raise error from None
        raise
    return sender.counts


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
            raise ClientError("the rocketmq sink only appends messages; mode 'overwrite' is not supported")
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
            counts = trio.run(self._write_async, itertools.chain([first], rows), scope, partition_id)
        return RocketMQCommitMessage(
            partition_id=partition_id,
            rows=counts.messages,
            requests=counts.requests,
            body_bytes=counts.body_bytes,
            topics=counts.topics,
        )

    def _messages(self, rows: Iterator[Any], scope: str, partition_id: int) -> Iterator[Message]:
        opts, columns = self.sink_options, self.columns
        for index, row in enumerate(rows):
            message = row_to_message(row, columns, opts.topic, index)
            if opts.deterministic_keys:
                message.properties[PropertyKey.UNIQ_KEY] = deterministic_uniq_key(scope, partition_id, index)
            yield message

    async def _write_async(self, rows: Iterator[Any], scope: str, partition_id: int) -> SendCounts:
        opts = self.sink_options
        async with Producer(
            opts.producer_group,
            namesrv=opts.namesrv,
            send_timeout=opts.send_timeout,
            max_message_size=opts.max_message_size,
            access_key=opts.access_key,
            secret_key=opts.secret_key,
        ) as producer:
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


class RocketMQWriter(_SinkBase, DataSourceWriter):
    """Batch writes (``df.write.format("rocketmq")``); see the module docstring."""

    def write(self, iterator: Iterator[Any]) -> RocketMQCommitMessage:
        return self._write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        _log_totals("rocketmq write committed", messages)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        _log_totals("rocketmq write aborted after sending (messages stay stored)", messages)


class RocketMQStreamWriter(_SinkBase, DataSourceStreamWriter):
    """Streaming writes (``df.writeStream.format("rocketmq")``); see the module docstring."""

    def write(self, iterator: Iterator[Any]) -> RocketMQCommitMessage:
        return self._write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _log_totals(f"rocketmq micro-batch {batchId} committed", messages)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _log_totals(f"rocketmq micro-batch {batchId} aborted (sent messages stay stored)", messages)
