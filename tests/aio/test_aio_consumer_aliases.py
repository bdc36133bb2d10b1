"""The asyncio consumers' deprecated aliases warn at the caller and name the new name; the new
names work (issue 25). Nothing is opened: the aliases that need a running consumer warn, then
refuse."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable

import pytest

from rocketmq_py.aio import LitePullConsumer, MessageQueue, PushConsumer
from rocketmq_py.errors import StateError
from rocketmq_py.protocol import MessageExt

NAMESRV = "127.0.0.1:9"  # never dialled
A0 = MessageQueue("T", "broker-a", 0)


def _here(record: list[warnings.WarningMessage], match: str) -> None:
    assert len(record) == 1, record
    assert issubclass(record[0].category, DeprecationWarning)
    assert match in str(record[0].message)
    assert record[0].filename == __file__


async def _run(call: Callable[[], object]) -> None:
    result = call()
    if asyncio.iscoroutine(result):
        await result


def test_push_consumer_aliases() -> None:
    async def main() -> None:
        consumer = PushConsumer("g", namesrv=NAMESRV)
        assert consumer.assignment() == frozenset()
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            assert consumer.owned_queues() == []
        _here(record, "use sorted(PushConsumer.assignment())")
        for name, call, new in [
            ("running_info", consumer.running_info, "PushConsumer._running_info"),
            ("rebalance", consumer.rebalance, "on its own"),
            ("reset_offsets", lambda: consumer.reset_offsets("T", {A0: 0}), "PushConsumer._reset_offsets"),
            (
                "consume_directly",
                lambda: consumer.consume_directly(MessageExt(topic="T", body=b"x"), "broker-a"),
                "PushConsumer._consume_directly",
            ),
        ]:
            with warnings.catch_warnings(record=True) as record:
                warnings.simplefilter("always")
                # not open: refused (running_info, a plain method, finds no trio run)
                with pytest.raises((StateError, RuntimeError)):
                    await _run(call)
            _here(record, new)
            assert f"PushConsumer.{name}() is deprecated" in str(record[0].message)

    asyncio.run(main())


def test_lite_pull_consumer_aliases() -> None:
    async def main() -> None:
        consumer = LitePullConsumer("g", namesrv=NAMESRV)
        for name, call in [
            ("running_info", consumer.running_info),
            ("rebalance", consumer.rebalance),
            ("reset_offsets", lambda: consumer.reset_offsets("T", {A0: 0})),
        ]:
            with warnings.catch_warnings(record=True) as record:
                warnings.simplefilter("always")
                with pytest.raises(StateError):
                    await _run(call)
            _here(record, f"LitePullConsumer.{name}() is deprecated")

    asyncio.run(main())
