"""The lite pull consumer's parts alone: options, filters of ``assign``, commits, the poll wait.

Each part gets its collaborators (a buffer, an offset store, the subscription tables), never the
:class:`~rocketmq_py.LitePullConsumer`; these tests build them from plain objects, with no broker.
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Iterable
from pathlib import Path

import pytest
import trio
import trio.testing

import rocketmq_py.consumer
from rocketmq_py.consumer._flow import FlowLimits
from rocketmq_py.consumer._lite_assign import assign_expressions
from rocketmq_py.consumer._lite_buffer import LiteBuffer, LiteQueue
from rocketmq_py.consumer._lite_offsets import LiteCommits
from rocketmq_py.consumer._lite_options import lite_options
from rocketmq_py.consumer._lite_poll import wait_take
from rocketmq_py.errors import ClientError, InvalidOption, RocketMQError, StateError
from rocketmq_py.protocol import ExpressionType, MessageExt, MessageQueue, SubscriptionData

PARTS = ["_lite_assign", "_lite_info", "_lite_offsets", "_lite_options", "_lite_poll", "_lite_pull_loop"]
A0 = MessageQueue("TopicA", "broker-a", 0)
A1 = MessageQueue("TopicA", "broker-a", 1)
B0 = MessageQueue("TopicB", "broker-a", 0)
NO_OLD: dict[str, int | None] = {"pull_threshold_for_all": None}


@pytest.mark.parametrize("part", PARTS)
def test_a_part_never_imports_the_consumer(part: str) -> None:
    source = Path(rocketmq_py.consumer.__file__).with_name(f"{part}.py").read_text()
    imported = {
        node.module
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert "rocketmq_py.consumer._lite_pull" not in imported
    assert "rocketmq_py.consumer._member" not in imported


# --- options ------------------------------------------------------------------------------------


def test_options_check_the_batch_size_before_the_limits() -> None:
    with pytest.raises(InvalidOption, match="pull_batch_size"):
        lite_options(
            pull_batch_size=0,
            flow_limits=FlowLimits(),
            old={"consume_max_span": 5},
            topic_metadata_check_interval=0,
        )


def test_options_refuse_flow_limits_with_an_old_keyword() -> None:
    with pytest.raises(InvalidOption, match="not both"):
        lite_options(
            pull_batch_size=1,
            flow_limits=FlowLimits(),
            old={"consume_max_span": 5},
            topic_metadata_check_interval=1,
        )


def test_options_refuse_a_watch_interval_that_is_not_positive() -> None:
    with pytest.raises(InvalidOption, match="topic_metadata_check_interval"):
        lite_options(pull_batch_size=1, flow_limits=None, old=NO_OLD, topic_metadata_check_interval=0)


def test_options_give_the_limits_as_given() -> None:
    limits = FlowLimits(pull_threshold_for_queue=3)
    assert (
        lite_options(pull_batch_size=1, flow_limits=limits, old=NO_OLD, topic_metadata_check_interval=1)
        is limits
    )
    assert lite_options(pull_batch_size=1, flow_limits=None, old=NO_OLD, topic_metadata_check_interval=1) == (
        FlowLimits()
    )


# --- assign's filters ---------------------------------------------------------------------------


class Subscriptions:
    """The two tables ``assign`` keeps, and the setter the consumer would give."""

    def __init__(self) -> None:
        self.expressions: dict[str, tuple[str, ExpressionType]] = {}
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.set: list[tuple[str, str, ExpressionType]] = []

    def set_subscription(self, topic: str, expression: str, kind: ExpressionType) -> None:
        self.set.append((topic, expression, kind))
        self.subscriptions[topic] = SubscriptionData(topic=topic, sub_string=expression, sub_version=1)

    def assign(self, queues: Iterable[MessageQueue], expression: str | None) -> set[str]:
        return assign_expressions(
            queues,
            expression,
            ExpressionType.TAG,
            expressions=self.expressions,
            subscriptions=self.subscriptions,
            set_subscription=self.set_subscription,
        )


def test_assign_without_expression_subscribes_new_topics_to_everything() -> None:
    subs = Subscriptions()
    assert subs.assign([B0, A1, A0], None) == set()
    assert subs.set == [("TopicA", "*", ExpressionType.TAG), ("TopicB", "*", ExpressionType.TAG)]
    assert subs.expressions == {}
    assert subs.assign([A0], None) == set()
    assert len(subs.set) == 2  # a known topic keeps its subscription


def test_assign_with_expression_reports_only_the_topics_it_changed() -> None:
    subs = Subscriptions()
    assert subs.assign([A0, B0], "TagA") == {"TopicA", "TopicB"}
    assert subs.expressions["TopicA"] == ("TagA", ExpressionType.TAG)
    assert subs.assign([A0, A1], "TagA") == set()
    assert subs.assign([A0], "TagB") == {"TopicA"}
    assert subs.expressions["TopicB"] == ("TagA", ExpressionType.TAG)


def test_assign_refuses_an_invalid_topic_name() -> None:
    with pytest.raises(ClientError):
        Subscriptions().assign([MessageQueue("bad topic!", "broker-a", 0)], None)


# --- commits ------------------------------------------------------------------------------------


class MemoryStore:
    """An offset store in memory: what was persisted, and a switch to make persisting fail."""

    def __init__(self) -> None:
        self.offsets: dict[MessageQueue, int] = {}
        self.persisted: list[MessageQueue] = []
        self.broker: dict[MessageQueue, int] = {}
        self.fail = False

    def get(self, mq: MessageQueue) -> int:
        return self.offsets.get(mq, -1)

    def update(self, mq: MessageQueue, offset: int, *, increase_only: bool = True) -> None:
        if not increase_only or offset > self.get(mq):
            self.offsets[mq] = offset

    def remove(self, mq: MessageQueue) -> None:
        self.offsets.pop(mq, None)

    def snapshot(self) -> dict[MessageQueue, int]:
        return dict(self.offsets)

    async def read_from_broker(self, mq: MessageQueue) -> int:
        offset = self.broker.get(mq, -1)
        if offset >= 0:
            self.offsets[mq] = offset
        return offset

    async def persist(self, mq: MessageQueue) -> None:
        if self.fail:
            raise RocketMQError("the broker is away")
        self.persisted.append(mq)

    async def persist_all(self, owned: Iterable[MessageQueue] | None = None) -> int:
        queues = [mq for mq in (self.offsets if owned is None else owned) if mq in self.offsets]
        self.persisted.extend(queues)
        return len(queues)


def commits(
    store: MemoryStore, queues: dict[MessageQueue, LiteQueue], *, auto_commit: bool = True
) -> LiteCommits:
    return LiteCommits(store=store, group="cg-parts", auto_commit=auto_commit, queues=queues)


async def test_a_quiet_commit_logs_a_failure_and_a_loud_one_raises(caplog: pytest.LogCaptureFixture) -> None:
    store = MemoryStore()
    state = LiteQueue(A0, next_offset=5, consumed=5)
    store.fail = True
    with caplog.at_level(logging.WARNING, "rocketmq_py.consumer.lite"):
        await commits(store, {A0: state}).commit(state, quiet=True)
    assert "committing the offset of" in caplog.text
    with pytest.raises(RocketMQError):
        await commits(store, {A0: state}).commit(state, quiet=False)
    assert store.offsets == {A0: 5}


async def test_without_auto_commit_a_quiet_commit_writes_only_what_is_stored() -> None:
    store = MemoryStore()
    state = LiteQueue(A0, next_offset=5, consumed=5)
    await commits(store, {A0: state}, auto_commit=False).commit(state, quiet=True)
    assert (store.offsets, store.persisted) == ({}, [])
    store.offsets[A0] = 3
    await commits(store, {A0: state}, auto_commit=False).commit(state, quiet=True)
    assert (store.offsets, store.persisted) == ({A0: 3}, [A0])


async def test_a_released_queue_is_forgotten_unless_assigned_again() -> None:
    store = MemoryStore()
    state = LiteQueue(A0, next_offset=7, consumed=7)
    await commits(store, {}).commit_released(state)
    assert (store.offsets, store.persisted) == ({}, [A0])
    await commits(store, {A0: LiteQueue(A0)}).commit_released(state)
    assert store.offsets == {A0: 7}


async def test_reading_an_unassigned_queue_does_not_keep_it() -> None:
    store = MemoryStore()
    store.broker = {A0: 4, A1: 9}
    assert await commits(store, {A0: LiteQueue(A0)}).committed(A0) == 4
    assert await commits(store, {A0: LiteQueue(A0)}).committed(A1) == 9
    assert store.offsets == {A0: 4}


async def test_an_auto_commit_round_writes_the_assigned_queues_with_a_position() -> None:
    store = MemoryStore()
    store.offsets[B0] = 2  # read by committed(), not assigned: not ours to write
    queues = {A0: LiteQueue(A0, next_offset=6, consumed=6), A1: LiteQueue(A1)}
    await commits(store, queues).commit_consumed()
    assert store.offsets == {A0: 6, B0: 2}
    assert store.persisted == [A0]


async def test_given_offsets_are_written_in_order() -> None:
    store = MemoryStore()
    await commits(store, {}).commit_offsets([(A1, 3), (A0, 0)])
    assert (store.offsets, store.persisted) == ({A1: 3, A0: 0}, [A1, A0])


# --- the poll wait ------------------------------------------------------------------------------


def running() -> None:
    """A consumer that is running: nothing to raise."""


async def test_wait_take_returns_nothing_after_its_timeout(autojump_clock: trio.testing.MockClock) -> None:
    buffer = LiteBuffer(FlowLimits(), 100)
    start = trio.current_time()
    assert await wait_take(buffer, running, None, one_batch=True, timeout=2.5) == {}
    assert trio.current_time() - start == pytest.approx(2.5)


async def test_wait_take_wakes_on_an_arrival(autojump_clock: trio.testing.MockClock) -> None:
    buffer = LiteBuffer(FlowLimits(), 100)
    state = LiteQueue(A0, next_offset=0, consumed=0)
    msg = MessageExt("TopicA", b"x", queue_id=0, queue_offset=0, broker_name="broker-a")

    async def arrive() -> None:
        await trio.sleep(1)
        buffer.append(state, [msg])

    async with trio.open_nursery() as nursery:
        nursery.start_soon(arrive)
        assert await wait_take(buffer, running, 5, one_batch=False, timeout=10) == {A0: [msg]}


async def test_wait_take_raises_what_the_running_check_raises() -> None:
    def closed() -> None:
        raise StateError("the consumer is not running")

    with pytest.raises(StateError):
        await wait_take(LiteBuffer(FlowLimits(), 100), closed, None, one_batch=True, timeout=1)
