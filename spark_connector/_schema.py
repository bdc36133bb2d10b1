"""The reader's row layout: the Spark schema and the exact Arrow schema of the batches ``read()`` yields.

Spark compares the Arrow schema of every yielded batch with ``to_arrow_schema(schema, "UTC")``
and refuses any difference (``DATA_SOURCE_RETURN_SCHEMA_MISMATCH``), so :data:`ARROW_SCHEMA` is
spelled out field by field: ``INT`` is int32, ``TIMESTAMP`` is ``timestamp[us, tz=UTC]``, a map's
keys are non-null. :func:`messages_to_batch` builds the columns one by one from decoded messages.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from itertools import accumulate
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc
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
from rocketmq_py.protocol._ids import format_socket_address
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
_TS_MS: Final = pa.timestamp("ms", tz="UTC")


def empty_batch() -> pa.RecordBatch:
    """A batch with no rows and :data:`ARROW_SCHEMA`."""
    return pa.RecordBatch.from_pylist([], schema=ARROW_SCHEMA)


def messages_to_batch(broker_name: str, messages: Sequence[MessageExt]) -> pa.RecordBatch:
    """One Arrow batch (exactly :data:`ARROW_SCHEMA`) holding ``messages`` pulled from ``broker_name``.

    The executor's hot path (``benchmarks/spark_arrow.py``; ``tests/spark/test_spark_batch_fast.py``
    pins it to the plain row loop): each column is gathered by its own list comprehension (cheaper
    per element than one loop of ``append`` calls) and becomes an Arrow array of an explicit type.
    Hosts and the hex prefix of offset message ids are computed once per distinct address (a batch
    has one or two); the commit-log offsets are packed and hexed in one call and joined to the
    prefix by Arrow; ``msg_id`` is UNIQ_KEY coalesced with the offset id. The properties map is
    built flat (names, values, offsets); timestamps go in as int64 milliseconds, cast to
    microseconds by Arrow.
    """
    n = len(messages)
    if not n:
        return empty_batch()
    string = pa.string()
    props = [m.properties for m in messages]
    store_raws = [m.store_address for m in messages]
    born_raws = [m.born_address for m in messages]
    distinct_stores = set(store_raws)
    if len(distinct_stores) == 1:
        (store_raw,) = distinct_stores
        prefix: Any = store_raw.hex().upper()
        store_hosts = [format_socket_address(store_raw)] * n
    else:
        prefixes = {raw: raw.hex().upper() for raw in distinct_stores}
        prefix = pa.array([prefixes[raw] for raw in store_raws], string)
        hosts = {raw: format_socket_address(raw) for raw in distinct_stores}
        store_hosts = [hosts[raw] for raw in store_raws]
    # Offset msg id = hex(store address) + hex(int64 commit-log offset), as offset_msg_id_from_raw
    # makes it: all offsets are packed and hexed at once, cut into 16-character strings by Arrow.
    packed = struct.pack(f">{n}q", *[m.commit_log_offset for m in messages]).hex().upper().encode()
    cuts = pa.array(range(0, 16 * n + 1, 16), pa.int32()).buffers()[1]
    offset_hex = pa.StringArray.from_buffers(n, cuts, pa.py_buffer(packed))
    offset_ids = pc.binary_join_element_wise(prefix, offset_hex, "")
    distinct_borns = set(born_raws)
    if len(distinct_borns) == 1:
        born_hosts = [format_socket_address(born_raws[0])] * n
    else:
        hosts = {raw: format_socket_address(raw) for raw in distinct_borns}
        born_hosts = [hosts[raw] for raw in born_raws]
    uniq, tags_key, keys_key = _UNIQ, _TAGS, _KEYS
    msg_ids = pc.coalesce(pa.array([p.get(uniq) or None for p in props], string), offset_ids)
    joined_keys = [p.get(keys_key) for p in props]
    keys = [
        ([joined] if " " not in joined else [k for k in joined.split(" ") if k]) if joined else []
        for joined in joined_keys
    ]
    map_offsets = list(accumulate(map(len, props), initial=0))
    map_keys = [k for p in props for k in p]
    map_values = [v for p in props for v in p.values()]
    properties = pa.MapArray.from_arrays(
        pa.array(map_offsets, pa.int32()), pa.array(map_keys, string), pa.array(map_values, string)
    ).cast(_MAP)
    columns: list[Any] = [
        pa.array([m.topic for m in messages], string),
        pa.array([broker_name] * n, string),
        pa.array([m.queue_id for m in messages], pa.int32()),
        pa.array([m.queue_offset for m in messages], pa.int64()),
        msg_ids,
        offset_ids,
        pa.array([p.get(tags_key) for p in props], string),
        pa.array(keys, _LIST),
        pa.array([m.body for m in messages], pa.binary()),
        properties,
        pa.array([m.born_timestamp for m in messages], _TS_MS).cast(_TS),
        pa.array([m.store_timestamp for m in messages], _TS_MS).cast(_TS),
        pa.array(born_hosts, string),
        pa.array(store_hosts, string),
        pa.array([m.reconsume_times for m in messages], pa.int32()),
        pa.array([m.sys_flag for m in messages], pa.int32()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA)
