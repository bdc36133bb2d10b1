"""Latency fault tolerance in the producer: a slow or failing broker is benched (Java 5.x durations),
sends go to the other broker while the bench lasts, and the broker is used again afterwards."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from rocketmq_py.producer._fault import FaultConfig
from rocketmq_py.producer._producer import Producer
from rocketmq_py.producer._types import SendResult
from rocketmq_py.protocol import RequestCode, ResponseCode
from rocketmq_py.testing._fake_broker import FakeBroker

if TYPE_CHECKING:
    from conftest import Cluster

MakeProducer = Callable[..., Producer]
SEND = RequestCode.SEND_MESSAGE_V2


async def send_until_tried(producer: Producer, cluster: Cluster, fb: FakeBroker) -> SendResult:
    """Send messages until one's first attempt went to ``fb`` (the start queue is random)."""
    for _ in range(4):  # four queues, round-robin: a broker's queue comes up within three sends
        before = len(cluster.sends(fb))
        result = await producer.send(cluster.message())
        if len(cluster.sends(fb)) > before:
            return result
    pytest.fail(f"{fb.broker_name} was never tried")


async def test_slow_broker_is_benched_then_used_again(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    cluster.a.delay(SEND, 1.0)  # 1000 ms: at least 550, so a 2000 ms bench (Java 5.x table)
    async with make_producer(send_timeout=5.0, attempt_timeout=None) as producer:
        result = await send_until_tried(producer, cluster, cluster.a)
        benched_at = trio.current_time()
        assert result.queue.broker_name == "broker-a"  # slow, but it answered
        item = producer.statistics().fault["broker-a"]
        assert item.latency_ms == pytest.approx(1000.0)
        assert item.reachable
        assert item.available_at == pytest.approx(benched_at + 2.0)
        assert not item.is_available(trio.current_time())

        cluster.a.clear_faults()
        tried_a = len(cluster.sends(cluster.a))
        during = [await producer.send(cluster.message()) for _ in range(6)]
        assert {r.queue.broker_name for r in during} == {"broker-b"}
        assert len(cluster.sends(cluster.a)) == tried_a  # not even tried
        assert trio.current_time() == benched_at  # broker-b answers at once

        await trio.sleep(2.0)  # the bench is over
        after = [await producer.send(cluster.message()) for _ in range(4)]
    assert [r.queue.broker_name for r in after].count("broker-a") == 2  # round-robin again


async def test_failing_broker_is_isolated_for_ten_seconds(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    cluster.a.drop_on(SEND)  # a transport failure
    async with make_producer() as producer:
        result = await send_until_tried(producer, cluster, cluster.a)
        failed_at = trio.current_time()
        assert result.queue.broker_name == "broker-b"  # retried there
        item = producer.statistics().fault["broker-a"]
        assert item.available_at == pytest.approx(failed_at + 10.0)  # isolation: 10 s
        assert not item.is_available(trio.current_time())
        assert item.reachable  # a transport error leaves it reachable (no detector)

        cluster.a.clear_faults()
        tried_a = len(cluster.sends(cluster.a))
        for _ in range(8):
            await producer.send(cluster.message())
        await trio.sleep(9.0)
        for _ in range(4):
            assert (await producer.send(cluster.message())).queue.broker_name == "broker-b"
        assert len(cluster.sends(cluster.a)) == tried_a

        await trio.sleep(1.0)
        after = [await producer.send(cluster.message()) for _ in range(4)]
    assert [r.queue.broker_name for r in after].count("broker-a") == 2


async def test_broker_error_marks_the_broker_unreachable(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    cluster.a.on_reply(SEND, ResponseCode.SYSTEM_BUSY, remark="busy")
    async with make_producer() as producer:
        await send_until_tried(producer, cluster, cluster.a)
        failed_at = trio.current_time()
        stats = producer.statistics()
        tried_a = len(cluster.sends(cluster.a))
        results = [await producer.send(cluster.message()) for _ in range(8)]
    item = stats.fault["broker-a"]
    assert not item.reachable
    assert item.available_at == pytest.approx(failed_at + 10.0)
    assert stats.fault["broker-b"].reachable
    assert {r.queue.broker_name for r in results} == {"broker-b"}
    assert len(cluster.sends(cluster.a)) == tried_a


async def test_benched_broker_is_still_used_when_it_is_the_only_one(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    cluster.namesrv.set_route(cluster.topic, cluster.route(cluster.a))
    cluster.a.delay(SEND, 0.6)  # a 2 s bench after every send
    async with make_producer(attempt_timeout=None) as producer:
        results = [await producer.send(cluster.message()) for _ in range(3)]
        assert not producer.statistics().fault["broker-a"].is_available(trio.current_time())
    assert {r.queue.broker_name for r in results} == {"broker-a"}
    assert len(cluster.sends(cluster.a)) == 3


async def test_with_fault_tolerance_off_the_producer_keeps_round_robin(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    cluster.a.drop_on(SEND)
    async with make_producer(fault=FaultConfig(enabled=False)) as producer:
        results = [await producer.send(cluster.message()) for _ in range(8)]
        stats = producer.statistics()
    assert {r.queue.broker_name for r in results} == {"broker-b"}  # every failure retried there
    # Without a bench, broker-a keeps its turn: every other send tries it first.
    assert len(cluster.sends(cluster.a)) >= 3
    assert stats.retries == len(cluster.sends(cluster.a))
    assert stats.fault == {}


async def test_with_fault_tolerance_on_a_failing_broker_is_tried_once(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    cluster.a.drop_on(SEND)
    async with make_producer() as producer:
        await send_until_tried(producer, cluster, cluster.a)
        for _ in range(8):
            await producer.send(cluster.message())
        stats = producer.statistics()
    assert len(cluster.sends(cluster.a)) == 1
    assert stats.retries == 1
