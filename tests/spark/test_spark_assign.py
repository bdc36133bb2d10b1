"""Option ``assign``: parsing (pure) and reads of only the named queues (fake brokers)."""

from __future__ import annotations

import pytest
import trio

from rocketmq_py.protocol import Message, MessageQueue
from rocketmq_py.testing._fake_broker import FakeBroker
from spark_connector import SparkOptionError
from spark_connector._assign import assigned, check_assigned, parse_assign
from spark_connector._options import parse_read_options
from spark_connector._planning import QueueState
from spark_connector._source import RocketMQBatchReader
from spark_connector._stream import RocketMQStreamReader

TOPIC = "assign-topic"


def test_parse() -> None:
    assert parse_assign('{"t": {"broker-a": [3, 0, 3], "broker-b": [1]}, "u": {"b": [0]}}') == {
        "t": {"broker-a": (0, 3), "broker-b": (1,)},
        "u": {"b": (0,)},
    }


@pytest.mark.parametrize(
    "text",
    [
        "t",
        "[1]",
        '{"t": [0, 1]}',  # Kafka's shape: a broker name is needed
        '{"t": {"b": []}}',
        '{"t": {"b": [-1]}}',
        '{"t": {"b": ["0"]}}',
        '{"t": {"b": [true]}}',
        '{"t": {" ": [0]}}',
        '{"bad topic": {"b": [0]}}',
        "{}",
    ],
)
def test_bad_assign(text: str) -> None:
    with pytest.raises(SparkOptionError) as info:
        parse_assign(text)
    assert info.value.option == "assign"


def test_assigned_keeps_the_named_queues_in_order() -> None:
    queues = [(MessageQueue("t", b, q), f"{b}:1") for b in ("a", "b") for q in range(3)]
    assert assigned(queues, {"t": {"b": (2, 0), "a": (1,)}}) == [
        (MessageQueue("t", "a", 1), "a:1"),
        (MessageQueue("t", "b", 0), "b:1"),
        (MessageQueue("t", "b", 2), "b:1"),
    ]


def test_a_queue_the_routes_lack_is_named() -> None:
    states = [QueueState(MessageQueue("t", "a", 0), "a:1", 0, 1)]
    check_assigned(states, None)
    check_assigned(states, {"t": {"a": (0,)}})
    with pytest.raises(SparkOptionError, match=r"t/a/7, t/zz/0") as info:
        check_assigned(states, {"t": {"a": (0, 7), "zz": (0,)}})
    assert info.value.option == "assign"


def assign_json(*queues: int) -> str:
    return f'{{"{TOPIC}": {{"broker-a": {list(queues)}}}}}'


async def test_a_batch_read_plans_only_the_assigned_queues() -> None:
    async with FakeBroker() as broker:
        broker.add_topic(TOPIC, queues=4)
        for q in range(4):
            broker.put_messages(q, [Message(TOPIC, b"m")] * (q + 1))
        options = parse_read_options(
            {"namesrv": broker.address, "assign": assign_json(1, 3)}, streaming=False
        )
        ranges = await trio.to_thread.run_sync(RocketMQBatchReader(options).plan_ranges)
        bad = parse_read_options({"namesrv": broker.address, "assign": assign_json(1, 9)}, streaming=False)
        with pytest.raises(SparkOptionError, match=f"{TOPIC}/broker-a/9") as info:
            await trio.to_thread.run_sync(RocketMQBatchReader(bad).plan_ranges)
    assert [(r.queue_id, r.start, r.end) for r in ranges] == [(1, 0, 2), (3, 0, 4)]
    assert info.value.option == "assign"


async def test_a_stream_checks_the_queues_when_it_starts_only() -> None:
    async with FakeBroker() as broker:
        broker.add_topic(TOPIC, queues=2)
        broker.put_messages(0, [Message(TOPIC, b"m")] * 3)
        options = {"namesrv": broker.address, "startingOffsets": "earliest"}
        reader = RocketMQStreamReader(
            parse_read_options({**options, "assign": assign_json(0)}, streaming=True)
        )
        start = await trio.to_thread.run_sync(reader.initialOffset)
        assert start == {f"{TOPIC}/broker-a/0": 0}
        end = await trio.to_thread.run_sync(lambda: reader.latestOffset(start, None))
        assert end == {f"{TOPIC}/broker-a/0": 3}
        missing = RocketMQStreamReader(
            parse_read_options({**options, "assign": assign_json(0, 5)}, streaming=True)
        )
        with pytest.raises(SparkOptionError):
            await trio.to_thread.run_sync(missing.initialOffset)
        # Queue 5 appears in a checkpoint but not in the route now: its offset is kept, as for a
        # queue gone from a topic's route.
        later = await trio.to_thread.run_sync(
            lambda: missing.latestOffset({**start, f"{TOPIC}/broker-a/5": 4}, None)
        )
    assert later == {f"{TOPIC}/broker-a/0": 3, f"{TOPIC}/broker-a/5": 4}
