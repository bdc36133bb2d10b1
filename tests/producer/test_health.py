"""Producer.health() against fake brokers: ready once started, the NameServer and the brokers it
heartbeats, and a broker's fault isolation as a warning. The real-broker twin is
``integration/test_health.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from rocketmq_py import Health, Producer
from rocketmq_py.errors import RocketMQError
from rocketmq_py.protocol import RequestCode, ResponseCode

if TYPE_CHECKING:
    from conftest import Cluster

MakeProducer = Callable[..., Producer]


async def wait_for(predicate: Callable[[], bool], timeout: float = 60) -> None:  # noqa: ASYNC109
    with trio.fail_after(timeout):
        while not predicate():  # noqa: ASYNC110 - the state lives in the producer
            await trio.sleep(0.01)


async def test_ready_once_started_with_the_brokers_it_heartbeats(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    producer = make_producer()
    assert producer.health() == Health(
        ok=False, reasons=("not started",), warnings=(), client_id=None, running=False
    )
    async with producer:
        health = producer.health()
        assert health.ok  # nothing asked yet: nothing known to be wrong
        assert (health.namesrv, health.brokers) == (None, ())
        await producer.send(cluster.message())
        await wait_for(
            lambda: (
                len(producer.health().brokers) == 2 and all(b.reachable for b in producer.health().brokers)
            )
        )
        health = producer.health()
        assert health.ok, health
        assert health.namesrv == cluster.namesrv.address
        assert [(b.broker_name, b.broker_id, b.address) for b in health.brokers] == [
            (fb.broker_name, 0, fb.address) for fb in cluster.brokers
        ]
        assert health.queues == ()
    assert not producer.health().ok


async def test_a_broker_isolated_after_failed_sends_is_a_warning(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    cluster.a.on_reply(RequestCode.SEND_MESSAGE_V2, ResponseCode.SYSTEM_BUSY, remark="busy")
    async with make_producer(retry_times=0) as producer:
        for _ in range(4):  # the round robin reaches broker-a
            try:
                await producer.send(cluster.message())
            except RocketMQError:
                break
        else:
            pytest.fail("no send went to broker-a")
        health = producer.health()
        assert health.ok
        assert [w for w in health.warnings if w.startswith(f"{cluster.a.broker_name} is isolated for ")]
        (isolated,) = [b for b in health.brokers if b.isolated_for is not None]
        assert isolated.broker_name == cluster.a.broker_name
