"""Starting and ending by time against fake brokers: per-queue times, their precedence over the
offset options (Kafka's), ``startingOffsetsByTimestampStrategy``, and a search retried on a route
read anew. ``integration/test_spark_read.py`` (``test_offsets_by_timestamp_*``) is the same on the
real brokers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import trio

from rocketmq_py.protocol import (
    BrokerData,
    Message,
    QueueData,
    RemotingCommand,
    RequestCode,
    TopicRouteData,
)
from rocketmq_py.protocol._json_body import encode_body
from rocketmq_py.testing._fake_broker import FakeBroker
from rocketmq_py.testing._fake_handlers import answer
from spark_connector import NoOffsetForTimestampError
from spark_connector._options import parse_read_options
from spark_connector._pushdown import Pushdown
from spark_connector._source import RocketMQBatchReader
from spark_connector._stream import RocketMQStreamReader

TOPIC = "times-topic"


def fill(broker: FakeBroker, queues: int = 2) -> None:
    """Each queue: offsets 0-2 stored at 1000 ms, 3-5 at 2000 ms."""
    broker.add_topic(TOPIC, queues=queues)
    for q in range(queues):
        broker.put_messages(q, [Message(TOPIC, b"old")] * 3, store_timestamp=1000)
        broker.put_messages(q, [Message(TOPIC, b"new")] * 3, store_timestamp=2000)


def json_times(times: dict[int, int]) -> str:
    inner = ", ".join(f'"{q}": {ts}' for q, ts in times.items())
    return f'{{"{TOPIC}": {{"broker-a": {{{inner}}}}}}}'


async def plan(broker: FakeBroker, **options: str) -> list[tuple[int, int, int]]:
    parsed = parse_read_options({"namesrv": broker.address, "topic": TOPIC, **options}, streaming=False)
    ranges = await trio.to_thread.run_sync(lambda: RocketMQBatchReader(parsed).plan_ranges())
    return [(r.queue_id, r.start, r.end) for r in ranges]


async def test_per_queue_times_win_for_their_queues_and_offsets_rule_the_rest() -> None:
    async with FakeBroker() as broker:
        fill(broker)
        got = await plan(
            broker,
            startingOffsetsByTimestamp=json_times({0: 1500}),
            startingOffsets=f'{{"{TOPIC}": {{"broker-a": {{"0": 0, "1": 1}}}}}}',
            endingOffsetsByTimestamp=json_times({1: 1500}),
        )
    assert got == [(0, 3, 6), (1, 1, 3)]


async def test_the_global_time_wins_over_both() -> None:
    async with FakeBroker() as broker:
        fill(broker)
        got = await plan(
            broker,
            startingTimestamp="1500",
            startingOffsetsByTimestamp=json_times({0: 500}),
            startingOffsets="latest",
        )
    assert got == [(0, 3, 6), (1, 3, 6)]


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"startingTimestamp": "5000"}, "startingTimestamp"),
        ({"startingOffsetsByTimestamp": json_times({1: 5000})}, "startingOffsetsByTimestamp"),
    ],
)
async def test_a_time_no_message_matches_starts_at_the_latest_offset_or_fails_with_error(
    options: dict[str, str], option: str
) -> None:
    """The default is the broker's own answer (the queue's max offset, as Java's searchOffset); with
    ``error``, as Kafka's source by default, the read fails naming the queue."""
    async with FakeBroker() as broker:
        fill(broker)
        latest = await plan(broker, **options)
        with pytest.raises(NoOffsetForTimestampError) as info:
            await plan(broker, startingOffsetsByTimestampStrategy="error", **options)
    assert info.value.option == option
    assert f"{TOPIC}/broker-a/1" in info.value.queues
    assert (1, 6, 6) in latest  # started at the latest offset: nothing to read yet


async def test_an_empty_queue_matches_no_time() -> None:
    async with FakeBroker() as broker:
        fill(broker, queues=1)
        broker.add_topic(TOPIC, queues=2)  # queue 1 is empty
        assert (1, 0, 0) in await plan(broker, startingTimestamp="1500")
        with pytest.raises(NoOffsetForTimestampError) as info:
            await plan(broker, startingTimestamp="1500", startingOffsetsByTimestampStrategy="error")
    assert info.value.queues == [f"{TOPIC}/broker-a/1"]


async def test_an_ending_time_no_message_matches_ends_at_the_latest_offset() -> None:
    async with FakeBroker() as broker:
        fill(broker)
        assert await plan(broker, endingTimestamp="5000") == [(0, 0, 6), (1, 0, 6)]


async def test_a_pushed_later_time_that_matches_nothing_is_no_error() -> None:
    """A store_timestamp filter past every message wants nothing of the queue: no strategy applies."""
    async with FakeBroker() as broker:
        fill(broker)
        parsed = parse_read_options(
            {"namesrv": broker.address, "topic": TOPIC, "startingTimestamp": "1500"}, streaming=False
        )
        reader = RocketMQBatchReader(parsed)
        reader.pushdown = Pushdown(ts_lo=9000)
        ranges = await trio.to_thread.run_sync(reader.plan_ranges)
    assert [(r.start, r.end) for r in ranges] == [(6, 6), (6, 6)]


def route_to(address: str) -> TopicRouteData:
    return TopicRouteData(
        queue_datas=(QueueData(broker_name="broker-a", read_queue_nums=1, write_queue_nums=1, perm=6),),
        broker_datas=(
            BrokerData(cluster="DefaultCluster", broker_name="broker-a", broker_addrs={0: address}),
        ),
    )


def serve_routes(namesrv: FakeBroker, pick: Callable[[int], TopicRouteData]) -> list[TopicRouteData]:
    served: list[TopicRouteData] = []

    async def handler(request: RemotingCommand) -> RemotingCommand | None:
        served.append(pick(len(served)))
        return answer(request, body=encode_body(served[-1]))

    namesrv.on(RequestCode.GET_ROUTEINFO_BY_TOPIC, handler)
    return served


def stream(namesrv: FakeBroker, **options: Any) -> RocketMQStreamReader:
    return RocketMQStreamReader(
        parse_read_options(
            {"namesrv": namesrv.address, "topic": TOPIC, "fetchOffset.retryIntervalMs": "10", **options},
            streaming=True,
        )
    )


async def test_a_stream_searches_its_starting_times_again_on_a_route_read_anew() -> None:
    """The route names the old master; it answers the queue's bounds, then goes away as the time is
    searched. The retry reads the route again for both, so the search reaches the new master
    (before, the search alone was retried, on the old master's address, until it gave up)."""
    async with FakeBroker() as namesrv, FakeBroker() as old, FakeBroker() as new:
        for broker in (old, new):
            fill(broker, queues=1)
        old.drop_on(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP)
        served = serve_routes(namesrv, lambda n: route_to(old.address if n == 0 else new.address))
        reader = stream(namesrv, startingTimestamp="1500")
        initial = await trio.to_thread.run_sync(reader.initialOffset)
    assert initial == {f"{TOPIC}/broker-a/0": 3}
    assert len(served) == 2


async def test_a_stream_starts_by_time_with_the_strategy() -> None:
    async with FakeBroker() as broker:
        fill(broker)
        failing = stream(
            broker,
            startingOffsetsByTimestamp=json_times({0: 1500, 1: 5000}),
            startingOffsetsByTimestampStrategy="error",
        )
        with pytest.raises(NoOffsetForTimestampError):
            await trio.to_thread.run_sync(failing.initialOffset)
        lenient = stream(broker, startingOffsetsByTimestamp=json_times({0: 1500, 1: 5000}))
        initial = await trio.to_thread.run_sync(lenient.initialOffset)
    assert initial == {f"{TOPIC}/broker-a/0": 3, f"{TOPIC}/broker-a/1": 6}
