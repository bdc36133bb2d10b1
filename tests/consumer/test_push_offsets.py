"""PushConsumer offsets against fake brokers: what is committed, when it is sent, and on close."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from rocketmq_py.consumer._push import PushConsumer
from rocketmq_py.protocol import (
    MessageExt,
    PullSysFlag,
    RequestCode,
    UnregisterClientRequestHeader,
    from_ext_fields,
)

if TYPE_CHECKING:
    from conftest import Cluster, Recorder

MakeConsumer = Callable[..., PushConsumer]
ME = "127.0.0.1@me"


async def test_committed_offset_is_the_smallest_offset_still_in_flight(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    release = trio.Event()

    async def slow_at_3(msgs: list[MessageExt]) -> None:
        if msgs[0].queue_offset == 3:
            await release.wait()

    recorder.hook = slow_at_3
    async with make_consumer() as consumer:
        cluster.put(a0, 10)
        await cluster.wait_until(lambda: len(recorder.messages) == 10)
        await trio.sleep(1)
        assert consumer._offset_store.get(a0) == 3  # 0-2 and 4-9 done, 3 is not
        (stats,) = [s for s in consumer.statistics() if s.queue == a0]
        assert stats.committed_offset == 3
        assert stats.cached_count == 1
        release.set()
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 10)


async def test_persist_loop_sends_offsets_oneway_every_5_seconds(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    cluster.group_consumed_before()  # offsets on every queue: each is committed every 5 s
    a0, _, b0, _ = cluster.queues()
    release = trio.Event()

    async def slow_at_2(msgs: list[MessageExt]) -> None:
        if msgs[0].queue_offset == 2:
            await release.wait()

    recorder.hook = slow_at_2
    async with make_consumer() as consumer:
        assert consumer.persist_interval == 5
        start = trio.current_time()
        cluster.put(a0, 6)
        await cluster.wait_until(lambda: len(recorder.messages) == 6)
        await trio.sleep_until(start + 4.9)
        assert cluster.offset_updates(cluster.a) == []
        await trio.sleep_until(start + 5.1)
        assert cluster.offset_updates(cluster.a, a0) == [(2, True)]
        assert cluster.offset_updates(cluster.b, b0) == [(0, True)]  # every owned queue
        assert cluster.a.consumer_offsets[(cluster.group, cluster.topic, 0)] == 2
        release.set()
        await trio.sleep_until(start + 9.9)
        assert cluster.offset_updates(cluster.a, a0) == [(2, True)]
        await trio.sleep_until(start + 10.1)
        assert cluster.offset_updates(cluster.a, a0) == [(2, True), (6, True)]
        assert cluster.a.consumer_offsets[(cluster.group, cluster.topic, 0)] == 6


async def test_pull_carries_the_commit_offset(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    async with make_consumer():
        (first,) = cluster.pulls(cluster.a, a0)
        assert first.queue_offset == 0
        assert first.commit_offset == 0
        assert first.sys_flag == PullSysFlag.SUSPEND  # nothing to commit yet
        assert first.suspend_timeout_millis == 15000
        assert first.max_msg_nums == 32
        cluster.put(a0, 3)
        await cluster.wait_until(lambda: len(recorder.messages) == 3)
        await cluster.wait_until(lambda: len(cluster.pulls(cluster.a, a0)) == 3)
        # The pull that found the messages, then the one after them (offset 3, commit 3).
        last = cluster.pulls(cluster.a, a0)[-1]
    assert last.queue_offset == 3
    assert last.commit_offset == 3
    assert last.sys_flag == PullSysFlag.COMMIT_OFFSET | PullSysFlag.SUSPEND


async def test_close_persists_offsets_then_unregisters(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0, _, _, b1 = cluster.queues()
    async with make_consumer():
        cluster.put(a0, 4)
        cluster.put(b1, 2)
        await cluster.wait_until(lambda: len(recorder.messages) == 6)
        await trio.sleep(1)  # before the first periodic persist
        assert cluster.offset_updates(cluster.a) == []

    assert cluster.offset_updates(cluster.a, a0) == [(4, False)]
    assert cluster.offset_updates(cluster.b, b1) == [(2, False)]
    assert cluster.a.consumer_offsets[(cluster.group, cluster.topic, 0)] == 4
    assert cluster.b.consumer_offsets[(cluster.group, cluster.topic, 1)] == 2
    for fb in cluster.brokers:
        codes = [cmd.code for cmd in fb.requests()]
        last_update = max(i for i, code in enumerate(codes) if code == RequestCode.UPDATE_CONSUMER_OFFSET)
        unregisters = [i for i, code in enumerate(codes) if code == RequestCode.UNREGISTER_CLIENT]
        assert unregisters
        assert min(unregisters) > last_update
        headers = [
            from_ext_fields(UnregisterClientRequestHeader, cmd.ext_fields)
            for cmd in fb.requests(RequestCode.UNREGISTER_CLIENT)
        ]
        assert (ME, cluster.group) in {(h.client_id, h.consumer_group) for h in headers}


async def test_offset_illegal_drops_the_queue_fixes_the_offset_and_rebuilds_it(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    cluster.put(a0, 3)
    cluster.a.consumer_offsets[(cluster.group, cluster.topic, 0)] = 10  # past the queue's end
    # Persisting at 3, 6, 9, 12 s keeps the periodic (stale) oneway away from the fix at 10 s:
    # the fake runs each request in its own task, so two at the same instant may apply in
    # either order.
    async with make_consumer(persist_interval=3) as consumer:
        start = trio.current_time()
        (first,) = cluster.pulls(cluster.a, a0)
        assert first.queue_offset == 10  # answered PULL_OFFSET_MOVED, nextBeginOffset 3
        await cluster.wait_until(lambda: (3, False) in cluster.offset_updates(cluster.a, a0))
        assert trio.current_time() - start == pytest.approx(10, abs=0.5)  # fixed 10 s later
        await cluster.wait_until(lambda: len(cluster.pulls(cluster.a, a0)) >= 2)
        assert cluster.pulls(cluster.a, a0)[1].queue_offset == 3  # rebuilt from the fixed offset
        assert a0 in consumer.assignment()
        cluster.put(a0, 1)
        await cluster.wait_until(lambda: len(recorder.messages) == 1)
    assert recorder.offsets(a0) == [3]


def _slave_only_route(cluster: Cluster) -> None:
    """broker-a's master is gone from the routes: only its slave (id 1, the same fake) remains."""
    for topic, queues in ((cluster.topic, 2), (cluster.retry, 1)):
        route = cluster.route(cluster.a, cluster.b, queues=queues)
        datas = tuple(
            replace(data, broker_addrs={1: cluster.a.address}) if data.broker_name == "broker-a" else data
            for data in route.broker_datas
        )
        cluster.namesrv.set_route(topic, replace(route, broker_datas=datas))


async def test_offsets_are_read_and_committed_via_the_slave_while_the_master_is_gone(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Java's RemoteBrokerOffsetStore falls back to any replica of the broker (findBrokerAddressInSubscribe)."""
    a0 = cluster.queues()[0]
    cluster.put(a0, 8)
    cluster.a.consumer_offsets[(cluster.group, cluster.topic, 0)] = 5  # committed before the master died
    _slave_only_route(cluster)
    async with make_consumer(persist_interval=5) as consumer:
        await cluster.wait_until(lambda: recorder.offsets(a0) == [5, 6, 7])
        await cluster.wait_until(lambda: cluster.a.consumer_offsets[(cluster.group, cluster.topic, 0)] == 8)
        assert consumer._offset_store.get(a0) == 8
    assert cluster.offset_updates(cluster.a, a0)  # committed to broker-a's slave


async def test_the_periodic_commit_leaves_a_dropped_queues_offset_to_the_fix(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Between OFFSET_ILLEGAL and the fix 10 s later the queue is dropped and its offset in memory is
    the old one: the periodic commit sends nothing for it. Sent, it could be stored after the fix's
    commit: a broker runs offset requests on a pool of threads (``BrokerController.registerProcessor``
    gives UPDATE_CONSUMER_OFFSET the ``consumerManageExecutor``, ``consumerManageThreadPoolNums``
    threads), and the member would start the
    rebuilt queue from the old offset again (Java's ``persistAll`` sends it). The same when a
    ``mqadmin resetOffsetByTime`` answers the pulls with OFFSET_ILLEGAL: the old offset would undo
    the reset."""
    a0 = cluster.queues()[0]
    cluster.put(a0, 3)
    cluster.a.consumer_offsets[(cluster.group, cluster.topic, 0)] = 10  # past the queue's end
    async with make_consumer(persist_interval=3):
        await cluster.wait_until(lambda: (3, False) in cluster.offset_updates(cluster.a, a0))
        await cluster.wait_until(lambda: len(cluster.pulls(cluster.a, a0)) >= 2)
    assert [offset for offset, _ in cluster.offset_updates(cluster.a, a0)][:1] == [3]  # the fix first
