"""The stream reader's offset logic over a scripted cluster view (no broker, no Spark)."""

from __future__ import annotations

import json
import logging

import pytest
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from rocketmq_py.protocol import MessageQueue
from spark_connector import DataLossError
from spark_connector._options import parse_read_options
from spark_connector._planning import QueueState, RocketMQPartition
from spark_connector._stream import HAS_ADMISSION_CONTROL, RocketMQStreamReader


class Scripted(RocketMQStreamReader):
    """The reader with its cluster view replaced by ``bounds``: key -> (min, max)."""

    bounds: dict[str, tuple[int, int]]

    def _fetch_states(self) -> list[QueueState]:
        states = []
        for key, (low, high) in self.bounds.items():
            topic, broker, qid = key.split("/")
            states.append(QueueState(MessageQueue(topic, broker, int(qid)), f"{broker}:1", low, high))
        return states


def reader(bounds: dict[str, tuple[int, int]], **options: str) -> Scripted:
    r = Scripted(parse_read_options({"namesrv": "h:1", "topic": "t", **options}, streaming=True))
    r.bounds = dict(bounds)
    return r


BOUNDS = {"t/a/0": (0, 10), "t/a/1": (2, 4), "t/b/0": (0, 0)}


def test_admission_control_is_available() -> None:
    assert HAS_ADMISSION_CONTROL
    assert isinstance(reader(BOUNDS), SupportsTriggerAvailableNow)


def test_initial_offsets() -> None:
    assert reader(BOUNDS).initialOffset() == {"t/a/0": 10, "t/a/1": 4, "t/b/0": 0}
    assert reader(BOUNDS, startingOffsets="earliest").initialOffset() == {"t/a/0": 0, "t/a/1": 2, "t/b/0": 0}
    json_start = '{"t": {"a": {"0": 3}}}'
    assert reader(BOUNDS, startingOffsets=json_start).initialOffset() == {"t/a/0": 3, "t/a/1": 2, "t/b/0": 0}


def test_initial_offset_below_minimum() -> None:
    with pytest.raises(DataLossError):
        reader(BOUNDS, startingOffsets='{"t": {"a": {"1": 0}}}').initialOffset()
    lenient = reader(BOUNDS, startingOffsets='{"t": {"a": {"1": 0}}}', failOnDataLoss="false")
    assert lenient.initialOffset()["t/a/1"] == 2


def test_read_limits() -> None:
    r = reader(BOUNDS, maxRecordsPerBatch="5")
    assert r.getDefaultReadLimit() == ReadMaxRows(5)
    assert reader(BOUNDS).getDefaultReadLimit() == ReadAllAvailable()
    assert reader(BOUNDS, minOffsetsPerTrigger="3").getDefaultReadLimit() == ReadMinRows(3)
    both = reader(BOUNDS, minOffsetsPerTrigger="3", maxRecordsPerBatch="5")
    assert both.getDefaultReadLimit() == ReadMinRows(3)  # pyspark has no composite limit
    start = {"t/a/0": 0, "t/a/1": 2, "t/b/0": 0}
    # Backlogs 10 and 2: one record each, the other 3 in proportion (2.7 and 0.3), the last
    # one to the larger remainder.
    assert r.latestOffset(start, ReadMaxRows(5)) == {"t/a/0": 4, "t/a/1": 3, "t/b/0": 0}
    assert r.latestOffset(start, ReadAllAvailable()) == {"t/a/0": 10, "t/a/1": 4, "t/b/0": 0}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_min_offsets_per_trigger_waits_for_records_or_the_delay() -> None:
    """As Spark's Kafka source: the first batch goes at once; later ones wait for
    ``minOffsetsPerTrigger`` new records, or until ``maxTriggerDelay`` passed since the last batch."""
    r = reader({"t/a/0": (0, 2)}, minOffsetsPerTrigger="5", maxTriggerDelay="10s")
    clock = Clock()
    r._clock = clock
    limit = r.getDefaultReadLimit()
    assert r.latestOffset({"t/a/0": 0}, limit) == {"t/a/0": 2}  # the first batch: no wait
    r.bounds = {"t/a/0": (0, 4)}
    clock.now += 3
    assert r.latestOffset({"t/a/0": 2}, limit) == {"t/a/0": 2}  # 2 new of 5: wait
    r.bounds = {"t/a/0": (0, 7)}
    clock.now += 3
    assert r.latestOffset({"t/a/0": 2}, limit) == {"t/a/0": 7}  # 5 new: go
    r.bounds = {"t/a/0": (0, 8)}
    clock.now += 9.9
    assert r.latestOffset({"t/a/0": 7}, limit) == {"t/a/0": 7}  # 1 new, 9.9 s since the last batch
    clock.now += 0.1
    assert r.latestOffset({"t/a/0": 7}, limit) == {"t/a/0": 8}  # the delay passed: go with 1
    clock.now += 60
    assert r.latestOffset({"t/a/0": 8}, limit) == {"t/a/0": 8}  # nothing new: nothing to read
    r.bounds = {"t/a/0": (0, 9)}
    assert r.latestOffset({"t/a/0": 8}, limit) == {"t/a/0": 9}  # an empty trigger is no batch


def test_min_and_max_together() -> None:
    r = reader({"t/a/0": (0, 100), "t/a/1": (0, 10)}, minOffsetsPerTrigger="20", maxRecordsPerBatch="11")
    r._clock = Clock()
    r._last_batch = r._clock()  # not the first batch
    start = {"t/a/0": 0, "t/a/1": 0}
    assert r.latestOffset(start, r.getDefaultReadLimit()) == {"t/a/0": 10, "t/a/1": 1}
    assert r.latestOffset(start, ReadAllAvailable()) == {"t/a/0": 100, "t/a/1": 10}  # Spark's override
    small = reader({"t/a/0": (0, 19)}, minOffsetsPerTrigger="20", maxRecordsPerBatch="11")
    small._clock = Clock()
    small._last_batch = small._clock()
    assert small.latestOffset({"t/a/0": 0}, small.getDefaultReadLimit()) == {"t/a/0": 0}


def test_available_now_does_not_wait_for_the_minimum() -> None:
    """No record arrives past an availableNow target: the rest is read without waiting."""
    r = reader({"t/a/0": (0, 3)}, minOffsetsPerTrigger="100", maxTriggerDelay="1h")
    r._clock = Clock()
    r._last_batch = r._clock()
    r.prepareForTriggerAvailableNow()
    assert r.latestOffset({"t/a/0": 0}, r.getDefaultReadLimit()) == {"t/a/0": 3}


def test_the_latest_offsets_are_reported_for_the_progress() -> None:
    r = reader(BOUNDS, maxRecordsPerBatch="2")
    assert r.reportLatestOffset() is None
    start = {"t/a/0": 0, "t/a/1": 2, "t/b/0": 0}
    end = r.latestOffset(start, ReadMaxRows(2))
    assert end != r.reportLatestOffset() == {"t/a/0": 10, "t/a/1": 4, "t/b/0": 0}  # not cut back
    r.prepareForTriggerAvailableNow()
    r.bounds = {**BOUNDS, "t/a/0": (0, 50)}
    r.latestOffset(end, ReadMaxRows(2))
    assert r.reportLatestOffset() == {"t/a/0": 10, "t/a/1": 4, "t/b/0": 0}  # the frozen target


def test_old_api_without_arguments(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="spark_connector"):
        assert reader(BOUNDS, maxRecordsPerBatch="5").latestOffset() == {"t/a/0": 10, "t/a/1": 4, "t/b/0": 0}
        assert reader(BOUNDS, minOffsetsPerTrigger="50").latestOffset() == {
            "t/a/0": 10,
            "t/a/1": 4,
            "t/b/0": 0,
        }
    assert "maxRecordsPerBatch and minOffsetsPerTrigger need pyspark >= 4.2" in caplog.text


def test_new_queue_starts_at_its_minimum() -> None:
    r = reader({**BOUNDS, "t/c/0": (5, 9)})
    start = {"t/a/0": 10, "t/a/1": 4, "t/b/0": 0}
    end = r.latestOffset(start, ReadAllAvailable())
    assert end["t/c/0"] == 9
    parts = r.partitions(start, end)
    assert [(x.key, x.start, x.end) for p in parts for x in p.ranges] == [("t/c/0", 5, 9)]


def test_vanished_queue_keeps_its_offset() -> None:
    r = reader({"t/a/0": (0, 12)})
    assert r.latestOffset({"t/a/0": 10, "t/z/0": 7}, ReadAllAvailable()) == {"t/a/0": 12, "t/z/0": 7}


def test_queue_going_backwards_is_data_loss(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(DataLossError):
        reader({"t/a/0": (0, 3)}).latestOffset({"t/a/0": 10}, ReadAllAvailable())
    with caplog.at_level(logging.WARNING, logger="spark_connector"):
        lenient = reader({"t/a/0": (0, 3)}, failOnDataLoss="false")
        assert lenient.latestOffset({"t/a/0": 10}, ReadAllAvailable()) == {"t/a/0": 3}
    assert "t/a/0" in caplog.text


def test_available_now_freezes_the_target() -> None:
    r = reader(BOUNDS, maxRecordsPerBatch="4")
    r.prepareForTriggerAvailableNow()
    r.bounds = {**BOUNDS, "t/a/0": (0, 50), "t/c/0": (0, 5)}  # data and a queue arriving later
    offsets = {"t/a/0": 0, "t/a/1": 2, "t/b/0": 0}
    batches = 0
    while True:
        end = r.latestOffset(offsets, ReadMaxRows(4))
        if end == offsets:
            break
        batches += 1
        offsets = end
    assert offsets == {"t/a/0": 10, "t/a/1": 4, "t/b/0": 0}
    assert batches == 3  # 12 rows in batches of at most 4


def test_partitions_replay_exactly() -> None:
    r = reader(BOUNDS, numPartitions="1")
    start = {"t/a/0": 2, "t/a/1": 2, "t/b/0": 0}
    end = {"t/a/0": 7, "t/a/1": 3, "t/b/0": 0}
    start, end = json.loads(json.dumps(start)), json.loads(json.dumps(end))
    first = r.partitions(start, end)
    assert first == r.partitions(start, end)
    assert len(first) == 1
    part = first[0]
    assert isinstance(part, RocketMQPartition)
    assert [(x.key, x.start, x.end, x.address) for x in part.ranges] == [
        ("t/a/0", 2, 7, ""),  # a replay may come first after a restart: the executor finds the broker
        ("t/a/1", 2, 3, ""),
    ]
    assert r.partitions(end, end) == []
