"""ProcessQueue: Java ProcessQueue accounting and committed offset (pure, protocol.md §8.3)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from rocketmq_py.consumer._process_queue import ProcessQueue, ProcessQueueStatistics
from rocketmq_py.protocol import MessageExt


class FakeClock:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


def msg(offset: int, size: int = 1, **properties: str) -> MessageExt:
    return MessageExt("T", b"x" * size, queue_offset=offset, properties=properties)


def msgs(*offsets: int, size: int = 1) -> list[MessageExt]:
    return [msg(offset, size) for offset in offsets]


# --- the Java examples ---------------------------------------------------------------------------


def test_new_queue_is_empty_and_stamped_by_the_clock() -> None:
    clock = FakeClock()
    pq = ProcessQueue(clock=clock)
    assert (pq.msg_count, pq.msg_size, pq.max_span, pq.queue_offset_max) == (0, 0, 0, 0)
    assert pq.last_pull_time == pq.last_consume_time == pq.last_lock_time == 500.0
    assert not pq.dropped
    assert not pq.locked
    assert not pq.consuming
    assert pq.first_offset is None
    assert pq.last_offset is None
    assert not pq.has_pending_messages()
    assert len(pq) == 0


def test_put_counts_messages_and_body_bytes() -> None:
    pq = ProcessQueue()
    pq.put_messages([msg(10, 3), msg(11, 5), msg(12, 0)])
    assert (pq.msg_count, pq.msg_size) == (3, 8)
    assert (pq.first_offset, pq.last_offset, pq.max_span, pq.queue_offset_max) == (10, 12, 2, 12)
    assert 11 in pq
    assert 13 not in pq


def test_duplicate_offsets_are_ignored_and_the_first_copy_is_kept() -> None:
    pq = ProcessQueue()
    first, second = msg(7, 4), msg(8, 4)
    assert pq.add_messages([first, second]) == [first, second]
    new = pq.add_messages([msg(7, 100), msg(9, 1)])
    assert [m.queue_offset for m in new] == [9]
    assert (pq.msg_count, pq.msg_size) == (3, 9)
    assert pq.take_messages(1)[0] is first


def test_add_messages_returns_exactly_the_new_ones_in_order() -> None:
    pq = ProcessQueue()
    batch = msgs(3, 1, 2)
    assert pq.add_messages(iter(batch)) == batch
    assert [m.queue_offset for m in pq.add_messages(msgs(2, 5, 4))] == [5, 4]


def test_out_of_order_puts_keep_offsets_sorted() -> None:
    pq = ProcessQueue()
    pq.put_messages(msgs(50, 10, 30))
    pq.put_messages(msgs(20, 60, 40))
    assert [m.queue_offset for m in pq.take_messages(100)] == [10, 20, 30, 40, 50, 60]


def test_remove_returns_the_smallest_offset_still_in_flight() -> None:
    # removeMessage: first key while messages remain, queueOffsetMax + 1 when none, -1 when empty.
    pq = ProcessQueue()
    pq.put_messages(msgs(100, 101, 102))
    assert pq.remove_messages(msgs(101)) == 100  # a slow 100 blocks the commit
    assert pq.remove_messages(msgs(100)) == 102
    assert pq.remove_messages(msgs(102)) == 103
    assert pq.remove_messages(msgs(102)) == -1  # was already empty
    assert (pq.msg_count, pq.msg_size) == (0, 0)


def test_remove_of_offsets_not_cached_still_reports_the_commit_offset() -> None:
    pq = ProcessQueue()
    pq.put_messages(msgs(5, 6))
    assert pq.remove_messages(msgs(99)) == 5
    assert pq.msg_count == 2


def test_remove_stamps_last_consume_time_only_when_something_was_cached() -> None:
    clock = FakeClock()
    pq = ProcessQueue(clock=clock)
    clock.now = 510.0
    pq.remove_messages(msgs(1))
    assert pq.last_consume_time == 500.0
    pq.put_messages(msgs(1))
    clock.now = 520.0
    pq.remove_messages(msgs(1))
    assert pq.last_consume_time == 520.0


def test_queue_offset_max_survives_removal_so_an_emptied_queue_commits_past_it() -> None:
    pq = ProcessQueue()
    pq.put_messages(msgs(0, 1, 2))
    pq.remove_messages(msgs(0, 1, 2))
    pq.put_messages(msgs(3))
    assert pq.remove_messages(msgs(3)) == 4
    assert pq.queue_offset_max == 3


def test_max_span_is_last_minus_first_waiting_offset() -> None:
    pq = ProcessQueue()
    pq.put_messages(msgs(0, 2000, 2001))
    assert pq.max_span == 2001
    pq.remove_messages(msgs(0))
    assert pq.max_span == 1


def test_put_messages_asks_for_one_dispatch_until_take_finds_nothing() -> None:
    pq = ProcessQueue()
    assert pq.put_messages([]) is False  # nothing waits
    assert pq.put_messages(msgs(1)) is True
    assert pq.consuming
    assert pq.put_messages(msgs(2)) is False  # a consume task already runs
    assert [m.queue_offset for m in pq.take_messages(5)] == [1, 2]
    assert pq.consuming  # it took something
    assert pq.take_messages(5) == []
    assert not pq.consuming
    assert pq.put_messages(msgs(3)) is True


def test_msg_acc_count_comes_from_the_last_message_max_offset() -> None:
    pq = ProcessQueue()
    pq.put_messages([msg(10), msg(11, MAX_OFFSET="40")])
    assert pq.msg_acc_count == 29
    pq.put_messages([msg(12, MAX_OFFSET="13")])  # 1 > 0: updated
    assert pq.msg_acc_count == 1
    pq.put_messages([msg(13, MAX_OFFSET="13")])  # 0: not updated (Java only takes > 0)
    pq.put_messages([msg(14, MAX_OFFSET="junk")])
    pq.put_messages([msg(15)])
    assert pq.msg_acc_count == 1


# --- orderly helpers -----------------------------------------------------------------------------


def test_take_commit_returns_last_taken_offset_plus_one_and_releases_counts() -> None:
    clock = FakeClock()
    pq = ProcessQueue(clock=clock)
    pq.put_messages(msgs(10, 11, 12, size=2))
    clock.now = 600.0
    taken = pq.take_messages(2)
    assert [m.queue_offset for m in taken] == [10, 11]
    assert pq.last_consume_time == 600.0
    assert (pq.msg_count, pq.msg_size, pq.pending_count, pq.consuming_count) == (3, 6, 1, 2)
    assert pq.commit() == 12
    assert (pq.msg_count, pq.msg_size, pq.consuming_count) == (1, 2, 0)
    assert pq.commit() == -1  # nothing taken


def test_make_message_to_consume_again_puts_taken_messages_back_in_order() -> None:
    pq = ProcessQueue()
    pq.put_messages(msgs(1, 2, 3, 4))
    taken = pq.take_messages(3)
    pq.make_message_to_consume_again([taken[1]])
    assert pq.consuming_count == 2
    assert pq.msg_count == 4
    assert pq.first_offset == 2
    assert pq.commit() == 4  # last taken still in the consuming map is 3
    assert [m.queue_offset for m in pq.take_messages(5)] == [2, 4]
    pq.make_message_to_consume_again(msgs(99))  # never taken: ignored
    assert pq.msg_count == 2


def test_rollback_returns_everything_taken() -> None:
    pq = ProcessQueue()
    pq.put_messages(msgs(1, 2, 3))
    pq.take_messages(2)
    pq.rollback()
    assert (pq.pending_count, pq.consuming_count, pq.msg_count) == (3, 0, 3)
    assert pq.commit() == -1


def test_putting_back_an_offset_pulled_again_keeps_counts_exact() -> None:
    pq = ProcessQueue()
    pq.put_messages(msgs(1))
    pq.take_messages(1)
    pq.put_messages(msgs(1))  # taken offsets are not duplicates of waiting ones (as Java)
    assert pq.msg_count == 2
    pq.rollback()
    assert (pq.msg_count, pq.pending_count, pq.consuming_count) == (1, 1, 0)


def test_taking_an_offset_already_taken_keeps_one_copy() -> None:
    pq = ProcessQueue()
    pq.put_messages(msgs(1, size=2))
    pq.take_messages(1)
    newer = msg(1, 5)
    pq.put_messages([newer])
    assert pq.take_messages(1) == [newer]
    assert (pq.msg_count, pq.msg_size) == (1, 5)
    assert pq.commit() == 2
    assert (pq.msg_count, pq.msg_size) == (0, 0)


def test_clear_forgets_everything() -> None:
    pq = ProcessQueue()
    pq.put_messages(msgs(1, 2, 3))
    pq.take_messages(1)
    pq.clear()
    assert (pq.msg_count, pq.msg_size, pq.pending_count, pq.consuming_count, pq.queue_offset_max) == (
        0,
        0,
        0,
        0,
        0,
    )
    assert pq.remove_messages(msgs(2)) == -1


# --- time ----------------------------------------------------------------------------------------


def test_pull_expiry_is_strictly_after_max_idle() -> None:
    clock = FakeClock()
    pq = ProcessQueue(clock=clock)
    assert not pq.is_pull_expired(500.0 + 120.0)
    assert pq.is_pull_expired(500.0 + 120.001)
    pq.last_pull_time = 700.0
    assert not pq.is_pull_expired(800.0)
    assert pq.is_pull_expired(800.0, max_idle=50.0)


def test_lock_expiry_after_30_seconds() -> None:
    pq = ProcessQueue(clock=FakeClock())
    assert not pq.is_lock_expired(530.0)
    assert pq.is_lock_expired(530.5)


def test_expired_messages_are_the_leading_run_older_than_the_timeout() -> None:
    pq = ProcessQueue()
    timeout = 15 * 60 * 1000
    now = 10_000_000
    old = str(now - timeout - 1)
    pq.put_messages(
        [
            msg(1, CONSUME_START_TIME=old),
            msg(2, CONSUME_START_TIME=old),
            msg(3, CONSUME_START_TIME=str(now - timeout)),  # exactly the timeout: not expired
            msg(4, CONSUME_START_TIME=old),
        ]
    )
    assert [m.queue_offset for m in pq.expired_messages(now, timeout)] == [1, 2]
    assert [m.queue_offset for m in pq.expired_messages(now, timeout, limit=1)] == [1]
    pq.remove_messages(msgs(1, 2, 3))
    assert [m.queue_offset for m in pq.expired_messages(now, timeout)] == [4]


def test_expired_messages_stop_at_a_message_without_start_time_or_with_junk() -> None:
    pq = ProcessQueue()
    pq.put_messages([msg(1), msg(2, CONSUME_START_TIME="0")])
    assert pq.expired_messages(10**12, 1000) == []
    pq.remove_messages(msgs(1))
    pq.put_messages([msg(0, CONSUME_START_TIME="x")])
    assert pq.expired_messages(10**12, 1000) == []


def test_expired_messages_at_most_sixteen_by_default() -> None:
    pq = ProcessQueue()
    pq.put_messages([msg(i, CONSUME_START_TIME="0") for i in range(20)])
    assert len(pq.expired_messages(10**12, 1000)) == 16


# --- statistics ----------------------------------------------------------------------------------


def test_statistics_snapshot() -> None:
    clock = FakeClock()
    pq = ProcessQueue(clock=clock)
    pq.put_messages([msg(5, 2), msg(9, 3, MAX_OFFSET="20")])
    pq.take_messages(1)
    pq.locked = True
    pq.try_unlock_times = 2
    assert pq.statistics() == ProcessQueueStatistics(
        msg_count=2,
        msg_size=5,
        pending_count=1,
        consuming_count=1,
        min_offset=9,
        max_offset=9,
        max_span=0,
        queue_offset_max=9,
        msg_acc_count=11,
        dropped=False,
        locked=True,
        last_pull_time=500.0,
        last_consume_time=500.0,
        last_lock_time=500.0,
        try_unlock_times=2,
    )
    empty = ProcessQueue(clock=clock).statistics()
    assert (empty.min_offset, empty.max_offset) == (-1, -1)
    assert "msgs=2" in repr(pq)


# --- scale ---------------------------------------------------------------------------------------


def test_thousands_of_messages_removed_in_random_order() -> None:
    rng = random.Random(7)
    pq = ProcessQueue()
    batch = msgs(*range(10_000))
    for start in range(0, len(batch), 32):
        pq.put_messages(batch[start : start + 32])
    order = list(batch)
    rng.shuffle(order)
    remaining = set(range(10_000))
    for start in range(0, len(order), 20):
        chunk = order[start : start + 20]
        remaining.difference_update(m.queue_offset for m in chunk)
        expected = min(remaining) if remaining else 10_000
        assert pq.remove_messages(chunk) == expected
    assert pq.msg_count == 0


@pytest.mark.parametrize("chunk", [1, 7, 64, 65, 500])
def test_bulk_and_prefix_removal_paths_agree(chunk: int) -> None:
    pq = ProcessQueue()
    pq.put_messages(msgs(*range(0, 2000, 2)))
    # Prefix removals, then every other remaining one in big or small chunks.
    assert pq.remove_messages(msgs(*range(0, 2 * chunk, 2))) == 2 * chunk
    rest = list(range(2 * chunk + 2, 2000, 4))
    for start in range(0, len(rest), chunk):
        pq.remove_messages(msgs(*rest[start : start + chunk]))
    left = [m.queue_offset for m in pq.take_messages(10_000)]
    assert left == list(range(2 * chunk, 2000, 4))


# --- properties ----------------------------------------------------------------------------------

offset_lists = st.lists(st.integers(0, 400), max_size=120)


@given(st.lists(st.tuples(st.booleans(), offset_lists), max_size=30))
def test_random_put_remove_keeps_counts_and_commit_offset(ops: list[tuple[bool, list[int]]]) -> None:
    pq = ProcessQueue()
    model: dict[int, int] = {}
    max_seen = 0
    for is_put, offsets in ops:
        batch = [msg(o, o % 7) for o in offsets]
        if is_put:
            pq.put_messages(batch)
            for o in offsets:
                model.setdefault(o, o % 7)
            if model:
                max_seen = max(max_seen, *model)
        else:
            was_empty = not model
            result = pq.remove_messages(batch)
            for o in offsets:
                model.pop(o, None)
            if was_empty:
                assert result == -1
            else:
                assert result == (min(model) if model else max_seen + 1)
        assert pq.msg_count == len(model)
        assert pq.msg_size == sum(model.values())
        assert pq.max_span == (max(model) - min(model) if model else 0)
        assert pq.first_offset == (min(model) if model else None)


@given(offset_lists, st.randoms(use_true_random=False))
def test_removing_one_message_at_a_time_keeps_counts_and_commit_offset(
    offsets: list[int], rng: random.Random
) -> None:
    """The one-message path of remove_messages (one message a listener call) against the model."""
    pq = ProcessQueue()
    pq.put_messages([msg(o, o % 7) for o in offsets])
    model = {o: o % 7 for o in offsets}
    order = [*offsets, 999]  # 999 was never cached: ignored
    rng.shuffle(order)
    for o in order:
        was_empty = not model
        result = pq.remove_messages([msg(o)])
        model.pop(o, None)
        if was_empty:
            assert result == -1  # nothing was waiting: nothing to commit
        else:
            assert result == (min(model) if model else max(offsets) + 1)
        assert pq.msg_count == len(model)
        assert pq.msg_size == sum(model.values())


class OrderlyQueueMachine(RuleBasedStateMachine):
    """Random put/remove/take/commit/put-back sequences against a plain-dict model."""

    def __init__(self) -> None:
        super().__init__()
        self.pq = ProcessQueue()
        self.pending: dict[int, int] = {}
        self.consuming: dict[int, int] = {}

    @rule(offsets=offset_lists)
    def put(self, offsets: list[int]) -> None:
        self.pq.put_messages([msg(o, o % 5) for o in offsets])
        for o in offsets:
            self.pending.setdefault(o, o % 5)

    @rule(offsets=offset_lists)
    def remove(self, offsets: list[int]) -> None:
        was_empty = not self.pending
        result = self.pq.remove_messages([msg(o) for o in offsets])
        for o in offsets:
            self.pending.pop(o, None)
        if was_empty:
            assert result == -1
        elif self.pending:
            assert result == min(self.pending)
        else:
            assert result == self.pq.queue_offset_max + 1

    @rule(n=st.integers(0, 40))
    def take(self, n: int) -> None:
        taken = self.pq.take_messages(n)
        expected = sorted(self.pending)[:n]
        assert [m.queue_offset for m in taken] == expected
        for o in expected:
            self.consuming[o] = self.pending.pop(o)

    @rule()
    def commit(self) -> None:
        expected = max(self.consuming) + 1 if self.consuming else -1
        assert self.pq.commit() == expected
        self.consuming.clear()

    @precondition(lambda self: bool(self.consuming))
    @rule(data=st.data())
    def consume_again(self, data: st.DataObject) -> None:
        chosen = data.draw(st.lists(st.sampled_from(sorted(self.consuming)), max_size=5))
        self.pq.make_message_to_consume_again([msg(o) for o in chosen])
        for o in chosen:
            if o in self.consuming:
                size = self.consuming.pop(o)
                self.pending.setdefault(o, size)

    @rule()
    def rollback(self) -> None:
        self.pq.rollback()
        for o, size in self.consuming.items():
            self.pending.setdefault(o, size)
        self.consuming.clear()

    @invariant()
    def counts_match_the_model(self) -> None:
        pq = self.pq
        assert pq.msg_count == len(self.pending) + len(self.consuming)
        assert pq.msg_size == sum(self.pending.values()) + sum(self.consuming.values())
        assert pq.pending_count == len(self.pending)
        assert pq.consuming_count == len(self.consuming)
        assert pq.max_span == (max(self.pending) - min(self.pending) if self.pending else 0)


TestOrderlyQueueMachine = OrderlyQueueMachine.TestCase
TestOrderlyQueueMachine.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
