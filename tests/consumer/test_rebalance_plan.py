"""The rebalance plan (pure): what is revoked, rebuilt and started for one topic."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py.consumer._rebalance import plan_rebalance
from rocketmq_py.protocol import MessageQueue

T = "TopicTest"
MAX_IDLE = 120.0


@dataclass
class Owned:
    revoking: bool = False
    handing_off: bool = False
    last_pull_time: float = 0.0


def q(n: int, topic: str = T) -> MessageQueue:
    return MessageQueue(topic, f"broker-{'ab'[n % 2]}", n // 2)


def test_the_java_cases() -> None:
    owned = {
        q(0): Owned(last_pull_time=95),  # still allocated, pulled recently: kept
        q(1): Owned(last_pull_time=100),  # no longer allocated: revoked
        q(2): Owned(last_pull_time=-30),  # allocated, idle 130 s: rebuilt
        q(3): Owned(last_pull_time=-30, handing_off=True),  # waiting for workers: alive
        q(4): Owned(revoking=True),  # leaving already: left alone
        q(0, "other"): Owned(),  # another topic: ignored
    }
    plan = plan_rebalance(T, owned, {q(0), q(2), q(3), q(4), q(5)}, now=100, max_idle=MAX_IDLE)
    assert plan.revoke == [q(1)]
    assert plan.rebuild == [q(2)]
    assert plan.start == [q(5)]  # q(4) is not started again before it is gone
    assert plan.changed


def test_nothing_changes_when_the_allocation_is_what_is_owned() -> None:
    owned = {q(n): Owned(last_pull_time=90) for n in range(4)}
    plan = plan_rebalance(T, owned, set(owned), now=100, max_idle=MAX_IDLE)
    assert not plan.changed


queues = st.sets(st.integers(0, 15)).map(lambda ns: {q(n) for n in ns})


@given(
    owned=st.dictionaries(
        st.integers(0, 15).map(q),
        st.builds(Owned, st.booleans(), st.booleans(), st.floats(-500, 100)),
    ),
    allocated=queues,
)
def test_plan_invariants(owned: dict[MessageQueue, Owned], allocated: set[MessageQueue]) -> None:
    plan = plan_rebalance(T, owned, allocated, now=100, max_idle=MAX_IDLE)
    assert set(plan.revoke) == {mq for mq, s in owned.items() if not s.revoking and mq not in allocated}
    assert set(plan.start) == allocated - owned.keys()
    assert set(plan.rebuild) <= allocated & owned.keys()
    for mq in plan.rebuild:
        state = owned[mq]
        assert not state.revoking
        assert not state.handing_off
        assert 100 - state.last_pull_time > MAX_IDLE
    # After the plan: what is allocated is owned (or leaving and taken next round), nothing else stays.
    staying = {mq for mq in owned if mq in allocated} | set(plan.start)
    assert staying == allocated
    assert plan.start == sorted(plan.start, key=lambda m: (m.topic, m.broker_name, m.queue_id))
