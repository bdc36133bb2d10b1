"""Queue selectors for orderly sends: which of a topic's queues a message goes to, by argument.

A selector is a plain function ``(queues, message, arg) -> queue`` (:data:`SelectQueue`), the
Python form of Java's ``MessageQueueSelector``. Messages that must stay in order share an
argument (an order id) and so a queue.

:func:`select_by_hash` reproduces Java's ``SelectMessageQueueByHash`` exactly, so Python and Java
producers put the same order id on the same queue: ``abs(arg.hashCode() % len(queues))`` with
Java's ``hashCode`` (:func:`java_hash_code`) and Java's remainder (the sign of the dividend).
"""

from __future__ import annotations

import math
import random
import struct
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeAlias

from rocketmq_py.errors import ClientError, InvalidMessage, RouteNotFound
from rocketmq_py.protocol._bodies import MessageQueue, java_string_hash
from rocketmq_py.protocol._message import Message

__all__ = [
    "SelectQueue",
    "java_hash_code",
    "make_random_selector",
    "select_by_hash",
    "select_by_random",
    "select_by_sharding_key",
]

#: A queue selector: ``(queues of the topic, message, caller's argument) -> queue``.
SelectQueue: TypeAlias = Callable[[Sequence[MessageQueue], Message, Any], MessageQueue]

_MASK32: Final = 0xFFFFFFFF
_MASK64: Final = 0xFFFFFFFFFFFFFFFF
_INT32_MIN: Final = -(1 << 31)
_INT32_MAX: Final = (1 << 31) - 1
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1
_JAVA_NAN_BITS: Final = 0x7FF8000000000000  # Double.doubleToLongBits of every NaN


def _int32(value: int) -> int:
    value &= _MASK32
    return value - (1 << 32) if value & 0x80000000 else value


def _long_hash(bits: int) -> int:
    bits &= _MASK64
    return _int32(bits ^ (bits >> 32))


def java_hash_code(value: object) -> int:
    """Java's ``hashCode()`` of the boxed form of ``value``.

    ``str`` -> ``String``; ``bool`` -> ``Boolean`` (1231/1237); ``int`` -> ``Integer`` in the
    int32 range, ``Long`` in the int64 range, ``BigInteger`` beyond (so a negative Java ``long``
    that fits an int hashes differently: pass such ids as they are hashed in Java);
    ``float`` -> ``Double``; ``bytes`` -> ``Arrays.hashCode(byte[])``.

    Args:
        value: the argument to hash.

    Returns:
        The hash as a signed int32.

    Raises:
        ClientError: ``value`` is of another type (its Python ``hash`` would differ between
            processes and from Java).
    """
    if isinstance(value, bool):
        return 1231 if value else 1237
    if isinstance(value, str):
        return java_string_hash(value)
    if isinstance(value, int):
        if _INT32_MIN <= value <= _INT32_MAX:
            return value
        if _INT64_MIN <= value <= _INT64_MAX:
            return _long_hash(value)
        return _big_integer_hash(value)
    if isinstance(value, float):
        bits = _JAVA_NAN_BITS if math.isnan(value) else struct.unpack(">q", struct.pack(">d", value))[0]
        return _long_hash(bits)
    if isinstance(value, bytes | bytearray | memoryview):
        h = 1
        for byte in bytes(value):
            h = (31 * h + (byte - 256 if byte > 127 else byte)) & _MASK32
        return _int32(h)
    raise ClientError(
        f"cannot hash a {type(value).__name__} like Java; pass a str, int, float, bool or bytes"
    )


def _big_integer_hash(value: int) -> int:
    magnitude = abs(value)
    words = magnitude.to_bytes((magnitude.bit_length() + 31) // 32 * 4, "big")
    h = 0
    for i in range(0, len(words), 4):
        h = (31 * h + int.from_bytes(words[i : i + 4], "big")) & _MASK32
    return _int32(_int32(h) * (1 if value > 0 else -1))


def _check(queues: Sequence[MessageQueue], message: Message) -> None:
    if not queues:
        raise RouteNotFound(message.topic, detail=f"no queue to select for topic {message.topic!r}")


def select_by_hash(queues: Sequence[MessageQueue], message: Message, arg: Any) -> MessageQueue:
    """The queue Java's ``SelectMessageQueueByHash`` picks for ``arg``.

    Args:
        queues: the topic's queues, in publish order.
        message: the message (only its topic is used, for errors).
        arg: the order key: ``str``, ``int``, ``float``, ``bool`` or ``bytes``.

    Returns:
        ``queues[abs(java_hash_code(arg) % len(queues))]`` with Java's remainder.

    Raises:
        RouteNotFound: ``queues`` is empty.
        ClientError: ``arg`` cannot be hashed like Java (see :func:`java_hash_code`).
    """
    _check(queues, message)
    # Java's % takes the dividend's sign; abs() of it is Python's abs(h) % n.
    return queues[abs(java_hash_code(arg)) % len(queues)]


def make_random_selector(rng: random.Random) -> SelectQueue:
    """A selector picking a uniformly random queue from ``rng`` (Java ``SelectMessageQueueByRandom``).

    Args:
        rng: the random source (seed it for reproducible tests).

    Returns:
        A :data:`SelectQueue` that ignores the message and argument.
    """

    def select(queues: Sequence[MessageQueue], message: Message, arg: Any) -> MessageQueue:
        _check(queues, message)
        return queues[rng.randrange(len(queues))]

    return select


_select_random: Final = make_random_selector(random.Random())


def select_by_random(queues: Sequence[MessageQueue], message: Message, arg: Any) -> MessageQueue:
    """A random queue (Java ``SelectMessageQueueByRandom``); see :func:`make_random_selector`.

    Args:
        queues: the topic's queues.
        message: the message (only its topic is used, for errors).
        arg: ignored.

    Returns:
        A uniformly random queue from a module-level ``random.Random``.

    Raises:
        RouteNotFound: ``queues`` is empty.
    """
    return _select_random(queues, message, arg)


def select_by_sharding_key(queues: Sequence[MessageQueue], message: Message, arg: Any) -> MessageQueue:
    """The queue for the message's sharding key, hashed as :func:`select_by_hash` does.

    The key is the message's ``__SHARDINGKEY`` property if set, else ``arg``; so a message keeps
    its queue whoever sends it, and callers without the property can pass the key directly.

    Args:
        queues: the topic's queues, in publish order.
        message: the message.
        arg: the key to use when the message has no sharding key.

    Returns:
        The selected queue.

    Raises:
        RouteNotFound: ``queues`` is empty.
        InvalidMessage: neither the message nor ``arg`` gives a key.
        ClientError: ``arg`` cannot be hashed like Java.
    """
    key = message.sharding_key if message.sharding_key is not None else arg
    if key is None:
        raise InvalidMessage(f"a message to topic {message.topic!r} has no sharding key and no argument")
    return select_by_hash(queues, message, key)
