"""Schema validation and row -> Message conversion of the rocketmq sink (no Spark session)."""

from __future__ import annotations

import pickle

import pytest
from pyspark.sql import Row
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from rocketmq_py.errors import ClientError, InvalidMessage
from rocketmq_py.protocol import Message, MessageQueue
from spark_connector._sink import (
    RocketMQStreamWriter,
    RocketMQWriter,
    SinkColumns,
    plan_columns,
    row_queue,
    row_to_message,
)

FULL = StructType(
    [
        StructField("Body", BinaryType()),
        StructField("topic", StringType()),
        StructField("tags", StringType()),
        StructField("keys", ArrayType(StringType())),
        StructField("properties", MapType(StringType(), StringType())),
        StructField("delay_level", IntegerType()),
        StructField("sharding_key", StringType()),
        StructField("extra", DoubleType()),  # ignored, as Spark's Kafka sink ignores other columns
    ]
)


def schema(*fields: tuple[str, object]) -> StructType:
    return StructType([StructField(name, dtype) for name, dtype in fields])  # type: ignore[arg-type]


def test_plan_finds_every_column_case_insensitively() -> None:
    assert plan_columns(FULL, None) == SinkColumns(
        body=0, body_is_string=False, topic=1, tags=2, keys=3, properties=4, delay_level=5, sharding_key=6
    )


def test_body_only_with_the_topic_option() -> None:
    cols = plan_columns(schema(("value", LongType()), ("body", StringType())), "T")
    assert cols == SinkColumns(body=1, body_is_string=True)


@pytest.mark.parametrize(
    ("fields", "topic", "message"),
    [
        (
            [("value", BinaryType())],
            "T",
            "the rocketmq sink needs a 'body' column (BINARY or STRING); the columns are: value",
        ),
        ([("body", LongType())], "T", "column 'body' must be BINARY or STRING, not bigint"),
        ([("body", BinaryType())], None, "the rocketmq sink needs a 'topic' column or the 'topic' option"),
        ([("body", BinaryType()), ("topic", IntegerType())], None, "column 'topic' must be STRING, not int"),
        (
            [("body", BinaryType()), ("keys", ArrayType(IntegerType()))],
            "T",
            "column 'keys' must be ARRAY<STRING> or STRING",
        ),
        (
            [("body", BinaryType()), ("properties", MapType(StringType(), IntegerType()))],
            "T",
            "column 'properties' must be MAP<STRING,STRING>, not map<string,int>",
        ),
        (
            [("body", BinaryType()), ("delay_level", StringType())],
            "T",
            "column 'delay_level' must be an integer type",
        ),
        ([("body", BinaryType()), ("BODY", BinaryType())], "T", "the DataFrame has two columns named 'body'"),
        (
            [("body", BinaryType()), ("broker_name", StringType())],
            "T",
            "column 'broker_name' names a queue only with a 'queue_id' column",
        ),
        (
            [("body", BinaryType()), ("queue_id", IntegerType())],
            "T",
            "column 'queue_id' names a queue only with a 'broker_name' column",
        ),
        (
            [("body", BinaryType()), ("broker_name", StringType()), ("queue_id", StringType())],
            "T",
            "column 'queue_id' must be an integer type, not string",
        ),
    ],
)
def test_schema_errors_name_the_column(
    fields: list[tuple[str, object]], topic: str | None, message: str
) -> None:
    with pytest.raises(ClientError) as info:
        plan_columns(schema(*fields), topic)
    assert str(info.value).startswith(message)


def test_a_row_names_its_queue_with_broker_name_and_queue_id() -> None:
    """The reader's columns of the same names (Kafka's sink reads the source's ``partition``)."""
    cols = plan_columns(
        schema(("body", StringType()), ("broker_name", StringType()), ("queue_id", IntegerType())), "T"
    )
    assert (cols.broker_name, cols.queue_id) == (1, 2)
    assert row_queue(("x", "broker-b", 3), cols, "T", 0) == MessageQueue("T", "broker-b", 3)
    assert row_queue(("x", None, None), cols, "T", 0) is None  # the producer's own choice
    assert row_queue(("x",), plan_columns(schema(("body", StringType())), "T"), "T") is None
    with pytest.raises(InvalidMessage, match=r"row 4: column 'queue_id' is null"):
        row_queue(("x", "broker-b", None), cols, "T", 4)
    with pytest.raises(InvalidMessage, match=r"row 5: column 'broker_name' is null"):
        row_queue(("x", None, 1), cols, "T", 5)
    with pytest.raises(InvalidMessage, match=r"row 6: column 'queue_id' is -1"):
        row_queue(("x", "broker-b", -1), cols, "T", 6)


def test_full_row_to_message() -> None:
    cols = plan_columns(FULL, None)
    row = Row(
        b"payload", "Orders", "TagA", ["k1", None, "k2"], {"color": "red", "gone": None}, 3, "order-7", 1.5
    )
    message = row_to_message(row, cols, None)
    assert message.topic == "Orders"
    assert message.body == b"payload"
    assert message.tags == "TagA"
    assert message.keys == ("k1", "k2")
    assert message.delay_level == 3
    assert message.sharding_key == "order-7"
    assert message.properties == {
        "color": "red",
        "TAGS": "TagA",
        "KEYS": "k1 k2",
        "DELAY": "3",
        "__SHARDINGKEY": "order-7",
    }


def test_nulls_mean_absent_and_the_topic_option_wins() -> None:
    cols = plan_columns(FULL, "Forced")
    message = row_to_message(
        Row(bytearray(b"x"), "Ignored", None, None, None, None, None, None), cols, "Forced"
    )
    assert message == Message("Forced", b"x")
    assert type(message.body) is bytes


def test_string_body_and_string_keys() -> None:
    cols = plan_columns(schema(("body", StringType()), ("keys", StringType())), "T")
    message = row_to_message(("héllo", "a b"), cols, "T")
    assert message.body == "héllo".encode()
    assert message.keys == ("a", "b")


def test_null_body_and_null_topic_name_the_row() -> None:
    cols = plan_columns(schema(("body", BinaryType()), ("topic", StringType())), None)
    with pytest.raises(InvalidMessage, match="row 7: column 'body' is null"):
        row_to_message((None, "T"), cols, None, 7)
    with pytest.raises(InvalidMessage, match="row 3: column 'topic' is null and no 'topic' option is set"):
        row_to_message((b"x", None), cols, None, 3)


def test_writers_validate_up_front_and_pickle() -> None:
    options = {"namesrv": "127.0.0.1:9876", "topic": "T"}
    with pytest.raises(ClientError, match="needs a 'body' column"):
        RocketMQWriter(options, schema(("value", BinaryType())), False)
    with pytest.raises(ClientError, match="only appends"):
        RocketMQStreamWriter(options, schema(("body", BinaryType())), True)
    with pytest.raises(ClientError, match="option 'namesrv': is required"):
        RocketMQWriter({"topic": "T"}, schema(("body", BinaryType())), False)
    writer = RocketMQWriter(options, schema(("body", BinaryType())), False)
    copy = pickle.loads(pickle.dumps(writer))
    assert copy.write_id == writer.write_id
    assert len(writer.write_id) == 32
    assert RocketMQWriter(options | {"writeid": "w1"}, schema(("body", BinaryType())), False).write_id == "w1"


def test_an_empty_partition_commits_without_a_producer() -> None:
    # Nothing listens on port 1: a producer start or a route lookup would fail.
    writer = RocketMQStreamWriter(
        {"namesrv": "127.0.0.1:1", "topic": "T"}, schema(("body", BinaryType())), False
    )
    report = writer.write(iter([]))
    assert (report.partition_id, report.rows, report.requests, report.body_bytes, report.topics) == (
        0,
        0,
        0,
        0,
        {},
    )
