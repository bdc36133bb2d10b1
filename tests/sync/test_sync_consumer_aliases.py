"""The blocking consumers' deprecated aliases warn at the caller and name the new name; the new
names work (issue 25). ``owned_queues()`` and ``assignment()`` read a consumer that is not started;
the entry points the broker calls need a running consumer: they warn, then refuse."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rocketmq_py.errors import StateError
from rocketmq_py.protocol import MessageExt
from rocketmq_py.sync import LitePullConsumer, MessageQueue, PushConsumer

NAMESRV = "127.0.0.1:9"  # never dialled: nothing here starts a consumer
A0 = MessageQueue("T", "broker-a", 0)


def _warns_here(match: str, call: Callable[[], Any]) -> Any:
    with pytest.warns(DeprecationWarning, match=match) as record:
        result = call()
    assert {w.filename for w in record.list} == {__file__}
    return result


def test_push_consumer_assignment_and_owned_queues() -> None:
    consumer = PushConsumer("g", namesrv=NAMESRV)
    assert consumer.assignment() == frozenset()
    owned = _warns_here(r"use sorted\(PushConsumer\.assignment\(\)\)", consumer.owned_queues)
    assert owned == []


@pytest.mark.parametrize(
    ("name", "args", "match"),
    [
        ("running_info", (), r"PushConsumer\.running_info\(\) is deprecated.*_running_info"),
        ("reset_offsets", ("T", {A0: 0}), r"PushConsumer\.reset_offsets\(\) is deprecated.*_reset_offsets"),
        (
            "consume_directly",
            (MessageExt(topic="T", body=b"x"), "broker-a"),
            r"PushConsumer\.consume_directly\(\) is deprecated.*_consume_directly",
        ),
        ("rebalance", (), r"PushConsumer\.rebalance\(\) is deprecated"),
    ],
)
def test_push_consumer_broker_entry_points_warn(name: str, args: tuple[Any, ...], match: str) -> None:
    consumer = PushConsumer("g", namesrv=NAMESRV)
    with pytest.raises(StateError):
        _warns_here(match, lambda: getattr(consumer, name)(*args))


@pytest.mark.parametrize(
    ("name", "args", "match"),
    [
        ("running_info", (), r"LitePullConsumer\.running_info\(\) is deprecated.*_running_info"),
        ("reset_offsets", ("T", {A0: 0}), r"LitePullConsumer\.reset_offsets\(\) is deprecated"),
        ("rebalance", (), r"LitePullConsumer\.rebalance\(\) is deprecated"),
    ],
)
def test_lite_pull_consumer_broker_entry_points_warn(name: str, args: tuple[Any, ...], match: str) -> None:
    consumer = LitePullConsumer("g", namesrv=NAMESRV)
    with pytest.raises(StateError):
        _warns_here(match, lambda: getattr(consumer, name)(*args))
