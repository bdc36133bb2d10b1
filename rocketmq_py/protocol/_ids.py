"""Message ids: the broker's offset msgId, the client's UNIQ_KEY, and raw socket-address bytes.

Offset msgId (protocol.md §5.4), written by the broker, 32 (IPv4) or 56 (IPv6) uppercase hex::

    +---------------------+------------------+------------------------------+
    | store-host IP       | store-host port  | commit-log offset            |
    | 4 bytes (16 if v6)  | int32 big-endian | int64 big-endian             |
    +---------------------+------------------+------------------------------+

UNIQ_KEY, written by the producer into the ``UNIQ_KEY`` property (what users call the msgId),
32 (IPv4) or 56 (IPv6) uppercase hex::

    +---------------------+---------+------------------+---------------------+-----------+
    | client IP           | pid     | per-process int  | ms since the start  | counter   |
    | 4 bytes (16 if v6)  | low 16  | (Java: class-    | of the current      | low 16    |
    |                     | bits    | loader hashCode) | month, LOCAL time,  | bits      |
    |                     |         |                  | int32               |           |
    +---------------------+---------+------------------+---------------------+-----------+
    \\______________ fixed per process: 20 hex chars (IPv4) ______________/

In stored messages a socket address is the raw IP (4 or 16 bytes) followed by an int32 port; this
module also converts between that raw form and the ``"ip:port"`` text (``"[v6]:port"`` for IPv6).
"""

from __future__ import annotations

import itertools
import os
import struct
import threading
import time
import weakref
from collections.abc import Callable
from datetime import datetime, tzinfo
from ipaddress import IPv4Address, IPv6Address, ip_address
from typing import Final

from rocketmq_py.errors import LocalProtocolError, MalformedMessage

__all__ = [
    "UniqKeyGenerator",
    "decode_offset_msg_id",
    "encode_offset_msg_id",
    "format_socket_address",
    "pack_socket_address",
    "uniq_key_timestamp",
]

_PORT: Final = struct.Struct(">i")
_OFFSET: Final = struct.Struct(">q")
_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
# Java treats a small negative month offset as clock skew (NTP) and writes 0 instead.
_SKEW_TOLERANCE_MS: Final = 1_000_000


# --- socket addresses ----------------------------------------------------------------------------


def _split_host_port(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not host:
        raise ValueError(f"address {address!r} is not 'host:port'")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def _pack_ip(host: str) -> bytes:
    try:
        return ip_address(host).packed
    except ValueError:
        raise LocalProtocolError(f"{host!r} is not an IPv4 or IPv6 address") from None


def _check_int(value: int, low: int, high: int, what: str) -> None:
    if not low <= value <= high:
        raise LocalProtocolError(f"{what} {value} does not fit the wire field")


def pack_socket_address(address: str) -> bytes:
    """``"1.2.3.4:10911"`` or ``"[::1]:10911"`` → raw IP (4 or 16 bytes) + int32 port.

    Raises:
        LocalProtocolError: not an IP literal with a port, or the port does not fit an int32.
    """
    try:
        host, port = _split_host_port(address)
    except ValueError as exc:
        raise LocalProtocolError(str(exc)) from None
    _check_int(port, _INT32_MIN, _INT32_MAX, "port")
    return _pack_ip(host) + _PORT.pack(port)


def format_socket_address(raw: bytes) -> str:
    """Raw IP + int32 port (8 or 20 bytes) → ``"ip:port"`` (``"[ip]:port"`` for IPv6)."""
    if len(raw) == 8:
        return f"{raw[0]}.{raw[1]}.{raw[2]}.{raw[3]}:{_PORT.unpack_from(raw, 4)[0]}"
    if len(raw) == 20:
        return f"[{IPv6Address(raw[:16])}]:{_PORT.unpack_from(raw, 16)[0]}"
    raise ValueError(f"a raw socket address has 8 or 20 bytes, not {len(raw)}")


# --- offset msgId --------------------------------------------------------------------------------


def offset_msg_id_from_raw(raw_address: bytes, commit_log_offset: int) -> str:
    """The offset msgId from a raw store address (as in a stored message) and an offset."""
    return (raw_address + _OFFSET.pack(commit_log_offset)).hex().upper()


def encode_offset_msg_id(host: str, port: int, commit_log_offset: int) -> str:
    """The broker's msgId for a message: store host, port and commit-log offset, as uppercase hex.

    Args:
        host: the store host's IPv4 or IPv6 literal (brackets allowed for IPv6).
        port: the store host's port.
        commit_log_offset: the message's physical offset in the commit log.

    Returns:
        32 hex characters for IPv4, 56 for IPv6.

    Raises:
        LocalProtocolError: ``host`` is not an IP literal, or a number does not fit its field.
    """
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    _check_int(port, _INT32_MIN, _INT32_MAX, "port")
    _check_int(commit_log_offset, _INT64_MIN, _INT64_MAX, "commit-log offset")
    return offset_msg_id_from_raw(_pack_ip(host) + _PORT.pack(port), commit_log_offset)


def decode_offset_msg_id(msg_id: str) -> tuple[str, int, int]:
    """Split an offset msgId into ``(host, port, commit_log_offset)``.

    The host is the plain IP literal (no brackets for IPv6). END_TRANSACTION needs the offset.

    Raises:
        MalformedMessage: not 32 or 56 hex characters.
    """
    if len(msg_id) not in (32, 56):
        raise MalformedMessage(f"offset msgId {msg_id!r} has {len(msg_id)} characters, not 32 or 56")
    try:
        raw = bytes.fromhex(msg_id)
    except ValueError:
        raise MalformedMessage(f"offset msgId {msg_id!r} is not hexadecimal") from None
    ip_len = len(raw) - 12
    host = str(IPv4Address(raw[:4])) if ip_len == 4 else str(IPv6Address(raw[:16]))
    (port,) = _PORT.unpack_from(raw, ip_len)
    (offset,) = _OFFSET.unpack_from(raw, ip_len + 4)
    return host, port, offset


# --- UNIQ_KEY ------------------------------------------------------------------------------------


def _month_window(now_ms: int, tz: tzinfo | None) -> tuple[int, int]:
    """(start of the month containing ``now_ms``, start of the next month), epoch ms, in ``tz``.

    ``tz=None`` means the process's local time zone, as Java's default ``Calendar``.
    """
    moment = datetime.fromtimestamp(now_ms / 1000, tz)
    start = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    if start.month == 12:
        following = start.replace(year=start.year + 1, month=1)
    else:
        following = start.replace(month=start.month + 1)
    return round(start.timestamp() * 1000), round(following.timestamp() * 1000)


def _previous_month_start(month_start_ms: int, tz: tzinfo | None) -> int:
    return _month_window(month_start_ms - 1, tz)[0]


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def _fake_ip() -> bytes:
    # Java's fallback when no address is known: the low 4 bytes of the current time in ms.
    return _OFFSET.pack(_wall_clock_ms())[4:]


#: Two uppercase hex digits of each byte value: a key's counter in two lookups.
_HEX2: Final = tuple(f"{value:02X}" for value in range(256))


# Generators that derive pid/salt themselves are re-seeded in a forked child, so two processes
# forked from one parent (PySpark workers) never share a prefix and counter.
_AUTO_SEEDED: weakref.WeakSet[UniqKeyGenerator] = weakref.WeakSet()


def _reseed_after_fork() -> None:
    for generator in list(_AUTO_SEEDED):
        generator._reseed()


if hasattr(os, "register_at_fork"):  # pragma: no branch - absent only on Windows
    os.register_at_fork(after_in_child=_reseed_after_fork)


class UniqKeyGenerator:
    """Makes UNIQ_KEY strings in the Java client's layout (see the module docstring).

    Thread-safe: the counter is an :func:`itertools.count` and the month window is replaced as a
    whole. Every argument can be injected for tests; the defaults mirror Java.

    Args:
        ip: the client's IP, as a literal or packed 4/16 bytes. The protocol package does no I/O,
            so the client passes its connection's local address; ``None`` uses Java's fallback
            (4 bytes of the current time).
        pid: process id (only the low 16 bits are used); default :func:`os.getpid`.
        salt: the per-process int32 (Java: the class loader's hash code); default random.
        clock: epoch milliseconds; default the wall clock.
        tz: the time zone whose months count; default the local one, as in Java.
    """

    def __init__(
        self,
        *,
        ip: str | bytes | None = None,
        pid: int | None = None,
        salt: int | None = None,
        clock: Callable[[], int] | None = None,
        tz: tzinfo | None = None,
    ) -> None:
        if ip is None:
            self._ip = _fake_ip()
        elif isinstance(ip, bytes):
            if len(ip) not in (4, 16):
                raise ValueError(f"a packed IP has 4 or 16 bytes, not {len(ip)}")
            self._ip = ip
        else:
            self._ip = ip_address(ip).packed
        self._fixed_pid = pid
        self._fixed_salt = salt
        self._clock = clock or _wall_clock_ms
        self._tz = tz
        self._lock = threading.Lock()
        self._window = (0, 0)  # (month start, next month start), epoch ms
        self._reseed()
        if pid is None or salt is None:
            _AUTO_SEEDED.add(self)

    def _reseed(self) -> None:
        pid = os.getpid() if self._fixed_pid is None else self._fixed_pid
        salt = int.from_bytes(os.urandom(4)) if self._fixed_salt is None else self._fixed_salt
        self._prefix = (self._ip + struct.pack(">HI", pid & 0xFFFF, salt & 0xFFFFFFFF)).hex().upper()
        self._counter = itertools.count()
        self._last: tuple[int, str] = (-1, "")  # (clock, head) of the last key made

    @property
    def prefix(self) -> str:
        """The fixed per-process part: 20 hex characters for IPv4, 44 for IPv6."""
        return self._prefix

    def _head(self) -> str:
        """The prefix and the milliseconds since the month started: all of a key but the counter."""
        now = self._clock()
        last_now, last_head = self._last
        if now == last_now:  # several keys a millisecond: the same head
            return last_head
        start, following = self._window
        if now >= following:
            with self._lock:
                start, following = self._window
                if now >= following:
                    start, following = self._window = _month_window(now, self._tz)
        diff = (now - start) & 0xFFFFFFFF
        if diff >= 0x80000000 and diff - 0x100000000 > -_SKEW_TOLERANCE_MS:
            diff = 0
        head = f"{self._prefix}{diff:08X}"
        self._last = (now, head)
        return head

    def next(self) -> str:
        """A new UNIQ_KEY: 32 uppercase hex characters for IPv4, 56 for IPv6."""
        counter = next(self._counter) & 0xFFFF
        return self._head() + _HEX2[counter >> 8] + _HEX2[counter & 0xFF]  # half the cost of :04X

    def next_many(self, count: int) -> list[str]:
        """``count`` new UNIQ_KEYs made at once (one clock read: a batch's messages share the time)."""
        head = self._head()
        advance = self._counter.__next__
        keys = []
        for _ in range(count):
            counter = advance() & 0xFFFF
            keys.append(head + _HEX2[counter >> 8] + _HEX2[counter & 0xFF])
        return keys

    __call__ = next


def uniq_key_timestamp(key: str, *, now_ms: int | None = None, tz: tzinfo | None = None) -> int:
    """The approximate born time (epoch ms) encoded in a UNIQ_KEY, as Java's ``getNearlyTimeFromID``.

    The key only holds milliseconds since a month start, so the month is guessed: the current one,
    or the previous one if that would put the time at or after ``now_ms``.

    Args:
        key: a UNIQ_KEY (32 or 56 hex characters).
        now_ms: "now" in epoch ms (default: the wall clock).
        tz: the time zone the producer counted months in (default: local).

    Raises:
        MalformedMessage: ``key`` is not 32 or 56 hex characters.
    """
    if len(key) not in (32, 56):
        raise MalformedMessage(f"UNIQ_KEY {key!r} has {len(key)} characters, not 32 or 56")
    try:
        raw = bytes.fromhex(key)
    except ValueError:
        raise MalformedMessage(f"UNIQ_KEY {key!r} is not hexadecimal") from None
    ip_len = 16 if len(raw) == 28 else 4
    span = int.from_bytes(raw[ip_len + 6 : ip_len + 10])
    now = _wall_clock_ms() if now_ms is None else now_ms
    start = _month_window(now, tz)[0]
    if start + span >= now:
        start = _previous_month_start(start, tz)
    return start + span
