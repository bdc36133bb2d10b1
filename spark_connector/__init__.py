"""PySpark 4.x Python Data Source for Apache RocketMQ (format ``rocketmq``).

Register once per session, then read and write::

    import spark_connector

    spark_connector.register(spark)
    df = spark.read.format("rocketmq").option("namesrv", "127.0.0.1:9876").option("topic", "t").load()

Batch reads plan the queues' offset ranges on the driver and pull them directly on executors
(no consumer group); streaming reads keep ``{"topic/broker/queueId": offset}`` in Spark's
checkpoint. Options, schema and behaviour: see :mod:`spark_connector._options`,
:mod:`spark_connector._schema`, :mod:`spark_connector._planning` and :mod:`spark_connector._stream`.
"""

from __future__ import annotations

from typing import Any

from spark_connector._errors import DataLossError, SparkOptionError
from spark_connector._schema import ARROW_SCHEMA, SCHEMA_DDL, SPARK_SCHEMA
from spark_connector._source import FORMAT, PUSHDOWN_CONF, RocketMQDataSource, RocketMQPushdownDataSource

__all__ = [
    "ARROW_SCHEMA",
    "FORMAT",
    "SCHEMA_DDL",
    "SPARK_SCHEMA",
    "DataLossError",
    "RocketMQDataSource",
    "RocketMQPushdownDataSource",
    "SparkOptionError",
    "register",
]


def register(spark: Any, *, filter_pushdown: bool = True) -> None:
    """Register format ``rocketmq`` with ``spark`` (a SparkSession); calling it again is harmless.

    Args:
        spark: the session.
        filter_pushdown: also turn on the session's Python filter pushdown
            (``spark.sql.python.filterPushdown.enabled``, off by default in pyspark 4.x) and register
            the reader that narrows offset ranges by ``broker_name`` / ``queue_id`` /
            ``queue_offset`` / ``store_timestamp`` predicates. With ``False`` the session is left
            alone and the source reads whole ranges (Spark filters the rows).
    """
    if filter_pushdown:
        spark.conf.set(PUSHDOWN_CONF, "true")
        spark.dataSource.register(RocketMQPushdownDataSource)
    else:
        spark.dataSource.register(RocketMQDataSource)
