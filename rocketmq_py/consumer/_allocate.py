"""Queue allocation: which of a topic's queues this member of a consumer group reads.

Every member of a CLUSTERING group runs the same strategy over the same inputs (all queues of
the topic, all client ids of the group) and keeps only its own share, so the strategies must be
deterministic and give the same answer as the Java client's: a group may mix Java and Python
consumers, and two members that disagree would read a queue twice or not at all.

Inputs
------
``mq_all`` must be sorted in Java's ``MessageQueue`` order and ``cid_all`` in Java's string order,
as the rebalance does before it calls a strategy (:func:`sort_queues`, :func:`sort_consumers`).
Java compares strings by UTF-16 code unit, Python by code point; the two differ only for
characters outside the Basic Multilingual Plane, and the helpers here sort like Java.

Every strategy except :class:`AllocateByConfig` first checks its inputs like Java's
``AbstractAllocateMessageQueueStrategy.check``: an empty ``current_cid``, ``mq_all`` or
``cid_all`` raises :class:`~rocketmq_py.errors.ClientError` (Java: ``IllegalArgumentException``);
a ``current_cid`` missing from ``cid_all`` gets an empty list (Java logs and returns nothing).

Strategies (``name`` is Java's ``getName()``)
---------------------------------------------
``AVG`` (:class:`AllocateAveragely`, the default)
    Contiguous blocks. With ``n`` queues, ``c`` consumers and ``mod = n % c``, consumer ``i``
    takes ``n // c + 1`` queues if ``i < mod``, else ``n // c`` (at most one each when
    ``n <= c``), the blocks laid end to end in consumer order: 8 queues over 4 consumers give
    ``[0, 1] [2, 3] [4, 5] [6, 7]``; 9 over 4 give ``[0, 1, 2] [3, 4] [5, 6] [7, 8]``.
``AVG_BY_CIRCLE`` (:class:`AllocateAveragelyByCircle`)
    Round robin: consumer ``i`` takes every queue ``j`` with ``j % c == i``.
``CONSISTENT_HASH`` (:class:`AllocateConsistentHash`)
    A hash ring holding ``virtual_node_count`` (default 10) virtual nodes per consumer, keyed
    ``"<cid>-<k>"``; a queue goes to the first virtual node at or after the hash of its Java
    ``toString()`` (``MessageQueue [topic=T, brokerName=B, queueId=Q]``), wrapping round to the
    smallest key. The hash (:func:`md5_hash`) is the first four bytes of the MD5 digest of the
    key's UTF-8 bytes, read big-endian as an unsigned 32-bit number. Members joining or leaving
    move only the queues next to their virtual nodes.
``CONFIG`` (:class:`AllocateByConfig`)
    A fixed list chosen by the user, whatever the group looks like (no input checks, as Java).
``MACHINE_ROOM`` (:class:`AllocateByMachineRoom`)
    Only queues on brokers named ``<room>@<name>`` whose room is in ``consumer_idcs`` are
    shared out; with ``m`` of them, consumer ``i`` takes ``[i * (m // c), (i + 1) * (m // c))``
    plus queue ``i + (m // c) * c`` when ``i < m % c``.
``MACHINE_ROOM_NEARBY-<inner>`` (:class:`AllocateMachineRoomNearby`)
    Wraps another strategy. Queues and consumers are grouped by room through two resolver
    functions; the queues of my room are shared among the consumers of my room, and the queues
    of each room that has no consumer at all are shared among every consumer, room by room in
    room-name order. Queues of other rooms that have consumers are left to those.

:func:`get_strategy` and :func:`strategy_class` look strategies up by Java name or by a Python
spelling (``"averagely"``, ``"averagely_by_circle"``, ``"consistent_hash"``, ...).
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Final, Protocol, TypeAlias

from rocketmq_py.errors import ClientError, InvalidOption
from rocketmq_py.protocol._bodies import MessageQueue

__all__ = [
    "DEFAULT_VIRTUAL_NODE_COUNT",
    "AllocateAveragely",
    "AllocateAveragelyByCircle",
    "AllocateByConfig",
    "AllocateByMachineRoom",
    "AllocateConsistentHash",
    "AllocateMachineRoomNearby",
    "AllocateStrategy",
    "HashFunction",
    "allocate",
    "get_strategy",
    "java_string_key",
    "md5_hash",
    "queue_sort_key",
    "queue_to_java_string",
    "sort_consumers",
    "sort_queues",
    "strategy_class",
]

#: Virtual nodes per consumer on the consistent-hash ring (Java's
#: ``AllocateMessageQueueConsistentHash()`` uses 10).
DEFAULT_VIRTUAL_NODE_COUNT: Final = 10

#: A ring hash: string key -> integer position (Java ``HashFunction.hash``, a ``long``).
HashFunction: TypeAlias = Callable[[str], int]


class AllocateStrategy(Protocol):
    """What the rebalance calls: Java's ``AllocateMessageQueueStrategy``."""

    @property
    def name(self) -> str:
        """Java's ``getName()``, reported to tools that ask a consumer for its running info."""
        ...

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]:
        """This consumer's share of ``mq_all``.

        Args:
            consumer_group: the group (only used in messages).
            current_cid: this consumer's client id.
            mq_all: every queue of the topic, sorted (:func:`sort_queues`).
            cid_all: every client id of the group, sorted (:func:`sort_consumers`).

        Returns:
            The queues this consumer should pull, in ``mq_all`` order for the built-in
            strategies; empty when ``current_cid`` is not in ``cid_all``.

        Raises:
            ClientError: ``current_cid``, ``mq_all`` or ``cid_all`` is empty.
        """
        ...


# --- Java ordering and string forms --------------------------------------------------------------


def java_string_key(s: str) -> bytes:
    """Sort key ordering strings as Java's ``String.compareTo`` (by UTF-16 code unit).

    Big-endian UTF-16 bytes compare exactly as the code-unit sequence does, so a character
    outside the BMP (a surrogate pair, 0xD800-0xDBFF first) sorts before U+E000..U+FFFF, as in
    Java, where Python's code-point order puts it after.
    """
    return s.encode("utf-16-be", "surrogatepass")


def queue_sort_key(mq: MessageQueue) -> tuple[bytes, bytes, int]:
    """Sort key for Java's ``MessageQueue.compareTo``: topic, broker name, queue id."""
    return java_string_key(mq.topic), java_string_key(mq.broker_name), mq.queue_id


def sort_queues(queues: Iterable[MessageQueue]) -> list[MessageQueue]:
    """``queues`` in the order the Java rebalance sorts ``mqAll`` before allocating."""
    return sorted(queues, key=queue_sort_key)


def sort_consumers(cids: Iterable[str]) -> list[str]:
    """Client ids in the order the Java rebalance sorts ``cidAll`` before allocating."""
    return sorted(cids, key=java_string_key)


def queue_to_java_string(mq: MessageQueue) -> str:
    """Java's ``MessageQueue.toString()``, the key the consistent-hash ring routes."""
    return f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"


def md5_hash(key: str) -> int:
    """The consistent-hash ring's default hash, as Java's ``ConsistentHashRouter.MD5Hash``.

    The first four bytes of MD5 of the key's UTF-8 bytes, most significant first, as an
    unsigned 32-bit number (Java shifts the accumulator left by 8 before or-ing in each byte).
    Java's ``String.getBytes()`` uses the platform charset, UTF-8 on every current JVM; it
    writes ``?`` for a lone surrogate, as ``errors="replace"`` does here.
    """
    digest = hashlib.md5(key.encode("utf-8", "replace"), usedforsecurity=False).digest()
    return int.from_bytes(digest[:4], "big")


def _check(current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]) -> bool:
    """Java's common input check: raise on empty input, False if ``current_cid`` is not a member."""
    if not current_cid:
        raise ClientError("allocate: current client id is empty")
    if not mq_all:
        raise ClientError("allocate: the topic has no message queues (mq_all is empty)")
    if not cid_all:
        raise ClientError("allocate: the consumer group has no members (cid_all is empty)")
    return current_cid in cid_all


# --- the strategies ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AllocateAveragely:
    """``AVG``: contiguous blocks, the first ``n % c`` consumers taking one queue more."""

    name: ClassVar[str] = "AVG"

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]:
        """This consumer's block of ``mq_all`` (see :meth:`AllocateStrategy.allocate`)."""
        if not _check(current_cid, mq_all, cid_all):
            return []
        index = cid_all.index(current_cid)
        n, c = len(mq_all), len(cid_all)
        mod = n % c
        bigger = mod > 0 and index < mod
        size = 1 if n <= c else n // c + int(bigger)
        start = index * size if bigger else index * size + mod
        count = min(size, n - start)
        return list(mq_all[start : start + count]) if count > 0 else []


@dataclass(frozen=True, slots=True)
class AllocateAveragelyByCircle:
    """``AVG_BY_CIRCLE``: round robin, queue ``j`` to consumer ``j % c``."""

    name: ClassVar[str] = "AVG_BY_CIRCLE"

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]:
        """Every ``len(cid_all)``-th queue from this consumer's index on."""
        if not _check(current_cid, mq_all, cid_all):
            return []
        index = cid_all.index(current_cid)
        return list(mq_all[index :: len(cid_all)])


@dataclass(frozen=True, slots=True)
class AllocateConsistentHash:
    """``CONSISTENT_HASH``: a hash ring of ``virtual_node_count`` virtual nodes per consumer.

    Args:
        virtual_node_count: virtual nodes per consumer (Java's ``virtualNodeCnt``); 0 leaves the
            ring empty and nobody gets a queue, as in Java.
        hash_function: position of a key on the ring; the default is Java's MD5 hash.

    Raises:
        InvalidOption: ``virtual_node_count`` is negative.
    """

    virtual_node_count: int = DEFAULT_VIRTUAL_NODE_COUNT
    hash_function: HashFunction = md5_hash

    name: ClassVar[str] = "CONSISTENT_HASH"

    def __post_init__(self) -> None:
        if self.virtual_node_count < 0:
            raise InvalidOption(f"illegal virtual node count: {self.virtual_node_count}")

    def ring(self, cid_all: Sequence[str]) -> tuple[list[int], list[str]]:
        """The ring as two parallel lists: sorted positions and the client id owning each.

        Built as Java's ``ConsistentHashRouter``: consumers are added in ``cid_all`` order, a
        position already taken is overwritten by the later virtual node, and a client id listed
        twice continues its replica numbering from the virtual nodes it still holds.
        """
        owner: dict[int, str] = {}
        held: dict[str, int] = {}  # virtual nodes each client id currently holds on the ring
        for cid in cid_all:
            first = held.get(cid, 0)
            for replica in range(first, first + self.virtual_node_count):
                position = self.hash_function(f"{cid}-{replica}")
                previous = owner.get(position)
                if previous is not None:
                    held[previous] -= 1
                owner[position] = cid
                held[cid] = held.get(cid, 0) + 1
        positions = sorted(owner)
        return positions, [owner[p] for p in positions]

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]:
        """The queues whose ring successor is one of this consumer's virtual nodes."""
        if not _check(current_cid, mq_all, cid_all):
            return []
        positions, owners = self.ring(cid_all)
        if not positions:
            return []
        result: list[MessageQueue] = []
        for mq in mq_all:
            at = bisect_left(positions, self.hash_function(queue_to_java_string(mq)))
            if owners[at if at < len(positions) else 0] == current_cid:
                result.append(mq)
        return result


@dataclass(frozen=True, slots=True)
class AllocateByConfig:
    """``CONFIG``: always the configured ``queues``, whatever the inputs (Java does no checks)."""

    queues: tuple[MessageQueue, ...]

    name: ClassVar[str] = "CONFIG"

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]:
        """A copy of the configured queues."""
        return list(self.queues)


def _broker_room(broker_name: str) -> str | None:
    """``room`` of a broker named ``room@name``, as Java's ``split("@")`` with length 2, or None.

    Java's ``split`` drops trailing empty strings, so ``"room@name@"`` still has two parts
    while ``"room@"`` has one; a leading empty part stays (``"@name"`` is room ``""``).
    """
    parts = broker_name.split("@")
    while parts and not parts[-1]:
        parts.pop()
    return parts[0] if len(parts) == 2 else None


@dataclass(frozen=True, slots=True)
class AllocateByMachineRoom:
    """``MACHINE_ROOM``: share the queues of brokers ``<room>@<name>`` in ``consumer_idcs``.

    Queues of other brokers (other rooms, or names without ``@``) are nobody's. Java's
    ``consumeridcs``.
    """

    consumer_idcs: frozenset[str]

    name: ClassVar[str] = "MACHINE_ROOM"

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]:
        """This consumer's block of the eligible queues plus, maybe, one of the remainder."""
        if not _check(current_cid, mq_all, cid_all):
            return []
        index = cid_all.index(current_cid)
        eligible = [mq for mq in mq_all if _broker_room(mq.broker_name) in self.consumer_idcs]
        c = len(cid_all)
        per, rem = divmod(len(eligible), c)
        result = eligible[index * per : index * per + per]
        if rem > index:
            result.append(eligible[index + per * c])
        return result


@dataclass(frozen=True, slots=True)
class AllocateMachineRoomNearby:
    """``MACHINE_ROOM_NEARBY-<inner>``: prefer queues in my room, share the unattended ones.

    Args:
        strategy: the strategy that shares each group of queues (Java's
            ``allocateMessageQueueStrategy``).
        broker_room: the room a queue's broker is deployed in (``brokerDeployIn``).
        consumer_room: the room a client id is deployed in (``consumerDeployIn``).

    Both resolvers must return a non-empty room name; an empty one raises ``ClientError`` from
    :meth:`allocate`, as Java's ``IllegalArgumentException``.
    """

    strategy: AllocateStrategy
    broker_room: Callable[[MessageQueue], str]
    consumer_room: Callable[[str], str]

    @property
    def name(self) -> str:
        """``MACHINE_ROOM_NEARBY-`` plus the wrapped strategy's name, as Java."""
        return f"MACHINE_ROOM_NEARBY-{self.strategy.name}"

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]:
        """My room's share among my room's consumers, then each unattended room's share."""
        if not _check(current_cid, mq_all, cid_all):
            return []
        queues_by_room: dict[str, list[MessageQueue]] = {}
        for mq in mq_all:
            room = self.broker_room(mq)
            if not room:
                raise ClientError(f"machine room is empty for {queue_to_java_string(mq)}")
            queues_by_room.setdefault(room, []).append(mq)
        consumers_by_room: dict[str, list[str]] = {}
        for cid in cid_all:
            room = self.consumer_room(cid)
            if not room:
                raise ClientError(f"machine room is empty for consumer id {cid!r}")
            consumers_by_room.setdefault(room, []).append(cid)

        my_room = self.consumer_room(current_cid)
        result: list[MessageQueue] = []
        mine = queues_by_room.pop(my_room, None)
        if mine:
            result += self.strategy.allocate(consumer_group, current_cid, mine, consumers_by_room[my_room])
        for room in sorted(queues_by_room, key=java_string_key):  # Java iterates a TreeMap
            if room not in consumers_by_room:
                result += self.strategy.allocate(consumer_group, current_cid, queues_by_room[room], cid_all)
        return result


# --- lookup by name ------------------------------------------------------------------------------

_CLASSES: Final[Mapping[str, type[AllocateStrategy]]] = {
    "AVG": AllocateAveragely,
    "AVG_BY_CIRCLE": AllocateAveragelyByCircle,
    "CONSISTENT_HASH": AllocateConsistentHash,
    "CONFIG": AllocateByConfig,
    "MACHINE_ROOM": AllocateByMachineRoom,
    "MACHINE_ROOM_NEARBY": AllocateMachineRoomNearby,
}

_ALIASES: Final[Mapping[str, str]] = {
    "AVERAGELY": "AVG",
    "AVERAGELY_BY_CIRCLE": "AVG_BY_CIRCLE",
    "BY_CONFIG": "CONFIG",
    "BY_MACHINE_ROOM": "MACHINE_ROOM",
}

# Strategies that work without configuration, by Java name.
_DEFAULTS: Final[Mapping[str, AllocateStrategy]] = {
    "AVG": AllocateAveragely(),
    "AVG_BY_CIRCLE": AllocateAveragelyByCircle(),
    "CONSISTENT_HASH": AllocateConsistentHash(),
}


def _java_name(name: str) -> str:
    key = name.strip().upper().replace("-", "_")
    key = _ALIASES.get(key, key)
    if key not in _CLASSES:
        known = ", ".join([*_CLASSES, *(a.lower() for a in _ALIASES)])
        raise InvalidOption(f"unknown allocation strategy {name!r}; known: {known}")
    return key


def strategy_class(name: str) -> type[AllocateStrategy]:
    """The strategy class for a Java name (``"AVG"``) or Python spelling (``"averagely"``).

    Case-insensitive; ``-`` and ``_`` are interchangeable.

    Raises:
        ClientError: the name is unknown.
    """
    return _CLASSES[_java_name(name)]


def get_strategy(strategy: str | AllocateStrategy) -> AllocateStrategy:
    """A ready strategy: ``strategy`` itself, or the default instance for a name.

    Args:
        strategy: a strategy object, or the name of one that needs no configuration
            (``AVG``, ``AVG_BY_CIRCLE``, ``CONSISTENT_HASH`` and their Python spellings).

    Raises:
        ClientError: the name is unknown, or names a strategy that needs configuration
            (``CONFIG``, ``MACHINE_ROOM``, ``MACHINE_ROOM_NEARBY``: build the class instead).
    """
    if not isinstance(strategy, str):
        return strategy
    key = _java_name(strategy)
    default = _DEFAULTS.get(key)
    if default is None:
        cls = _CLASSES[key]
        raise InvalidOption(f"allocation strategy {key} needs configuration: construct {cls.__name__}(...)")
    return default


def allocate(
    strategy: str | AllocateStrategy,
    consumer_group: str,
    current_cid: str,
    mq_all: Sequence[MessageQueue],
    cid_all: Sequence[str],
) -> list[MessageQueue]:
    """This consumer's share of ``mq_all`` under ``strategy`` (a strategy or a name).

    ``mq_all`` and ``cid_all`` must already be sorted (:func:`sort_queues`,
    :func:`sort_consumers`), as every member of the group must see the same order.

    Raises:
        ClientError: an unknown or unconfigured strategy name, or an empty ``current_cid``,
            ``mq_all`` or ``cid_all``.
    """
    return get_strategy(strategy).allocate(consumer_group, current_cid, mq_all, cid_all)
