"""The broker's side of one client connection to a :class:`~rocketmq_py.testing.FakeBroker`.

:class:`FakeClient` writes to the connection under a lock and keeps the broker's requests to the
client waiting for their responses (:meth:`FakeBroker.send_to_client`); closing the connection
wakes them empty-handed.
"""

from __future__ import annotations

import trio

from rocketmq_py.protocol._command import RemotingCommand

__all__ = ["FakeClient"]


class FakeClient:
    """The broker's side of one accepted client connection."""

    def __init__(self, index: int, stream: trio.abc.Stream) -> None:
        #: 0 for the first connection the broker accepted, then 1, 2, ...
        self.index = index
        #: Frames received on this connection.
        self.frames_received = 0
        self._stream = stream
        self._write_lock = trio.Lock()
        self._pending: dict[int, PendingReply] = {}
        self._closed = False

    def __repr__(self) -> str:
        return f"<FakeClient #{self.index} {'closed' if self._closed else 'open'}>"

    @property
    def is_open(self) -> bool:
        """Whether the connection is still up."""
        return not self._closed

    async def send(self, data: bytes) -> None:
        """Write raw bytes to this client; quietly nothing once the connection is gone."""
        async with self._write_lock:
            if self._closed:
                return
            try:
                await self._stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                await self.aclose()

    async def aclose(self) -> None:
        """Drop the connection (the client sees EOF or a reset)."""
        self._mark_closed()
        await trio.aclose_forcefully(self._stream)

    def _mark_closed(self) -> None:
        self._closed = True
        for reply in self._pending.values():
            reply.done.set()
        self._pending.clear()


class PendingReply:
    """A request the broker sent to a client, waiting for its response (``done`` when it came or
    the connection closed)."""

    __slots__ = ("done", "response")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.response: RemotingCommand | None = None
