"""A bad option raises :class:`~rocketmq_py.errors.InvalidOption`, a ClientError that is also a ValueError.

One case per place that checks options: client settings (``ClientConfig``), the producer group,
``send_many``'s arguments, the fault tolerance tables, a transaction without its callback. None does
I/O: each fails before anything is sent.
"""

from __future__ import annotations

import pytest

import rocketmq_py
from rocketmq_py import (
    ClientConfig,
    FaultConfig,
    LocalTransactionState,
    Message,
    Producer,
    TransactionProducer,
    send_many,
)
from rocketmq_py.errors import ClientError, InvalidGroup, InvalidOption, RocketMQError
from rocketmq_py.producer._batcher import Batcher
from rocketmq_py.producer._fault import LatencyFaultTolerance


def test_tree() -> None:
    assert issubclass(InvalidOption, ClientError)
    assert issubclass(InvalidOption, RocketMQError)
    assert issubclass(InvalidOption, ValueError)
    assert issubclass(InvalidGroup, InvalidOption)
    assert rocketmq_py.InvalidOption is InvalidOption
    assert InvalidOption.__module__ == "rocketmq_py.errors"


def test_tree_is_drawn_in_the_docstring() -> None:
    assert "InvalidOption" in (rocketmq_py.errors.__doc__ or "")


@pytest.mark.parametrize("namesrv", ["", " ; ", "localhost", "host:port", ":9876"])
def test_namesrv(namesrv: str) -> None:
    with pytest.raises(InvalidOption, match="NameServer"):
        ClientConfig(namesrv=namesrv).namesrv_addrs()


def test_namesrv_through_the_producer() -> None:
    producer = Producer("g", namesrv="not-an-address")
    with pytest.raises(InvalidOption, match="not host:port"):
        producer.config.namesrv_addrs()


def test_namespace() -> None:
    with pytest.raises(InvalidOption):
        ClientConfig(namespace="bad ns!").checked_namespace()
    with pytest.raises(InvalidOption):
        Producer("g", namesrv="127.0.0.1:9876", namespace="a%b")


@pytest.mark.parametrize("group", ["", "a b", "DEFAULT_PRODUCER", "g" * 121])
def test_producer_group(group: str) -> None:
    with pytest.raises(InvalidOption):
        Producer(group, namesrv="127.0.0.1:9876")


def test_batch_size() -> None:
    with pytest.raises(InvalidOption, match="batch_size must be at least 1, not 0"):
        Batcher(0)


async def test_send_many_options() -> None:
    producer = Producer("g", namesrv="127.0.0.1:9876")  # never started: the check comes first
    messages = [Message("t", b"x")]
    with pytest.raises(InvalidOption, match="batch_size"):
        await send_many(producer, messages, batch_size=0)
    with pytest.raises(InvalidOption, match="max_in_flight must be at least 1, not 0"):
        await send_many(producer, messages, max_in_flight=0)


def test_fault_tables() -> None:
    with pytest.raises(InvalidOption, match="same length"):
        FaultConfig(latency_max_ms=(50.0, 100.0), not_available_ms=(0.0,))
    with pytest.raises(InvalidOption, match="same length"):
        LatencyFaultTolerance(latency_max_ms=(50.0,), not_available_ms=())


async def test_transaction_without_a_callback() -> None:
    producer = TransactionProducer(
        "g", namesrv="127.0.0.1:9876", check_local_transaction=lambda _: LocalTransactionState.COMMIT_MESSAGE
    )
    with pytest.raises(InvalidOption, match="execute_local_transaction"):
        await producer.send_message_in_transaction(Message("t", b"x"))


def test_still_a_value_error() -> None:
    with pytest.raises(ValueError, match="NameServer"):
        ClientConfig(namesrv="").namesrv_addrs()


def test_consumer_options() -> None:
    """The consumer side: POP ranges, allocation strategies, the start timestamp, offset store names."""
    from rocketmq_py.consumer._allocate import AllocateConsistentHash, get_strategy
    from rocketmq_py.consumer._local_offset_store import LocalOffsetStore
    from rocketmq_py.consumer._push_settings import check_pop_options
    from rocketmq_py.consumer._start_offset import parse_consume_timestamp

    with pytest.raises(InvalidOption, match="pop_batch_nums"):
        check_pop_options(60, 0)
    with pytest.raises(InvalidOption, match="pop_invisible_time"):
        check_pop_options(1, 32)
    with pytest.raises(InvalidOption, match="virtual node count"):
        AllocateConsistentHash(virtual_node_count=-1)
    with pytest.raises(InvalidOption, match="unknown allocation strategy"):
        get_strategy("NO_SUCH_STRATEGY")
    with pytest.raises(InvalidOption, match="needs configuration"):
        get_strategy("MACHINE_ROOM")
    with pytest.raises(InvalidOption, match="yyyyMMddHHmmss"):
        parse_consume_timestamp("2026-11-28")
    with pytest.raises(InvalidOption, match="valid date"):
        parse_consume_timestamp("20261399000000")
    with pytest.raises(InvalidOption, match="cannot name a directory"):
        LocalOffsetStore("../up", "client")


async def test_request_timeout_and_an_address() -> None:
    from rocketmq_py._transport._open import parse_address

    with pytest.raises(InvalidOption, match="host:port"):
        parse_address("no-port")
    producer = Producer("g", namesrv="127.0.0.1:9876")
    with pytest.raises(InvalidOption, match="timeout must be positive"):
        await producer.request(Message("t", b"x"), timeout=0)
