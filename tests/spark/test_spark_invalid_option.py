"""The connector's option errors are rocketmq-py's InvalidOption (and so ValueErrors), messages unchanged."""

from __future__ import annotations

import pytest
from pyspark.sql.types import BinaryType, StringType, StructField, StructType

from rocketmq_py.errors import InvalidOption
from spark_connector import SparkOptionError
from spark_connector._options import parse_read_options, parse_sink_options
from spark_connector._sink import RocketMQWriter


def test_option_error_is_invalid_option() -> None:
    assert issubclass(SparkOptionError, InvalidOption)
    assert issubclass(SparkOptionError, ValueError)


def test_read_option() -> None:
    with pytest.raises(InvalidOption, match=r"option 'numPartitions': 0 is out of range"):
        parse_read_options({"namesrv": "127.0.0.1:9876", "topic": "t", "numPartitions": "0"}, streaming=False)


def test_sink_option() -> None:
    with pytest.raises(InvalidOption, match=r"option 'namesrv'"):
        parse_sink_options({"topic": "t"})


def test_sink_overwrite() -> None:
    schema = StructType([StructField("topic", StringType()), StructField("body", BinaryType())])
    with pytest.raises(InvalidOption, match="mode 'overwrite' is not supported"):
        RocketMQWriter({"namesrv": "127.0.0.1:9876"}, schema, overwrite=True)
