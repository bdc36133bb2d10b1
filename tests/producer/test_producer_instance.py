"""``Producer.instance`` handed out the private client instance: it is deprecated for one release."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from rocketmq_py import LocalTransactionState, Producer, TransactionProducer
from rocketmq_py.errors import StateError

if TYPE_CHECKING:
    from conftest import Cluster

MakeProducer = Callable[..., Producer]


async def test_instance_still_works_and_warns(cluster: Cluster, make_producer: MakeProducer) -> None:
    async with make_producer() as producer:
        with pytest.warns(
            DeprecationWarning, match=r"Producer\.instance is deprecated.*Producer\.client_id"
        ) as record:
            instance = producer.instance
        assert record[0].filename == __file__  # the warning points at the caller
        assert instance is producer._client_instance
        assert instance.client_id == producer.client_id  # the replacement, no warning


async def test_a_transaction_producer_names_itself(cluster: Cluster) -> None:
    async with TransactionProducer(
        cluster.group,
        namesrv=cluster.namesrv.address,
        check_local_transaction=lambda message: LocalTransactionState.COMMIT_MESSAGE,
    ) as producer:
        with pytest.warns(DeprecationWarning, match=r"TransactionProducer\.instance is deprecated"):
            assert producer.instance is producer._client_instance


def test_before_start_it_warns_then_raises_as_before() -> None:
    producer = Producer("pg", namesrv="127.0.0.1:9876")
    with pytest.warns(DeprecationWarning, match="client_id"), pytest.raises(StateError, match="not started"):
        producer.instance  # noqa: B018
    with pytest.raises(StateError, match="not started"):
        producer.client_id  # noqa: B018


def test_its_annotation_names_no_private_type() -> None:
    for cls in (Producer, TransactionProducer):
        prop = inspect.getattr_static(cls, "instance")
        assert isinstance(prop, property)
        assert prop.fget is not None
        assert prop.fget.__annotations__["return"] == "Any"
