"""The reader's row layout: the Spark schema, the exact Arrow schema of the batches ``read()`` yields,
and the subset of columns a query asks for.

Spark compares the Arrow schema of every yielded batch with ``to_arrow_schema(schema, "UTC")``
and refuses any difference (``DATA_SOURCE_RETURN_SCHEMA_MISMATCH``), so :data:`ARROW_SCHEMA` is
spelled out field by field: ``INT`` is int32, ``TIMESTAMP`` is ``timestamp[us, tz=UTC]``, a map's
keys are non-null. :func:`messages_to_batch` builds the columns one by one from decoded messages.

Column pruning goes through the schema. PySpark's Python Data Source API (4.0 to 4.3) pushes no
projection down: ``DataSource.reader(schema)`` / ``streamReader(schema)`` get the source's own
schema (:data:`SPARK_SCHEMA`) or, when the user gives one (``spark.read.format("rocketmq")
.schema("queue_offset BIGINT, body BINARY")``), exactly that one, and every batch must then have
exactly its columns, in its order. :func:`parse_read_schema` checks such a schema against the
source's columns (names exact, types equal; a column may be declared NOT NULL unless it can be
null) and returns the :class:`Projection` the executors build: only those columns, so the work
for the others is skipped (see :mod:`spark_connector._columns`).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from rocketmq_py.protocol import MessageExt, PropertyKey, format_socket_address
from spark_connector._errors import SparkSchemaError

__all__ = [
    "ALL_COLUMNS",
    "ARROW_SCHEMA",
    "COLUMNS",
    "SCHEMA_DDL",
    "SPARK_SCHEMA",
    "Projection",
    "empty_batch",
    "messages_to_batch",
    "parse_read_schema",
]

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
_TYPES: Final[dict[str, DataType]] = {f.name: f.dataType for f in SPARK_SCHEMA.fields}
#: The only column that can be null (a message without TAGS); the others may be declared NOT NULL.
_NULLABLE: Final = frozenset({"tags"})


@dataclass(frozen=True, slots=True)
class Projection:
    """The columns a read returns, in the order its schema names them, and its batches' exact schema.

    Picklable: it travels to executors inside the reader.

    Attributes:
        columns: names of :data:`COLUMNS`, in output order, each once (never empty).
        arrow_schema: what every batch is: ``to_arrow_schema`` of the schema the reader was made
            with (the schema Spark checks the batches against).
    """

    columns: tuple[str, ...]
    arrow_schema: pa.Schema


#: Every column, as the source's own schema has them (a read without ``.schema(...)``).
ALL_COLUMNS: Final = Projection(COLUMNS, ARROW_SCHEMA)


def parse_read_schema(schema: StructType) -> Projection:
    """The :class:`Projection` of the schema ``reader()`` / ``streamReader()`` were given.

    That is :data:`SPARK_SCHEMA` when the user gave no schema, else the user's: any non-empty
    subset of the source's columns in any order, each with its own type (:data:`SCHEMA_DDL`).
    Names are matched exactly (the batches must carry the user's names).

    Raises:
        SparkSchemaError: the schema is empty, names a column the source does not have or a column
            twice, gives a column another type, or declares ``tags`` NOT NULL. The error names the
            column and the type the source returns for it.
    """
    fields = list(schema.fields)
    if not fields:
        raise SparkSchemaError(None, SCHEMA_DDL, f"names no column; give one or more of: {SCHEMA_DDL}")
    seen: set[str] = set()
    for f in fields:
        name = f.name
        if name not in _TYPES:
            near = [c for c in COLUMNS if c.lower() == name.lower()]
            hint = f" (did you mean {near[0]!r}? names are matched exactly)" if near else ""
            raise SparkSchemaError(
                name, SCHEMA_DDL, f"is not a column of format rocketmq{hint}; the columns are: {SCHEMA_DDL}"
            )
        expected = _TYPES[name]
        accepted = _ddl(expected)
        if name in seen:
            raise SparkSchemaError(
                name, accepted, f"is named twice; give each column once ({name} {accepted})"
            )
        seen.add(name)
        if f.dataType != expected:
            given = _ddl(f.dataType)
            if given == accepted:  # differs only in the nullability of elements or map values
                given += " with non-null elements"
            raise SparkSchemaError(
                name,
                accepted,
                f"is declared {given} but the source returns {accepted}: declare '{name} {accepted}'",
            )
        if not f.nullable and name in _NULLABLE:
            raise SparkSchemaError(
                name,
                accepted,
                f"is declared NOT NULL but is null for a message without TAGS: declare '{name} {accepted}'",
            )
    return Projection(tuple(f.name for f in fields), to_arrow_schema(StructType(fields), timezone="UTC"))


def _ddl(data_type: DataType) -> str:
    return data_type.simpleString().upper()


def empty_batch(schema: pa.Schema = ARROW_SCHEMA) -> pa.RecordBatch:
    """A batch with no rows and ``schema`` (by default :data:`ARROW_SCHEMA`)."""
    return pa.RecordBatch.from_pylist([], schema=schema)


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
