"""The asyncio clients against an in-process FakeBroker, and the trio guest run under them.

The fake runs in the test's trio loop; each asyncio program runs with ``asyncio.run`` in a worker
thread (``trio.to_thread.run_sync``), so both loops make progress. Guest-only tests need no broker
and are plain functions around ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, TypeVar

import pytest
import sniffio
import trio

from rocketmq_py.aio import LitePullConsumer, Message, MessageQueue, Producer, PushConsumer, SendStatus
from rocketmq_py.aio._guest import _GUESTS, guest_for_running_loop
from rocketmq_py.aio._spinner import _SPIN_AFTER_RESULT, _SPIN_TICKS
from rocketmq_py.errors import EmptyBody, MessageIllegal, RocketMQError, StateError
from rocketmq_py.protocol import MessageExt, RemotingCommand, RequestCode
from rocketmq_py.testing import FakeBroker

TOPIC = "AioTopic"
GROUP = "cg-aio"
T = TypeVar("T")


@pytest.fixture
async def broker() -> AsyncIterator[FakeBroker]:
    async with FakeBroker(broker_name="broker-a") as fb:
        fb.add_topic(TOPIC, queues=2)
        yield fb


async def on_asyncio(main: Coroutine[Any, Any, T]) -> T:
    """Run an asyncio program in a worker thread, while the test's trio loop serves the fake."""
    return await trio.to_thread.run_sync(asyncio.run, main)


async def wait_until(predicate: Callable[[], bool], *, timeout: float = 30) -> None:  # noqa: ASYNC109
    """Poll ``predicate`` (trio time) until true; fail after ``timeout``."""
    with trio.fail_after(timeout):
        while not predicate():  # noqa: ASYNC110 - state of the fake, no event to wait on
            await trio.sleep(0.01)


def _stored(fb: FakeBroker) -> list[bytes]:
    return sorted(m.body for q in range(2) for m in fb.messages(TOPIC, q))


def _guest_running() -> bool:
    return guest_for_running_loop().running


# --- the guest run -------------------------------------------------------------------------------


async def _sleep_then(value: T, seconds: float = 0.0) -> T:
    await trio.sleep(seconds)
    return value


async def _fail() -> None:
    await trio.lowlevel.checkpoint()
    raise MessageIllegal(13, "from trio")


def test_calls_cross_with_results_and_errors_unchanged() -> None:
    async def main() -> None:
        guest = guest_for_running_loop()
        await guest.acquire()
        try:
            values = await asyncio.gather(*(guest.call(_sleep_then, i) for i in range(200)))
            assert values == list(range(200))
            with pytest.raises(MessageIllegal, match="from trio") as caught:
                await guest.call(_fail)
            assert caught.value.code == 13
        finally:
            await guest.release()
        assert not guest.running

    asyncio.run(main())


def test_cancelling_the_asyncio_task_cancels_the_trio_call_and_the_worker_goes_on() -> None:
    """(The cancel comes once the trio call runs: one cancelled while still queued never runs, so
    nothing would set ``ended``. A fixed 10-ms sleep stood for that wait, and a loaded CI machine
    hung on ``ended.wait`` when the cancel came first.)"""

    async def main() -> None:
        guest = guest_for_running_loop()
        started, ended = trio.Event(), trio.Event()

        async def forever() -> None:
            try:
                started.set()
                await trio.sleep_forever()
            finally:
                ended.set()

        await guest.acquire()
        try:
            task = asyncio.ensure_future(guest.call(forever))
            await guest.call(started.wait)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await guest.call(ended.wait)  # the trio side unwound
            # the worker that ran it (its scope was cancelled) serves later calls normally
            later = await asyncio.gather(*(guest.call(_sleep_then, i, 0.001) for i in range(5)))
            assert later == list(range(5))
        finally:
            await guest.release()

    asyncio.run(main())


def test_a_value_ready_when_the_caller_is_cancelled_goes_to_on_lost() -> None:
    """The trio call produced a value, but the asyncio task was cancelled before it resumed.

    (E.g. ``asyncio.wait_for(consumer.poll(), 0.2)`` timing out while the poll takes a batch: the
    batch moved the consumed offset, so dropping it would lose those messages.) Both orders: the
    cancel lands before the trio call returns (the future is cancelled when the value comes), and
    after the value was set (the task is cancelled before it resumes).
    """

    async def main() -> list[str]:
        guest = guest_for_running_loop()
        loop = asyncio.get_running_loop()
        lost: list[str] = []
        tasks: list[asyncio.Future[str]] = []

        async def take(case: str) -> str:
            await trio.lowlevel.checkpoint()
            if case == "cancel first":
                tasks[-1].cancel()  # cancels the future the caller awaits, now
            else:
                loop.call_soon(tasks[-1].cancel)  # runs after the value is set, before the task resumes
            return case

        await guest.acquire()
        try:
            for case in ("cancel first", "value first"):
                tasks.append(asyncio.ensure_future(guest.call_keeping(lost.append, take, case)))
                with pytest.raises(asyncio.CancelledError):
                    await tasks[-1]
                await guest.call(_sleep_then, None)  # the trio side is done too
            assert await guest.call_keeping(lost.append, _sleep_then, "kept") == "kept"
        finally:
            await guest.release()
        return lost

    assert asyncio.run(main()) == ["cancel first", "value first"]


def test_a_trio_cancel_cancels_the_asyncio_coroutine_and_waits_for_it() -> None:
    async def main() -> None:
        guest = guest_for_running_loop()
        seen: list[str] = []

        async def listener() -> str:
            seen.append(sniffio.current_async_library())
            try:
                await asyncio.sleep(3600)
            finally:
                await asyncio.sleep(0)  # cleanup that itself awaits
                seen.append("cleaned up")
            return "never"

        async def in_trio() -> list[str]:
            with trio.move_on_after(0.05):
                await guest.run_on_loop(listener)
            return list(seen)  # the asyncio side had finished before trio went on

        await guest.acquire()
        try:
            assert await guest.call(in_trio) == ["asyncio", "cleaned up"]
        finally:
            await guest.release()

    asyncio.run(main())


def test_a_listener_that_does_not_wait_runs_eagerly_as_an_asyncio_task() -> None:
    """Calls start in this trio step as an idle loop worker's (asyncio's eager start): one that does
    not wait returns with no loop crossing, and sees what any asyncio code sees: its task, asyncio
    for sniffio, a working ``asyncio.timeout``."""

    async def main() -> None:
        guest = guest_for_running_loop()
        tasks: set[asyncio.Task[Any] | None] = set()
        libraries: set[str] = set()

        async def listener(n: int) -> int:
            tasks.add(asyncio.current_task())
            libraries.add(sniffio.current_async_library())
            async with asyncio.timeout(5):  # needs a current task (RuntimeError otherwise)
                await asyncio.sleep(0) if n < 0 else None
            return n

        async def in_trio() -> tuple[int, int]:
            total = await guest.run_on_loop(listener, 0)  # no idle worker yet: made and woken
            ticks = guest.spin_ticks
            for n in range(1, 200):
                total += await guest.run_on_loop(listener, n)
            return total, guest.spin_ticks - ticks

        await guest.acquire()
        try:
            total, ticks = await guest.call(in_trio)
        finally:
            await guest.release()
        assert total == sum(range(200))
        assert ticks == 0  # the 199 calls after the first never left the trio step
        assert len(tasks) == 1  # the one loop worker, current for each call
        assert None not in tasks
        assert libraries == {"asyncio"}

    asyncio.run(main())


def test_an_eager_call_that_waits_goes_on_in_its_worker_and_can_be_cancelled() -> None:
    """A call whose first step waits is finished by the worker it started as (timeouts included);
    one cancelled before the worker resumed it sees the cancel at the point it waited."""

    async def main() -> None:
        guest = guest_for_running_loop()
        seen: list[str] = []
        gate = asyncio.Event()

        async def warm() -> None:
            return None

        async def waits(name: str) -> str:
            me = asyncio.current_task()
            async with asyncio.timeout(5):
                await gate.wait()
            assert asyncio.current_task() is me
            seen.append(name)
            return name

        async def times_out() -> str:
            try:
                async with asyncio.timeout(0.01):
                    await asyncio.sleep(3600)
            except TimeoutError:
                return "timed out"
            return "not timed out"

        async def cancelled_at_once() -> None:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                seen.append("cancelled where it waited")
                raise

        async def in_trio() -> list[object]:
            await guest.run_on_loop(warm)  # a loop worker exists and is idle from now on
            results: list[object] = []
            async with trio.open_nursery() as nursery:

                async def one() -> None:
                    results.append(await guest.run_on_loop(waits, "gated"))

                nursery.start_soon(one)
                await trio.sleep(0.01)
                gate.set()
            results.append(await guest.run_on_loop(times_out))
            with trio.CancelScope() as scope:
                scope.cancel()  # cancelled already: the call is cancelled right after its first step
                await guest.run_on_loop(cancelled_at_once)
            results.append(scope.cancelled_caught)
            results.append(await guest.run_on_loop(waits, "after"))  # the worker goes on
            return results

        await guest.acquire()
        try:
            results = await guest.call(in_trio)
        finally:
            await guest.release()
        assert results == ["gated", "timed out", True, "after"]
        assert seen == ["gated", "cancelled where it waited", "after"]

    asyncio.run(main())


def test_a_listener_awaiting_slow_io_makes_no_busy_loop() -> None:
    """After ``_SPIN_TICKS`` iterations with nothing finishing, trio waits as usual (no spinning)."""

    async def main() -> None:
        guest = guest_for_running_loop()
        started = asyncio.Event()
        release = asyncio.Event()

        async def listener() -> str:
            started.set()
            await release.wait()
            return "done"

        async def in_trio() -> str:
            return await guest.run_on_loop(listener)

        await guest.acquire()
        try:
            before = guest.spin_ticks
            call = asyncio.ensure_future(guest.call(in_trio))
            await started.wait()
            for _ in range(50 * _SPIN_TICKS):  # many loop iterations while the listener waits
                await asyncio.sleep(0)
            assert guest.spin_ticks - before <= _SPIN_TICKS
            release.set()
            assert await call == "done"
        finally:
            await guest.release()

    asyncio.run(main())


class _IoWaits(trio.abc.Instrument):
    """Counts trio's waits for I/O that may block (guest mode: a trip through its I/O thread)."""

    def __init__(self) -> None:
        self.blocking = 0

    def before_io_wait(self, timeout: float) -> None:
        if timeout > 0:
            self.blocking += 1


def test_back_to_back_calls_keep_trio_out_of_its_io_thread_then_it_parks() -> None:
    """After a result goes to its asyncio caller, trio stays runnable for the caller's next call.

    Without it, each round of calls costs a trip through guest mode's I/O thread (trio waits there
    while the callers resume): 64 tasks x 100 calls cost about 100 blocking waits. Once the calls
    stop, the spinner parks after ``_SPIN_AFTER_RESULT`` quiet iterations (no busy loop).
    """

    async def trivial(n: int) -> int:
        await trio.lowlevel.checkpoint()
        return n

    async def main() -> None:
        guest = guest_for_running_loop()
        waits = _IoWaits()

        async def caller() -> int:
            return sum([await guest.call(trivial, n) for n in range(100)])

        async def add_instrument() -> None:
            trio.lowlevel.add_instrument(waits)

        await guest.acquire()
        try:
            await guest.call(add_instrument)
            totals = await asyncio.gather(*(caller() for _ in range(64)))
            assert totals == [sum(range(100))] * 64
            assert waits.blocking < 20
            before = guest.spin_ticks
            for _ in range(20 * _SPIN_AFTER_RESULT):  # loop iterations with no call at all
                await asyncio.sleep(0)
            assert guest.spin_ticks - before <= _SPIN_AFTER_RESULT
        finally:
            await guest.release()

    asyncio.run(main())


def test_listener_calls_that_await_overlap_and_a_cancelled_one_spares_the_next() -> None:
    """Loop workers: calls waiting on I/O run at once; a cancel ends only its call; no task is left."""

    async def main() -> None:
        guest = guest_for_running_loop()
        both_waiting = asyncio.Event()
        waiting = 0
        seen: list[str] = []

        async def slow(name: str) -> str:
            nonlocal waiting
            waiting += 1
            if waiting == 2:
                both_waiting.set()
            await both_waiting.wait()  # only returns once the other call waits too
            return name

        async def swallowing() -> str:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                seen.append("swallowed")
            return "swallowed"

        async def quick(n: int) -> int:
            await asyncio.sleep(0)
            return n

        async def in_trio() -> list[object]:
            results: list[object] = []
            async with trio.open_nursery() as nursery:

                async def one(name: str) -> None:
                    results.append(await guest.run_on_loop(slow, name))

                nursery.start_soon(one, "a")
                nursery.start_soon(one, "b")
            with trio.move_on_after(0.05):
                await guest.run_on_loop(listener_cancelled)
            with trio.move_on_after(0.05) as scope:
                results.append(await guest.run_on_loop(swallowing))
            results.append(scope.cancelled_caught)
            results.extend([await guest.run_on_loop(quick, n) for n in range(3)])
            return results

        async def listener_cancelled() -> None:
            try:
                await asyncio.sleep(3600)
            finally:
                seen.append("cancelled")

        await guest.acquire()
        try:
            results = await guest.call(in_trio)
        finally:
            await guest.release()
        assert sorted(map(str, results[:2])) == ["a", "b"]
        # The call that swallowed its cancel returned its value to trio (no checkpoint came after it
        # in the cancelled scope, so trio raised nothing), and the worker's next calls ran normally.
        assert results[2:] == ["swallowed", False, 0, 1, 2]
        assert seen == ["cancelled", "swallowed"]
        await asyncio.sleep(0)
        assert asyncio.all_tasks() == {asyncio.current_task()}  # the loop workers ended with the run

    asyncio.run(main())


def test_the_guest_ends_with_its_last_user_and_leaves_no_threads_behind() -> None:
    async def cycle() -> None:
        guest = guest_for_running_loop()
        await guest.acquire()
        await guest.acquire()
        await guest.call(_sleep_then, None, 0.01)  # idle long enough for trio's I/O thread
        await guest.release()
        assert guest.running
        await guest.release()
        assert not guest.running

    before = threading.active_count()
    for _ in range(5):
        asyncio.run(cycle())
    # trio keeps one idle I/O thread in its cache (for 10 s); cycles must not add more.
    assert threading.active_count() <= before + 1
    assert len(_GUESTS) <= 1  # one entry per live loop; closed loops are forgotten


def test_a_client_needs_a_running_loop_and_opens_once() -> None:
    opening = Producer("pg-aio", namesrv="127.0.0.1:1").open()
    with pytest.raises(StateError, match="running asyncio event loop"):
        opening.send(None)  # driven by hand: no asyncio loop runs here
    opening.close()

    async def send_before_open() -> None:
        with pytest.raises(StateError, match="not open"):
            await Producer("pg-aio").send(Message(TOPIC, b"x"))

    asyncio.run(send_before_open())


# --- clients against the fake --------------------------------------------------------------------


async def test_producer_sends_in_a_running_loop_while_other_tasks_go_on(broker: FakeBroker) -> None:
    broker.delay(RequestCode.SEND_MESSAGE_V2, 0.2)

    async def main() -> tuple[int, list[SendStatus], int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        tick_task = asyncio.create_task(ticker())
        async with Producer("pg-aio", namesrv=broker.address) as producer:
            results = await asyncio.gather(*(producer.send(Message(TOPIC, b"m%d" % i)) for i in range(20)))
            await producer.send_oneway(Message(TOPIC, b"oneway"), queue=MessageQueue(TOPIC, "broker-a", 0))
            batch = await producer.send_batch([Message(TOPIC, b"b1"), Message(TOPIC, b"b2")])
            assert len(batch.msg_id.split(",")) == 2
            sent = producer.statistics().sent
        tick_task.cancel()
        assert not _guest_running()
        return ticks, [r.status for r in results], sent

    ticks, statuses, sent = await on_asyncio(main())
    assert statuses == [SendStatus.SEND_OK] * 20
    assert sent == 22
    assert ticks >= 10  # the loop kept running while sends waited 0.2 s for the broker
    await wait_until(lambda: len(_stored(broker)) == 23)
    assert broker.requests(RequestCode.UNREGISTER_CLIENT)


async def test_producer_errors_keep_their_types(broker: FakeBroker) -> None:
    async def refuse(request: RemotingCommand) -> RemotingCommand | None:
        raise MessageIllegal(13, "refused by the test")

    broker.on(RequestCode.SEND_MESSAGE_V2, refuse)

    async def main() -> None:
        async with Producer("pg-aio", namesrv=broker.address, retry_times=0) as producer:
            with pytest.raises(EmptyBody):
                await producer.send(Message(TOPIC, b""))
            with pytest.raises(MessageIllegal, match="refused by the test"):
                await producer.send(Message(TOPIC, b"x"))

    await on_asyncio(main())


async def test_cancelling_a_send_returns_at_once_and_closes_cleanly(broker: FakeBroker) -> None:
    broker.never_reply(RequestCode.SEND_MESSAGE_V2)

    async def main() -> float:
        async with Producer("pg-aio", namesrv=broker.address, send_timeout=30) as producer:
            task = asyncio.create_task(producer.send(Message(TOPIC, b"stuck")))
            await asyncio.sleep(0.1)
            started = asyncio.get_running_loop().time()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            waited = asyncio.get_running_loop().time() - started
        return waited

    assert await on_asyncio(main()) < 5  # not the 30-s send timeout


async def test_push_consumer_runs_async_listeners_on_the_asyncio_loop(broker: FakeBroker) -> None:
    broker.put_messages(0, [Message(TOPIC, b"a%d" % i) for i in range(5)])
    broker.put_messages(1, [Message(TOPIC, b"b%d" % i) for i in range(5)])

    async def main() -> tuple[list[bytes], set[str]]:
        received: asyncio.Queue[MessageExt] = asyncio.Queue()  # an asyncio object, used from the listener
        libraries: set[str] = set()

        async def listener(msgs: list[MessageExt]) -> None:
            libraries.add(sniffio.current_async_library())
            assert asyncio.current_task() is not None
            await asyncio.sleep(0)
            for msg in msgs:
                received.put_nowait(msg)

        consumer = PushConsumer(
            GROUP, namesrv=broker.address, listener=listener, consume_from_where="CONSUME_FROM_FIRST_OFFSET"
        )
        consumer.subscribe(TOPIC)
        async with consumer:
            bodies = [(await asyncio.wait_for(received.get(), 30)).body for _ in range(10)]
            assert consumer.consumed >= 10
            owned = sorted(consumer.assignment())
            assert consumer.pop_statistics() == []  # a pulling member pops nothing
            assert {s.queue for s in consumer.statistics()} == set(owned)
        assert {mq for mq in owned if mq.topic == TOPIC} == {
            MessageQueue(TOPIC, "broker-a", q) for q in (0, 1)
        }
        return sorted(bodies), libraries

    bodies, libraries = await on_asyncio(main())
    assert bodies == sorted([b"a%d" % i for i in range(5)] + [b"b%d" % i for i in range(5)])
    assert libraries == {"asyncio"}
    await wait_until(lambda: broker.consumer_offsets.get((GROUP, TOPIC, 0)) == 5)


async def test_push_consumer_runs_plain_listeners_in_a_thread(broker: FakeBroker) -> None:
    broker.put_messages(0, [Message(TOPIC, b"p%d" % i) for i in range(3)])

    async def main() -> tuple[int, set[bool]]:
        loop_thread = threading.get_ident()
        in_loop_thread: set[bool] = set()
        done = asyncio.Event()
        loop = asyncio.get_running_loop()
        count = 0

        def listener(msgs: list[MessageExt]) -> None:
            nonlocal count
            in_loop_thread.add(threading.get_ident() == loop_thread)
            count += len(msgs)
            if count >= 3:
                loop.call_soon_threadsafe(done.set)

        consumer = PushConsumer(
            GROUP, namesrv=broker.address, listener=listener, consume_from_where="CONSUME_FROM_FIRST_OFFSET"
        )
        consumer.subscribe(TOPIC)
        async with consumer:
            await asyncio.wait_for(done.wait(), 30)
        return count, in_loop_thread

    count, in_loop_thread = await on_asyncio(main())
    assert count == 3
    assert in_loop_thread == {False}


async def test_lite_pull_consumer_async_for_getmany_and_seek(broker: FakeBroker) -> None:
    broker.put_messages(0, [Message(TOPIC, b"q0-%d" % i) for i in range(4)])
    broker.put_messages(1, [Message(TOPIC, b"q1-%d" % i) for i in range(4)])
    q0 = MessageQueue(TOPIC, "broker-a", 0)

    async def main() -> tuple[list[bytes], list[bytes], list[bytes]]:
        consumer = LitePullConsumer(GROUP, namesrv=broker.address, auto_commit=False)
        async with consumer:
            queues = await consumer.fetch_message_queues(TOPIC)
            consumer.assign(queues)
            for mq in queues:
                await consumer.seek_to_beginning(mq)
            first: list[bytes] = []
            async for msg in consumer:
                first.append(msg.body)
                if len(first) == 8:
                    break
            consumer.seek(q0, 2)
            again: list[bytes] = []
            while len(again) < 2:
                batches = await consumer.getmany(timeout=5)
                again.extend(m.body for msgs in batches.values() for m in msgs)
            await consumer.commit({q0: 4})
            committed = await consumer.committed(q0)
            assert committed == 4
            empty = await consumer.poll(timeout=0.05)
        return sorted(first), again, [m.body for m in empty]

    first, again, empty = await on_asyncio(main())
    assert first == sorted([b"q0-%d" % i for i in range(4)] + [b"q1-%d" % i for i in range(4)])
    assert again == [b"q0-2", b"q0-3"]
    assert empty == []
    assert broker.consumer_offsets[(GROUP, TOPIC, 0)] == 4


async def test_a_closed_client_refuses_calls_and_ends_async_for(broker: FakeBroker) -> None:
    async def main() -> None:
        consumer = LitePullConsumer(GROUP, namesrv=broker.address)
        consumer.subscribe(TOPIC)
        async with consumer:
            pass
        with pytest.raises(StateError):
            await consumer.poll(timeout=0.01)
        assert [m async for m in consumer] == []
        with pytest.raises(StateError, match="already opened"):
            await consumer.open()
        with pytest.raises(RocketMQError):
            async with Producer("pg-aio", namesrv="127.0.0.1:1", send_timeout=0.5) as producer:
                await producer.send(Message(TOPIC, b"x"))
        assert not _guest_running()

    await on_asyncio(main())


async def test_lite_pull_consumer_queue_change_listener_on_the_loop_assigns_with_a_filter(
    broker: FakeBroker,
) -> None:
    broker.put_messages(0, [Message(TOPIC, b"0-%d" % i, tags="ab"[i % 2]) for i in range(4)])
    broker.put_messages(1, [Message(TOPIC, b"1-%d" % i, tags="ab"[i % 2]) for i in range(4)])

    async def main() -> tuple[list[bytes], list[tuple[str, int, str]]]:
        consumer = LitePullConsumer(
            GROUP, namesrv=broker.address, consume_from_where="CONSUME_FROM_FIRST_OFFSET"
        )
        heard: list[tuple[str, int, str]] = []

        async def on_change(topic: str, queues: frozenset[MessageQueue]) -> None:
            await asyncio.sleep(0)
            heard.append((topic, len(queues), sniffio.current_async_library()))
            consumer.assign(queues, "a")

        consumer.register_queue_change_listener(TOPIC, on_change)
        got: list[bytes] = []
        async with consumer:
            assert consumer.assignment() == {MessageQueue(TOPIC, "broker-a", q) for q in (0, 1)}
            while len(got) < 4:
                got.extend(m.body for m in await consumer.poll(timeout=5))
            got.extend(m.body for m in await consumer.poll(timeout=0.2))
        return sorted(got), heard

    got, heard = await on_asyncio(main())
    assert got == [b"0-0", b"0-2", b"1-0", b"1-2"]  # tag "a" only
    assert heard == [(TOPIC, 2, "asyncio")]


async def test_namespace_passes_through_the_asyncio_facade(broker: FakeBroker) -> None:
    wire = f"ns1%{TOPIC}"
    broker.add_topic(wire, queues=2)

    async def main() -> tuple[str, list[MessageQueue], list[MessageExt]]:
        async with Producer("pg-aio", namesrv=broker.address, namespace="ns1") as producer:
            result = await producer.send(Message(TOPIC, b"wrapped"), queue=MessageQueue(TOPIC, "broker-a", 0))
        consumer = LitePullConsumer(GROUP, namesrv=broker.address, namespace="ns1", auto_commit=False)
        async with consumer:
            queues = await consumer.fetch_message_queues(TOPIC)
            consumer.assign(queues)
            await consumer.seek_to_beginning(queues[0])
            got = await consumer.poll(timeout=5)
        return result.queue.topic, queues, got

    topic, queues, got = await on_asyncio(main())
    assert topic == TOPIC
    assert queues == [MessageQueue(TOPIC, "broker-a", 0), MessageQueue(TOPIC, "broker-a", 1)]
    assert [(m.topic, m.body) for m in got] == [(TOPIC, b"wrapped")]
    assert [m.body for m in broker.messages(wire, 0)] == [b"wrapped"]
    assert {cmd.ext_fields["topic"] for cmd in broker.requests(RequestCode.PULL_MESSAGE)} == {wire}
