"""The data source: format ``rocketmq`` for ``spark.read``, ``spark.readStream`` and the writers.

:class:`RocketMQDataSource` is the one source class: :func:`spark_connector.register` registers
it, pyspark's discovery finds it (``pyspark_rocketmq``) and a plain
``spark.dataSource.register(RocketMQDataSource)`` works too. Its factories parse the options (a bad
one fails the query at once, naming the option) and return the batch reader here, the stream reader
(:mod:`spark_connector._stream`) or the writers (:mod:`spark_connector._sink`, imported only when a
write asks for them).

Batch reads push filters down when the session allows it (``spark.sql.python.filterPushdown.enabled``,
off by default): pyspark refuses a reader that implements ``pushFilters`` while that setting is off
(``DATA_SOURCE_PUSHDOWN_DISABLED``), so :meth:`RocketMQDataSource.reader` then returns the reader
without it, which reads the whole ranges (Spark filters the rows, the results are the same), and
logs how to turn pushdown on (:func:`_planned_without_pushdown` tells the two cases apart).

The readers' factories also get the schema to return: the source's own (:meth:`schema`, all
sixteen columns) or the one the user gave with ``.schema(...)``. Spark has no other way to say
which columns a query needs (the Python Data Source API pushes no projection down), so a user
schema naming fewer columns is how a query prunes the others: the executors build only those
(:func:`~spark_connector._schema.parse_read_schema` checks it, and a schema the source cannot
return fails the query at once with :class:`~spark_connector.SparkSchemaError`).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    Filter,
    InputPartition,
)
from pyspark.sql.types import StructType

from rocketmq_py.lowlevel import RemotingApi
from rocketmq_py.protocol import MessageQueue
from spark_connector._assign import check_assigned
from spark_connector._metadata import (
    queue_states,
    resolve_topics,
    run_with_api,
    run_with_retries,
    search_queue_offsets,
)
from spark_connector._options import ReadOptions, parse_read_options
from spark_connector._planning import QueueRange, RocketMQPartition, plan_partitions, resolve_ranges
from spark_connector._pushdown import Pushdown, push_filters
from spark_connector._read import READER_GROUP, iter_partition
from spark_connector._schema import ALL_COLUMNS, SPARK_SCHEMA, Projection, parse_read_schema
from spark_connector._stream import RocketMQStreamReader
from spark_connector._timestamps import check_matched, narrowed_times, queue_times, starting_option

if TYPE_CHECKING:
    from types import FrameType

    from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter

__all__ = [
    "FORMAT",
    "PUSHDOWN_CONF",
    "RocketMQBatchReader",
    "RocketMQDataSource",
    "RocketMQPushdownDataSource",
    "RocketMQPushdownReader",
]

#: The format name: ``spark.read.format("rocketmq")``.
FORMAT = "rocketmq"
#: The session setting without which Spark refuses readers that implement ``pushFilters``.
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"

log = logging.getLogger("spark_connector")


class RocketMQDataSource(DataSource):
    """Apache RocketMQ topics as a Spark table (batch and streaming; read and write).

    Works however it is registered (:func:`spark_connector.register`, pyspark's discovery of the
    installed package, or ``spark.dataSource.register(RocketMQDataSource)``). Batch reads push
    predicates on ``broker_name``, ``queue_id``, ``queue_offset`` and ``store_timestamp`` down when
    the session has ``spark.sql.python.filterPushdown.enabled=true``, and read whole ranges (Spark
    filters the rows) when it does not.
    """

    @classmethod
    def name(cls) -> str:
        """The format name: ``spark.read.format("rocketmq")``."""
        return FORMAT

    def schema(self) -> StructType:
        """The full row schema (every column; ``.schema(...)`` on the reader picks some)."""
        return SPARK_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        """A batch read of the options' topics and offset range, in the columns of ``schema``.

        Raises:
            SparkOptionError: a missing or invalid option (named in the message).
            SparkSchemaError: a column that is not in the full schema, or of another type.
        """
        options, projection = parse_read_options(self.options, streaming=False), parse_read_schema(schema)
        if _planned_without_pushdown():
            log.warning(
                "rocketmq: filter pushdown is off, so this read pulls whole offset ranges and Spark "
                "filters the rows; to push predicates on broker_name, queue_id, queue_offset and "
                "store_timestamp down, set %s=true (or call spark_connector.register(spark))",
                PUSHDOWN_CONF,
            )
            return RocketMQBatchReader(options, projection)
        return RocketMQPushdownReader(options, projection)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """A micro-batch stream of the options' topics, in the columns of ``schema``."""
        return RocketMQStreamReader(
            parse_read_options(self.options, streaming=True), parse_read_schema(schema)
        )

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """A batch write of rows of ``schema`` as messages.

        Raises:
            ClientError: ``overwrite`` (a topic is only appended to).
        """
        from spark_connector._sink import RocketMQWriter

        return RocketMQWriter(self.options, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """A streaming write of rows of ``schema`` as messages, micro-batch by micro-batch."""
        from spark_connector._sink import RocketMQStreamWriter

        return RocketMQStreamWriter(self.options, schema, overwrite)


class RocketMQBatchReader(DataSourceReader):
    """Plans a batch read on the driver (:meth:`partitions`) and pulls it on executors (:meth:`read`).

    Args:
        options: the parsed options.
        projection: the columns :meth:`read` returns (by default all of them).
    """

    def __init__(self, options: ReadOptions, projection: Projection = ALL_COLUMNS) -> None:
        self.options = options
        self.projection = projection
        self.pushdown = Pushdown()

    def plan_ranges(self) -> list[QueueRange]:
        """Every queue's range after the options and the pushed filters (one short trio run)."""
        options, pushdown = self.options, self.pushdown

        async def plan(api: RemotingApi) -> list[QueueRange]:
            topics = await resolve_topics(api, options)
            states = await queue_states(api, options, topics)
            check_assigned(states, options.assign)
            if pushdown.brokers is not None or pushdown.queue_ids is not None:
                keep = [
                    s
                    for s in states
                    if (pushdown.brokers is None or s.queue.broker_name in pushdown.brokers)
                    and (pushdown.queue_ids is None or s.queue.queue_id in pushdown.queue_ids)
                ]
            else:
                keep = states
            # The times the options ask of each queue, then narrowed by a pushed store_timestamp
            # filter (which only narrows: it never moves a start below the option's).
            start_times = queue_times(
                keep, every=options.starting_timestamp, by_queue=options.starting_by_timestamp
            )
            end_times = queue_times(
                keep, every=options.ending_timestamp, by_queue=options.ending_by_timestamp
            )
            start_search = narrowed_times(start_times, keep, pushdown.ts_lo, keep="later")
            end_search = narrowed_times(end_times, keep, pushdown.ts_hi, keep="earlier")
            starting = await search_queue_offsets(api, keep, start_search, group=READER_GROUP)
            ending = await search_queue_offsets(api, keep, end_search, group=READER_GROUP)
            check_matched(
                keep,
                {q: ts for q, ts in start_times.items() if start_search[q] == ts},
                starting,
                strategy=options.timestamp_strategy,
                option=starting_option(options.starting_timestamp),
            )
            ranges = resolve_ranges(
                states,
                starting=options.starting,
                ending=options.ending,
                starting_offsets={q: starting[q] for q in start_times},
                ending_offsets={q: ending[q] for q in end_times},
                fail_on_data_loss=options.fail_on_data_loss,
            )
            narrowed = pushdown.narrow(ranges)
            return [_clip(r, starting, ending) for r in narrowed]

        return run_with_retries(options, "planning the read", lambda: run_with_api(options, plan))

    def partitions(self) -> Sequence[InputPartition]:
        return list(
            plan_partitions(
                self.plan_ranges(),
                num_partitions=self.options.num_partitions,
                strategy=self.options.allocate_strategy,
                max_records=self.options.max_records_per_partition,
                min_partitions=self.options.min_partitions,
            )
        )

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, RocketMQPartition):  # Spark's placeholder for an empty plan
            return iter(())
        return iter_partition(partition, self.options, self.projection)


class RocketMQPushdownReader(RocketMQBatchReader):
    """:class:`RocketMQBatchReader` with filter pushdown (needs ``spark.sql.python.filterPushdown.enabled``).

    Spark refuses a reader that implements ``pushFilters`` while that setting is off, so pushdown
    lives in this subclass, which :meth:`RocketMQDataSource.reader` returns unless pyspark plans
    the read with pushdown off.
    """

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        self.pushdown, remaining = push_filters(self.pushdown, filters)
        return remaining


#: The same class under its former name (it used to be the only one that pushed filters down).
RocketMQPushdownDataSource = RocketMQDataSource

#: The package of pyspark's planning workers (``plan_data_source_read``, ``data_source_pushdown_filters``).
_PYSPARK_WORKERS = "pyspark.sql.worker"


def _planned_without_pushdown() -> bool:
    """Whether pyspark is planning this batch read with filter pushdown off.

    pyspark tells a data source nothing of ``spark.sql.python.filterPushdown.enabled``: its planning
    worker (``pyspark.sql.worker.plan_data_source_read``) reads the setting into a local,
    ``enable_pushdown``, calls :meth:`RocketMQDataSource.reader`, and refuses the reader if that
    local is false and the reader implements ``pushFilters`` (``DATA_SOURCE_PUSHDOWN_DISABLED``).
    So this reads that local in the nearest calling frame of pyspark's worker package. Filters are
    pushed in another worker (``data_source_pushdown_filters``, started only with the setting on),
    which has no such local; nor does a caller outside pyspark (tests, benchmarks). Both get the
    pushdown reader, whose filters stay unconstrained until Spark pushes some. Should a pyspark
    release rename the local, reads with the setting off fail as before this check (loudly, never
    with other rows), and ``tests/spark/test_spark_pushdown_conf.py`` says what changed.
    """
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__package__") == _PYSPARK_WORKERS:
            return frame.f_locals.get("enable_pushdown") is False
        frame = frame.f_back
    return False


def _clip(
    r: QueueRange, starting: Mapping[MessageQueue, int], ending: Mapping[MessageQueue, int]
) -> QueueRange:
    start, end = r.start, r.end
    q = r.queue
    if q in starting:
        start = max(start, starting[q])
    if q in ending:
        end = min(end, ending[q])
    return QueueRange(r.topic, r.broker_name, r.queue_id, start, max(start, end), r.address)
