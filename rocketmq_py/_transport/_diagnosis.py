"""What a failing connection probably means: pure decisions over what the transport observed.

- **Close on timeout** (Java ``clientCloseSocketIfTimeout``, on by default). A call that times out
  closes its connection when nothing at all arrived on it while the call waited (a paused or
  black-holed peer): the other pending calls fail with ConnectionFailed at once and the pool
  reconnects on next use, instead of reusing a dead connection until the kernel gives up (about
  15 minutes). Java closes on every timeout; a connection still delivering other responses is
  alive, and closing it would only fail those calls (and a consumer's long polls) for nothing.
  Waits shorter than :data:`MIN_CLOSE_WAIT` (connecting ate the deadline) close nothing, as in Java.
- **TLS/plaintext mismatch.** A RocketMQ server closes the connection, without a word, on the first
  bytes of the wrong kind: a TLS-only server on our plaintext frame, a plaintext server on our TLS
  ClientHello (it reads it as a frame length far above its maximum). So a TLS handshake that ends
  with the server closing, or answering something other than TLS, is :class:`TlsMismatch` ("is the
  server plaintext?"); so is a plaintext connection closed right after our first request with no
  byte in reply, or answered with TLS records ("does the server require TLS?"). A certificate we
  refuse is an ordinary :class:`ConnectionFailed` that says so.
"""

from __future__ import annotations

import ssl
from typing import Final

from rocketmq_py.errors import ConnectionFailed, TlsMismatch

__all__ = [
    "DEFAULT_CLOSE_ON_TIMEOUT",
    "MIN_CLOSE_WAIT",
    "TLS_REJECT_WINDOW",
    "closes_on_timeout",
    "handshake_error",
    "plaintext_mismatch_hint",
]

#: Close a connection whose call timed out with nothing received meanwhile; Java
#: ``NettyClientConfig.clientCloseSocketIfTimeout`` is true (Java closes on every timeout).
DEFAULT_CLOSE_ON_TIMEOUT: Final = True
#: A timed-out call that waited less than this (seconds) closes nothing: connecting ate its
#: deadline, and a short wait says nothing about the connection. Java ``MIN_CLOSE_TIMEOUT_MILLIS``
#: is 100 ms (Java also closes when the wait was over a quarter of the call's timeout; only calls
#: with timeouts under 100 ms differ, and the client makes none).
MIN_CLOSE_WAIT: Final = 0.1
#: A plaintext connection the peer closes within this many seconds of our first write, before
#: sending a byte, fails with TlsMismatch (a TLS-only server closes at once); a later close is an
#: ordinary ConnectionFailed. No Java counterpart: Java reports a bare closed channel.
TLS_REJECT_WINDOW: Final = 3.0

# SSL reasons meaning the server did not speak TLS back (OpenSSL 1.1 and 3 spellings).
_NOT_TLS_REASONS: Final = frozenset(
    {
        "WRONG_VERSION_NUMBER",
        "RECORD_LAYER_FAILURE",
        "PACKET_LENGTH_TOO_LONG",
        "HTTP_REQUEST",
        "UNKNOWN_PROTOCOL",
        "UNEXPECTED_EOF_WHILE_READING",
        "RECORD_LENGTH_MISMATCH",
    }
)
_PEER_CLOSED = (ssl.SSLEOFError, ssl.SSLZeroReturnError, ConnectionResetError, BrokenPipeError)


def closes_on_timeout(*, enabled: bool, waited: float, received_meanwhile: bool) -> bool:
    """Whether a call that timed out after ``waited`` seconds closes its connection."""
    return enabled and waited >= MIN_CLOSE_WAIT and not received_meanwhile


def _looks_like_tls(data: bytes) -> bool:
    """Whether ``data`` starts like a TLS record: content type 20-23, protocol major version 3.

    No RocketMQ frame starts so: its length prefix would be over 335 MB.
    """
    return len(data) >= 2 and 20 <= data[0] <= 23 and data[1] == 3


def plaintext_mismatch_hint(
    *, first_bytes: bytes, bytes_received: int, since_first_write: float | None, peer_closed: bool
) -> str | None:
    """What a failed plaintext connection probably means, when it looks like a TLS server's doing.

    Args:
        first_bytes: the first bytes the peer sent (two are enough).
        bytes_received: how many bytes the peer sent in all.
        since_first_write: seconds since our first write was on the wire (``None``: none yet).
        peer_closed: the peer closed or reset the connection (rather than sending garbage).

    Returns:
        The hint for the error message, or ``None`` when nothing points at TLS.
    """
    if _looks_like_tls(first_bytes):
        return "the server answered with TLS records: does the server require TLS?"
    if (
        peer_closed
        and bytes_received == 0
        and since_first_write is not None
        and since_first_write <= TLS_REJECT_WINDOW
    ):
        return "closed during the first request, with no byte in reply: does the server require TLS?"
    return None


def handshake_error(address: str, error: ConnectionFailed) -> ConnectionFailed:
    """The error for a failed TLS handshake: TlsMismatch when the server did not speak TLS back.

    Args:
        address: the server, ``"host:port"``.
        error: the handshake's ConnectionFailed (trio's ``BrokenResourceError`` as its cause).

    Returns:
        The error to raise; its ``__cause__`` is the ``ssl`` or OS error itself (raise from it).
    """
    cause = error.__cause__
    while cause is not None and not isinstance(cause, OSError):
        cause = cause.__cause__ or cause.__context__
    prefix = f"TLS handshake with {address} failed"
    result: ConnectionFailed
    if isinstance(cause, ssl.SSLCertVerificationError):
        result = ConnectionFailed(f"{prefix}: certificate verify failed ({cause.verify_message})")
    elif isinstance(cause, _PEER_CLOSED):
        result = TlsMismatch(f"{prefix}, the server closed the connection: is the server plaintext?")
    elif isinstance(cause, ssl.SSLError) and cause.reason in _NOT_TLS_REASONS:
        seen = f"the server answered without TLS ({cause.reason})"
        result = TlsMismatch(f"{prefix}, {seen}: is the server plaintext?")
    else:
        result = ConnectionFailed(f"{prefix}: {cause or error}")
    result.__cause__ = cause or error.__cause__
    return result
