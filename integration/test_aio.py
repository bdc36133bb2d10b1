"""The asyncio clients (:mod:`rocketmq_py.aio`) against the real two-broker cluster.

Each test is an asyncio test (``@pytest.mark.anyio``: anyio's pytest plugin on an asyncio event loop,
see ../conftest.py), as an asyncio service's own tests would be: producer and consumers share the
test's loop, and the listener is an asyncio coroutine that uses asyncio objects.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import Awaitable, Callable

import pytest
import sniffio
import trio

from rocketmq_py import MessageExt
from rocketmq_py.aio import LitePullConsumer, Message, MessageQueue, Producer, PushConsumer, SendStatus
from rocketmq_py.aio._guest import guest_for_running_loop
from rocketmq_py.testing import Cluster

PullAll = Callable[..., Awaitable[list[MessageExt]]]  # the `pull_all` fixture of conftest.py

pytestmark = pytest.mark.anyio


async def _pull(pull_all: PullAll, topic: str, expect: int) -> list[MessageExt]:
    """The fixture's trio reader, run in a thread (this one runs the test's asyncio loop)."""
    return await asyncio.to_thread(trio.run, functools.partial(pull_all, topic, expect=expect))


async def test_sends_and_an_asyncio_listener_share_one_loop(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    assert sniffio.current_async_library() == "asyncio"
    topic = create_topic(4)
    group = "it-aio-push"
    count = 200
    received: asyncio.Queue[MessageExt] = asyncio.Queue()
    libraries: set[str] = set()

    async def listener(msgs: list[MessageExt]) -> None:
        libraries.add(sniffio.current_async_library())
        await asyncio.sleep(0)  # an asyncio await inside the listener
        for msg in msgs:
            received.put_nowait(msg)

    consumer = PushConsumer(
        group,
        namesrv=cluster.namesrv_addr,
        listener=listener,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
    )
    consumer.subscribe(topic)
    async with Producer("it-aio-producer", namesrv=cluster.namesrv_addr) as producer, consumer:
        results = await asyncio.gather(
            *(producer.send(Message(topic, f"aio {i}".encode(), keys=[f"k{i}"])) for i in range(count))
        )
        assert {r.status for r in results} == {SendStatus.SEND_OK}
        bodies: list[str] = []
        async with asyncio.timeout(60):
            while len(bodies) < count:
                bodies.append((await received.get()).body.decode())
        async with asyncio.timeout(30):  # counted once the listener call has returned
            while consumer.consumed < count:  # noqa: ASYNC110 - a counter, no event
                await asyncio.sleep(0.01)
    assert sorted(bodies) == sorted(f"aio {i}" for i in range(count))
    assert libraries == {"asyncio"}
    assert {r.queue.broker_name for r in results} == {"broker-a", "broker-b"}
    assert consumer.consumed >= count


async def test_lite_pull_async_for_seek_commit_and_a_cancelled_poll_loses_nothing(
    cluster: Cluster, create_topic: Callable[..., str], pull_all: PullAll
) -> None:
    topic = create_topic(2)
    group = "it-aio-lite"
    async with Producer("it-aio-producer", namesrv=cluster.namesrv_addr) as producer:
        for i in range(10):
            await producer.send(Message(topic, f"first {i}".encode()))
        consumer = LitePullConsumer(group, namesrv=cluster.namesrv_addr, auto_commit=False)
        async with consumer:
            queues = await consumer.fetch_message_queues(topic)
            consumer.assign(queues)
            for mq in queues:
                await consumer.seek_to_beginning(mq)
            first: list[str] = []
            async for msg in consumer:
                first.append(msg.body.decode())
                if len(first) == 10:
                    break
            # A poll cancelled by asyncio (wait_for's timeout) loses nothing sent afterwards.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(consumer.poll(timeout=30), 0.2)
            for i in range(6):
                await producer.send(Message(topic, f"after {i}".encode()))
            after: list[str] = []
            async with asyncio.timeout(60):
                while len(after) < 6:
                    after.extend(m.body.decode() for m in await consumer.poll(timeout=1))
            # seek back on one queue and read it again
            mq = queues[0]
            consumer.seek(mq, 0)
            again: list[str] = []
            async with asyncio.timeout(60):
                while True:
                    batches = await consumer.getmany(timeout=1)
                    again.extend(m.body.decode() for m in batches.get(mq, []))
                    if len(again) >= (end := await _max_offset(consumer, mq)):
                        break
            await consumer.commit({mq: 3})
            committed = await consumer.committed(mq)
    assert sorted(first) == sorted(f"first {i}" for i in range(10))
    assert sorted(after) == sorted(f"after {i}" for i in range(6))
    assert len(await _pull(pull_all, topic, 16)) == 16
    assert len(again) == end  # the whole queue again from offset 0, nothing more
    assert sorted(again) == sorted(set(again))
    assert committed == 3


async def _max_offset(consumer: LitePullConsumer, mq: MessageQueue) -> int:
    return await consumer.offset_for_timestamp(mq, 2**62)


async def test_closing_the_last_client_ends_the_trio_run_and_its_threads(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(1)
    before = threading.active_count()
    for _ in range(3):
        async with Producer("it-aio-producer", namesrv=cluster.namesrv_addr) as producer:
            await producer.send(Message(topic, b"x"))
    assert guest_for_running_loop().running is False
    assert threading.active_count() <= before + 1  # trio's cached I/O thread at most
