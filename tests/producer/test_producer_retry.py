"""The send retry loop: retriable codes and transport errors retry on the other broker, others raise
at once, exhausted retries raise the last error, and one deadline covers the route lookup and
every attempt."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from rocketmq_py.errors import (
    BrokerError,
    ConnectionFailed,
    MessageIllegal,
    RequestTimeout,
    ServiceNotAvailable,
    SystemBusy,
    broker_error_class,
)
from rocketmq_py.producer._fault import FaultConfig
from rocketmq_py.producer._producer import Producer
from rocketmq_py.producer._types import SendResult
from rocketmq_py.protocol import MessageQueue, RemotingCommand, RequestCode, ResponseCode
from rocketmq_py.testing._fake_broker import FakeBroker

if TYPE_CHECKING:
    from conftest import Cluster

MakeProducer = Callable[..., Producer]
SEND = RequestCode.SEND_MESSAGE_V2


async def send_until_tried(producer: Producer, cluster: Cluster, fb: FakeBroker) -> SendResult:
    """Send messages until one's first attempt went to ``fb`` (the start queue is random)."""
    for _ in range(4):  # four queues, round-robin: a broker's queue comes up within three sends
        before = len(cluster.sends(fb))
        result = await producer.send(cluster.message())
        if len(cluster.sends(fb)) > before:
            return result
    pytest.fail(f"{fb.broker_name} was never tried")


@pytest.mark.parametrize(
    "code",
    [
        ResponseCode.SYSTEM_ERROR,
        ResponseCode.SYSTEM_BUSY,
        ResponseCode.SERVICE_NOT_AVAILABLE,
        ResponseCode.NO_PERMISSION,
        ResponseCode.TOPIC_NOT_EXIST,  # e.g. a broker that lost the topic
    ],
)
async def test_retriable_code_retries_on_the_other_broker(
    cluster: Cluster, make_producer: MakeProducer, code: int
) -> None:
    assert broker_error_class(code).retriable
    cluster.a.on_reply(SEND, code, remark="try elsewhere")
    async with make_producer() as producer:
        result = await send_until_tried(producer, cluster, cluster.a)
        stats = producer.statistics()

    assert result.queue.broker_name == "broker-b"
    refused = cluster.sends(cluster.a)[-1]
    stored = cluster.b.messages(cluster.topic, result.queue.queue_id)[-1]
    # The same message (same UNIQ_KEY) was retried.
    assert cluster.uniq_key(refused) == result.msg_id == stored.uniq_key
    assert stats.retries == 1
    assert stats.failed == 0
    assert stats.attempts == stats.sent + 1
    if broker_error_class(code).refresh_route:
        # The stale route was dropped and fetched again before the retry.
        assert cluster.route_queries() == [cluster.topic, cluster.topic]
    else:
        assert cluster.route_queries() == [cluster.topic]


async def test_non_retriable_code_raises_at_once(cluster: Cluster, make_producer: MakeProducer) -> None:
    for fb in cluster.brokers:
        fb.on_reply(SEND, ResponseCode.MESSAGE_ILLEGAL, remark="the message is illegal")
    async with make_producer() as producer:
        with pytest.raises(MessageIllegal) as caught:
            await producer.send(cluster.message())
        stats = producer.statistics()
    assert isinstance(caught.value, BrokerError)
    assert caught.value.code == 13
    assert caught.value.remark == "the message is illegal"
    assert not caught.value.retriable
    assert len(cluster.sends(cluster.a)) + len(cluster.sends(cluster.b)) == 1
    assert (stats.attempts, stats.retries, stats.failed, stats.sent) == (1, 0, 1, 0)


async def test_dropped_connection_retries_on_the_other_broker(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    cluster.a.drop_on(SEND)
    async with make_producer() as producer:
        start = trio.current_time()
        result = await send_until_tried(producer, cluster, cluster.a)
        elapsed = trio.current_time() - start
        stats = producer.statistics()
    assert result.queue.broker_name == "broker-b"
    assert cluster.uniq_key(cluster.sends(cluster.a)[-1]) == result.msg_id
    assert stats.retries == 1
    assert elapsed == 0  # a drop is noticed at once, no timeout involved


async def test_connection_refused_retries_on_the_other_broker(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    async with FakeBroker(broker_name="broker-c") as gone:
        pass  # its port now refuses connections
    cluster.namesrv.set_route(cluster.topic, cluster.route(gone, cluster.b))
    async with make_producer() as producer:
        results = [await producer.send(cluster.message()) for _ in range(4)]
        stats = producer.statistics()
    assert {r.queue.broker_name for r in results} == {"broker-b"}
    assert stats.retries >= 1
    assert stats.failed == 0


async def test_exhausted_retries_raise_the_last_error(cluster: Cluster, make_producer: MakeProducer) -> None:
    counter = itertools.count(1)

    async def busy(request: RemotingCommand) -> RemotingCommand | None:
        raise SystemBusy(ResponseCode.SYSTEM_BUSY, f"busy #{next(counter)}")

    for fb in cluster.brokers:
        fb.on(SEND, busy)
    async with make_producer() as producer:
        with pytest.raises(SystemBusy) as caught:
            await producer.send(cluster.message())
        stats = producer.statistics()
    assert caught.value.code == ResponseCode.SYSTEM_BUSY
    assert caught.value.remark == "busy #3"  # the third (last) attempt's error
    sent = cluster.sends(cluster.a) + cluster.sends(cluster.b)
    assert len(sent) == 3  # 1 + retry_times (2)
    assert len({cluster.uniq_key(cmd) for cmd in sent}) == 1
    # The first two attempts went to different brokers (the broker of the last attempt is avoided).
    assert len(cluster.sends(cluster.a)) in (1, 2)
    assert (stats.attempts, stats.retries, stats.failed) == (3, 2, 1)


@pytest.mark.parametrize("retry_times", [0, 1, 4])
async def test_retry_times_bounds_the_attempts(
    cluster: Cluster, make_producer: MakeProducer, retry_times: int
) -> None:
    for fb in cluster.brokers:
        fb.on_reply(SEND, ResponseCode.SYSTEM_BUSY, remark="busy")
    async with make_producer(retry_times=retry_times, fault=FaultConfig(enabled=False)) as producer:
        with pytest.raises(SystemBusy):
            await producer.send(cluster.message())
    sent_a, sent_b = len(cluster.sends(cluster.a)), len(cluster.sends(cluster.b))
    assert sent_a + sent_b == 1 + retry_times
    assert abs(sent_a - sent_b) <= 1  # attempts alternate between the brokers


async def test_service_not_available_everywhere_raises_it(
    cluster: Cluster, make_producer: MakeProducer
) -> None:
    for fb in cluster.brokers:
        fb.on_reply(SEND, ResponseCode.SERVICE_NOT_AVAILABLE, remark="not now")
    async with make_producer() as producer:
        with pytest.raises(ServiceNotAvailable, match="not now"):
            await producer.send(cluster.message())


async def test_transport_errors_everywhere_raise_the_last_one(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    for fb in cluster.brokers:
        fb.drop_on(SEND)
    async with make_producer() as producer:
        with pytest.raises(ConnectionFailed):
            await producer.send(cluster.message())
    assert len(cluster.sends(cluster.a)) + len(cluster.sends(cluster.b)) == 3


# --- one deadline --------------------------------------------------------------------------------


async def test_brokers_that_never_reply_time_out_after_send_timeout(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    for fb in cluster.brokers:
        fb.never_reply(SEND)
    async with make_producer(send_timeout=3.0, retry_times=2) as producer:
        start = trio.current_time()
        with pytest.raises(RequestTimeout, match=cluster.topic):
            await producer.send(cluster.message())
        elapsed = trio.current_time() - start
        stats = producer.statistics()
    assert elapsed == pytest.approx(3.0)  # the whole send, not (retries + 1) * timeout
    assert stats.failed == 1
    assert stats.sent == 0


async def test_more_retries_do_not_stretch_the_deadline(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    for fb in cluster.brokers:
        fb.never_reply(SEND)
    async with make_producer(send_timeout=2.5, retry_times=10) as producer:
        start = trio.current_time()
        with pytest.raises(RequestTimeout):
            await producer.send(cluster.message())
        assert trio.current_time() - start == pytest.approx(2.5)


async def test_the_timeout_argument_overrides_send_timeout(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    for fb in cluster.brokers:
        fb.never_reply(SEND)
    async with make_producer(send_timeout=3.0) as producer:
        start = trio.current_time()
        with pytest.raises(RequestTimeout, match=r"0\.5 s"):
            await producer.send(cluster.message(), timeout=0.5)
        assert trio.current_time() - start == pytest.approx(0.5)


async def test_route_lookup_counts_against_the_deadline(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    cluster.namesrv.delay(RequestCode.GET_ROUTEINFO_BY_TOPIC, 2.0)
    for fb in cluster.brokers:
        fb.never_reply(SEND)
    async with make_producer(send_timeout=3.0) as producer:
        start = trio.current_time()
        with pytest.raises(RequestTimeout):
            await producer.send(cluster.message())
        assert trio.current_time() - start == pytest.approx(3.0)
    assert cluster.route_queries() == [cluster.topic]
    assert len(cluster.sends(cluster.a)) + len(cluster.sends(cluster.b)) >= 1


async def test_silent_namesrv_times_out_after_send_timeout(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    cluster.namesrv.never_reply(RequestCode.GET_ROUTEINFO_BY_TOPIC)
    async with make_producer(send_timeout=1.0) as producer:  # shorter than request_timeout (3 s)
        start = trio.current_time()
        with pytest.raises(RequestTimeout):
            await producer.send(cluster.message())
        assert trio.current_time() - start == pytest.approx(1.0)
        start = trio.current_time()
        with pytest.raises(RequestTimeout):
            await producer.send_oneway(cluster.message())
        assert trio.current_time() - start == pytest.approx(1.0)
    assert cluster.sends(cluster.a) == cluster.sends(cluster.b) == []


async def test_slow_but_successful_send_within_the_deadline(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    for fb in cluster.brokers:
        fb.delay(SEND, 0.8)
    async with make_producer(send_timeout=3.0) as producer:
        start = trio.current_time()
        result = await producer.send(cluster.message())
        assert trio.current_time() - start == pytest.approx(0.8)
    assert result.queue_offset == 0


async def test_a_hung_broker_is_abandoned_after_the_attempt_timeout(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    cluster.a.never_reply(SEND)
    async with make_producer(send_timeout=3.0, attempt_timeout=1.0) as producer:
        start = trio.current_time()
        result = await send_until_tried(producer, cluster, cluster.a)
        elapsed = trio.current_time() - start
        item = producer.statistics().fault["broker-a"]
    assert result.queue.broker_name == "broker-b"
    assert elapsed == pytest.approx(1.0)  # one abandoned attempt, then broker-b at once
    assert item.latency_ms == pytest.approx(1000.0)
    assert item.reachable


async def test_without_an_attempt_timeout_a_hung_broker_uses_the_whole_budget(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    cluster.a.never_reply(SEND)
    queue = MessageQueue(cluster.topic, "broker-a", 0)
    async with make_producer(send_timeout=3.0, attempt_timeout=None) as producer:
        start = trio.current_time()
        with pytest.raises(RequestTimeout):
            await producer.send(cluster.message(), queue=queue)
        assert trio.current_time() - start == pytest.approx(3.0)
        # As in Java, the attempt took the whole budget, leaving none for a retry; unlike Java's
        # timeout path, it still counts as a failure of broker-a: benched, the next sends avoid it.
        for _ in range(4):
            result = await producer.send(cluster.message())
            assert result.queue.broker_name == "broker-b"
    assert len(cluster.sends(cluster.a)) == 1


async def test_a_single_attempt_send_is_not_cut_by_the_attempt_timeout(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    cluster.a.delay(SEND, 2.0)
    queue = MessageQueue(cluster.topic, "broker-a", 0)
    async with make_producer(send_timeout=3.0, attempt_timeout=1.0) as producer:
        start = trio.current_time()
        result = await producer.send(cluster.message(), queue=queue)
        assert trio.current_time() - start == pytest.approx(2.0)
    assert result.queue == queue
