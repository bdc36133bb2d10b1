"""What :meth:`Connection.statistics <rocketmq_py._transport._connection.Connection.statistics>`
returns: a frozen snapshot of one connection's counters, built anew at each call (as trio's
``statistics()``), never a live object that keeps changing under its reader.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ConnectionStatistics"]


@dataclass(frozen=True, slots=True)
class ConnectionStatistics:
    """A snapshot of one connection's state (:meth:`Connection.statistics`).

    Attributes:
        address: the peer, ``"host:port"``.
        pending_requests: our requests waiting for a response.
        running_handlers: broker -> client requests being handled.
        frames_sent: frames written so far (requests, oneways and our responses).
        frames_received: frames read so far.
        closed: whether the connection is closed (every call fails with ConnectionFailed).
    """

    address: str
    pending_requests: int
    running_handlers: int
    frames_sent: int
    frames_received: int
    closed: bool
