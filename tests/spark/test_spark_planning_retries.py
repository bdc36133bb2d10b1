"""Planning steps (driver) and pulls (executors) try again, on a route read anew, when a broker is gone.

A route read names a broker's address; when that broker is killed between the read and the offset
queries or the pulls of a batch planned on it (a controller-mode failover, a crash), they fail to
connect. The NameServer drops a broker as soon as its connection closes
(``RouteInfoManager.onChannelDestroy``, called from ``BrokerHousekeepingService.onChannelClose``),
so the next route read names the broker that took over. These tests serve that sequence from a fake NameServer; ``integration/test_controller.py``
(``test_a_spark_stream_reads_on_across_the_failover_with_fail_on_data_loss``) is the same on the
real controller-mode group.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pyarrow as pa
import pytest
import trio

from rocketmq_py.errors import ConnectionFailed, NoPermission, broker_error_for
from rocketmq_py.protocol import (
    BrokerData,
    Message,
    MessageQueue,
    QueueData,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    TopicRouteData,
)
from rocketmq_py.protocol._json_body import encode_body
from rocketmq_py.testing._fake_broker import FakeBroker
from rocketmq_py.testing._fake_handlers import answer
from spark_connector._options import parse_read_options
from spark_connector._planning import QueueRange, QueueState, RocketMQPartition
from spark_connector._read import PIPELINE, iter_partition
from spark_connector._source import RocketMQBatchReader
from spark_connector._stream import RocketMQStreamReader

TOPIC = "retry-topic"


def route_to(address: str, queues: int = 2) -> TopicRouteData:
    """A route with one broker, ``broker-a``, at ``address``."""
    return TopicRouteData(
        queue_datas=(
            QueueData(broker_name="broker-a", read_queue_nums=queues, write_queue_nums=queues, perm=6),
        ),
        broker_datas=(
            BrokerData(cluster="DefaultCluster", broker_name="broker-a", broker_addrs={0: address}),
        ),
    )


def serve_routes(namesrv: FakeBroker, pick: Callable[[int], TopicRouteData]) -> list[TopicRouteData]:
    """Answer the n-th GET_ROUTEINFO_BY_TOPIC (from 0) with ``pick(n)``; returns the routes served."""
    served: list[TopicRouteData] = []

    async def handler(request: RemotingCommand) -> RemotingCommand | None:
        chosen = pick(len(served))
        served.append(chosen)
        return answer(request, body=encode_body(chosen))

    namesrv.on(RequestCode.GET_ROUTEINFO_BY_TOPIC, handler)
    return served


def stream_reader(namesrv: FakeBroker, **options: str) -> RocketMQStreamReader:
    return RocketMQStreamReader(
        parse_read_options(
            {"namesrv": namesrv.address, "topic": TOPIC, "fetchOffset.retryIntervalMs": "10", **options},
            streaming=True,
        )
    )


async def test_a_broker_gone_mid_planning_is_asked_again_on_a_new_route(
    refused_address: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The first route names the killed master; its queries are refused. The retry reads the
    route again, which names the replica that took over, and every planning step succeeds."""
    async with FakeBroker() as broker:
        broker.add_topic(TOPIC, queues=2)
        broker.put_messages(0, [Message(TOPIC, b"m%d" % i) for i in range(3)])
        dead = refused_address
        # Each step's first route read names the dead master: initialOffset, then latestOffset.
        served = serve_routes(broker, lambda n: route_to(dead if n in (0, 2) else broker.address))
        reader = stream_reader(broker, startingOffsets="earliest")
        with caplog.at_level(logging.WARNING, "spark_connector"):
            initial = await trio.to_thread.run_sync(reader.initialOffset)
            latest = await trio.to_thread.run_sync(lambda: reader.latestOffset(initial, None))
    assert initial == {f"{TOPIC}/broker-a/0": 0, f"{TOPIC}/broker-a/1": 0}
    assert latest == {f"{TOPIC}/broker-a/0": 3, f"{TOPIC}/broker-a/1": 0}
    assert len(served) == 4
    retries = [r.getMessage() for r in caplog.records if "trying again" in r.getMessage()]
    assert len(retries) == 2, retries
    assert all("ConnectionFailed" in m and "retry 1 of 3" in m for m in retries), retries


async def test_a_batch_read_plans_on_a_new_route_too(refused_address: str) -> None:
    async with FakeBroker() as broker:
        broker.add_topic(TOPIC, queues=1)
        broker.put_messages(0, [Message(TOPIC, b"m%d" % i) for i in range(4)])
        dead = refused_address
        served = serve_routes(broker, lambda n: route_to(dead if n == 0 else broker.address, queues=1))
        options = parse_read_options(
            {"namesrv": broker.address, "topic": TOPIC, "fetchOffset.retryIntervalMs": "0"}, streaming=False
        )
        ranges = await trio.to_thread.run_sync(lambda: RocketMQBatchReader(options).plan_ranges())
    assert [(r.start, r.end) for r in ranges] == [(0, 4)]
    assert len(served) == 2


async def test_planning_gives_up_after_its_retries(refused_address: str) -> None:
    async with FakeBroker() as namesrv:
        dead = refused_address
        served = serve_routes(namesrv, lambda n: route_to(dead))
        reader = stream_reader(namesrv, **{"fetchOffset.numRetries": "2"})
        with pytest.raises(ConnectionFailed):
            await trio.to_thread.run_sync(lambda: reader.latestOffset({}, None))
    assert len(served) == 3  # the first attempt and two retries


async def test_no_retry_without_retries(refused_address: str) -> None:
    async with FakeBroker() as namesrv:
        served = serve_routes(namesrv, lambda n: route_to(refused_address))
        reader = stream_reader(namesrv, **{"fetchOffset.numRetries": "0"})
        with pytest.raises(ConnectionFailed):
            await trio.to_thread.run_sync(lambda: reader.latestOffset({}, None))
    assert len(served) == 1


async def test_a_failure_another_attempt_cannot_mend_is_raised_at_once() -> None:
    async with FakeBroker() as broker:
        broker.add_topic(TOPIC, queues=1)

        async def refuse(request: RemotingCommand) -> RemotingCommand | None:
            raise broker_error_for(ResponseCode.NO_PERMISSION, "no permission to read")

        broker.on(RequestCode.GET_MAX_OFFSET, refuse)
        reader = stream_reader(broker)
        with pytest.raises(NoPermission):
            await trio.to_thread.run_sync(lambda: reader.latestOffset({}, None))
        assert len(broker.requests(RequestCode.GET_ROUTEINFO_BY_TOPIC)) == 1


async def test_a_commit_to_a_gone_broker_goes_to_the_one_that_took_over(refused_address: str) -> None:
    """``commitToGroup``: the batch's offsets go to the broker named by a route read anew."""
    async with FakeBroker() as namesrv, FakeBroker() as new_master:
        new_master.add_topic(TOPIC, queues=1)
        new_master.put_messages(0, [Message(TOPIC, b"m%d" % i) for i in range(5)])
        old_master = refused_address
        current = [old_master]
        served = serve_routes(namesrv, lambda n: route_to(current[0], queues=1))
        reader = stream_reader(namesrv, commitToGroup="dashboards")
        # The last batch was planned on the old master's address (its snapshot), then it died.
        reader._snapshot([QueueState(MessageQueue(TOPIC, "broker-a", 0), old_master, 0, 5)])
        current[0] = new_master.address
        await trio.to_thread.run_sync(lambda: reader.commit({f"{TOPIC}/broker-a/0": 5}))
        assert new_master.consumer_offsets[("dashboards", TOPIC, 0)] == 5
    assert len(served) == 1


# --- executors: a partition's pulls --------------------------------------------------------------


def partition_on(address: str, end: int) -> RocketMQPartition:
    return RocketMQPartition(0, "spark-partition-0000", [QueueRange(TOPIC, "broker-a", 0, 0, end, address)])


def bodies(batches: list[pa.RecordBatch]) -> list[bytes]:
    return [bytes(b) for batch in batches for b in batch.column("body").to_pylist()]


async def read_range(namesrv: FakeBroker, address: str, end: int, **options: str) -> list[pa.RecordBatch]:
    """An executor's read of ``[0, end)`` of queue 0, planned on ``address`` (``""``: none, as a
    streaming replay), with routes from ``namesrv`` and retries at once."""
    parsed = parse_read_options(
        {"namesrv": namesrv.address, "topic": TOPIC, "fetchOffset.retryIntervalMs": "0", **options},
        streaming=True,
    )
    return await trio.to_thread.run_sync(lambda: list(iter_partition(partition_on(address, end), parsed)))


async def test_a_range_planned_on_a_gone_broker_is_pulled_from_the_one_the_route_names(
    refused_address: str,
) -> None:
    async with FakeBroker() as broker:
        broker.add_topic(TOPIC, queues=1)
        broker.put_messages(0, [Message(TOPIC, b"m%d" % i) for i in range(10)])
        served = serve_routes(broker, lambda n: route_to(broker.address, queues=1))
        batches = await read_range(broker, refused_address, 10)
    assert bodies(batches) == [b"m%d" % i for i in range(10)]
    assert len(served) == 1


async def test_an_executors_route_read_is_tried_again(caplog: pytest.LogCaptureFixture) -> None:
    """A range planned without an address (a streaming replay) has its broker named by a route read
    on the executor; a NameServer connection lost on that read is tried again, as the driver's are."""
    async with FakeBroker() as namesrv, FakeBroker() as broker:
        broker.add_topic(TOPIC, queues=1)
        broker.put_messages(0, [Message(TOPIC, b"m%d" % i) for i in range(5)])
        served: list[int] = []

        async def route_read(request: RemotingCommand) -> RemotingCommand | None:
            served.append(len(served))
            if len(served) == 1:  # the first read loses its connection, unanswered
                await namesrv.drop_clients()
                return None
            return answer(request, body=encode_body(route_to(broker.address, queues=1)))

        namesrv.on(RequestCode.GET_ROUTEINFO_BY_TOPIC, route_read)
        with caplog.at_level(logging.WARNING, "spark_connector"):
            batches = await read_range(namesrv, "", 5, clientCacheTimeout="0")
    assert bodies(batches) == [b"m%d" % i for i in range(5)]
    assert len(served) == 2
    assert [
        r.getMessage() for r in caplog.records if r.getMessage().startswith("reading the route failed")
    ] != []


async def test_a_broker_that_dies_mid_range_leaves_no_row_skipped_or_read_twice(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The old master answers the first window's pulls and drops its connection on the next one;
    that window and the rest come from the new master, which holds the same offsets."""
    messages = [Message(TOPIC, b"m%d" % i) for i in range(100)]
    async with FakeBroker() as namesrv, FakeBroker() as old, FakeBroker() as new:
        for broker in (old, new):
            broker.add_topic(TOPIC, queues=1)
            broker.put_messages(0, messages)
        old.drop_after(PIPELINE + 1)  # a window is PIPELINE pulls, one per segment
        served = serve_routes(namesrv, lambda n: route_to(new.address, queues=1))
        with caplog.at_level(logging.WARNING, "spark_connector"):
            batches = await read_range(namesrv, old.address, 100, pullBatchSize="4")
        pulled_from_old = len(old.requests(RequestCode.PULL_MESSAGE))
    assert bodies(batches) == [b"m%d" % i for i in range(100)]
    assert pulled_from_old == PIPELINE + 1
    assert len(served) == 1
    assert [r.getMessage() for r in caplog.records if "reading the route again" in r.getMessage()] != []


async def test_a_range_gives_up_after_its_retries(refused_address: str) -> None:
    async with FakeBroker() as namesrv:
        dead = refused_address
        served = serve_routes(namesrv, lambda n: route_to(dead, queues=1))
        with pytest.raises(ConnectionFailed):
            await read_range(namesrv, dead, 5, **{"fetchOffset.numRetries": "2"})
    assert len(served) == 2  # one route read before each retry
