"""Sends while one of two brokers is paused or unreachable (issue 11 defect 11): with fault tolerance
on, a send must not spend its deadline on a silent broker when the other broker can take it.

The load is the issue's: 200 sends/s, at most 64 in flight. A *paused* broker (SIGSTOP) reads
nothing and answers nothing until it resumes, then stores and answers everything it received: here
a fake broker whose send handler waits for the resume, then stores. An *unreachable* broker's
connects hang: a listener whose accept queue is full, so the kernel drops further SYNs.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from rocketmq_py.errors import RequestTimeout, RocketMQError, SystemBusy
from rocketmq_py.producer._producer import Producer
from rocketmq_py.protocol import (
    BrokerData,
    MessageQueue,
    QueueData,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    TopicRouteData,
)
from rocketmq_py.testing._fake_broker import FakeBroker

if TYPE_CHECKING:
    from conftest import Cluster

MakeProducer = Callable[..., Producer]
SEND = RequestCode.SEND_MESSAGE_V2
RATE = 200.0
IN_FLIGHT = 64


@dataclass
class Load:
    """What a steady load saw: sends started, acknowledged, failed (with their errors)."""

    started: int = 0
    acked: int = 0
    failed: list[RocketMQError] = field(default_factory=list)
    in_flight: int = 0


async def steady_load(producer: Producer, cluster: Cluster, seconds: float, load: Load) -> None:
    """``RATE`` sends a second, at most ``IN_FLIGHT`` at once, for ``seconds``."""
    slots = trio.Semaphore(IN_FLIGHT)

    async def one() -> None:
        try:
            await producer.send(cluster.message())
        except RocketMQError as exc:
            load.failed.append(exc)
        else:
            load.acked += 1
        finally:
            load.in_flight -= 1
            slots.release()

    async with trio.open_nursery() as nursery:
        end = trio.current_time() + seconds
        next_at = trio.current_time()
        while next_at < end:
            await slots.acquire()
            load.started += 1
            load.in_flight += 1
            nursery.start_soon(one)
            next_at += 1 / RATE
            await trio.sleep_until(next_at)


def pause(fb: FakeBroker, resumed: trio.Event) -> None:
    """Make ``fb`` answer sends only once ``resumed`` is set (then store them, as a resumed broker does).

    Shielded: a real paused broker still reads and stores the requests in its socket buffer after
    SIGCONT, even when the client closed the connection meanwhile (close-on-timeout).
    """
    store = fb._messages.send_message

    async def paused(request: RemotingCommand) -> RemotingCommand | None:
        with trio.CancelScope(shield=True):
            await resumed.wait()
            return await store(request)

    fb.on(SEND, paused)


def stored(cluster: Cluster) -> int:
    return sum(len(fb.messages(cluster.topic, q)) for fb in cluster.brokers for q in (0, 1))


@pytest.fixture
def black_hole() -> Iterator[str]:
    """``host:port`` of a listener that never completes another connect (its accept queue is full)."""
    with socket.socket() as listener, socket.socket() as filler:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        filler.connect(listener.getsockname())  # fills the queue; later SYNs are dropped
        host, port = listener.getsockname()
        yield f"{host}:{port}"


@pytest.fixture
def with_unreachable(cluster: Cluster, black_hole: str) -> Cluster:
    """``cluster`` whose route names broker-a at the black hole (and broker-b as it is)."""
    route = TopicRouteData(
        queue_datas=tuple(
            QueueData(broker_name=name, read_queue_nums=2, write_queue_nums=2, perm=6)
            for name in ("broker-a", "broker-b")
        ),
        broker_datas=(
            BrokerData(cluster="DefaultCluster", broker_name="broker-a", broker_addrs={0: black_hole}),
            BrokerData(cluster="DefaultCluster", broker_name="broker-b", broker_addrs={0: cluster.b.address}),
        ),
    )
    cluster.namesrv.set_route(cluster.topic, route)
    return cluster


async def test_a_paused_broker_fails_no_send(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    resumed = trio.Event()
    load = Load()
    async with make_producer() as producer:
        await producer.send(cluster.message())  # route and connections
        async with trio.open_nursery() as nursery:
            nursery.start_soon(steady_load, producer, cluster, 15.0, load)
            await trio.sleep(2.0)
            in_flight_at_pause = load.in_flight
            pause(cluster.b, resumed)
            await trio.sleep(10.0)
            resumed.set()
        await trio.sleep(1.0)  # the resumed broker's late answers
    assert load.started == 15 * RATE
    assert load.failed == []
    assert load.acked == load.started
    # Duplicates: the attempts abandoned on the paused broker that it stored once resumed; at most
    # the sends in flight when it stopped and those that picked it before its first timeout.
    duplicates = stored(cluster) - 1 - load.acked
    assert 0 < duplicates <= in_flight_at_pause + IN_FLIGHT


async def test_an_unreachable_broker_fails_no_send(
    with_unreachable: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    cluster = with_unreachable
    load = Load()
    async with make_producer() as producer:
        await steady_load(producer, cluster, 16.0, load)
        stats = producer.statistics()
    assert load.failed == []
    assert load.acked == load.started == 16 * RATE
    assert stored(cluster) == load.acked  # nothing reached the black hole
    # Each 10-s isolation of broker-a ends with one more round of attempts cut at the attempt timeout.
    assert stats.retries <= 2 * IN_FLIGHT


async def test_a_connect_that_hangs_costs_one_attempt_timeout(
    with_unreachable: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    cluster = with_unreachable
    async with make_producer(send_timeout=3.0, attempt_timeout=1.0) as producer:
        for _ in range(4):  # four queues round-robin: a send's first attempt meets broker-a
            start = trio.current_time()
            result = await producer.send(cluster.message())
            if producer.statistics().retries:
                break
        elapsed = trio.current_time() - start
        stats = producer.statistics()
    assert result.queue.broker_name == "broker-b"
    assert stats.retries == 1
    assert elapsed == pytest.approx(1.0, abs=0.01)  # not the 3-s connect timeout


async def test_a_failed_send_names_every_attempt(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    for fb in cluster.brokers:
        fb.never_reply(SEND)
    async with make_producer(send_timeout=3.0, attempt_timeout=1.0) as producer:
        with pytest.raises(RequestTimeout) as caught:
            await producer.send(cluster.message())
    text = str(caught.value)
    assert "did not finish within 3 s" in text
    for number in (1, 2, 3):
        assert f"attempt {number} to broker-" in text
    assert text.count("no response to SEND_MESSAGE_V2") == 3
    names = [part.split(":")[0].rsplit(" ", 1)[1] for part in text.split("; ")[1:]]
    assert names[0] != names[1]  # alternating brokers
    assert names[1] != names[2]


async def test_exhausted_retries_name_every_attempt_in_a_note(
    cluster: Cluster, make_producer: MakeProducer
) -> None:
    for fb in cluster.brokers:
        fb.on_reply(SEND, ResponseCode.SYSTEM_BUSY, remark="busy")
    async with make_producer() as producer:
        with pytest.raises(SystemBusy) as caught:
            await producer.send(cluster.message())
    (note,) = caught.value.__notes__
    assert note.count("attempt ") == 3
    assert "attempt 3 to broker-" in note


async def test_the_last_attempt_may_use_the_rest_of_the_deadline(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    # As Java's sendDefaultImpl: only an attempt that can still be retried is cut at the attempt
    # timeout; the last one may take what is left.
    for fb in cluster.brokers:
        fb.delay(SEND, 2.0)
    async with make_producer(send_timeout=10.0, attempt_timeout=1.0, retry_times=1) as producer:
        start = trio.current_time()
        result = await producer.send(cluster.message())
        elapsed = trio.current_time() - start
    assert elapsed == pytest.approx(3.0)  # 1 s cut on one broker, 2 s on the other
    assert result.queue_offset in (0, 1)


async def test_a_single_queue_send_to_a_hung_connect_uses_the_whole_budget(
    with_unreachable: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    cluster = with_unreachable
    queue = MessageQueue(cluster.topic, "broker-a", 0)
    async with make_producer(send_timeout=2.0) as producer:
        start = trio.current_time()
        with pytest.raises(RequestTimeout, match="attempt 1 to broker-a: broker-a: connecting to"):
            await producer.send(cluster.message(), queue=queue)
        assert trio.current_time() - start == pytest.approx(2.0, abs=0.01)


async def test_a_broker_back_in_the_route_takes_the_sends_of_a_paused_one(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    # The chaos run of issue 11: broker-a was killed and restarted (the NameServer dropped it from
    # the route, so our cached route names broker-b only), then broker-b paused. The route poll
    # (30 s) would tell us broker-a is back far too late: a send that finds no healthy broker in
    # its route asks the NameServer again at once.
    cluster.namesrv.set_route(cluster.topic, cluster.route(cluster.b))
    resumed = trio.Event()
    load = Load()
    async with make_producer() as producer:
        await producer.send(cluster.message())  # caches the route without broker-a
        cluster.namesrv.set_route(cluster.topic, cluster.route(cluster.a, cluster.b))  # broker-a is back
        pause(cluster.b, resumed)
        await steady_load(producer, cluster, 10.0, load)
        resumed.set()
    assert load.started == 10 * RATE
    assert len(load.failed) <= 0.01 * load.started, load.failed[:1]
    assert len(cluster.route_queries()) <= 1 + 10  # at most one extra query a second


async def test_an_ordered_send_finds_the_master_elected_after_a_kill(
    cluster: Cluster,
    make_producer: MakeProducer,
    refused_address: str,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Controller mode (issue 26 §2): the master of ``broker-a`` is killed and the controller elects a
    slave, which registers under ``brokerId`` 0 from its own address (Java
    ``ReplicasManager.changeToMaster`` sets the broker id to ``MixAll.MASTER_ID`` and registers with
    every NameServer). The group keeps its name, so a send with a selector, which makes one attempt
    (Java ``DefaultMQProducerImpl.sendSelectImpl``, no retry and no route refresh), chose the same
    queue of the dead address until the next route poll, 30 s later: every keyed send failed for up
    to 30 s after the election (the chaos ``controller`` phase: sends resumed 13.1 s after the kill).
    A send refused at the transport now asks the NameServer again (at most once a second)."""

    def route(master: str) -> TopicRouteData:
        return TopicRouteData(
            queue_datas=(QueueData(broker_name="broker-a", read_queue_nums=2, write_queue_nums=2, perm=6),),
            broker_datas=(
                BrokerData(cluster="DefaultCluster", broker_name="broker-a", broker_addrs={0: master}),
            ),
        )

    def first_queue(queues: Sequence[MessageQueue], message: object, arg: object) -> MessageQueue:
        return queues[0]

    cluster.namesrv.set_route(cluster.topic, route(refused_address))  # the killed master
    async with make_producer() as producer:
        with pytest.raises(RocketMQError):
            await producer.send(cluster.message(), selector=first_queue)
        cluster.namesrv.set_route(cluster.topic, route(cluster.a.address))  # the elected one
        failures = 0
        for _ in range(50):  # 5 s, one send each 0.1 s
            try:
                await producer.send(cluster.message(), selector=first_queue)
            except RocketMQError:
                failures += 1
            await trio.sleep(0.1)
    assert failures <= 10  # a route query a second at most: the first recheck answers the new master
    assert len(cluster.sends(cluster.a)) == 50 - failures
    assert len(cluster.route_queries()) <= 2 + 6
