"""Orderly-send queue selectors with Java hashCode semantics (pure)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

import pytest

from rocketmq_py.errors import ClientError, InvalidMessage, RouteNotFound
from rocketmq_py.producer._selectors import (
    SelectQueue,
    java_hash_code,
    make_random_selector,
    select_by_hash,
    select_by_random,
    select_by_sharding_key,
)
from rocketmq_py.protocol import Message, MessageQueue

QUEUES = tuple(MessageQueue("T", f"broker-{b}", i) for b in "ab" for i in range(4))  # 8 queues
MSG = Message("T", b"x")


@pytest.mark.parametrize(
    ("value", "java_hash"),
    [
        # String.hashCode
        ("", 0),
        ("hello", 99162322),
        ("Aa", 2112),
        ("BB", 2112),
        ("polygenelubricants", -(2**31)),
        # Integer.hashCode: the value itself
        (0, 0),
        (-7, -7),
        (2**31 - 1, 2**31 - 1),
        (-(2**31), -(2**31)),
        # Long.hashCode: (int) (v ^ (v >>> 32))
        (2**31, -(2**31)),
        (2**32, 1),
        (2**32 + 5, 4),
        (2**63 - 1, -(2**31)),
        (-(2**63), -(2**31)),
        (-(2**31) - 1, -(2**31)),  # 0xFFFFFFFF7FFFFFFF
        (-(2**32), -1),  # 0xFFFFFFFF00000000
        # BigInteger.hashCode beyond int64
        (2**64, 961),
        (-(2**64), -961),
        # Boolean.hashCode
        (True, 1231),
        (False, 1237),
        # Double.hashCode
        (1.0, 1072693248),
        (0.0, 0),
        (-0.0, -(2**31)),
        (math.nan, 2146959360),
        # Arrays.hashCode(byte[]) (signed bytes)
        (b"", 1),
        (b"\x01\x02", 994),
        (b"\xff", 30),
        (bytearray(b"\x01\x02"), 994),
    ],
)
def test_java_hash_code(value: object, java_hash: int) -> None:
    assert java_hash_code(value) == java_hash


@pytest.mark.parametrize("value", [None, (1, 2), object()])
def test_unhashable_arguments(value: object) -> None:
    with pytest.raises(ClientError, match="cannot hash"):
        java_hash_code(value)


def _java_select(h: int, size: int) -> int:
    # Java: value = h % size (sign of the dividend); if (value < 0) value = Math.abs(value)
    value = int(math.fmod(h, size))
    return abs(value)


@pytest.mark.parametrize(
    ("arg", "index"),
    [
        ("hello", 2),  # 99162322 % 8
        (-7, 7),  # Java -7 % 8 == -7 -> 7 (Python's -7 % 8 would be 1)
        (13, 5),
        ("polygenelubricants", 0),  # MIN_VALUE % 8 == 0
        (2**32 + 5, 4),
    ],
)
def test_select_by_hash_known_values(arg: Any, index: int) -> None:
    assert select_by_hash(QUEUES, MSG, arg) == QUEUES[index]


def test_select_by_hash_matches_java_remainder_for_odd_sizes() -> None:
    rng = random.Random(1)
    for size in (1, 3, 5, 7):
        queues = QUEUES[:size]
        for _ in range(200):
            arg = rng.randrange(-(2**31), 2**31)
            assert select_by_hash(queues, MSG, arg) == queues[_java_select(arg, size)]
        for text in ("order-1", "polygenelubricants", "zzzzzzzzzz"):
            assert select_by_hash(queues, MSG, text) == queues[_java_select(java_hash_code(text), size)]


def test_select_by_hash_is_stable() -> None:
    picks = {select_by_hash(QUEUES, MSG, "order-42") for _ in range(10)}
    assert len(picks) == 1


def test_random_selector_is_injectable() -> None:
    one = make_random_selector(random.Random(5))
    two = make_random_selector(random.Random(5))
    assert [one(QUEUES, MSG, None) for _ in range(20)] == [two(QUEUES, MSG, None) for _ in range(20)]
    assert {select_by_random(QUEUES, MSG, None) for _ in range(400)} == set(QUEUES)


def test_sharding_key_property_wins_over_argument() -> None:
    message = Message("T", b"x")
    message.sharding_key = "hello"
    assert select_by_sharding_key(QUEUES, message, "other") == QUEUES[2]
    assert select_by_sharding_key(QUEUES, MSG, "hello") == QUEUES[2]
    assert select_by_sharding_key(QUEUES, MSG, 13) == QUEUES[5]
    with pytest.raises(InvalidMessage, match="no sharding key"):
        select_by_sharding_key(QUEUES, MSG, None)


@pytest.mark.parametrize("selector", [select_by_hash, select_by_random, select_by_sharding_key])
def test_empty_queue_list(selector: SelectQueue) -> None:
    with pytest.raises(RouteNotFound, match="no queue") as caught:
        selector((), MSG, "k")
    assert caught.value.topic == "T"


def test_selectors_fit_the_alias() -> None:
    def pick_last(queues: Sequence[MessageQueue], message: Message, arg: Any) -> MessageQueue:
        return queues[-1]

    selectors: list[SelectQueue] = [select_by_hash, select_by_random, select_by_sharding_key, pick_last]
    assert all(selector(QUEUES, MSG, "k") in QUEUES for selector in selectors)
