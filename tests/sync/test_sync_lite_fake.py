"""The blocking LitePullConsumer against an in-process FakeBroker: assign filters, queue changes.

The fake runs in the test's trio loop; the blocking consumer runs in its own loop thread and is
driven from a worker thread (``trio.to_thread.run_sync``), so both loops make progress.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator

import pytest
import trio

from rocketmq_py.sync import LitePullConsumer, Message, MessageQueue
from rocketmq_py.testing import FakeBroker

TOPIC = "SyncLiteTopic"
GROUP = "cg-sync-lite"


@pytest.fixture
async def broker() -> AsyncIterator[FakeBroker]:
    async with FakeBroker(broker_name="broker-a") as fb:
        fb.add_topic(TOPIC, queues=2)
        yield fb


async def test_a_plain_listener_runs_in_a_worker_thread_and_may_assign_with_a_filter(
    broker: FakeBroker,
) -> None:
    for q in (0, 1):
        broker.put_messages(q, [Message(TOPIC, b"%d-%d" % (q, i), tags="ab"[i % 2]) for i in range(4)])
    heard: list[tuple[str, int, bool]] = []

    def run() -> list[bytes]:
        consumer = LitePullConsumer(
            GROUP, namesrv=broker.address, consume_from_where="CONSUME_FROM_FIRST_OFFSET"
        )

        def on_change(topic: str, queues: frozenset[MessageQueue]) -> None:
            in_loop = threading.current_thread() is consumer._portal.thread
            heard.append((topic, len(queues), in_loop))
            consumer.assign(queues, "b")  # a blocking call: refused from the loop thread itself

        consumer.register_queue_change_listener(TOPIC, on_change)
        got: list[bytes] = []
        with consumer:
            assert consumer.assignment() == {MessageQueue(TOPIC, "broker-a", q) for q in (0, 1)}
            while len(got) < 4:
                got.extend(m.body for m in consumer.poll(timeout=5))
            got.extend(m.body for m in consumer.poll(timeout=0.2))
        return sorted(got)

    got = await trio.to_thread.run_sync(run)
    assert got == [b"0-1", b"0-3", b"1-1", b"1-3"]  # tag "b" only
    assert heard == [(TOPIC, 2, False)]
