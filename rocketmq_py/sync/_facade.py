"""The base of every blocking client: one async client kept open in one :class:`Portal`.

A blocking class of :mod:`rocketmq_py.sync` builds the trio client of the same name in its
constructor and forwards each public method through the portal, with the same name and
parameters (a test compares the two surfaces). The classes are generated (``_generated.py``, by
``scripts/gen_facades.py``): each method forwards with :meth:`SyncClient._call` (a coroutine),
:meth:`SyncClient._call_sync` (loop-owned state, while running) or :meth:`SyncClient._read` (also
before ``start()`` and after ``shutdown()``), as the script's description says; what cannot be
generated is in ``_bases.py``.

Lifecycle names follow Java's clients: ``start()`` / ``shutdown()``, plus ``close()`` (the async
``aclose()``) and ``with``. Methods called before ``start()`` or after ``shutdown()`` raise
:class:`~rocketmq_py.errors.StateError`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any, Generic, ParamSpec, Self, TypeVar

from rocketmq_py.sync._portal import Portal, PortalState

__all__ = ["SyncClient"]

T = TypeVar("T")
P = ParamSpec("P")
C = TypeVar("C", bound=AbstractAsyncContextManager[Any])


class SyncClient(Generic[C]):
    """Owns one async client (an async context manager) and the trio thread it lives in.

    Args:
        client: the async client, not yet entered; ``start()`` enters it in the loop thread.
    """

    def __init__(self, client: C) -> None:
        self._client = client
        self._portal = Portal(name=f"rocketmq-py {type(self).__name__}")

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> Self:
        """Start the trio thread and the async client in it (connections, route refresh, heartbeat).

        Returns:
            self, so that ``p = Producer(...).start()`` reads well.

        Raises:
            StateError: already started, or shut down.
            RocketMQError: the async client failed to start (the thread is stopped again).
        """
        self._portal.start()
        try:
            self._portal.enter_async_context(self._client)
        except BaseException:
            self._portal.close()
            raise
        return self

    def shutdown(self) -> None:
        """Stop the async client (unregister, close connections) and its thread; idempotent.

        Calls still running in other threads are cancelled and raise StateError.
        """
        self._portal.close()

    def close(self) -> None:
        """Same as :meth:`shutdown` (the blocking name of the async ``aclose()``)."""
        self.shutdown()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.shutdown()

    # --- forwarding -----------------------------------------------------------------------------

    def _call(self, afn: Callable[P, Awaitable[T]], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``await afn(*args, **kwargs)`` in the client's loop; errors cross unchanged."""
        return self._portal.call(afn, *args, **kwargs)

    def _call_sync(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` in the client's loop thread (it touches loop-owned state)."""
        return self._portal.call_sync(fn, *args, **kwargs)

    def _read(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Like :meth:`_call_sync` while running; directly before start and once the loop is gone."""
        if self._portal.state in (PortalState.NEW, PortalState.CLOSED, PortalState.CRASHED):
            return fn(*args, **kwargs)
        return self._portal.call_sync(fn, *args, **kwargs)
