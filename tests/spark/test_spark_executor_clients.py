"""The executors' client cache (spark_connector/_executor.py): one client per key and process,
shared by the tasks, closed after its idle time, and the loop thread gone with the last client.

The "clients" here are plain async context managers that count their openings and closings; the
reader's pool and the sink's producer through it are in tests/spark/test_spark_pull.py and
tests/spark_sink/test_sink_send.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field

import pytest
import trio
import trio.lowlevel

from spark_connector._executor import ExecutorClients


@dataclass
class Client:
    name: str
    closed: bool = False
    fail: trio.Event = field(default_factory=trio.Event)


@dataclass
class Counting:
    """An opener whose clients record that they were opened and closed."""

    opened: list[Client] = field(default_factory=list)
    refuse: bool = False

    def opener(self, name: str) -> Callable[[], AbstractAsyncContextManager[Client]]:
        @asynccontextmanager
        async def open_client() -> AsyncIterator[Client]:
            if self.refuse:
                raise ConnectionRefusedError("no broker")
            client = Client(name)
            self.opened.append(client)
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._background, client)
                    yield client
                    nursery.cancel_scope.cancel()
            finally:
                client.closed = True

        return open_client

    @staticmethod
    async def _background(client: Client) -> None:
        await client.fail.wait()
        raise RuntimeError("the client's background task failed")


async def name_of(client: Client) -> str:
    await trio.lowlevel.checkpoint()
    return client.name


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def test_calls_with_one_key_share_one_client_until_it_is_idle() -> None:
    clients, counting = ExecutorClients(), Counting()
    assert clients.run("k", 60.0, counting.opener("a"), name_of) == "a"
    assert clients.run("k", 60.0, counting.opener("a2"), name_of) == "a"  # cached: not opened again
    assert clients.run("other", 60.0, counting.opener("b"), name_of) == "b"
    assert [c.name for c in counting.opened] == ["a", "b"]
    assert clients.open_clients() == 2
    assert clients.running()
    clients.close_idle()
    assert all(c.closed for c in counting.opened)
    assert not clients.running()


def test_an_idle_client_is_closed_after_its_timeout_and_the_loop_ends_with_the_last() -> None:
    clients, counting = ExecutorClients(), Counting()
    clients.run("k", 0.2, counting.opener("a"), name_of)
    clients.run("long", 60.0, counting.opener("b"), name_of)
    wait_until(lambda: counting.opened[0].closed)
    assert not counting.opened[1].closed
    assert clients.open_clients() == 1
    # a call after the close opens a new client for the key
    assert clients.run("k", 0.2, counting.opener("c"), name_of) == "c"
    wait_until(lambda: counting.opened[2].closed)
    assert clients.running()  # b is still open
    clients.close_idle()
    assert not clients.running()
    threads = [t.name for t in threading.enumerate()]
    assert "rocketmq-spark-clients" not in threads


def test_the_loop_thread_ends_on_its_own_once_no_client_is_left() -> None:
    clients, counting = ExecutorClients(), Counting()
    clients.run("k", 0.05, counting.opener("a"), name_of)
    wait_until(lambda: not clients.running())
    assert counting.opened[0].closed
    assert clients.run("k", 0.05, counting.opener("b"), name_of) == "b"  # a new loop


def test_timeout_zero_opens_and_closes_a_client_per_call_without_a_thread() -> None:
    clients, counting = ExecutorClients(), Counting()
    assert clients.run("k", 0, counting.opener("a"), name_of) == "a"
    assert clients.run("k", 0, counting.opener("b"), name_of) == "b"
    assert [(c.name, c.closed) for c in counting.opened] == [("a", True), ("b", True)]
    assert not clients.running()


def test_an_opening_error_reaches_the_caller_and_the_next_call_opens_again() -> None:
    clients, counting = ExecutorClients(), Counting(refuse=True)
    with pytest.raises(ConnectionRefusedError, match="no broker"):
        clients.run("k", 60.0, counting.opener("a"), name_of)
    counting.refuse = False
    assert clients.run("k", 60.0, counting.opener("b"), name_of) == "b"
    clients.close_idle()


def test_a_work_error_reaches_the_caller_unchanged_and_keeps_the_client() -> None:
    clients, counting = ExecutorClients(), Counting()

    async def fail(client: Client) -> str:
        raise ValueError(f"bad row for {client.name}")

    with pytest.raises(ValueError, match="bad row for a"):
        clients.run("k", 60.0, counting.opener("a"), fail)
    assert clients.run("k", 60.0, counting.opener("b"), name_of) == "a"
    clients.close_idle()


def test_a_work_error_group_of_one_is_unwrapped() -> None:
    clients, counting = ExecutorClients(), Counting()

    async def fail_in_a_nursery(client: Client) -> str:
        async def boom() -> None:
            raise KeyError(client.name)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(boom)
        return "unreached"

    with pytest.raises(KeyError):
        clients.run("k", 60.0, counting.opener("a"), fail_in_a_nursery)
    clients.close_idle()


def test_a_client_that_fails_on_its_own_is_dropped_and_opened_anew() -> None:
    clients, counting = ExecutorClients(), Counting()
    clients.run("k", 60.0, counting.opener("a"), name_of)

    async def break_it(client: Client) -> str:
        client.fail.set()
        return client.name

    clients.run("k", 60.0, counting.opener("unused"), break_it)
    wait_until(lambda: counting.opened[0].closed)
    wait_until(lambda: clients.open_clients() == 0)
    assert clients.run("k", 60.0, counting.opener("b"), name_of) == "b"
    clients.close_idle()


def test_concurrent_calls_for_one_key_share_one_opening() -> None:
    clients, counting = ExecutorClients(), Counting()
    gate = threading.Barrier(4)
    results: list[str] = []

    async def hold(client: Client) -> str:
        await trio.to_thread.run_sync(gate.wait)  # all four calls are in the loop at once
        return client.name

    def call(i: int) -> None:
        results.append(clients.run("k", 60.0, counting.opener(f"c{i}"), hold))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(counting.opened) == 1
    assert results == [counting.opened[0].name] * 4
    clients.close_idle()
    assert counting.opened[0].closed
