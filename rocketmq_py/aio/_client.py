"""The base of every asyncio client: one trio client hosted on the loop's :class:`TrioGuest`.

An asyncio class of :mod:`rocketmq_py.aio` builds the trio client of the same name in its
constructor. ``async with`` (or :meth:`AioClient.open`) enters it in a *host task* of the guest
run, which keeps it open until :meth:`AioClient.aclose` (trio needs a context entered and exited
by one task). Each async method forwards with :meth:`AioClient._call`: the trio coroutine runs in
a guest worker and its result or error comes back unchanged. Methods that only read or set
state run directly: the guest shares the loop's thread. The classes themselves are generated
(``_generated.py``, by ``scripts/gen_facades.py``); what cannot be generated is in ``_bases.py``.

Listeners and callbacks that are coroutine functions are asyncio coroutines: they run as asyncio
tasks on the user's loop (:meth:`AioClient._on_loop`), so they may use asyncio libraries. Plain
functions run in a worker thread, as in the trio API.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any, Generic, ParamSpec, Self, TypeVar

import trio

from rocketmq_py.aio._guest import TrioGuest, guest_for_running_loop
from rocketmq_py.errors import StateError

__all__ = ["AioClient"]

log = logging.getLogger("rocketmq_py.aio")

T = TypeVar("T")
P = ParamSpec("P")
C = TypeVar("C", bound=AbstractAsyncContextManager[Any])


class AioClient(Generic[C]):
    """Owns one trio client (an async context manager) and hosts it on the running asyncio loop.

    Args:
        client: the trio client, not yet entered.
    """

    def __init__(self, client: C) -> None:
        self._client = client
        self._guest: TrioGuest | None = None
        self._closing: trio.Event | None = None
        self._closed: trio.Event | None = None
        self._crash: BaseException | None = None
        self._used = False

    def __repr__(self) -> str:
        group = getattr(self._client, "group", None)
        state = "open" if self._guest is not None else ("closed" if self._used else "not opened")
        named = f" group={group!r}" if group else ""
        return f"<rocketmq_py.aio.{type(self).__name__}{named} {state}>"

    # --- lifecycle ------------------------------------------------------------------------------

    async def open(self) -> Self:
        """Start the client on the running asyncio loop (what ``async with`` does).

        Raises:
            StateError: already open, or closed (a client is opened once), or no running loop.
            RocketMQError: the client failed to start (nothing is left running).
        """
        if self._used:
            raise StateError(f"this {type(self).__name__} was already opened (open a new one)")
        guest = guest_for_running_loop()
        self._used = True
        await guest.acquire()
        try:
            await guest.call(self._enter)
        except BaseException:
            await guest.release()
            raise
        self._guest = guest
        guest.open_clients.add(self)
        return self

    async def aclose(self) -> None:
        """Stop the client (unregister, close connections); idempotent.

        Raises:
            BaseException: what the trio client raised while closing, or the error that crashed
                its background tasks earlier, if no call reported it yet.
        """
        guest, self._guest = self._guest, None
        if guest is None:
            return
        guest.open_clients.discard(self)
        try:
            await guest.call(self._exit)
        finally:
            await guest.release()
        crash, self._crash = self._crash, None
        if crash is not None:
            raise crash

    async def __aenter__(self) -> Self:
        return await self.open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # --- the host task (in trio) ----------------------------------------------------------------

    async def _enter(self) -> None:
        guest = self._guest_starting()
        assert guest.nursery is not None
        await guest.nursery.start(self._host)

    async def _host(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        self._closing = trio.Event()
        self._closed = trio.Event()
        started = False
        try:
            async with self._client:
                task_status.started()
                started = True
                await self._closing.wait()
        except Exception as exc:
            if not started:
                raise  # open() raises it
            log.error("%s: its background tasks failed: %r", type(self).__name__, exc)
            self._crash = exc
        finally:
            self._closed.set()

    async def _exit(self) -> None:
        assert self._closing is not None
        assert self._closed is not None
        self._closing.set()
        await self._closed.wait()

    def _guest_starting(self) -> TrioGuest:
        # (`open` sets `_guest` only once the client is up; the host task needs it before.)
        return guest_for_running_loop()

    # --- forwarding -----------------------------------------------------------------------------

    def _open_guest(self) -> TrioGuest:
        """The guest that runs this client's calls.

        Raises:
            StateError: the client is not open, or its trio side failed.
        """
        guest = self._guest
        if guest is None:
            raise StateError(f"this {type(self).__name__} is not open (use `async with`)")
        if self._crash is not None:
            raise StateError(f"this {type(self).__name__} failed: {self._crash!r}") from self._crash
        return guest

    def _call(self, afn: Callable[P, Awaitable[T]], /, *args: P.args, **kwargs: P.kwargs) -> Awaitable[T]:
        """``await afn(*args, **kwargs)`` in the trio run; errors cross unchanged.

        A plain function returning the guest's awaitable (one coroutine frame less per send to
        suspend and resume through).
        """
        return self._open_guest().call_keeping(None, afn, *args, **kwargs)

    def _call_keeping(
        self,
        on_lost: Callable[[T], object],
        afn: Callable[P, Awaitable[T]],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> Awaitable[T]:
        """:meth:`_call`, giving a result its cancelled caller never got to ``on_lost``."""
        return self._open_guest().call_keeping(on_lost, afn, *args, **kwargs)

    def _on_loop(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` as the trio client should call it: a coroutine function runs on the asyncio loop."""
        if not (
            inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004
        ):
            return fn
        coro_fn: Callable[..., Coroutine[Any, Any, Any]] = fn

        async def on_loop(*args: Any) -> Any:
            guest = self._guest or self._guest_starting()
            return await guest.run_on_loop(coro_fn, *args)

        on_loop.__name__ = getattr(fn, "__name__", "listener")
        on_loop.__doc__ = fn.__doc__
        return on_loop
