"""The one place where trio and OS exceptions become rocketmq-py's own.

Every read, write, connect and TLS handshake of the transport runs inside
:func:`translate_io_errors`, so no ``OSError``, ``ssl.SSLError``, ``trio.BrokenResourceError`` or
``trio.ClosedResourceError`` reaches a caller: they become :class:`ConnectionFailed`, with the
original as ``__cause__``. Timeouts are not translated here: each call site owns its deadline.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import trio

from rocketmq_py.errors import ConnectionFailed

__all__ = ["translate_io_errors"]


@contextmanager
def translate_io_errors(what: str) -> Iterator[None]:
    """Turn I/O exceptions raised in the block into :class:`ConnectionFailed`.

    ``ssl.SSLError`` is an ``OSError``; ``trio.SSLStream`` reports TLS failures as
    ``BrokenResourceError`` with the ``SSLError`` as cause; ``ClosedResourceError`` means our own
    ``aclose`` closed the stream under a pending read or write.

    Args:
        what: the start of the error message, e.g. ``"reading from 10.0.0.1:10911 failed"``.

    Raises:
        ConnectionFailed: in place of the I/O exception.
    """
    try:
        yield
    except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
        detail = str(exc) or type(exc).__name__
        raise ConnectionFailed(f"{what}: {detail}") from exc
