"""The writing half of a connection: an outbox of whole frames and the one task that drains it.

Callers queue encoded frames (:meth:`FrameWriter.enqueue`) and wait for the flush they joined;
:meth:`FrameWriter.run` writes everything queued since its last write in one ``send_all``. So a
burst of calls from many tasks costs one system call, and no caller's cancellation can cut a frame
in half: a caller that gives up before its frame was taken withdraws it (:meth:`take_back`).
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from rocketmq_py._transport._io import ReadWrite, translate_io_errors
from rocketmq_py.errors import ConnectionFailed

__all__ = ["Flush", "FrameWriter"]


class Flush:
    """One write of the writer task: ``done`` is set when its bytes are on the stream (``written``)
    or never will be (the connection failed)."""

    __slots__ = ("done", "written")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.written = False


class FrameWriter:
    """Coalesced writes of whole frames to one stream.

    Args:
        stream: where the frames go (the connection owns and closes it).
        address: the peer, for error messages.
    """

    def __init__(self, stream: trio.abc.SendStream, address: str) -> None:
        self._stream = stream
        self._address = address
        self._outbox: list[bytes] = []
        self._outbox_frames = 0
        self._flush = Flush()
        self._wakeup = trio.Event()
        self._writing = False
        #: Frames written so far.
        self.frames_sent = 0
        #: When the first bytes went out (trio time), ``None`` before.
        self.first_write_at: float | None = None

    @property
    def busy(self) -> bool:
        """Whether frames are queued or being written."""
        return bool(self._outbox) or self._writing

    def enqueue(self, data: bytes, frames: int) -> Flush:
        """Queue whole frames for the writer task; returns the flush they will go out with."""
        self._outbox.append(data)
        self._outbox_frames += frames
        self._wakeup.set()
        return self._flush

    def take_back(self, data: bytes) -> None:
        """Withdraw a queued frame the writer has not taken yet (its caller gave up)."""
        for index, queued in enumerate(self._outbox):
            if queued is data:
                del self._outbox[index]
                self._outbox_frames -= 1
                return

    async def write(self, data: bytes, frames: int = 1) -> bool:
        """Queue ``data`` (whole frames) and wait until it is written; False if it never will be."""
        flush = self.enqueue(data, frames)
        try:
            await flush.done.wait()
        except BaseException:
            self.take_back(data)
            raise
        return flush.written

    def fail(self) -> None:
        """Drop everything queued; its writers wake up with ``written`` False."""
        self._outbox.clear()
        self._outbox_frames = 0
        self._flush.done.set()

    async def run(self, on_error: Callable[[ConnectionFailed], None]) -> None:
        """Write until a write fails (``on_error`` gets the error, then this returns) or cancelled."""
        io = ReadWrite(self._stream)
        translated = translate_io_errors(f"writing to {self._address} failed")
        while True:
            await self._wakeup.wait()
            self._wakeup = trio.Event()
            if not self._outbox:
                continue
            outbox, self._outbox = self._outbox, []
            frames, self._outbox_frames = self._outbox_frames, 0
            flush, self._flush = self._flush, Flush()
            chunk = outbox[0] if len(outbox) == 1 else b"".join(outbox)
            self._writing = True
            try:
                with translated:
                    await io.send_all(chunk)
            except ConnectionFailed as exc:
                on_error(exc)
                flush.done.set()
                return
            finally:
                self._writing = False
            if self.first_write_at is None:
                self.first_write_at = trio.current_time()
            self.frames_sent += frames
            flush.written = True
            flush.done.set()
