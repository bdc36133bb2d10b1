"""The portal: a trio loop in a thread, called from blocking code (no broker involved).

A toy async client stands in for the producer: it opens a nursery in ``__aenter__`` (so entering
and exiting in different tasks would fail, as it would for the real client) and runs a
background task that can be told to crash.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Self

import pytest
import trio
import trio.lowlevel

from rocketmq_py.errors import BrokerError, RocketMQError, StateError, TopicNotExist
from rocketmq_py.sync._facade import SyncClient
from rocketmq_py.sync._portal import Portal, PortalState


class Boom(RocketMQError):
    """A background task of the toy client failed."""


class Toy:
    """An async client with a service nursery, a background task, and a log of what happened."""

    def __init__(self, name: str = "toy", log: list[str] | None = None, *, fail_enter: bool = False) -> None:
        self.name = name
        self.log = log if log is not None else []
        self.fail_enter = fail_enter
        self.fail_exit: BaseException | None = None
        self.loop_thread: int | None = None
        self._nursery_cm: trio.Nursery | None = None
        self._crash = trio.Event()
        self._cm: AbstractAsyncContextManager[trio.Nursery] | None = None

    async def __aenter__(self) -> Self:
        if self.fail_enter:
            raise TopicNotExist(17, "no such topic")
        self.loop_thread = threading.get_ident()
        self._cm = trio.open_nursery()
        self._nursery_cm = await self._cm.__aenter__()
        await self._nursery_cm.start(self._background)
        self.log.append(f"enter {self.name}")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        self.log.append(f"exit {self.name}")
        assert self._nursery_cm is not None
        assert self._cm is not None
        self._nursery_cm.cancel_scope.cancel()
        result = await self._cm.__aexit__(exc_type, exc, tb)
        if self.fail_exit is not None:
            raise self.fail_exit
        return result

    async def _background(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        await self._crash.wait()
        raise Boom("background task failed")

    def crash_soon(self) -> None:
        self._crash.set()

    async def echo(self, value: int, *, plus: int = 0) -> int:
        await trio.lowlevel.checkpoint()
        return value + plus

    async def fail(self, error: BaseException) -> None:
        await trio.lowlevel.checkpoint()
        raise error

    async def forever(self, started: threading.Event) -> None:
        started.set()
        await trio.sleep_forever()


@pytest.fixture
def portal() -> Iterator[Portal]:
    with Portal(name="test-portal") as opened:
        yield opened


def _portal_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(("test-portal", "rocketmq-py"))]


def _in_thread(fn: object, *args: object) -> tuple[threading.Thread, list[BaseException | object]]:
    out: list[BaseException | object] = []

    def run() -> None:
        try:
            out.append(fn(*args))  # type: ignore[operator]
        except BaseException as exc:
            out.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


# --- calls ----------------------------------------------------------------------------------------


def test_call_returns_the_result_with_args_and_kwargs(portal: Portal) -> None:
    toy = Toy()
    assert portal.call(toy.echo, 40, plus=2) == 42
    assert portal.call_sync(lambda: threading.current_thread().name) == "test-portal"


def test_errors_cross_the_thread_boundary_unchanged(portal: Portal) -> None:
    toy = Toy()
    error = TopicNotExist(17, "topic x not exist")
    with pytest.raises(TopicNotExist) as caught:
        portal.call(toy.fail, error)
    assert caught.value is error
    assert isinstance(caught.value, BrokerError)
    assert caught.value.code == 17
    with pytest.raises(KeyError, match="plain"):
        portal.call(toy.fail, KeyError("plain"))
    assert portal.call(toy.echo, 1) == 1  # the portal survives errors of calls


def test_calls_from_many_threads_run_concurrently_in_the_loop(portal: Portal) -> None:
    threads = 8
    arrived = 0
    everyone = trio.Event()
    loop_threads: set[str] = set()

    async def meet(i: int) -> int:
        nonlocal arrived
        loop_threads.add(threading.current_thread().name)
        arrived += 1
        if arrived == threads:
            everyone.set()
        with trio.fail_after(10):
            await everyone.wait()  # only returns if all calls are in the loop at once
        return i * i

    results: dict[int, int] = {}
    workers = []
    for i in range(threads):
        worker = threading.Thread(target=lambda i=i: results.__setitem__(i, portal.call(meet, i)))
        worker.start()
        workers.append(worker)
    for worker in workers:
        worker.join(10)
    assert results == {i: i * i for i in range(threads)}
    assert loop_threads == {"test-portal"}


def test_many_calls_from_many_threads(portal: Portal) -> None:
    toy = Toy()
    totals: list[int] = []

    def work(base: int) -> None:
        totals.append(sum(portal.call(toy.echo, base, plus=n) for n in range(50)))

    workers = [threading.Thread(target=work, args=(b,)) for b in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(10)
    assert sorted(totals) == sorted(50 * b + sum(range(50)) for b in range(6))


def test_a_call_from_the_loop_thread_is_refused_not_deadlocked(portal: Portal) -> None:
    toy = Toy()

    async def reenter() -> int:
        return portal.call(toy.echo, 1)

    with pytest.raises(StateError, match="own trio thread"):
        portal.call(reenter)


async def test_callable_from_a_worker_thread_of_another_trio_loop(portal: Portal) -> None:
    # e.g. a sync callback of one client (run with to_thread) using another client's portal
    toy = Toy()
    assert await trio.to_thread.run_sync(lambda: portal.call(toy.echo, 5, plus=1)) == 6


# --- hosted contexts --------------------------------------------------------------------------


def test_a_context_is_entered_and_exited_in_one_loop_task() -> None:
    log: list[str] = []
    with Portal(name="test-portal") as portal:
        toy = portal.enter_async_context(Toy("a", log))
        assert portal.thread is not None
        assert toy.loop_thread == portal.thread.ident
        assert portal.call(toy.echo, 1) == 1
        assert log == ["enter a"]
    assert log == ["enter a", "exit a"]


def test_contexts_exit_last_entered_first() -> None:
    log: list[str] = []
    with Portal(name="test-portal") as portal:
        for name in "abc":
            portal.enter_async_context(Toy(name, log))
    assert log == ["enter a", "enter b", "enter c", "exit c", "exit b", "exit a"]


def test_an_enter_error_propagates_and_keeps_nothing_open(portal: Portal) -> None:
    with pytest.raises(TopicNotExist, match="no such topic"):
        portal.enter_async_context(Toy(fail_enter=True))
    assert portal.state is PortalState.RUNNING
    assert portal.call(Toy().echo, 3) == 3


def test_an_exit_error_is_raised_by_close() -> None:
    portal = Portal(name="test-portal").start()
    toy = portal.enter_async_context(Toy())
    toy.fail_exit = Boom("exit failed")
    with pytest.raises(Boom, match="exit failed"):
        portal.close()
    assert portal.state is PortalState.CLOSED
    portal.close()  # reported once


# --- lifecycle ----------------------------------------------------------------------------------


def test_close_is_idempotent_and_leaves_no_thread() -> None:
    portal = Portal(name="test-portal").start()
    thread = portal.thread
    assert thread is not None
    assert thread.daemon
    assert thread.is_alive()
    portal.close()
    portal.close()
    assert not thread.is_alive()
    assert portal.state is PortalState.CLOSED
    assert _portal_threads() == []


def test_concurrent_closes_all_return_after_the_thread_ended() -> None:
    portal = Portal(name="test-portal").start()
    portal.enter_async_context(Toy())
    closers = [_in_thread(portal.close) for _ in range(5)]
    for thread, out in closers:
        thread.join(10)
        assert out == [None]
    assert portal.thread is not None
    assert not portal.thread.is_alive()


def test_calls_before_start_and_after_close_raise_state_error() -> None:
    portal = Portal(name="test-portal")
    with pytest.raises(StateError, match="not started"):
        portal.call(Toy().echo, 1)
    portal.start()
    portal.close()
    with pytest.raises(StateError, match="closed"):
        portal.call(Toy().echo, 1)
    with pytest.raises(StateError, match="closed"):
        portal.enter_async_context(Toy())
    with pytest.raises(StateError, match="only once"):
        portal.start()


def test_close_before_start_means_never_start() -> None:
    portal = Portal(name="test-portal")
    portal.close()
    assert portal.thread is None
    with pytest.raises(StateError):
        portal.start()


def test_close_cancels_running_calls_which_raise_state_error() -> None:
    portal = Portal(name="test-portal").start()
    toy = portal.enter_async_context(Toy())
    started = threading.Event()
    thread, out = _in_thread(portal.call, toy.forever, started)
    assert started.wait(10)
    portal.close()
    thread.join(10)
    assert len(out) == 1
    assert isinstance(out[0], StateError)
    assert "closed" in str(out[0])


# --- a crash of the background loop -----------------------------------------------------------


def _wait_for(predicate: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def _assert_toy_crash(cause: BaseException | None) -> None:
    # The toy client's own nursery wraps its task's error, as the real client's does.
    assert isinstance(cause, ExceptionGroup)
    assert [type(e) for e in cause.exceptions] == [Boom]


def test_a_background_crash_makes_calls_raise_state_error_from_it() -> None:
    portal = Portal(name="test-portal").start()
    toy = portal.enter_async_context(Toy())
    started = threading.Event()
    blocked, out = _in_thread(portal.call, toy.forever, started)
    assert started.wait(10)
    portal.call_sync(toy.crash_soon)
    blocked.join(10)
    assert isinstance(out[0], StateError)  # the running call
    _assert_toy_crash(out[0].__cause__)
    _wait_for(lambda: portal.thread is not None and not portal.thread.is_alive())
    assert portal.state is PortalState.CRASHED
    with pytest.raises(StateError, match="background trio loop stopped") as caught:
        portal.call(toy.echo, 1)  # a later call
    _assert_toy_crash(caught.value.__cause__)
    portal.close()  # already reported: close is quiet
    assert _portal_threads() == []


def test_an_unreported_crash_is_raised_by_close() -> None:
    portal = Portal(name="test-portal").start()
    toy = portal.enter_async_context(Toy())
    portal.call_sync(toy.crash_soon)
    _wait_for(lambda: portal.state is PortalState.CRASHED)
    with pytest.RaisesGroup(Boom):  # as the toy's nursery raised it
        portal.close()
    portal.close()
    assert _portal_threads() == []


# --- the base of the sync clients -----------------------------------------------------------------


class SyncToy(SyncClient[Toy]):
    def __init__(self, name: str = "toy", *, fail_enter: bool = False) -> None:
        super().__init__(Toy(name, fail_enter=fail_enter))

    def echo(self, value: int, *, plus: int = 0) -> int:
        return self._call(self._client.echo, value, plus=plus)

    def name(self) -> str:
        return self._read(lambda: self._client.name)


def test_sync_client_lifecycle() -> None:
    toy = SyncToy()
    assert toy.name() == "toy"  # reads work before start
    with pytest.raises(StateError, match="not started"):
        toy.echo(1)
    with toy as same:
        assert same is toy
        assert toy.echo(1, plus=1) == 2
        assert toy.name() == "toy"
        assert toy._client.log == ["enter toy"]
    assert toy._client.log == ["enter toy", "exit toy"]
    assert toy.name() == "toy"  # and after shutdown
    with pytest.raises(StateError, match="closed"):
        toy.echo(1)
    toy.close()
    toy.shutdown()
    with pytest.raises(StateError):
        toy.start()
    assert _portal_threads() == []


def test_sync_client_start_failure_stops_the_thread() -> None:
    toy = SyncToy(fail_enter=True)
    with pytest.raises(TopicNotExist):
        toy.start()
    assert _portal_threads() == []
    with pytest.raises(StateError):
        toy.echo(1)


def test_sync_client_start_returns_self() -> None:
    toy = SyncToy().start()
    try:
        assert toy.echo(2) == 2
    finally:
        toy.shutdown()
