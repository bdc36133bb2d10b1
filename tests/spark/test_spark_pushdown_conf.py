"""One source class whatever the session's ``spark.sql.python.filterPushdown.enabled`` says.

pyspark's planning worker (``pyspark.sql.worker.plan_data_source_read``) reads that setting into a
local, ``enable_pushdown``, calls ``DataSource.reader`` and refuses a reader that implements
``pushFilters`` when the local is false. These tests call ``reader`` the way that worker does
(from a frame of package ``pyspark.sql.worker`` holding the local) and check that the installed
pyspark still plans reads that way. The real thing, in a SparkSession against a broker, is
``integration/test_spark_read.py::test_a_plain_registration_reads_the_same_with_pushdown_on_or_off``.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

import pytest
from pyspark.sql.datasource import DataSourceReader
from pyspark.sql.worker import plan_data_source_read

import pyspark_rocketmq
import spark_connector
from spark_connector import PUSHDOWN_CONF, SPARK_SCHEMA, RocketMQDataSource
from spark_connector._source import RocketMQBatchReader, RocketMQPushdownReader

OPTIONS = {"namesrv": "127.0.0.1:9876", "topic": "t"}

_WORKER = """
def _main(data_source, schema, enable_pushdown):
    return data_source.reader(schema=schema)


def _main_without_the_setting(data_source, schema):
    return data_source.reader(schema=schema)
"""


def worker(name: str) -> Any:
    """``name`` from a module of pyspark's worker package (a stand-in for the real worker modules)."""
    namespace: dict[str, Any] = {
        "__name__": "pyspark.sql.worker.plan_data_source_read",
        "__package__": "pyspark.sql.worker",
    }
    exec(compile(_WORKER, "plan_data_source_read.py", "exec"), namespace)
    return namespace[name]


def implements_push_filters(reader: DataSourceReader) -> bool:
    """pyspark's own test (``plan_data_source_read``) for a reader it refuses while pushdown is off."""
    return getattr(reader.pushFilters, "__func__", None) is not DataSourceReader.pushFilters


def test_pushdown_off_gives_the_reader_without_push_filters_and_says_how_to_turn_it_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="spark_connector"):
        reader = worker("_main")(RocketMQDataSource(OPTIONS), SPARK_SCHEMA, False)
    assert type(reader) is RocketMQBatchReader
    assert not implements_push_filters(reader)
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert f"{PUSHDOWN_CONF}=true" in record.getMessage()


@pytest.mark.parametrize(
    ("planner", "args"),
    [
        ("_main", (True,)),  # plan_data_source_read with the setting on
        ("_main_without_the_setting", ()),  # data_source_pushdown_filters: runs only with it on
    ],
)
def test_pushdown_on_gives_the_pushdown_reader(
    caplog: pytest.LogCaptureFixture, planner: str, args: tuple[bool, ...]
) -> None:
    with caplog.at_level(logging.INFO, logger="spark_connector"):
        reader = worker(planner)(RocketMQDataSource(OPTIONS), SPARK_SCHEMA, *args)
    assert type(reader) is RocketMQPushdownReader
    assert implements_push_filters(reader)
    assert caplog.records == []


def test_outside_pyspark_the_reader_pushes_filters() -> None:
    assert type(RocketMQDataSource(OPTIONS).reader(SPARK_SCHEMA)) is RocketMQPushdownReader


def test_every_way_of_registering_gets_the_same_class() -> None:
    assert spark_connector.RocketMQPushdownDataSource is RocketMQDataSource
    assert pyspark_rocketmq.DefaultSource is RocketMQDataSource


class _Session:
    """What :func:`spark_connector.register` touches of a SparkSession."""

    def __init__(self) -> None:
        self.settings: dict[str, str] = {}
        self.registered: list[type] = []
        self.conf = self
        self.dataSource = self

    def set(self, key: str, value: str) -> None:
        self.settings[key] = value

    def register(self, source: type) -> None:
        self.registered.append(source)


def test_register_sets_the_setting_unless_told_not_to() -> None:
    on, left_alone = _Session(), _Session()
    spark_connector.register(on)
    spark_connector.register(left_alone, filter_pushdown=False)
    assert (on.settings, on.registered) == ({PUSHDOWN_CONF: "true"}, [RocketMQDataSource])
    assert (left_alone.settings, left_alone.registered) == ({}, [RocketMQDataSource])


def test_the_installed_pyspark_plans_reads_as_these_tests_assume() -> None:
    """The setting is a local named ``enable_pushdown``, read before ``reader`` is called (a tripwire)."""
    source = inspect.getsource(plan_data_source_read._main)
    setting = source.index("enable_pushdown = read_bool(infile)")
    assert setting < source.index("data_source.reader(schema=schema)")
    assert "if is_pushdown_implemented and not enable_pushdown:" in source
    assert 'getattr(reader.pushFilters, "__func__", None) is not DataSourceReader.pushFilters' in source
