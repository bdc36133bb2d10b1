"""PySpark 4.x Python Data Source for Apache RocketMQ (format ``rocketmq``).

Register once per session, then read and write::

    import spark_connector

    spark_connector.register(spark)
    df = spark.read.format("rocketmq").option("namesrv", "127.0.0.1:9876").option("topic", "t").load()

Batch reads plan the queues' offset ranges on the driver and pull them directly on executors
(no consumer group); streaming reads keep ``{"topic/broker/queueId": offset}`` in Spark's
checkpoint. Options, schema and behaviour: see :mod:`spark_connector._options`,
:mod:`spark_connector._schema`, :mod:`spark_connector._planning` and :mod:`spark_connector._stream`.

A schema naming only the columns a query needs makes the read cheaper: the executors build those
columns and skip the work for the others (Spark pushes no column pruning down to Python data
sources, so this is the way to ask). Any subset of :data:`SCHEMA_DDL` in any order, each column
with its own type; anything else fails the query with :class:`SparkSchemaError`::

    df = (
        spark.read.format("rocketmq")
        .schema("queue_offset BIGINT, body BINARY")
        .option("namesrv", "127.0.0.1:9876")
        .option("topic", "t")
        .load()
    )
"""

from __future__ import annotations

from typing import Any

# First: without the spark extra, say which extra to install instead of a bare ModuleNotFoundError.
import spark_connector._check_extra  # noqa: F401
from spark_connector._errors import (
    DataLossError,
    NoOffsetForTimestampError,
    SparkOptionError,
    SparkSchemaError,
)
from spark_connector._schema import ARROW_SCHEMA, SCHEMA_DDL, SPARK_SCHEMA
from spark_connector._source import FORMAT, PUSHDOWN_CONF, RocketMQDataSource, RocketMQPushdownDataSource

__all__ = [
    "ARROW_SCHEMA",
    "FORMAT",
    "SCHEMA_DDL",
    "SPARK_SCHEMA",
    "DataLossError",
    "NoOffsetForTimestampError",
    "RocketMQDataSource",
    "RocketMQPushdownDataSource",
    "SparkOptionError",
    "SparkSchemaError",
    "register",
]


def register(spark: Any, *, filter_pushdown: bool = True) -> None:
    """Register format ``rocketmq`` with ``spark`` (a SparkSession); calling it again is harmless.

    Registering is optional where rocketmq-py is installed (pyspark discovers the source), and a
    plain ``spark.dataSource.register(RocketMQDataSource)`` does the same but for the setting below.

    Args:
        spark: the session.
        filter_pushdown: also turn on the session's Python filter pushdown
            (``spark.sql.python.filterPushdown.enabled``, off by default in pyspark 4.x), so that
            batch reads narrow their offset ranges by ``broker_name`` / ``queue_id`` /
            ``queue_offset`` / ``store_timestamp`` predicates. With ``False`` the session's setting
            is left as it is; where it is off, reads pull whole ranges and Spark filters the rows
            (the same results).
    """
    if filter_pushdown:
        spark.conf.set(PUSHDOWN_CONF, "true")
    spark.dataSource.register(RocketMQDataSource)
