"""The consumers' public surface (issue 25): one name per idea, snapshots, deprecated aliases.

- ``PushConsumer.assignment()`` is ``LitePullConsumer.assignment()``'s name, type and meaning (the
  queues consumed now, popped ones included); ``owned_queues()`` is its deprecated sorted list;
- ``instance`` and ``offsets`` hand out internal objects: deprecated, typed ``Any`` (no private type);
- the broker-request entry points (``running_info``, ``reset_offsets``, ``consume_directly``) and
  ``rebalance`` are private; their public names warn for one release;
- ``statistics()`` and ``pop_statistics()`` are snapshots: frozen values built at the call, which
  do not move while the consumer goes on.

Every deprecated name warns at its caller (the warning's file is this one) and names what replaces it.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing

from rocketmq_py.consumer._allocate import sort_queues
from rocketmq_py.consumer._lite_pull import LitePullConsumer
from rocketmq_py.consumer._member import GroupMember
from rocketmq_py.consumer._push import PushConsumer
from rocketmq_py.consumer._statistics import PopQueueStatistics, QueueStatistics
from rocketmq_py.errors import StateError
from rocketmq_py.protocol import ConsumeResult, ConsumerRunningInfo, Message, MessageExt
from rocketmq_py.testing._fake_broker import FakeBroker
from tests.consumer._pop_fake import pop_member, wait_until

if TYPE_CHECKING:
    from conftest import Cluster, Recorder

MakeConsumer = Callable[..., PushConsumer]


def _lite(cluster: Cluster) -> LitePullConsumer:
    consumer = LitePullConsumer(
        cluster.group, namesrv=cluster.namesrv.address, instance_name="me", client_ip="127.0.0.1"
    )
    consumer.subscribe(cluster.topic)
    return consumer


def _warned_here(record: pytest.WarningsRecorder) -> None:
    """Each warning points at the line that used the deprecated name (this file), not at the library."""
    assert record.list
    assert {w.filename for w in record.list} == {__file__}


# --- assignment ----------------------------------------------------------------------------------


async def test_assignment_is_a_new_frozenset_of_the_owned_queues_and_owned_queues_is_its_sorted_alias(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    consumer = make_consumer()
    assert consumer.assignment() == frozenset()  # not started: nothing owned, no error
    async with consumer:
        owned = consumer.assignment()
        assert isinstance(owned, frozenset)
        assert owned == set(consumer._queues)
        assert set(cluster.queues()) <= owned  # the only member: every queue, and the retry topic's
        assert consumer.assignment() is not owned  # built at each call
        with pytest.warns(DeprecationWarning, match=r"use sorted\(PushConsumer\.assignment\(\)\)") as record:
            listed = consumer.owned_queues()
        _warned_here(record)
        assert listed == sort_queues(owned)


async def test_assignment_includes_the_popped_queues(autojump_clock: trio.testing.MockClock) -> None:
    async with FakeBroker(broker_name="broker-a") as fb:
        fb.add_topic("PopTopic", queues=2)
        fb.add_topic("%RETRY%cg-pop", queues=1)

        async def listener(msgs: list[MessageExt]) -> None:
            pass

        async with pop_member(fb, listener, "cg-pop", "PopTopic") as consumer:
            assert consumer._pop is not None
            pop = consumer._pop
            await wait_until(lambda: len(pop.queues) == 2)
            assert consumer.assignment() == {*pop.queues, *consumer._queues}
            assert {mq.topic for mq in consumer.assignment()} >= {"PopTopic"}


# --- instance and offsets --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["instance", "offsets"])
def test_instance_and_offsets_name_no_private_type(name: str) -> None:
    prop = inspect.getattr_static(GroupMember, name)
    assert isinstance(prop, property)
    assert prop.fget is not None
    assert inspect.get_annotations(prop.fget)["return"] == "Any"
    assert (prop.fget.__doc__ or "").startswith("Deprecated")


async def test_instance_and_offsets_still_work_and_warn(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    for consumer in (make_consumer(), _lite(cluster)):
        cls = type(consumer).__name__
        with pytest.raises(StateError, match="not started"):
            _ = consumer._client_instance
        async with consumer:
            with pytest.warns(
                DeprecationWarning, match=rf"{cls}\.instance is deprecated.*client_id"
            ) as record:
                instance = consumer.instance
            _warned_here(record)
            assert instance is consumer._client_instance
            assert instance.client_id == consumer.client_id
            with pytest.warns(
                DeprecationWarning, match=rf"{cls}\.offsets is deprecated.*statistics"
            ) as record:
                offsets = consumer.offsets
            _warned_here(record)
            assert offsets is consumer._offset_store


# --- the broker's entry points ----------------------------------------------------------------------


async def test_the_broker_entry_points_are_private_and_their_public_names_warn(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    async with make_consumer() as consumer:
        info = consumer._running_info()
        assert a0 in info.mq_table
        with pytest.warns(
            DeprecationWarning, match=r"running_info\(\) is deprecated.*_running_info"
        ) as record:
            old: ConsumerRunningInfo = consumer.running_info()
        _warned_here(record)
        assert set(old.mq_table) == set(info.mq_table)

        with pytest.warns(
            DeprecationWarning, match=r"reset_offsets\(\) is deprecated.*_reset_offsets"
        ) as record:
            await consumer.reset_offsets(cluster.topic, {a0: 0})
        _warned_here(record)

        (msg,) = cluster.put(cluster.queues()[1], 1)
        with pytest.warns(
            DeprecationWarning, match=r"consume_directly\(\) is deprecated.*_consume_directly"
        ) as record:
            result = await consumer.consume_directly(msg, "broker-a")
        _warned_here(record)
        assert result.consume_result is ConsumeResult.CR_SUCCESS
        assert (await consumer._consume_directly(msg, "broker-a")).consume_result is ConsumeResult.CR_SUCCESS

        with pytest.warns(DeprecationWarning, match=r"rebalance\(\) is deprecated.*on its own") as record:
            await consumer.rebalance()
        _warned_here(record)
        await consumer._rebalance()
        assert a0 in consumer.assignment()


async def test_the_lite_consumer_entry_points_are_private_and_their_public_names_warn(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    a0 = cluster.queues()[0]
    async with _lite(cluster) as consumer:
        await consumer._rebalance()
        assert a0 in consumer.assignment()
        info = consumer._running_info()
        with pytest.warns(
            DeprecationWarning, match=r"LitePullConsumer\.running_info\(\) is deprecated"
        ) as record:
            assert set(consumer.running_info().mq_table) == set(info.mq_table)
        _warned_here(record)
        with pytest.warns(
            DeprecationWarning, match=r"LitePullConsumer\.reset_offsets\(\) is deprecated.*_reset_offsets"
        ) as record:
            await consumer.reset_offsets(cluster.topic, {a0: 0})
        _warned_here(record)
        with pytest.warns(
            DeprecationWarning, match=r"LitePullConsumer\.rebalance\(\) is deprecated"
        ) as record:
            await consumer.rebalance()
        _warned_here(record)
    assert not hasattr(LitePullConsumer, "consume_directly")  # never public on the lite consumer


# --- statistics are snapshots ---------------------------------------------------------------------


def _frozen(stats: list[Any]) -> None:
    for s in stats:
        assert dataclasses.is_dataclass(s)
        field = dataclasses.fields(s)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(s, field, None)


async def test_statistics_is_a_snapshot_that_does_not_move_while_the_consumer_goes_on(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    async with make_consumer() as consumer:
        cluster.put(a0, 3)
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 3)
        before = consumer.statistics()
        copy = [dataclasses.replace(s) for s in before]
        _frozen(before)
        assert all(isinstance(s, QueueStatistics) for s in before)
        (stat_a0,) = [s for s in before if s.queue == a0]
        assert (stat_a0.committed_offset, stat_a0.next_pull_offset) == (3, 3)

        cluster.put(a0, 4)
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 7)
        await trio.sleep(10)
        after = consumer.statistics()
        assert before == copy  # the first snapshot is as it was
        (later,) = [s for s in after if s.queue == a0]
        assert (later.committed_offset, later.next_pull_offset) == (7, 7)
        assert after is not before
        after.clear()  # a caller's list: changing it changes nothing in the consumer
        assert consumer.statistics()


async def test_pop_statistics_is_a_snapshot_that_does_not_move_while_the_consumer_goes_on(
    autojump_clock: trio.testing.MockClock,
) -> None:
    got: list[MessageExt] = []

    async def listener(msgs: list[MessageExt]) -> None:
        got.extend(msgs)

    async with FakeBroker(broker_name="broker-a") as fb:
        fb.add_topic("PopTopic", queues=1)
        fb.add_topic("%RETRY%cg-pop", queues=1)
        fb.put_messages(0, [Message("PopTopic", b"one")])
        async with pop_member(fb, listener, "cg-pop", "PopTopic") as consumer:
            await wait_until(lambda: len(got) == 1)
            await wait_until(lambda: consumer.pop_statistics()[0].waiting_ack == 0)
            before = consumer.pop_statistics()
            copy = [dataclasses.replace(s) for s in before]
            _frozen(before)
            assert all(isinstance(s, PopQueueStatistics) for s in before)
            assert before[0].popped == 1

            fb.put_messages(0, [Message("PopTopic", b"two"), Message("PopTopic", b"three")])
            await wait_until(lambda: len(got) == 3)
            await trio.sleep(5)
            assert before == copy
            assert consumer.pop_statistics()[0].popped == 3
