"""When a member's rebalance rounds run (RebalanceRounds), on trio's virtual clock.

Java's ``RebalanceService.run`` waits ``waitInterval`` (20 s) between rounds, ``minInterval`` (1 s)
after a round that was not balanced, and is woken at once by ``wakeup()`` (NOTIFY_CONSUMER_IDS_CHANGED).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
import trio
import trio.testing

from rocketmq_py.consumer._rebalance_rounds import RebalanceRounds
from rocketmq_py.errors import RouteNotFound


class Member:
    """What the rounds are given: topics and a per-topic step that records when it ran."""

    def __init__(self, *topics: str) -> None:
        self.topics = list(topics)
        self.enabled = True
        self.fail: set[str] = set()
        self.ran: list[tuple[float, str]] = []
        self.rounds_done = 0

    async def rebalance_topic(self, topic: str) -> None:
        self.ran.append((trio.current_time(), topic))
        if topic in self.fail:
            raise RouteNotFound(f"no route for {topic}")

    def after_round(self) -> None:
        self.rounds_done += 1

    def rounds(
        self,
        *,
        interval: float = 20.0,
        handoff_delay: float = 2.0,
        broadcasting: bool = False,
        step: Callable[[str], Awaitable[None]] | None = None,
    ) -> RebalanceRounds:
        return RebalanceRounds(
            "g",
            interval=interval,
            handoff_delay=handoff_delay,
            broadcasting=broadcasting,
            topics=lambda: self.topics,
            rebalance_topic=step or self.rebalance_topic,
            after_round=self.after_round,
            enabled=lambda: self.enabled,
        )


def starts(member: Member) -> list[float]:
    """When each round began (the time of its first topic)."""
    seen: list[float] = []
    for at, topic in member.ran:
        if topic == member.topics[0]:
            seen.append(at)
    return seen


async def test_rounds_run_at_start_then_every_interval(autojump_clock: trio.testing.MockClock) -> None:
    member = Member("a", "b")
    rounds = member.rounds(interval=20.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(rounds.run)
        assert member.ran == [(0.0, "a"), (0.0, "b")]  # the first round is done before started()
        await trio.sleep(45)
        nursery.cancel_scope.cancel()
    assert starts(member) == [0.0, 20.0, 40.0]
    assert member.rounds_done == 3


async def test_a_request_runs_a_round_at_once(autojump_clock: trio.testing.MockClock) -> None:
    member = Member("a")
    rounds = member.rounds(interval=20.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(rounds.run)
        await trio.sleep(5)
        rounds.request()
        await trio.sleep(1)
        nursery.cancel_scope.cancel()
    assert starts(member) == [0.0, 5.0]


async def test_a_failed_topic_brings_the_next_round_in_a_second_and_the_others_still_run(
    autojump_clock: trio.testing.MockClock,
) -> None:
    member = Member("a", "b")
    member.fail = {"a"}
    rounds = member.rounds(interval=20.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(rounds.run)
        await trio.sleep(1.5)
        member.fail.clear()  # balanced from the round at 2 s on: back to the interval
        await trio.sleep(21)
        nursery.cancel_scope.cancel()
    assert starts(member) == [0.0, 1.0, 2.0, 22.0]
    assert [t for at, t in member.ran if at == 0.0] == ["a", "b"]


async def test_a_retry_topics_failure_waits_for_the_interval(autojump_clock: trio.testing.MockClock) -> None:
    member = Member("a", "%RETRY%g")
    member.fail = {"%RETRY%g"}
    rounds = member.rounds(interval=20.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(rounds.run)
        await trio.sleep(25)
        nursery.cancel_scope.cancel()
    assert starts(member) == [0.0, 20.0]


async def test_retry_soon_brings_the_next_round_in_a_second(autojump_clock: trio.testing.MockClock) -> None:
    member = Member("a")
    rounds: list[RebalanceRounds] = []

    async def not_all_taken(topic: str) -> None:
        member.ran.append((trio.current_time(), topic))
        if len(member.ran) == 1:
            rounds[0].retry_soon()  # an orderly queue whose lock was refused

    rounds.append(member.rounds(interval=20.0, step=not_all_taken))
    async with trio.open_nursery() as nursery:
        await nursery.start(rounds[0].run)
        await trio.sleep(22)
        nursery.cancel_scope.cancel()
    assert starts(member) == [0.0, 1.0, 21.0]


async def test_a_topic_dropped_during_a_round_is_skipped(autojump_clock: trio.testing.MockClock) -> None:
    member = Member("a", "%RETRY%g")

    async def drop_retry(topic: str) -> None:
        member.ran.append((trio.current_time(), topic))
        member.topics.remove("%RETRY%g")  # a POP switch drops the retry subscription

    await member.rounds(step=drop_retry).round()
    assert [t for _, t in member.ran] == ["a"]


async def test_a_member_that_does_not_allocate_runs_no_round() -> None:
    member = Member("a")
    member.enabled = False
    await member.rounds().round()
    assert member.ran == []
    assert member.rounds_done == 0


@pytest.mark.parametrize(
    ("members", "broadcasting", "delay", "expected"),
    [(2, False, 2.0, 12.0), (1, False, 2.0, None), (2, True, 2.0, None), (2, False, 0.0, None)],
)
async def test_the_handoff_waits_from_the_rounds_start_when_others_commit(
    autojump_clock: trio.testing.MockClock,
    members: int,
    broadcasting: bool,
    delay: float,
    expected: float | None,
) -> None:
    member = Member("a")
    rounds = member.rounds(handoff_delay=delay, broadcasting=broadcasting)
    await trio.sleep(10)
    await rounds.round()
    assert rounds.handoff_start(members) == expected
