"""``statistics()`` returns a frozen snapshot built at the call, never the producer's live counters."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from rocketmq_py import FaultConfig, FaultItem, LocalTransactionState, ProducerStatistics, TransactionProducer
from rocketmq_py.errors import SystemBusy
from rocketmq_py.producer._producer import Producer
from rocketmq_py.protocol import MessageQueue, RequestCode, ResponseCode

if TYPE_CHECKING:
    from conftest import Cluster

MakeProducer = Callable[..., Producer]


async def test_a_snapshot_does_not_change_when_the_producer_sends_more(
    cluster: Cluster, make_producer: MakeProducer
) -> None:
    async with make_producer() as producer:
        await producer.send(cluster.message(), queue=MessageQueue(cluster.topic, "broker-a", 0))
        before = producer.statistics()
        cluster.b.on_reply(RequestCode.SEND_MESSAGE_V2, ResponseCode.SYSTEM_BUSY, remark="busy")
        await producer.send(cluster.message(), queue=MessageQueue(cluster.topic, "broker-a", 1))
        with pytest.raises(SystemBusy):
            await producer.send(cluster.message(), queue=MessageQueue(cluster.topic, "broker-b", 0))
        after = producer.statistics()

    assert (before.sent, before.failed, before.attempts, before.retries) == (1, 0, 1, 0)
    assert set(before.fault) == {"broker-a"}  # broker-b joined the table after the snapshot
    assert (after.sent, after.failed, after.attempts) == (2, 1, 3)
    assert set(after.fault) == {"broker-a", "broker-b"}
    assert not after.fault["broker-b"].reachable
    assert before is not after
    assert producer.statistics() == after  # equal snapshots compare equal


async def test_a_snapshot_is_frozen_and_its_fault_table_read_only(
    cluster: Cluster, make_producer: MakeProducer
) -> None:
    async with make_producer() as producer:
        await producer.send(cluster.message())
        stats = producer.statistics()
    assert isinstance(stats, ProducerStatistics)
    with pytest.raises(dataclasses.FrozenInstanceError):
        stats.sent = 0  # type: ignore[misc]
    with pytest.raises(TypeError):
        stats.fault["broker-x"] = FaultItem("broker-x", 0.0, 0.0)  # type: ignore[index]
    assert all(isinstance(item, FaultItem) for item in stats.fault.values())


async def test_without_fault_tolerance_the_table_is_empty(
    cluster: Cluster, make_producer: MakeProducer
) -> None:
    async with make_producer(fault=FaultConfig(enabled=False)) as producer:
        await producer.send(cluster.message())
        stats = producer.statistics()
    assert stats.sent == 1
    assert dict(stats.fault) == {}


def test_a_producer_never_started_has_zero_counters() -> None:
    stats = Producer("pg", namesrv="127.0.0.1:9876").statistics()
    assert stats == ProducerStatistics(sent=0, failed=0, attempts=0, retries=0, fault={})
    assert stats == ProducerStatistics()


def test_a_table_given_as_a_dict_is_kept_read_only() -> None:
    table = {"broker-a": FaultItem("broker-a", 3.0, 0.0)}
    stats = ProducerStatistics(sent=1, fault=table)
    table.clear()
    assert set(stats.fault) == {"broker-a"}
    with pytest.raises(TypeError):
        stats.fault["broker-b"] = FaultItem("broker-b", 3.0, 0.0)  # type: ignore[index]


async def test_a_transaction_producer_hands_out_snapshots_too(cluster: Cluster) -> None:
    async with TransactionProducer(
        cluster.group,
        namesrv=cluster.namesrv.address,
        execute_local_transaction=lambda message, arg: LocalTransactionState.COMMIT_MESSAGE,
        check_local_transaction=lambda message: LocalTransactionState.COMMIT_MESSAGE,
    ) as producer:
        await producer.send_message_in_transaction(cluster.message())
        before = producer.statistics()
        await producer.send_message_in_transaction(cluster.message())
        after = producer.statistics()
    assert (before.sent, after.sent) == (1, 2)
