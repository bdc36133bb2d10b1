"""The Arrow batches match exactly what Spark expects for the declared schema."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema

from rocketmq_py.protocol import MessageExt, SysFlag
from spark_connector import ARROW_SCHEMA, SCHEMA_DDL, SPARK_SCHEMA
from spark_connector._schema import COLUMNS, empty_batch, messages_to_batch


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
