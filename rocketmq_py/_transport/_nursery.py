"""A nursery for objects that own background tasks while their ``async with`` body runs.

trio nurseries wrap every exception in an ``ExceptionGroup``, even one raised by the body alone.
A connection, a pool or a fake broker runs background tasks that never raise on purpose (they
turn connection failures into errors on the calls that were waiting), so the only error is usually
the caller's own. :func:`open_service_nursery` lets that error leave the ``async with`` unwrapped,
exactly as the body raised it; any error from a background task still comes out as a group.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

__all__ = ["open_service_nursery"]


@asynccontextmanager
async def open_service_nursery() -> AsyncIterator[trio.Nursery]:
    """Open a nursery whose body's exception propagates unwrapped when it is the only error.

    Yields:
        The nursery; leaving the block waits for its tasks, as with ``trio.open_nursery``.
    """
    body_error: BaseException | None = None
    try:
        async with trio.open_nursery() as nursery:
            try:
                yield nursery
            except BaseException as exc:
                body_error = exc
                raise
    except BaseExceptionGroup as group:
        if body_error is not None and len(group.exceptions) == 1 and group.exceptions[0] is body_error:
            # Re-raise the body's own exception; keep its original context, not the group.
            context = body_error.__context__
            try:
                raise body_error
            finally:
                body_error.__context__ = context
        raise
