"""Latency fault tolerance and queue selection, Java 5.x MQFaultStrategy (pure, protocol.md §7.3)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from rocketmq_py._client._route import TopicPublishInfo
from rocketmq_py.errors import RouteNotFound
from rocketmq_py.producer._fault import (
    ISOLATION_LATENCY_MS,
    LATENCY_MAX_MS,
    NOT_AVAILABLE_DURATION_MS,
    SEND_LATENCY_FAULT_ENABLE,
    FaultItem,
    LatencyFaultTolerance,
    QueueSelector,
    bench_ms,
)
from rocketmq_py.protocol import MessageQueue


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance_ms(self, ms: float) -> None:
        self.now += ms / 1000


def info_of(*brokers: str, per_broker: int = 2) -> TopicPublishInfo:
    return TopicPublishInfo("T", tuple(MessageQueue("T", b, i) for b in brokers for i in range(per_broker)))


# --- the latency table ---------------------------------------------------------------------------


def test_java_5x_tables() -> None:
    assert LATENCY_MAX_MS == (50, 100, 550, 1800, 3000, 5000, 15000)
    assert NOT_AVAILABLE_DURATION_MS == (0, 0, 2000, 5000, 6000, 10000, 30000)
    assert ISOLATION_LATENCY_MS == 10000
    assert SEND_LATENCY_FAULT_ENABLE is False


@pytest.mark.parametrize(
    ("latency", "duration"),
    [
        (0, 0),
        (49, 0),
        (50, 0),
        (549, 0),
        (550, 2000),
        (1799, 2000),
        (1800, 5000),
        (2999, 5000),
        (3000, 6000),
        (4999, 6000),
        (5000, 10000),
        (ISOLATION_LATENCY_MS, 10000),
        (14999, 10000),
        (15000, 30000),
        (10**9, 30000),
    ],
)
def test_bench_boundaries(latency: int, duration: int) -> None:
    assert bench_ms(latency) == duration
    assert LatencyFaultTolerance().bench_ms(latency) == duration


def test_custom_tables() -> None:
    assert bench_ms(10, (5, 20), (100, 200)) == 100
    assert bench_ms(1, (5, 20), (100, 200)) == 0
    fault = LatencyFaultTolerance(latency_max_ms=(5,), not_available_ms=(100,))
    assert fault.bench_ms(5) == 100
    with pytest.raises(ValueError, match="same length"):
        LatencyFaultTolerance(latency_max_ms=(1, 2), not_available_ms=(1,))


# --- availability --------------------------------------------------------------------------------


def test_unknown_broker_is_available_and_reachable() -> None:
    fault = LatencyFaultTolerance(clock=FakeClock())
    assert fault.is_available("b")
    assert fault.is_reachable("b")
    assert fault.snapshot() == {}
    assert fault.pick_one_at_least() is None


def test_fast_send_keeps_broker_available() -> None:
    clock = FakeClock()
    fault = LatencyFaultTolerance(clock=clock)
    fault.update("b", 30, isolation=False)
    assert fault.is_available("b")
    assert fault.snapshot() == {"b": FaultItem("b", 30, 1000.0, True)}


def test_slow_send_benches_broker_for_its_duration() -> None:
    clock = FakeClock()
    fault = LatencyFaultTolerance(clock=clock)
    fault.update("b", 600, isolation=False)  # 2 s
    assert not fault.is_available("b")
    assert fault.is_reachable("b")
    clock.advance_ms(1999)
    assert not fault.is_available("b")
    clock.advance_ms(1)
    assert fault.is_available("b")


def test_isolation_benches_for_ten_seconds_whatever_the_latency() -> None:
    clock = FakeClock()
    fault = LatencyFaultTolerance(clock=clock)
    fault.update("b", 3, isolation=True, reachable=False)
    assert not fault.is_available("b")
    assert not fault.is_reachable("b")
    assert fault.unreachable() == ("b",)
    clock.advance_ms(9999)
    assert not fault.is_available("b")
    clock.advance_ms(1)
    assert fault.is_available("b")
    assert not fault.is_reachable("b")  # the flag changes only with the next update or probe
    fault.mark_reachable("b")
    assert fault.is_reachable("b")
    assert fault.unreachable() == ()
    fault.mark_reachable("unknown")  # ignored
    assert "unknown" not in fault.snapshot()


def test_bench_is_only_extended_never_shortened() -> None:
    clock = FakeClock()
    fault = LatencyFaultTolerance(clock=clock)
    fault.update("b", 0, isolation=True)  # until now + 10 s
    clock.advance_ms(1000)
    fault.update("b", 600, isolation=False)  # would be now + 2 s: shorter, ignored
    fault.update("b", 10, isolation=False)  # duration 0: ignored
    item = fault.snapshot()["b"]
    assert item.available_at == pytest.approx(1010.0)
    assert item.latency_ms == 10
    assert item.reachable
    clock.advance_ms(8999)
    assert not fault.is_available("b")
    fault.update("b", 20000, isolation=False)  # now + 30 s: longer, taken
    clock.advance_ms(29999)
    assert not fault.is_available("b")
    clock.advance_ms(1)
    assert fault.is_available("b")


def test_remove_forgets_a_broker() -> None:
    clock = FakeClock()
    fault = LatencyFaultTolerance(clock=clock)
    fault.update("b", 0, isolation=True, reachable=False)
    fault.remove("b")
    fault.remove("never-seen")
    assert fault.is_available("b")
    assert fault.is_reachable("b")


def test_pick_one_at_least_picks_a_reachable_broker() -> None:
    fault = LatencyFaultTolerance(clock=FakeClock(), rng=random.Random(7))
    fault.update("down", 0, isolation=True, reachable=False)
    assert fault.pick_one_at_least() is None
    fault.update("slow-1", 20000, isolation=False)
    fault.update("slow-2", 20000, isolation=False)
    picks = {fault.pick_one_at_least() for _ in range(50)}
    assert picks == {"slow-1", "slow-2"}


# --- selection -----------------------------------------------------------------------------------


def test_empty_publish_info_raises_route_not_found() -> None:
    selector = QueueSelector(random.Random(1))
    for fault in (None, LatencyFaultTolerance(clock=FakeClock())):
        with pytest.raises(RouteNotFound, match="no writable queue") as caught:
            selector.select(TopicPublishInfo("T"), None, fault)
        assert caught.value.topic == "T"
        assert caught.value.namesrv_addrs == ()


@pytest.mark.parametrize("with_fault", [False, True])
def test_selection_is_round_robin(with_fault: bool) -> None:
    info = info_of("a", "b", "c")  # six queues
    selector = QueueSelector(random.Random(3))
    fault = LatencyFaultTolerance(clock=FakeClock()) if with_fault else None
    picks = [selector.select(info, None, fault) for _ in range(60)]
    assert Counter(picks) == dict.fromkeys(info.queues, 10)
    # consecutive picks walk the list in order
    start = info.queues.index(picks[0])
    assert picks[:6] == [info.queues[(start + i) % 6] for i in range(6)]


def test_randomness_is_injectable_and_deterministic() -> None:
    info = info_of("a", "b", "c", per_broker=4)
    first = [QueueSelector(random.Random(42)).select(info, None, None) for _ in range(3)]
    again = [QueueSelector(random.Random(42)).select(info, None, None) for _ in range(3)]
    assert first == again
    starts = {QueueSelector(random.Random(seed)).select(info, None, None) for seed in range(200)}
    assert starts == set(info.queues)  # the start index is random


def test_index_wraps_like_java_int32() -> None:
    info = info_of("a", per_broker=3)
    selector = QueueSelector(random.Random(0))
    selector._index = (1 << 31) - 2  # Integer.MAX_VALUE - 1
    picks = [selector.select(info, None, None).queue_id for _ in range(3)]
    # MAX_VALUE % 3 == 1; then MIN_VALUE & 0x7fffffff == 0, then 1
    assert picks == [1, 0, 1]


def test_without_fault_the_last_broker_is_avoided() -> None:
    info = info_of("a", "b")
    selector = QueueSelector(random.Random(5))
    for _ in range(20):
        assert selector.select(info, "a", None).broker_name == "b"


def test_without_fault_a_single_broker_is_reused() -> None:
    info = info_of("a")
    selector = QueueSelector(random.Random(5))
    assert selector.select(info, "a", None).broker_name == "a"


def test_without_fault_reset_index_is_ignored() -> None:
    info = info_of("a", "b", "c")
    one, two = QueueSelector(random.Random(9)), QueueSelector(random.Random(9))
    assert [one.select(info, None, None, reset_index=True) for _ in range(6)] == [
        two.select(info, None, None) for _ in range(6)
    ]


def test_with_fault_unavailable_and_last_broker_are_skipped() -> None:
    clock = FakeClock()
    fault = LatencyFaultTolerance(clock=clock)
    fault.update("a", 600, isolation=False)  # benched 2 s, still reachable
    info = info_of("a", "b", "c")
    selector = QueueSelector(random.Random(11))
    for _ in range(30):
        assert selector.select(info, "b", fault).broker_name == "c"
    clock.advance_ms(2000)
    assert {selector.select(info, "b", fault).broker_name for _ in range(30)} == {"a", "c"}


def test_with_fault_falls_back_to_reachable() -> None:
    clock = FakeClock()
    fault = LatencyFaultTolerance(clock=clock)
    fault.update("a", 20000, isolation=False)  # benched but reachable
    fault.update("b", 0, isolation=True, reachable=False)  # benched and unreachable
    info = info_of("a", "b")
    selector = QueueSelector(random.Random(13))
    for _ in range(20):
        assert selector.select(info, None, fault).broker_name == "a"
    # the last broker is still avoided at this stage: nothing passes, so "any next queue"
    assert {selector.select(info, "a", fault).broker_name for _ in range(20)} == {"a", "b"}


def test_with_fault_falls_back_to_any_queue_round_robin() -> None:
    fault = LatencyFaultTolerance(clock=FakeClock())
    for broker in ("a", "b"):
        fault.update(broker, 0, isolation=True, reachable=False)
    info = info_of("a", "b")
    selector = QueueSelector(random.Random(17))
    picks = [selector.select(info, None, fault) for _ in range(40)]
    assert Counter(picks) == dict.fromkeys(info.queues, 10)


def test_with_fault_reset_index_rerandomises() -> None:
    info = info_of("a", "b", "c", per_broker=5)
    fault = LatencyFaultTolerance(clock=FakeClock())
    rng = random.Random(21)
    selector = QueueSelector(rng)
    selector.select(info, None, fault)
    expected_rng = random.Random(21)
    expected_rng.randrange(-(1 << 31), 1 << 31)  # the start index
    expected_index = expected_rng.randrange(0x7FFFFFFF) + 1
    picked = selector.select(info, None, fault, reset_index=True)
    assert picked == info.queues[expected_index % len(info.queues)]
