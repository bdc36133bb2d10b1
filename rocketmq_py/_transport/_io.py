"""The one place where trio and OS exceptions become rocketmq-py's own.

Every read, write, connect and TLS handshake of the transport runs inside
:func:`translate_io_errors`, so no ``OSError``, ``ssl.SSLError``, ``trio.BrokenResourceError`` or
``trio.ClosedResourceError`` reaches a caller: they become :class:`ConnectionFailed`, with the
original as ``__cause__``. Timeouts are not translated here: each call site owns its deadline.
"""

from __future__ import annotations

from types import TracebackType

import trio

from rocketmq_py.errors import ConnectionFailed

__all__ = ["translate_io_errors"]


class translate_io_errors:  # named like a function: used as ``with translate_io_errors(...)``
    """Turn I/O exceptions raised in the block into :class:`ConnectionFailed`.

    ``ssl.SSLError`` is an ``OSError``; ``trio.SSLStream`` reports TLS failures as
    ``BrokenResourceError`` with the ``SSLError`` as cause; ``ClosedResourceError`` means our own
    ``aclose`` closed the stream under a pending read or write. A plain class rather than a
    generator-based context manager: every read and write of a connection enters one.

    Args:
        what: the start of the error message, e.g. ``"reading from 10.0.0.1:10911 failed"``.

    Raises:
        ConnectionFailed: in place of the I/O exception.
    """

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if isinstance(exc, _IO_ERRORS):
            detail = str(exc) or type(exc).__name__
            raise ConnectionFailed(f"{self.what}: {detail}") from exc


_IO_ERRORS = (OSError, trio.BrokenResourceError, trio.ClosedResourceError)
