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
    start = {"t/a/0": 0, "t/a/1": 2, "t/b/0": 0}
    end = r.latestOffset(start, ReadMaxRows(5))
    assert end == {"t/a/0": 3, "t/a/1": 4, "t/b/0": 0}
    assert r.latestOffset(start, ReadAllAvailable()) == {"t/a/0": 10, "t/a/1": 4, "t/b/0": 0}
    assert r.latestOffset(start, ReadMinRows(100)) == start  # not enough yet: no batch
    assert r.latestOffset(start, ReadMinRows(12)) == {"t/a/0": 10, "t/a/1": 4, "t/b/0": 0}


def test_old_api_without_arguments(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="spark_connector"):
        assert reader(BOUNDS, maxRecordsPerBatch="5").latestOffset() == {"t/a/0": 10, "t/a/1": 4, "t/b/0": 0}
    assert "maxRecordsPerBatch" in caplog.text


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
