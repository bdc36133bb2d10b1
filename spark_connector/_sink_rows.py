"""A row of the sink's DataFrame and the message it becomes: the schema checked against the sink's
columns once per write (:func:`plan_columns`, the columns are listed in :mod:`spark_connector._sink`),
then each row made a message (:func:`message_maker`, once per task) and, when the schema names a
queue, the queue it goes to (:func:`row_queue`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

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

from rocketmq_py.errors import ClientError, InvalidMessage
from rocketmq_py.protocol import Message, MessageQueue, PropertyKey

__all__ = ["SinkColumns", "message_maker", "plan_columns", "row_queue", "row_to_message"]

_INT_TYPES: Final = (ByteType, ShortType, IntegerType, LongType)


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
    broker_name: int | None = None
    queue_id: int | None = None

    def positions(self) -> frozenset[int]:
        """The positions of the columns the sink reads."""
        found = (
            self.body,
            self.topic,
            self.tags,
            self.keys,
            self.properties,
            self.delay_level,
            self.sharding_key,
            self.broker_name,
            self.queue_id,
        )
        return frozenset(p for p in found if p is not None)


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
    "broker_name": ("STRING", lambda t: isinstance(t, StringType)),
    "queue_id": ("an integer type", lambda t: isinstance(t, _INT_TYPES)),
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
    if ("broker_name" in index) != ("queue_id" in index):
        given, missing = (
            ("broker_name", "queue_id") if "broker_name" in index else ("queue_id", "broker_name")
        )
        raise ClientError(
            f"column {given!r} names a queue only with a {missing!r} column; the columns are: {have}"
        )
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
        broker_name=index.get("broker_name"),
        queue_id=index.get("queue_id"),
    )


# --- rows -> messages ------------------------------------------------------------------------------


def _get(row: Sequence[Any], position: int | None) -> Any:
    return None if position is None else row[position]


def message_maker(columns: SinkColumns, topic_option: str | None) -> Callable[[Sequence[Any], int], Message]:
    """What :func:`row_to_message` does for rows of ``columns``, as one function ``(row, row_index)``
    made once per task: it reads only the columns the schema has (the sink's hot path)."""
    body_at, body_is_string, topic_at = columns.body, columns.body_is_string, columns.topic
    props_at, tags_at, keys_at = columns.properties, columns.tags, columns.keys
    delay_at, sharding_at = columns.delay_level, columns.sharding_key
    tags_key, keys_key = PropertyKey.TAGS, PropertyKey.KEYS

    def make(row: Sequence[Any], row_index: int = 0) -> Message:
        body = row[body_at]
        if body is None:
            raise InvalidMessage(f"row {row_index}: column 'body' is null")
        if body_is_string:
            body = body.encode()
        elif not isinstance(body, bytes):
            body = bytes(body)
        topic = topic_option or (None if topic_at is None else row[topic_at])
        if not topic:
            raise InvalidMessage(f"row {row_index}: column 'topic' is null and no 'topic' option is set")
        message = Message(topic, body)
        if props_at is not None and (properties := row[props_at]):
            message.properties = {k: v for k, v in properties.items() if v is not None}
        if tags_at is not None and (tags := row[tags_at]):
            message.properties[tags_key] = tags
        if keys_at is not None and (keys := row[keys_at]):
            if isinstance(keys, str):
                message.properties[keys_key] = keys
            else:
                message.keys = [k for k in keys if k]
        if delay_at is not None and (delay := row[delay_at]):
            message.delay_level = delay
        if sharding_at is not None and (sharding_key := row[sharding_at]) is not None:
            message.sharding_key = sharding_key
        return message

    return make


def row_to_message(
    row: Sequence[Any], columns: SinkColumns, topic_option: str | None, row_index: int = 0
) -> Message:
    """The message for one row (a ``Row`` or any sequence in schema order).

    Raises:
        InvalidMessage: the row's body or topic is null (the message gives the row's index).
    """
    return message_maker(columns, topic_option)(row, row_index)


def row_queue(
    row: Sequence[Any], columns: SinkColumns, topic: str, row_index: int = 0
) -> MessageQueue | None:
    """The queue of ``topic`` a row names with ``broker_name`` and ``queue_id``; ``None`` when it
    names none (no such columns, or both null): the producer picks one.

    Raises:
        InvalidMessage: one of the two is null, or the queue id is negative (the message gives the
            row's index).
    """
    broker, queue_id = _get(row, columns.broker_name), _get(row, columns.queue_id)
    if broker is None and queue_id is None:
        return None
    if broker is None or queue_id is None:
        null = "broker_name" if broker is None else "queue_id"
        raise InvalidMessage(f"row {row_index}: column {null!r} is null but the other names a queue")
    if queue_id < 0:
        raise InvalidMessage(f"row {row_index}: column 'queue_id' is {queue_id}, not a queue id")
    return MessageQueue(topic, broker, int(queue_id))
