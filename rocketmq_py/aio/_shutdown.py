"""What the asyncio clients do when their loop shuts down under them, and when a listener's
coroutine is cancelled without a cancel of its call.

``asyncio.run`` cancels every task before it closes the loop. The guest's keeper task, cancelled
then, closes each client still open (:func:`close_left_open`) as ``async with`` would have, and
names it in a ResourceWarning. A listener call cut by that shutdown, or one whose coroutine raises
``asyncio.CancelledError`` although nobody cancelled it, fails with
:class:`~rocketmq_py.errors.ListenerCancelled` (an ordinary exception for the trio side: the
messages come back later) instead of a cancel that would end the trio run.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol

from rocketmq_py.errors import ListenerCancelled

__all__ = ["Closable", "cancelled_by_itself", "close_left_open", "cut_by_shutdown"]

#: Seconds the loop's shutdown gives each client left open to close (commit, unregister).
LEFT_OPEN_CLOSE_TIMEOUT: Final = 30.0

log = logging.getLogger("rocketmq_py.aio")


class Closable(Protocol):
    """An open client as the keeper sees it."""

    async def aclose(self) -> None:
        """Close the client."""


async def close_left_open(clients: Sequence[Closable]) -> None:
    """Close each of ``clients`` (at most :data:`LEFT_OPEN_CLOSE_TIMEOUT` seconds each), then warn
    that it was left open: a log line and a ResourceWarning naming it."""
    for client in clients:
        try:
            async with asyncio.timeout(LEFT_OPEN_CLOSE_TIMEOUT):
                await client.aclose()
        except Exception as exc:
            log.warning("closing %r as its loop shut down failed: %r", client, exc)
        message = (
            f"{client!r} was left open when its asyncio loop shut down: closed then "
            "(use `async with`, or await aclose())"
        )
        log.warning("%s", message)
        warnings.warn(message, ResourceWarning, source=client, stacklevel=1)


def _listener_error(coro_fn: Callable[..., Any], exc: asyncio.CancelledError, what: str) -> ListenerCancelled:
    name = getattr(coro_fn, "__qualname__", repr(coro_fn))
    error = ListenerCancelled(f"{name} {what}")
    error.__cause__ = exc
    return error


def cut_by_shutdown(coro_fn: Callable[..., Any], exc: asyncio.CancelledError) -> ListenerCancelled:
    """The error for a loop call whose worker the loop's shutdown cancelled (the call failed)."""
    return _listener_error(coro_fn, exc, "was cancelled: its asyncio loop shut down while it ran")


def cancelled_by_itself(coro_fn: Callable[..., Any], exc: asyncio.CancelledError) -> ListenerCancelled:
    """The error for a loop call that raised CancelledError while its task was not being cancelled."""
    return _listener_error(coro_fn, exc, "raised asyncio.CancelledError although its call was not cancelled")
