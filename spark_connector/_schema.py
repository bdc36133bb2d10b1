"""The reader's row layout: the Spark schema and the exact Arrow schema of the batches ``read()`` yields.

Spark compares the Arrow schema of every yielded batch with ``to_arrow_schema(schema, "UTC")``
and refuses any difference (``DATA_SOURCE_RETURN_SCHEMA_MISMATCH``), so :data:`ARROW_SCHEMA` is
spelled out field by field: ``INT`` is int32, ``TIMESTAMP`` is ``timestamp[us, tz=UTC]``, a map's
keys are non-null. :func:`messages_to_batch` builds the columns one by one from decoded messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from rocketmq_py.protocol import MessageExt
from rocketmq_py.protocol._ids import format_socket_address, offset_msg_id_from_raw
from rocketmq_py.protocol._properties import PropertyKey

__all__ = ["ARROW_SCHEMA", "COLUMNS", "SCHEMA_DDL", "SPARK_SCHEMA", "empty_batch", "messages_to_batch"]

#: The schema as the issue states it (Spark DDL).
SCHEMA_DDL: Final = (
    "topic STRING, broker_name STRING, queue_id INT, queue_offset BIGINT, msg_id STRING, "
    "offset_msg_id STRING, tags STRING, keys ARRAY<STRING>, body BINARY, properties MAP<STRING,STRING>, "
    "born_timestamp TIMESTAMP, store_timestamp TIMESTAMP, born_host STRING, store_host STRING, "
    "reconsume_times INT, sys_flag INT"
)

#: The same schema as a StructType (built without a JVM: parsing DDL needs a SparkContext).
SPARK_SCHEMA: Final = StructType(
    [
        StructField("topic", StringType()),
        StructField("broker_name", StringType()),
        StructField("queue_id", IntegerType()),
        StructField("queue_offset", LongType()),
        StructField("msg_id", StringType()),
        StructField("offset_msg_id", StringType()),
        StructField("tags", StringType()),
        StructField("keys", ArrayType(StringType())),
        StructField("body", BinaryType()),
        StructField("properties", MapType(StringType(), StringType())),
        StructField("born_timestamp", TimestampType()),
        StructField("store_timestamp", TimestampType()),
        StructField("born_host", StringType()),
        StructField("store_host", StringType()),
        StructField("reconsume_times", IntegerType()),
        StructField("sys_flag", IntegerType()),
    ]
)

COLUMNS: Final = tuple(SPARK_SCHEMA.fieldNames())

_TS: Final = pa.timestamp("us", tz="UTC")
_MAP: Final = pa.map_(pa.string(), pa.string())
_LIST: Final = pa.list_(pa.string())

#: What Spark expects of every batch (equal to ``to_arrow_schema(SPARK_SCHEMA, timezone="UTC")``).
ARROW_SCHEMA: Final = pa.schema(
    [
        pa.field("topic", pa.string()),
        pa.field("broker_name", pa.string()),
        pa.field("queue_id", pa.int32()),
        pa.field("queue_offset", pa.int64()),
        pa.field("msg_id", pa.string()),
        pa.field("offset_msg_id", pa.string()),
        pa.field("tags", pa.string()),
        pa.field("keys", _LIST),
        pa.field("body", pa.binary()),
        pa.field("properties", _MAP),
        pa.field("born_timestamp", _TS),
        pa.field("store_timestamp", _TS),
        pa.field("born_host", pa.string()),
        pa.field("store_host", pa.string()),
        pa.field("reconsume_times", pa.int32()),
        pa.field("sys_flag", pa.int32()),
    ]
)

_TAGS: Final = PropertyKey.TAGS
_KEYS: Final = PropertyKey.KEYS
_UNIQ: Final = PropertyKey.UNIQ_KEY


def empty_batch() -> pa.RecordBatch:
    """A batch with no rows and :data:`ARROW_SCHEMA`."""
    return pa.RecordBatch.from_pylist([], schema=ARROW_SCHEMA)


def messages_to_batch(broker_name: str, messages: Sequence[MessageExt]) -> pa.RecordBatch:
    """One Arrow batch (exactly :data:`ARROW_SCHEMA`) holding ``messages`` pulled from ``broker_name``.

    Columns are built one at a time from plain lists; hosts and offset message ids are computed
    from the raw stored addresses, memoising the (few distinct) addresses.
    """
    n = len(messages)
    hosts: dict[bytes, str] = {}
    topics: list[str] = []
    queue_ids: list[int] = []
    offsets: list[int] = []
    msg_ids: list[str] = []
    offset_ids: list[str] = []
    tags: list[str | None] = []
    keys: list[list[str]] = []
    bodies: list[bytes] = []
    map_offsets: list[int] = [0]
    map_keys: list[str] = []
    map_values: list[str] = []
    born_ts: list[int] = []
    store_ts: list[int] = []
    born_hosts: list[str] = []
    store_hosts: list[str] = []
    reconsume: list[int] = []
    sys_flags: list[int] = []
    for m in messages:
        props = m.properties
        topics.append(m.topic)
        queue_ids.append(m.queue_id)
        offsets.append(m.queue_offset)
        store_raw = m.store_address
        offset_id = offset_msg_id_from_raw(store_raw, m.commit_log_offset)
        offset_ids.append(offset_id)
        msg_ids.append(props.get(_UNIQ) or offset_id)
        tags.append(props.get(_TAGS))
        joined = props.get(_KEYS)
        keys.append([k for k in joined.split(" ") if k] if joined else [])
        bodies.append(m.body)
        map_keys.extend(props.keys())
        map_values.extend(props.values())
        map_offsets.append(len(map_keys))
        born_ts.append(m.born_timestamp * 1000)
        store_ts.append(m.store_timestamp * 1000)
        born_raw = m.born_address
        born = hosts.get(born_raw)
        if born is None:
            born = hosts[born_raw] = format_socket_address(born_raw)
        born_hosts.append(born)
        store = hosts.get(store_raw)
        if store is None:
            store = hosts[store_raw] = format_socket_address(store_raw)
        store_hosts.append(store)
        reconsume.append(m.reconsume_times)
        sys_flags.append(m.sys_flag)
    properties = pa.MapArray.from_arrays(
        pa.array(map_offsets, pa.int32()), pa.array(map_keys, pa.string()), pa.array(map_values, pa.string())
    ).cast(_MAP)
    columns: list[Any] = [
        pa.array(topics, pa.string()),
        pa.array([broker_name] * n, pa.string()),
        pa.array(queue_ids, pa.int32()),
        pa.array(offsets, pa.int64()),
        pa.array(msg_ids, pa.string()),
        pa.array(offset_ids, pa.string()),
        pa.array(tags, pa.string()),
        pa.array(keys, _LIST),
        pa.array(bodies, pa.binary()),
        properties,
        pa.array(born_ts, _TS),
        pa.array(store_ts, _TS),
        pa.array(born_hosts, pa.string()),
        pa.array(store_hosts, pa.string()),
        pa.array(reconsume, pa.int32()),
        pa.array(sys_flags, pa.int32()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA)
