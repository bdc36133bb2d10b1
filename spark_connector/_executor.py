"""One client per executor process, reused by its tasks: the reader's connection pool, the sink's producer.

A Spark Python worker runs task after task (``spark.python.worker.reuse``, on by default). Each
task used to open a trio loop, a connection pool (a TCP connection, TLS handshake and ACL signing
set-up per broker) and, in the sink, a producer (route lookups, heartbeats to every broker) and
close them again at its end. Spark's Kafka source and sink keep theirs per executor instead
(``spark.kafka.consumer.cache.timeout``, ``spark.kafka.producer.cache.timeout``); so do we.

:data:`CLIENTS` keeps the clients of this process in one trio loop in a daemon thread, each under
a key of the options it was opened with (a task with other options gets another client).
:meth:`ExecutorClients.run` runs a task's async work in that loop with the client for its key,
opening it on first use; a client no task used for ``idle`` seconds (the options'
``clientIdleTimeoutMs``) is closed, and the loop thread ends when it has no client left and no
call waiting, so an idle worker keeps no thread, connection or heartbeat. ``idle=0`` opens a client
for the call alone and closes it when the call ends, as before.

A client whose background work failed (its ``async with`` block ended on its own) is dropped, and
the next call for its key opens a new one; a call's own errors leave the client cached (a pool
reconnects to a broker that went away, a producer re-reads routes).
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
from collections.abc import Awaitable, Callable, Hashable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

import trio

from rocketmq_py.errors import unwrap_single

__all__ = ["CLIENTS", "ExecutorClients"]

T = TypeVar("T")
R = TypeVar("R")

log = logging.getLogger("spark_connector")

#: The longest the loop sleeps between two looks for idle clients, seconds.
_SWEEP_AT_MOST: Final = 5.0


@dataclass(eq=False)
class _Entry:
    """One cached client: its value, its users, and the events between it and its host task."""

    key: Hashable
    idle: float
    value: Any = None
    users: int = 0
    #: Set once the client was entered (``value`` is it).
    open: bool = False
    last_used: float = field(default_factory=trio.current_time)
    opened: trio.Event = field(default_factory=trio.Event)
    close: trio.Event = field(default_factory=trio.Event)
    closed: trio.Event = field(default_factory=trio.Event)


class _Loop:
    """One trio loop in a daemon thread holding the cached clients (touched only from that thread)."""

    def __init__(self, owner: ExecutorClients) -> None:
        self.owner = owner
        self.token: trio.lowlevel.TrioToken | None = None
        self.ready = threading.Event()
        self.entries: dict[Hashable, _Entry] = {}
        self.nursery: trio.Nursery | None = None
        self.wake = trio.lowlevel.ParkingLot()
        self.thread = threading.Thread(target=self._main, name="rocketmq-spark-clients", daemon=True)

    def _main(self) -> None:
        try:
            trio.run(self._run)
        except BaseException:  # pragma: no cover - the loop's own tasks catch their errors
            log.exception("the executor's client loop failed")
        finally:
            self.ready.set()
            self.owner._ended(self)

    async def _run(self) -> None:
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            self.token = trio.lowlevel.current_trio_token()
            self.ready.set()
            await self._sweep()
            nursery.cancel_scope.cancel()

    async def _sweep(self) -> None:
        """Close idle clients; return once none is left and no call is waiting to start."""
        while True:
            now = trio.current_time()
            wait = _SWEEP_AT_MOST
            for entry in list(self.entries.values()):
                if entry.users:
                    continue
                due = entry.last_used + entry.idle
                if due <= now:
                    await self._drop(entry)
                else:
                    wait = min(wait, due - now)
            if not self.entries and self.owner._retire(self):
                return
            with trio.move_on_after(max(wait, 0.0)):
                await self.wake.park()

    async def _drop(self, entry: _Entry) -> None:
        if self.entries.get(entry.key) is entry:
            del self.entries[entry.key]
        entry.close.set()
        await entry.closed.wait()

    async def call(
        self,
        key: Hashable,
        idle: float,
        opener: Callable[[], AbstractAsyncContextManager[R]],
        work: Callable[[R], Awaitable[T]],
    ) -> T:
        entry = await self._enter(key, idle, opener)
        try:
            return await work(entry.value)
        finally:
            entry.users -= 1
            entry.last_used = trio.current_time()
            if not entry.users:
                self.wake.unpark_all()

    async def _enter(
        self, key: Hashable, idle: float, opener: Callable[[], AbstractAsyncContextManager[Any]]
    ) -> _Entry:
        """The open client for ``key``, counted as used: the cached one, or one opened now (a call
        for a key being opened waits for it and shares it; if that opening fails it opens its own)."""
        while True:
            entry = self.entries.get(key)
            if entry is None:
                entry = self.entries[key] = _Entry(key, idle, users=1)
                try:
                    assert self.nursery is not None
                    await self.nursery.start(self._host, entry, opener)
                except BaseException:
                    entry.users -= 1
                    if self.entries.get(key) is entry:
                        del self.entries[key]
                    raise
                finally:
                    entry.opened.set()
                entry.idle = idle
                return entry
            entry.users += 1
            try:
                await entry.opened.wait()
            except BaseException:
                entry.users -= 1
                raise
            if entry.open:
                entry.idle = idle
                return entry
            entry.users -= 1  # its opening failed, for the call that started it

    async def _host(
        self,
        entry: _Entry,
        opener: Callable[[], AbstractAsyncContextManager[Any]],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Enter the client, keep it open until it is dropped, exit it, all in one task."""
        started = False
        try:
            async with opener() as value:
                entry.value = value
                entry.open = started = True
                task_status.started()
                await entry.close.wait()
        except BaseException as exc:
            if not started or isinstance(exc, trio.Cancelled):
                raise  # not started: to the call that opened it
            log.warning("an executor's cached client ended with an error: %r", unwrap_single(exc))
        finally:
            entry.open = False
            entry.closed.set()
            if self.entries.get(entry.key) is entry:
                del self.entries[entry.key]  # failed on its own: the next call opens another


class ExecutorClients:
    """The clients this process's tasks share (see the module docstring); one per process: :data:`CLIENTS`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: _Loop | None = None
        self._waiting = 0

    def run(
        self,
        key: Hashable,
        idle: float,
        opener: Callable[[], AbstractAsyncContextManager[R]],
        work: Callable[[R], Awaitable[T]],
    ) -> T:
        """``await work(client)`` in the clients' loop, blocking this (non-trio) thread until it ends.

        Args:
            key: what tells clients apart: calls with equal keys share one client.
            idle: seconds the client stays open after its last call (``0``: closed with this call).
            opener: gives the client's async context manager, entered in the loop on first use.
            work: the task's work with the client.

        Raises:
            BaseException: whatever opening the client or ``work`` raised, a lone error unwrapped
                from its exception group.
        """
        if idle <= 0 or not math.isfinite(idle):
            return _run_alone(opener, work)
        with self._lock:
            loop = self._loop
            if loop is None:
                loop = self._loop = _Loop(self)
                loop.thread.start()
            self._waiting += 1
        try:
            loop.ready.wait()
            if loop.token is None:  # pragma: no cover - trio.run did not start
                raise RuntimeError("the executor's client loop did not start")
            try:
                return trio.from_thread.run(loop.call, key, idle, opener, work, trio_token=loop.token)
            except BaseExceptionGroup as group:
                raise unwrap_single(group) from None
        finally:
            with self._lock:
                self._waiting -= 1
            if loop.token is not None:
                with contextlib.suppress(trio.RunFinishedError):
                    trio.from_thread.run_sync(loop.wake.unpark_all, trio_token=loop.token)

    def close_idle(self, timeout: float = 10.0) -> None:
        """Close every client no call is using now and wait (at most ``timeout`` s) for the loop
        thread to end if that left none: what a test does after its reads and writes."""
        with self._lock:
            loop = self._loop
        if loop is None or loop.token is None:
            return

        async def drop() -> None:
            for entry in list(loop.entries.values()):
                if not entry.users:
                    await loop._drop(entry)
            loop.wake.unpark_all()

        with contextlib.suppress(trio.RunFinishedError):
            trio.from_thread.run(drop, trio_token=loop.token)
        loop.thread.join(timeout)

    def open_clients(self) -> int:
        """How many clients are open now (for tests and logs)."""
        with self._lock:
            loop = self._loop
        if loop is None or loop.token is None:
            return 0
        try:
            return trio.from_thread.run_sync(lambda: len(loop.entries), trio_token=loop.token)
        except trio.RunFinishedError:
            return 0

    def running(self) -> bool:
        """Whether the loop thread is running."""
        with self._lock:
            return self._loop is not None

    def _retire(self, loop: _Loop) -> bool:
        """Called by the loop when it has no client: end it unless a call is about to enter it."""
        with self._lock:
            if self._waiting:
                return False
            if self._loop is loop:
                self._loop = None
            return True

    def _ended(self, loop: _Loop) -> None:
        with self._lock:
            if self._loop is loop:  # pragma: no cover - it crashed: the next call starts another
                self._loop = None


def _run_alone(opener: Callable[[], AbstractAsyncContextManager[R]], work: Callable[[R], Awaitable[T]]) -> T:
    async def main() -> T:
        async with opener() as value:
            return await work(value)

    try:
        return trio.run(main)
    except BaseExceptionGroup as group:
        raise unwrap_single(group) from None


#: This process's clients.
CLIENTS: Final = ExecutorClients()
