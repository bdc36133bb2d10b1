"""The micro-batch stream reader (``spark.readStream.format("rocketmq")``).

Offsets are ``{"topic/broker/queueId": next_offset}`` (see :mod:`spark_connector._offsets`).
Spark's checkpoint is the source of truth: a restarted query resumes from its last committed
offsets, and a batch replayed after a failure reads exactly ``[start, end)`` again, because
RocketMQ queues are addressable by offset.

* ``initialOffset`` -- from ``startingTimestamp``, ``startingOffsetsByTimestamp`` or
  ``startingOffsets`` (default ``latest``), the first that names a queue; a starting time no
  message matches fails (``startingOffsetsByTimestampStrategy=error``) or starts at the latest offset.
* ``latestOffset(start, limit)`` -- the queues' max offsets, cut back by the read limit, as Spark's
  Kafka source does (:mod:`spark_connector._offsets`): ``maxRecordsPerBatch`` (``ReadMaxRows``)
  split over the queues in proportion to their backlog; ``minOffsetsPerTrigger`` (``ReadMinRows``)
  returns ``start`` (no batch) while fewer records are new and ``maxTriggerDelay`` has not passed
  since the last batch. The signature with defaulted parameters works on pyspark 4.0/4.1 too,
  which call it with no argument and have no admission control: there both are ignored with a
  warning.
* ``reportLatestOffset`` (pyspark >= 4.2) -- the max offsets the last ``latestOffset`` saw, so the
  query's progress shows how far behind it is.
* ``prepareForTriggerAvailableNow`` (pyspark >= 4.2) -- freezes the target offsets, so an
  ``availableNow`` query stops once it has read what existed when it started.
* ``commit(end)`` -- with ``commitToGroup``, stores ``end`` as that consumer group's offsets
  (UPDATE_CONSUMER_OFFSET), so admin tools show the query's lag. Spark never reads them back.
  Spark commits a batch to its source only when it plans the next batch with data, so the
  group trails the query by its last batch (an ``availableNow`` run ends one batch behind).

With ``readStream.schema(...)`` the batches hold only the columns that schema names (see
:mod:`spark_connector._schema`); offsets and planning do not depend on it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from rocketmq_py.lowlevel import RemotingApi
from rocketmq_py.protocol import MessageQueue
from spark_connector._assign import check_assigned
from spark_connector._errors import DataLossError
from spark_connector._metadata import (
    commit_group_offsets,
    queue_states,
    resolve_topics,
    run_with_api,
    run_with_retries,
    search_queue_offsets,
)
from spark_connector._offsets import (
    Offsets,
    limit_offsets,
    offsets_to_ranges,
    parse_queue_key,
    total_rows,
    wait_for_more,
)
from spark_connector._options import ReadOptions
from spark_connector._planning import (
    QueueState,
    RocketMQPartition,
    plan_partitions,
    queue_key,
    resolve_ranges,
)
from spark_connector._read import READER_GROUP, iter_partition
from spark_connector._schema import ALL_COLUMNS, Projection
from spark_connector._timestamps import check_matched, queue_times, starting_option

try:  # pyspark >= 4.2: admission control and Trigger.AvailableNow
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadMaxRows,
        ReadMinRows,
        SupportsTriggerAvailableNow,
    )
except ImportError:  # pragma: no cover - pyspark 4.0 / 4.1
    ReadAllAvailable = ReadMaxRows = ReadMinRows = SupportsTriggerAvailableNow = None  # type: ignore[misc,assignment]

__all__ = ["HAS_ADMISSION_CONTROL", "RocketMQStreamReader"]

log = logging.getLogger("spark_connector")

#: Whether this pyspark has ReadLimit / SupportsTriggerAvailableNow (4.2+).
HAS_ADMISSION_CONTROL = SupportsTriggerAvailableNow is not None


@dataclass(frozen=True, slots=True)
class _Snapshot:
    latest: Offsets
    minimums: Offsets
    addresses: dict[str, str]  # "topic/broker" -> address
    states: tuple[QueueState, ...]


class _StreamReader(DataSourceStreamReader):
    """The stream reader proper; :class:`RocketMQStreamReader` adds the availableNow mixin when present."""

    def __init__(self, options: ReadOptions, projection: Projection = ALL_COLUMNS) -> None:
        self.options = options
        self.projection = projection
        self._target: Offsets | None = None
        self._addresses: dict[str, str] = {}
        self._minimums: Offsets = {}  # from the last snapshot: where queues new to a batch start
        self._warned_no_limit = False
        self._latest_seen: Offsets | None = None  # what reportLatestOffset reports
        self._last_batch: float | None = None  # clock time of the last batch with rows
        self._clock: Callable[[], float] = time.monotonic  # seconds, for maxTriggerDelay (tests replace it)

    # --- cluster state ------------------------------------------------------------------------------

    def _read_states(self) -> list[QueueState]:
        """Every queue of the query's topics with its bounds (one short trio run, one attempt)."""

        async def fetch(api: RemotingApi) -> list[QueueState]:
            return await queue_states(api, self.options, await resolve_topics(api, self.options))

        return run_with_api(self.options, fetch)

    def _fetch_states(self) -> list[QueueState]:
        """:meth:`_read_states`, tried again after a transport failure (a broker gone mid-planning)."""
        return run_with_retries(self.options, "reading the queues' offsets", self._read_states)

    def _snapshot(self, states: list[QueueState] | None = None) -> _Snapshot:
        """The cluster view from ``states`` (default: read now); keeps its addresses and minimums."""
        if states is None:
            states = self._fetch_states()
        latest: Offsets = {}
        minimums: Offsets = {}
        addresses: dict[str, str] = {}
        for s in states:
            q = s.queue
            key = queue_key(q.topic, q.broker_name, q.queue_id)
            latest[key] = s.max_offset
            minimums[key] = s.min_offset
            addresses[f"{q.topic}/{q.broker_name}"] = s.address
        self._addresses = addresses
        self._minimums = minimums
        return _Snapshot(latest, minimums, addresses, tuple(states))

    # --- the DataSourceStreamReader API -------------------------------------------------------------

    def _fetch_start(self) -> tuple[list[QueueState], dict[MessageQueue, int], dict[MessageQueue, int]]:
        """The queues, the starting time asked of each (if any) and the offsets their brokers found.

        One attempt reads the queues and searches their offsets, so that a retry after a broker
        went away in between reads the route anew for both (a search on the old route's address
        would fail every time).
        """
        options = self.options
        if options.starting_timestamp is None and options.starting_by_timestamp is None:
            return self._fetch_states(), {}, {}

        async def fetch(
            api: RemotingApi,
        ) -> tuple[list[QueueState], dict[MessageQueue, int], dict[MessageQueue, int]]:
            states = await queue_states(api, options, await resolve_topics(api, options))
            times = queue_times(
                states, every=options.starting_timestamp, by_queue=options.starting_by_timestamp
            )
            return states, times, await search_queue_offsets(api, states, times, group=READER_GROUP)

        return run_with_retries(
            options, "reading the queues' starting offsets", lambda: run_with_api(options, fetch)
        )

    def initialOffset(self) -> dict[str, int]:
        states, times, found = self._fetch_start()
        check_assigned(states, self.options.assign)
        snap = self._snapshot(states)
        check_matched(
            snap.states,
            times,
            found,
            strategy=self.options.timestamp_strategy,
            option=starting_option(self.options.starting_timestamp),
        )
        ranges = resolve_ranges(
            snap.states,
            starting=self.options.starting,
            ending="latest",
            starting_offsets=found,
            fail_on_data_loss=self.options.fail_on_data_loss,
        )
        return {r.key: r.start for r in ranges}

    def getDefaultReadLimit(self) -> Any:
        """``ReadMinRows`` with ``minOffsetsPerTrigger``, else ``ReadMaxRows`` with
        ``maxRecordsPerBatch``, else ``ReadAllAvailable``.

        pyspark has no composite limit (Kafka's source returns both a minimum and a maximum): with
        both options the limit names the minimum, and :meth:`latestOffset` applies the maximum
        from the options whenever Spark passes this limit back.
        """
        options = self.options
        if ReadMinRows is None or ReadMaxRows is None or ReadAllAvailable is None:  # pragma: no cover
            return None  # pyspark 4.0 / 4.1: no admission control
        if options.min_offsets_per_trigger is not None:
            return ReadMinRows(options.min_offsets_per_trigger)
        if options.max_records_per_batch is not None:
            return ReadMaxRows(options.max_records_per_batch)
        return ReadAllAvailable()

    def reportLatestOffset(self) -> dict[str, int] | None:
        """The latest offsets the last :meth:`latestOffset` saw, for the query's progress
        (``StreamingQueryProgress.sources[].latestOffset``, next to ``endOffset``: how far behind
        the query is); ``None`` before the first. Under ``Trigger.AvailableNow``, the frozen target.
        No request of its own: Spark asks right after :meth:`latestOffset` (pyspark >= 4.2)."""
        return None if self._latest_seen is None else dict(self._latest_seen)

    def latestOffset(self, start: dict[str, int] | None = None, limit: Any = None) -> dict[str, int]:
        snap = self._snapshot()
        latest = dict(snap.latest)
        if self._target is not None:
            latest = {k: min(v, latest.get(k, v)) for k, v in self._target.items()}
        self._latest_seen = latest
        if start is None:  # pyspark 4.0/4.1: no admission control
            options = self.options
            if not self._warned_no_limit and (
                options.max_records_per_batch is not None or options.min_offsets_per_trigger is not None
            ):
                log.warning(
                    "maxRecordsPerBatch and minOffsetsPerTrigger need pyspark >= 4.2 (admission "
                    "control); reading all available"
                )
                self._warned_no_limit = True
            return latest
        begin: Offsets = {}
        for key, value in latest.items():
            if key not in start:
                begin[key] = min(snap.minimums.get(key, 0), value)  # a queue that appeared: its minimum
                continue
            begin[key] = int(start[key])
            if value < begin[key]:
                if self.options.fail_on_data_loss:
                    raise DataLossError(key, begin[key], value, "the queue's max offset went backwards")
                log.warning(
                    "queue %s: max offset %d is below the query's offset %d (queue recreated?); "
                    "continuing from %d (failOnDataLoss=false)",
                    key,
                    value,
                    begin[key],
                    value,
                )
                begin[key] = value
        end = self._admit(begin, latest, limit)
        if end is None:  # waiting for minOffsetsPerTrigger records: no batch
            return {k: int(v) for k, v in start.items()}
        if total_rows(begin, end) > 0:
            self._last_batch = self._clock()
        # Queues gone from the route keep their offsets, so a later return resumes there.
        return {**{k: int(v) for k, v in start.items()}, **end}

    def _admit(self, begin: Offsets, latest: Offsets, limit: Any) -> Offsets | None:
        """Where the next batch ends under ``limit``; ``None`` when it waits for more records."""
        min_rows: int | None = None
        max_rows: int | None = None
        if ReadMinRows is not None and isinstance(limit, ReadMinRows):
            min_rows, max_rows = limit.min_rows, self.options.max_records_per_batch
        elif ReadMaxRows is not None and isinstance(limit, ReadMaxRows):
            max_rows = limit.max_rows
        # Under Trigger.AvailableNow no record arrives past the target: waiting would only delay
        # the end, so the minimum does not apply (Kafka's source waits out maxTriggerDelay).
        if min_rows is not None and self._target is None:
            since = None if self._last_batch is None else (self._clock() - self._last_batch) * 1000.0
            if wait_for_more(
                total_rows(begin, latest),
                min_rows=min_rows,
                max_delay_ms=self.options.max_trigger_delay_ms,
                since_last_batch_ms=since,
            ):
                return None
        return latest if max_rows is None else limit_offsets(begin, latest, max_rows)

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        if start == end:
            return []
        minimums = {k: self._minimums[k] for k in end if k not in start and k in self._minimums}
        missing = [k for k in end if k not in start and k not in minimums]
        if missing:  # a replay after a restart: ask the brokers
            minimums.update(self._fetch_minimums(missing))
        ranges = offsets_to_ranges(start, end, minimums, self._addresses)
        planned = plan_partitions(
            ranges,
            num_partitions=self.options.num_partitions,
            strategy=self.options.allocate_strategy,
            max_records=self.options.max_records_per_partition,
            min_partitions=self.options.min_partitions,
        )
        return [p for p in planned if p.ranges]

    def _fetch_minimums(self, keys: Sequence[str]) -> Offsets:
        topics = sorted({parse_queue_key(k)[0] for k in keys})

        async def fetch(api: RemotingApi) -> list[QueueState]:
            return await queue_states(api, self.options, topics)

        states = run_with_retries(
            self.options, "reading the queues' minimums", lambda: run_with_api(self.options, fetch)
        )
        found = {
            queue_key(s.queue.topic, s.queue.broker_name, s.queue.queue_id): s.min_offset for s in states
        }
        return {k: found.get(k, 0) for k in keys}

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RocketMQPartition)
        return iter_partition(partition, self.options, self.projection)

    def commit(self, end: dict[str, int]) -> None:
        group = self.options.commit_to_group
        if group is None:
            return
        if any(f"{parse_queue_key(k)[0]}/{parse_queue_key(k)[1]}" not in self._addresses for k in end):
            self._snapshot()
        attempts = 0

        def attempt() -> None:
            nonlocal attempts
            if attempts:  # the broker may have failed over: its address anew
                self._snapshot(self._read_states())
            attempts += 1
            commits = []
            for key, offset in sorted(end.items()):
                topic, broker, queue_id = parse_queue_key(key)
                address = self._addresses.get(f"{topic}/{broker}")
                if address is not None:
                    commits.append((address, MessageQueue(topic, broker, queue_id), int(offset)))

            async def store(api: RemotingApi) -> None:
                await commit_group_offsets(api, group, commits)

            run_with_api(self.options, store)

        run_with_retries(self.options, f"committing offsets to group {group!r}", attempt)

    def stop(self) -> None:
        pass

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._snapshot().latest


if SupportsTriggerAvailableNow is not None:

    class RocketMQStreamReader(_StreamReader, SupportsTriggerAvailableNow):
        """The RocketMQ micro-batch reader (with ``Trigger.AvailableNow``)."""

else:  # pragma: no cover - pyspark 4.0 / 4.1
    RocketMQStreamReader = _StreamReader  # type: ignore[misc,assignment]
