"""The Arrow batches match exactly what Spark expects for the declared schema, and a user's schema is
checked at planning (any subset of the columns in any order; anything else is a typed error)."""

from __future__ import annotations

import datetime as dt
import json
import pickle

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
)

from rocketmq_py.errors import ClientError
from rocketmq_py.protocol import MessageExt, SysFlag
from spark_connector import (
    ARROW_SCHEMA,
    SCHEMA_DDL,
    SPARK_SCHEMA,
    RocketMQDataSource,
    RocketMQPushdownDataSource,
    SparkSchemaError,
)
from spark_connector._schema import ALL_COLUMNS, COLUMNS, empty_batch, messages_to_batch, parse_read_schema


def test_arrow_schema_is_what_spark_checks_against() -> None:
    assert to_arrow_schema(SPARK_SCHEMA, timezone="UTC").equals(ARROW_SCHEMA)
    assert ARROW_SCHEMA.field("queue_id").type == pa.int32()
    assert ARROW_SCHEMA.field("store_timestamp").type == pa.timestamp("us", tz="UTC")


def test_ddl_names_the_same_columns() -> None:
    assert [part.split()[0] for part in SCHEMA_DDL.split(", ")] == list(COLUMNS)
    assert len(COLUMNS) == 16


def test_batch_columns() -> None:
    with_uniq = MessageExt(
        "t1",
        b"\x00body",
        tags="TagA",
        keys=["k1", "k2"],
        properties={"UNIQ_KEY": "UNIQ1", "a": "b"},
        queue_id=3,
        queue_offset=17,
        commit_log_offset=0x1234,
        born_timestamp=1_700_000_000_123,
        born_host="10.0.0.1:5555",
        store_timestamp=1_700_000_000_456,
        store_host="127.0.0.1:10911",
        reconsume_times=2,
        sys_flag=SysFlag.COMPRESSION_ZLIB,
    )
    bare = MessageExt("t1", b"", queue_id=0, queue_offset=0, store_host="127.0.0.1:10911")
    batch = messages_to_batch("broker-a", [with_uniq, bare])
    assert batch.schema.equals(ARROW_SCHEMA)
    first, second = batch.to_pylist()
    assert first["topic"] == "t1"
    assert first["broker_name"] == "broker-a"
    assert (first["queue_id"], first["queue_offset"]) == (3, 17)
    assert first["msg_id"] == "UNIQ1"
    assert first["offset_msg_id"] == "7F00000100002A9F0000000000001234"
    assert first["tags"] == "TagA"
    assert first["keys"] == ["k1", "k2"]
    assert first["body"] == b"\x00body"
    assert dict(first["properties"]) == {"UNIQ_KEY": "UNIQ1", "a": "b", "TAGS": "TagA", "KEYS": "k1 k2"}
    assert first["born_timestamp"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=dt.UTC)
    assert first["store_timestamp"] == dt.datetime(2023, 11, 14, 22, 13, 20, 456000, tzinfo=dt.UTC)
    assert (first["born_host"], first["store_host"]) == ("10.0.0.1:5555", "127.0.0.1:10911")
    assert (first["reconsume_times"], first["sys_flag"]) == (2, SysFlag.COMPRESSION_ZLIB)
    assert second["msg_id"] == second["offset_msg_id"]  # no UNIQ_KEY: the broker's id
    assert second["tags"] is None
    assert second["keys"] == []
    assert second["properties"] == []


def test_empty_batch() -> None:
    batch = empty_batch()
    assert batch.num_rows == 0
    assert batch.schema.equals(ARROW_SCHEMA)
    assert messages_to_batch("b", []).schema.equals(ARROW_SCHEMA)


# --- a schema given by the user: which columns the readers return ---------------------------------

OPTIONS = {"namesrv": "127.0.0.1:9876", "topic": "t"}


def schema_of(*fields: StructField) -> StructType:
    return StructType(list(fields))


def test_the_sources_own_schema_is_every_column() -> None:
    assert parse_read_schema(SPARK_SCHEMA) == ALL_COLUMNS
    assert ALL_COLUMNS.columns == COLUMNS
    # What reader() gets without a user schema: the source's schema after Spark's JSON round trip.
    assert parse_read_schema(StructType.fromJson(json.loads(SPARK_SCHEMA.json()))) == ALL_COLUMNS


def test_any_subset_in_any_order() -> None:
    schema = schema_of(SPARK_SCHEMA["body"], SPARK_SCHEMA["queue_offset"], SPARK_SCHEMA["properties"])
    wanted = parse_read_schema(schema)
    assert wanted.columns == ("body", "queue_offset", "properties")
    assert wanted != ALL_COLUMNS
    assert wanted.arrow_schema.equals(to_arrow_schema(schema, timezone="UTC"))  # what Spark checks
    assert wanted.arrow_schema.equals(pa.schema([ARROW_SCHEMA.field(c) for c in wanted.columns]))
    reordered = StructType(list(reversed(SPARK_SCHEMA.fields)))
    assert parse_read_schema(reordered).columns == tuple(reversed(COLUMNS))
    assert pickle.loads(pickle.dumps(wanted)) == wanted  # it travels to executors in the reader


def test_not_null_where_a_column_is_never_null() -> None:
    wanted = parse_read_schema(schema_of(StructField("queue_offset", LongType(), nullable=False)))
    assert not wanted.arrow_schema.field("queue_offset").nullable
    with pytest.raises(SparkSchemaError) as info:
        parse_read_schema(schema_of(StructField("tags", StringType(), nullable=False)))
    assert (info.value.column, info.value.expected) == ("tags", "STRING")
    assert "NOT NULL" in str(info.value)


@pytest.mark.parametrize(
    ("fields", "column", "expected", "says"),
    [
        pytest.param(
            [StructField("offset", LongType())],
            "offset",
            SCHEMA_DDL,
            "not a column of format rocketmq",
            id="unknown",
        ),
        pytest.param(
            [StructField("Queue_Offset", LongType())],
            "Queue_Offset",
            SCHEMA_DDL,
            "did you mean 'queue_offset'",
            id="another case",
        ),
        pytest.param(
            [
                StructField("body", BinaryType()),
                StructField("queue_id", IntegerType()),
                StructField("body", BinaryType()),
            ],
            "body",
            "BINARY",
            "named twice",
            id="twice",
        ),
        pytest.param(
            [StructField("queue_offset", IntegerType())],
            "queue_offset",
            "BIGINT",
            "declared INT but the source returns BIGINT: declare 'queue_offset BIGINT'",
            id="another type",
        ),
        pytest.param(
            [StructField("store_timestamp", TimestampNTZType())],
            "store_timestamp",
            "TIMESTAMP",
            "declared TIMESTAMP_NTZ",
            id="timestamp without time zone",
        ),
        pytest.param(
            [StructField("keys", ArrayType(StringType(), containsNull=False))],
            "keys",
            "ARRAY<STRING>",
            "with non-null elements",
            id="elements not null",
        ),
        pytest.param([], None, SCHEMA_DDL, "the schema names no column; give one or more of", id="empty"),
    ],
)
def test_schemas_the_source_cannot_return(
    fields: list[StructField], column: str | None, expected: str, says: str
) -> None:
    with pytest.raises(SparkSchemaError) as info:
        parse_read_schema(StructType(fields))
    error = info.value
    assert isinstance(error, ClientError)
    assert (error.column, error.expected) == (column, expected)
    assert says in str(error)
    if column is not None:
        assert str(error).startswith(f"column {column!r}: ")


@pytest.mark.parametrize("source", [RocketMQDataSource, RocketMQPushdownDataSource])
def test_readers_are_made_with_the_schemas_columns(source: type[RocketMQDataSource]) -> None:
    schema = schema_of(SPARK_SCHEMA["queue_offset"], SPARK_SCHEMA["body"])
    batch = source(OPTIONS).reader(schema)
    stream = source(OPTIONS).streamReader(schema)
    for reader in (batch, stream):
        assert reader.projection.columns == ("queue_offset", "body")  # type: ignore[attr-defined]
    assert source(OPTIONS).reader(SPARK_SCHEMA).projection == ALL_COLUMNS  # type: ignore[attr-defined]
    bad = schema_of(StructField("queue_offset", StringType()))
    with pytest.raises(SparkSchemaError, match="queue_offset BIGINT"):
        source(OPTIONS).reader(bad)
    with pytest.raises(SparkSchemaError, match="queue_offset BIGINT"):
        source(OPTIONS).streamReader(bad)
