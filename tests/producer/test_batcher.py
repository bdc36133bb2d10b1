"""The bulk sender's pure batcher: where batches end (hypothesis over message sequences)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py.producer._batcher import BATCH_BYTES, Batcher, Chunk, estimated_size
from rocketmq_py.protocol import Message, MessageQueue

# (topic, body size, delayed, lane: None or a queue index)
entries = st.lists(
    st.tuples(
        st.sampled_from(["T", "U"]),
        st.sampled_from([0, 10, 300_000, BATCH_BYTES + 1]),
        st.booleans(),
        st.one_of(st.none(), st.integers(0, 2)),
    ),
    max_size=60,
)


def run(batch_size: int, spec: list[tuple[str, int, bool, int | None]]) -> tuple[list[Message], list[Chunk]]:
    batcher = Batcher(batch_size)
    messages: list[Message] = []
    chunks: list[Chunk] = []
    for index, (topic, size, delayed, lane) in enumerate(spec):
        message = Message(topic, bytes(size), delay_level=3 if delayed else 0)
        message.properties["i"] = str(index)
        messages.append(message)
        chunks += batcher.add(message, index, None if lane is None else MessageQueue(topic, "broker-a", lane))
    return messages, chunks + batcher.flush()


@given(st.integers(1, 8), entries)
def test_every_message_once_within_the_limits(
    batch_size: int, spec: list[tuple[str, int, bool, int | None]]
) -> None:
    messages, chunks = run(batch_size, spec)
    sent = [m for chunk in chunks for m in chunk.messages]
    assert sorted(id(m) for m in sent) == sorted(id(m) for m in messages)  # each exactly once
    for chunk in chunks:
        assert 1 <= len(chunk.messages) <= batch_size
        assert len({m.topic for m in chunk.messages}) == 1
        if len(chunk.messages) > 1:
            assert sum(estimated_size(m) for m in chunk.messages) <= BATCH_BYTES
            assert all(m.delay_level == 0 for m in chunk.messages)  # delays go alone
        assert chunk.indexes == [int(m.properties["i"]) for m in chunk.messages]
        assert chunk.first_index == chunk.indexes[0]


@given(st.integers(1, 8), entries)
def test_each_lane_keeps_its_order_and_its_queue(
    batch_size: int, spec: list[tuple[str, int, bool, int | None]]
) -> None:
    _, chunks = run(batch_size, spec)
    lanes = {MessageQueue(topic, "broker-a", q) for topic, _, _, q in spec if q is not None}
    for queue in lanes:
        expected = [i for i, (t, _, _, q) in enumerate(spec) if (t, q) == (queue.topic, queue.queue_id)]
        in_lane = [i for chunk in chunks if chunk.queue == queue for i in chunk.indexes]
        assert in_lane == expected  # the lane's chunks come out in the order of its messages
    unordered = [i for chunk in chunks if chunk.queue is None for i in chunk.indexes]
    assert sorted(unordered) == [i for i, (_, _, _, q) in enumerate(spec) if q is None]


def test_full_batches_come_out_as_soon_as_they_are_full() -> None:
    batcher = Batcher(3)
    out = [batcher.add(Message("T", b"x"), i) for i in range(7)]
    assert [len(c) for c in out] == [0, 0, 1, 0, 0, 1, 0]
    (rest,) = batcher.flush()
    assert rest.indexes == [6]
    assert batcher.flush() == []
