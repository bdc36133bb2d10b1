"""Discovery shim: pyspark (4.x) registers format ``rocketmq`` by itself when this is installed.

On the first use of a Python data source, pyspark imports every installed top-level module whose
name starts with ``pyspark_`` and registers its ``DefaultSource``. That is this module: with
rocketmq-py installed, ``spark.read.format("rocketmq")`` works with no call. It is the same source
:func:`spark_connector.register` registers: it pushes filters down where the session has
``spark.sql.python.filterPushdown.enabled=true`` (``register`` sets it) and reads whole offset ranges
otherwise.
"""

from spark_connector import RocketMQDataSource as DefaultSource

__all__ = ["DefaultSource"]
