"""Splitting a byte stream into RemotingCommand frames, with a size cap.

The stream is a sequence of length-prefixed frames (big-endian)::

    +--------------+--------------------------------------------------+
    | total length | frame: header-length word, header, body          |
    | int32        | `total length` bytes                             |
    +--------------+--------------------------------------------------+

:class:`FrameBuffer` takes bytes as they arrive and hands back every complete frame, decoded by
:func:`~rocketmq_py.protocol._command.decode_command`. It never does I/O.

Defences against a peer that lies:

- the length word is checked as soon as its 4 bytes are in: below 4 (no room for the
  header-length word, negative included) is :class:`MalformedFrame`; a frame longer than
  ``max_frame_size`` is :class:`FrameTooLarge` right away, so nothing is ever allocated or
  buffered on the strength of a claimed length, and the buffer holds at most one incomplete
  frame (below the cap) plus what the last :meth:`FrameBuffer.feed` brought;
- buffered bytes are consumed by advancing an offset and trimmed once per :meth:`feed`, so feeding
  one byte at a time, or a megabyte of small frames at once, stays linear.
"""

from __future__ import annotations

import struct
from typing import Final

from ..errors import FrameTooLarge, LocalProtocolError, MalformedFrame, ProtocolError
from ._command import RemotingCommand, _decode_frame

__all__ = ["DEFAULT_MAX_FRAME_SIZE", "FrameBuffer"]

#: The largest frame accepted, its 4-byte length word included: Java's
#: ``com.rocketmq.remoting.frameMaxLength`` default (16 MiB), which also counts the length word.
DEFAULT_MAX_FRAME_SIZE: Final = 16 * 1024 * 1024

_LENGTH: Final = struct.Struct(">i")
#: The length word plus the header-length word.
_MIN_FRAME_SIZE: Final = 8


class FrameBuffer:
    """Incremental frame splitter and decoder for one connection's incoming bytes.

    After it has raised a :class:`ProtocolError` the buffer is unusable: the stream has lost
    its framing, so every later :meth:`feed` or :meth:`eof` raises the same kind of error
    again. The connection should be closed.

    Args:
        max_frame_size: the largest frame accepted, length word included.
    """

    __slots__ = ("_buffer", "_closed", "_error", "_max_frame_size")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if max_frame_size < _MIN_FRAME_SIZE:
            raise ValueError(f"max_frame_size must be at least {_MIN_FRAME_SIZE}, not {max_frame_size}")
        self._max_frame_size = max_frame_size
        self._buffer = bytearray()
        self._error: ProtocolError | None = None
        self._closed = False

    @property
    def max_frame_size(self) -> int:
        """The largest frame accepted, length word included."""
        return self._max_frame_size

    @property
    def pending_bytes(self) -> int:
        """Bytes received that do not make a complete frame yet."""
        return len(self._buffer)

    def feed(self, data: bytes | bytearray | memoryview) -> list[RemotingCommand]:
        """Add received bytes; return the commands they complete, in order (maybe none).

        Commands decoded earlier in the same call are lost when a later frame in ``data`` is bad;
        the connection is unusable at that point anyway.

        Raises:
            MalformedFrame: a total length below 4, or a header length beyond its frame.
            FrameTooLarge: a frame longer than ``max_frame_size``.
            UnknownSerializeType: a header type byte other than JSON or ROCKETMQ.
            MalformedHeader: a header that does not parse.
            LocalProtocolError: called after :meth:`eof`.
        """
        self._check_usable()
        buffer = self._buffer
        buffer += data
        available = len(buffer)
        commands: list[RemotingCommand] = []
        pos = 0
        try:
            with memoryview(buffer) as view:
                while available - pos >= 4:
                    (total,) = _LENGTH.unpack_from(view, pos)
                    if total < 4:
                        raise MalformedFrame(f"frame length {total} is below the minimum of 4")
                    if total > self._max_frame_size - 4:
                        raise FrameTooLarge(
                            f"frame of {total + 4} bytes exceeds the maximum of {self._max_frame_size}"
                        )
                    end = pos + 4 + total
                    if end > available:
                        break
                    commands.append(_decode_frame(view, pos + 4, end))
                    pos = end
        except ProtocolError as exc:
            self._error = exc
            raise
        if pos:
            del buffer[:pos]  # O(1) in CPython: a bytearray drops a prefix by moving its start
        return commands

    def eof(self) -> None:
        """Declare the end of the stream; the buffer accepts no more data.

        Raises:
            MalformedFrame: the stream ended in the middle of a frame.
        """
        self._check_usable()
        self._closed = True
        if self._buffer:
            self._error = MalformedFrame(f"stream ended inside a frame ({len(self._buffer)} bytes pending)")
            raise self._error

    def _check_usable(self) -> None:
        if self._error is not None:
            raise type(self._error)(f"frame buffer is unusable after an earlier error: {self._error}")
        if self._closed:
            raise LocalProtocolError("frame buffer used after eof()")
