"""PushConsumer.health() and LitePullConsumer.health() against fake brokers: the readiness verdict,
its reasons, and what it is built from (NameServer answers, heartbeats, pull answers, listener
calls cut at ``consume_timeout``). The real-broker twin is ``integration/test_health.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import trio
import trio.testing

from rocketmq_py import Health, LitePullConsumer
from rocketmq_py.consumer._push import PushConsumer
from rocketmq_py.protocol import MessageExt, RequestCode

if TYPE_CHECKING:
    from conftest import Cluster

MakeConsumer = Callable[..., PushConsumer]


async def test_a_consumer_not_started_is_not_ready(make_consumer: MakeConsumer) -> None:
    health = make_consumer().health()
    assert health == Health(ok=False, reasons=("not started",), warnings=(), client_id=None, running=False)


async def test_a_running_consumer_is_ready_with_its_namesrv_brokers_and_queues(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    async with make_consumer() as consumer:
        await cluster.wait_until(lambda: len(consumer.health().queues) == 6)  # 4 + the retry topic's 2
        await cluster.wait_until(lambda: all(b.reachable for b in consumer.health().brokers))
        health = consumer.health()
        assert health.ok, health
        assert (health.reasons, health.warnings) == ((), ())
        assert health.running
        assert health.client_id == consumer.client_id
        assert health.namesrv == cluster.namesrv.address
        assert health.namesrv_age is not None
        assert {(b.broker_name, b.broker_id, b.address) for b in health.brokers} == {
            (fb.broker_name, 0, fb.address) for fb in cluster.brokers
        }
        assert {q.queue for q in health.queues} == set(cluster.queues()) | set(cluster.queues(cluster.retry))
        assert all(
            q.last_answer_age < 60 and q.stalled_for is None and q.timed_out_ago is None
            for q in health.queues
        )


async def test_a_listener_call_cut_at_consume_timeout_fails_it_until_a_call_ends_by_itself(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    async def listener(msgs: list[MessageExt]) -> None:
        if msgs[0].body.endswith(b"-0"):
            await trio.sleep_forever()  # the first message hangs the listener: cut at 10 s

    queue = cluster.queues()[0]
    async with make_consumer(listener=listener, consume_timeout=10.0) as consumer:
        cluster.put(queue, 1)
        await cluster.wait_until(lambda: not consumer.health().ok)
        # First seen while the call runs past its time (the concurrent workers cut it up to 1 s late).
        (reason,) = consumer.health().reasons
        assert reason.startswith(f"a listener call on {queue.broker_name}/{queue.topic}/0 has run ")
        assert reason.endswith("s past its time (consume_timeout 10 s)")
        await cluster.wait_until(lambda: any(q.timed_out_ago is not None for q in consumer.health().queues))
        health = consumer.health()
        (reason,) = health.reasons
        assert reason.startswith(f"the last listener call on {queue.broker_name}/{queue.topic}/0 was cut")
        assert "(consume_timeout 10 s)" in reason
        (cut,) = [q for q in health.queues if q.timed_out_ago is not None]
        assert cut.queue == queue
        cluster.put(queue, 1)  # the next message's call ends by itself
        await cluster.wait_until(lambda: consumer.health().ok)


async def test_no_pull_answer_on_any_queue_for_the_idle_limit_fails_it(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    async with make_consumer(pull_max_idle_time=120.0) as consumer:
        await cluster.wait_until(lambda: len(consumer.health().queues) == 6)
        for fb in cluster.brokers:
            fb.never_reply(RequestCode.PULL_MESSAGE)
        await trio.sleep(100)
        assert consumer.health().ok  # pulls unanswered for less than the limit
        await trio.sleep(60)
        health = consumer.health()
        assert health.reasons == ("no owned queue got a pull answer for 120 s",)
        assert all(q.last_answer_age > 120 for q in health.queues)


async def test_a_silent_namesrv_is_a_warning_then_fails_it_after_three_polls(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    async with make_consumer(poll_namesrv_interval=10.0) as consumer:
        await cluster.wait_until(lambda: consumer.health().namesrv is not None)
        cluster.namesrv.drop_on(RequestCode.GET_ROUTEINFO_BY_TOPIC)
        await cluster.wait_until(lambda: bool(consumer.health().warnings))
        health = consumer.health()
        assert health.ok
        assert health.warnings[0].startswith("the last route request got no NameServer answer")
        await cluster.wait_until(lambda: not consumer.health().ok, timeout=200)
        (reason,) = consumer.health().reasons
        assert reason.startswith("no NameServer answered a route request for ")
        assert consumer.health().namesrv_age is not None
        assert consumer.health().namesrv_age > 30  # type: ignore[operator]


async def test_brokers_that_refuse_heartbeats_fail_it(
    cluster: Cluster, make_consumer: MakeConsumer, autojump_clock: trio.testing.MockClock
) -> None:
    from rocketmq_py.protocol import ResponseCode

    async with make_consumer() as consumer:
        await cluster.wait_until(lambda: all(b.reachable for b in consumer.health().brokers))
        cluster.a.on_reply(RequestCode.HEART_BEAT, ResponseCode.SYSTEM_ERROR, remark="down for maintenance")
        await cluster.wait_until(lambda: bool(consumer.health().warnings))
        health = consumer.health()
        assert health.ok  # broker-b still answers
        (warning,) = health.warnings
        assert warning.startswith(
            f"{cluster.a.broker_name} ({cluster.a.address}, id 0) did not accept its last heartbeat"
        )
        assert "down for maintenance" in warning
        cluster.b.on_reply(RequestCode.HEART_BEAT, ResponseCode.SYSTEM_ERROR, remark="also down")
        await cluster.wait_until(lambda: not consumer.health().ok)
        (reason,) = consumer.health().reasons
        assert reason.startswith("no master broker accepted its last heartbeat")


async def test_a_lite_pull_consumer_reports_its_assigned_queues(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    consumer = LitePullConsumer(cluster.group, namesrv=cluster.namesrv.address)
    assert not consumer.health().ok
    consumer.assign(cluster.queues()[:2])
    async with consumer:
        await consumer.poll(timeout=1)
        health = consumer.health()
        assert health.ok, health
        assert [q.queue for q in health.queues] == cluster.queues()[:2]
