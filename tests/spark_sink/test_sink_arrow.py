"""The sink's writers take Arrow batches (spark_connector/_sink_arrow.py): the rows they make give the
same messages and queues as the ``Row`` objects Spark would hand a row writer for the same data."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
)

from spark_connector._sink import (
    RocketMQStreamWriter,
    RocketMQWriter,
    plan_columns,
    row_queue,
    row_to_message,
)
from spark_connector._sink_arrow import arrow_rows

ALL = StructType(
    [
        StructField("extra", LongType()),
        StructField("body", BinaryType()),
        StructField("topic", StringType()),
        StructField("tags", StringType()),
        StructField("keys", ArrayType(StringType())),
        StructField("properties", MapType(StringType(), StringType())),
        StructField("delay_level", ShortType()),
        StructField("sharding_key", StringType()),
        StructField("broker_name", StringType()),
        StructField("queue_id", IntegerType()),
    ]
)
ROWS: list[tuple[Any, ...]] = [
    (1, b"a", "T1", "TagA", ["k1", "k2"], {"p": "1", "q": "2"}, 3, "s1", "broker-a", 1),
    (2, b"b", "T2", None, None, None, None, None, None, None),
    (3, b"", "T1", "TagB", ["", "k3"], {"p": None, "r": "x"}, 0, "", None, None),
    (None, b"\x00\xff", "T3", "", [], {}, 18, None, "broker-b", 0),
    (5, b"e" * 300, "T1", "TagC", ["only"], {"a": "b"}, None, "s2", None, None),
]


def seen(row: Any, index: int, columns: Any) -> tuple[Any, ...]:
    message = row_to_message(row, columns, None, index)
    return (
        message.topic,
        message.body,
        dict(message.properties),
        message.delay_level,
        message.sharding_key,
        row_queue(row, columns, message.topic, index),
    )


def test_arrow_rows_give_the_messages_and_queues_rows_give(
    spark_batches: Callable[..., Iterator[Any]],
) -> None:
    columns = plan_columns(ALL, None)
    from_rows = [seen(row, i, columns) for i, row in enumerate(ROWS)]
    from_arrow = [
        seen(row, i, columns) for i, row in enumerate(arrow_rows(spark_batches(ALL, ROWS), columns))
    ]
    assert from_arrow == from_rows
    assert [r[0] for r in arrow_rows(spark_batches(ALL, ROWS), columns)] == [None] * len(ROWS)  # not read


def test_string_body_and_keys(spark_batches: Callable[..., Iterator[Any]]) -> None:
    schema = StructType([StructField("keys", StringType()), StructField("body", StringType())])
    rows: list[tuple[Any, ...]] = [("k1 k2", "héllo"), (None, "x")]
    columns = plan_columns(schema, "T")
    got = [
        row_to_message(r, columns, "T", i)
        for i, r in enumerate(arrow_rows(spark_batches(schema, rows), columns))
    ]
    assert [(m.body, m.keys) for m in got] == [("héllo".encode(), ("k1", "k2")), (b"x", ())]


def test_a_null_body_names_its_row_across_batches(spark_batches: Callable[..., Iterator[Any]]) -> None:
    schema = StructType([StructField("body", BinaryType())])
    columns = plan_columns(schema, "T")
    rows = list(arrow_rows(spark_batches(schema, [(b"1",), (b"2",), (None,)]), columns))
    with pytest.raises(Exception, match="row 2: column 'body' is null"):
        row_to_message(rows[2], columns, "T", 2)


@pytest.mark.parametrize("writer", [RocketMQWriter, RocketMQStreamWriter])
def test_the_writers_are_arrow_writers(writer: type) -> None:
    from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter

    assert issubclass(writer, DataSourceArrowWriter | DataSourceStreamArrowWriter)
