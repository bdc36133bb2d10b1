"""The message value types: :class:`Message` (to send) and :class:`MessageExt` (as stored/pulled).

As in the Java client, the properties dict is the single source of truth: ``tags``, ``keys``,
``delay_level`` and the other conveniences read and write well-known properties
(:class:`~rocketmq_py.protocol._properties.PropertyKey`), so what you see is what goes on the wire.
The wire encodings live elsewhere: the properties string in ``_properties``, batches in ``_batch``,
the stored layout in ``_stored``; both classes here are plain, mutable, slotted records.

:class:`MessageExt` is built at pull rate (hundreds of thousands per second), so the decoder fills
its slots directly and everything derived (host strings, the offset msgId) is computed on first
access. Hosts are kept as the raw stored form: IP (4 or 16 bytes) + int32 port.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from rocketmq_py.protocol._ids import format_socket_address, offset_msg_id_from_raw, pack_socket_address
from rocketmq_py.protocol._properties import KEY_SEPARATOR, PropertyKey

__all__ = ["Message", "MessageExt", "SysFlag"]


class SysFlag:
    """Bits of a stored message's ``sys_flag`` (Java ``MessageSysFlag``)."""

    COMPRESSED: Final = 0x1
    MULTI_TAGS: Final = 0x2
    TRANSACTION_NOT_TYPE: Final = 0x0
    TRANSACTION_PREPARED_TYPE: Final = 0x4
    TRANSACTION_COMMIT_TYPE: Final = 0x8
    TRANSACTION_ROLLBACK_TYPE: Final = 0xC
    TRANSACTION_MASK: Final = 0xC
    BORNHOST_V6: Final = 0x10
    STOREHOST_V6: Final = 0x20
    NEED_UNWRAP: Final = 0x40
    INNER_BATCH: Final = 0x80
    COMPRESSION_LZ4: Final = 0x100
    COMPRESSION_ZSTD: Final = 0x200
    COMPRESSION_ZLIB: Final = 0x300
    COMPRESSION_MASK: Final = 0x700


def _join_keys(keys: str | Iterable[str]) -> str:
    return keys if isinstance(keys, str) else KEY_SEPARATOR.join(keys)


class Message:
    """A message to send (and the base of :class:`MessageExt`).

    Args:
        topic: the topic name.
        body: the payload.
        tags: one tag (stored in property ``TAGS``), used for broker-side filtering.
        keys: message keys for the broker's index; several keys are joined by one space in
            property ``KEYS`` (a ``str`` is stored as is, so a space in it makes several keys).
        flag: the int32 the application may use freely (Java ``Message.flag``).
        properties: any further properties; copied. ``tags`` and ``keys`` given as arguments win
            over ``TAGS``/``KEYS`` entries here.
        delay_level: delayed delivery level 1..18 (property ``DELAY``).

    Equality compares topic, body, flag and properties.
    """

    __slots__ = ("body", "flag", "properties", "topic")

    topic: str
    body: bytes
    flag: int
    properties: dict[str, str]

    def __init__(
        self,
        topic: str,
        body: bytes = b"",
        *,
        tags: str | None = None,
        keys: str | Iterable[str] = (),
        flag: int = 0,
        properties: Mapping[str, str] | None = None,
        delay_level: int | None = None,
    ) -> None:
        self.topic = topic
        self.body = body
        self.flag = flag
        self.properties = dict(properties) if properties else {}
        if tags:
            self.properties[PropertyKey.TAGS] = tags
        if keys:
            joined = _join_keys(keys)
            if joined:
                self.properties[PropertyKey.KEYS] = joined
        if delay_level is not None:
            self.delay_level = delay_level

    # -- conveniences over well-known properties -------------------------------------------------

    @property
    def tags(self) -> str | None:
        """Property ``TAGS``, or ``None``."""
        return self.properties.get(PropertyKey.TAGS)

    @tags.setter
    def tags(self, value: str | None) -> None:
        self._put(PropertyKey.TAGS, value)

    @property
    def keys(self) -> tuple[str, ...]:
        """Property ``KEYS`` split on spaces (empty tuple when absent)."""
        joined = self.properties.get(PropertyKey.KEYS)
        if not joined:
            return ()
        return tuple(key for key in joined.split(KEY_SEPARATOR) if key)

    @keys.setter
    def keys(self, value: str | Iterable[str]) -> None:
        self._put(PropertyKey.KEYS, _join_keys(value))

    @property
    def delay_level(self) -> int:
        """Property ``DELAY`` as an int; 0 (no delay) when absent or not a number."""
        return _int_property(self.properties.get(PropertyKey.DELAY_TIME_LEVEL))

    @delay_level.setter
    def delay_level(self, value: int | None) -> None:
        self._put(PropertyKey.DELAY_TIME_LEVEL, None if value is None else str(value))

    @property
    def deliver_time_ms(self) -> int:
        """Property ``TIMER_DELIVER_MS`` (5.x absolute delivery time, epoch ms); 0 when absent.

        Needs a 5.0+ broker. A 4.x broker would deliver the message at once, so the producer
        refuses to send it there (``DeliveryTimeNotSupported``, nothing stored); delay levels
        work on every release.
        """
        return _int_property(self.properties.get(PropertyKey.TIMER_DELIVER_MS))

    @deliver_time_ms.setter
    def deliver_time_ms(self, value: int | None) -> None:
        self._put(PropertyKey.TIMER_DELIVER_MS, None if value is None else str(value))

    @property
    def delay_time_sec(self) -> int:
        """Property ``TIMER_DELAY_SEC``: deliver this many seconds after the broker stores it (5.x); 0 when absent.

        Java ``Message.setDelayTimeSec``. The broker turns it into a delivery time on arrival (its
        ``timerMaxDelaySec``, 3 days by default, is the limit; the timer's precision is 1 s by
        default). As :attr:`deliver_time_ms`, it needs a 5.0+ broker.
        """
        return _int_property(self.properties.get(PropertyKey.TIMER_DELAY_SEC))

    @delay_time_sec.setter
    def delay_time_sec(self, value: int | None) -> None:
        self._put(PropertyKey.TIMER_DELAY_SEC, str(value) if value else None)  # 0 or None: no delay

    @property
    def delay_time_ms(self) -> int:
        """Property ``TIMER_DELAY_MS``: as :attr:`delay_time_sec`, in milliseconds; 0 when absent.

        Java ``Message.setDelayTimeMs``.
        """
        return _int_property(self.properties.get(PropertyKey.TIMER_DELAY_MS))

    @delay_time_ms.setter
    def delay_time_ms(self, value: int | None) -> None:
        self._put(PropertyKey.TIMER_DELAY_MS, str(value) if value else None)  # 0 or None: no delay

    @property
    def wait_store_msg_ok(self) -> bool:
        """Property ``WAIT``; Java treats absent as ``True``."""
        value = self.properties.get(PropertyKey.WAIT_STORE_MSG_OK)
        return value is None or value.lower() == "true"

    @wait_store_msg_ok.setter
    def wait_store_msg_ok(self, value: bool) -> None:
        self.properties[PropertyKey.WAIT_STORE_MSG_OK] = "true" if value else "false"

    @property
    def sharding_key(self) -> str | None:
        """Property ``__SHARDINGKEY`` (orderly sends), or ``None``."""
        return self.properties.get(PropertyKey.SHARDING_KEY)

    @sharding_key.setter
    def sharding_key(self, value: str | None) -> None:
        self._put(PropertyKey.SHARDING_KEY, value)

    @property
    def uniq_key(self) -> str | None:
        """Property ``UNIQ_KEY``: the client-side msgId set by the producer, or ``None``."""
        return self.properties.get(PropertyKey.UNIQ_KEY)

    def _put(self, key: str, value: str | None) -> None:
        if value:
            self.properties[key] = value
        else:
            self.properties.pop(key, None)

    # -- value semantics -------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if type(other) is not Message or type(self) is not Message:
            return NotImplemented
        return (
            self.topic == other.topic
            and self.body == other.body
            and self.flag == other.flag
            and self.properties == other.properties
        )

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return (
            f"Message(topic={self.topic!r}, body={_short(self.body)}, flag={self.flag}, "
            f"properties={self.properties!r})"
        )


def _int_property(value: str | None) -> int:
    if value is None:
        return 0
    try:
        return int(value)
    except ValueError:
        return 0


def _short(body: bytes) -> str:
    return repr(body) if len(body) <= 32 else f"<{len(body)} bytes>"


# Slots of MessageExt that describe the stored message and where it was read (everything but caches).
_EXT_FIELDS: Final = (
    "topic",
    "body",
    "flag",
    "properties",
    "broker_name",
    "queue_id",
    "queue_offset",
    "commit_log_offset",
    "sys_flag",
    "born_timestamp",
    "born_address",
    "store_timestamp",
    "store_address",
    "reconsume_times",
    "prepared_transaction_offset",
    "body_crc",
)


class MessageExt(Message):
    """A message as the broker stored it: pulled, viewed by id, or checked for a transaction.

    Keyword arguments mirror the attributes; hosts are given as ``"ip:port"`` text
    (``"[ip]:port"`` for IPv6) and the BORNHOST_V6/STOREHOST_V6 bits of ``sys_flag`` are set to
    match them. The decoder bypasses ``__init__`` and fills the slots directly.

    Attributes:
        broker_name: the broker the message was read from, set when it came from a known queue
            (push and lite pull consumers, CONSUME_MESSAGE_DIRECTLY, the Spark reader's
            messages), as Java's client sets ``brokerName``; ``""`` otherwise (e.g.
            :func:`~rocketmq_py.protocol.decode_messages` of raw bytes). Together with
            ``queue_id`` it names the queue (broker-a's queue 0 is not broker-b's). Not part of
            the stored record nor a property: it is never sent.
        queue_id, queue_offset: the queue and the message's position in it.
        commit_log_offset: physical offset in the broker's commit log.
        sys_flag: :class:`SysFlag` bits (COMPRESSED is cleared once the body is decompressed).
        born_timestamp, store_timestamp: epoch ms at the producer and at the broker.
        born_address, store_address: raw IP (4 or 16 bytes) + int32 port, as stored.
        reconsume_times: delivery attempts so far (retry topic).
        prepared_transaction_offset: commit-log offset of the half message (transactions).
        body_crc: the stored body's CRC32 masked to 31 bits (Java ``UtilAll.crc32``).
    """

    __slots__ = (
        "_offset_msg_id",
        "body_crc",
        "born_address",
        "born_timestamp",
        "broker_name",
        "commit_log_offset",
        "prepared_transaction_offset",
        "queue_id",
        "queue_offset",
        "reconsume_times",
        "store_address",
        "store_timestamp",
        "sys_flag",
    )

    broker_name: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    sys_flag: int
    born_timestamp: int
    born_address: bytes
    store_timestamp: int
    store_address: bytes
    reconsume_times: int
    prepared_transaction_offset: int
    body_crc: int
    _offset_msg_id: tuple[bytes, int, str]  # (store_address, commit_log_offset, id), set lazily

    def __init__(
        self,
        topic: str,
        body: bytes = b"",
        *,
        tags: str | None = None,
        keys: str | Iterable[str] = (),
        flag: int = 0,
        properties: Mapping[str, str] | None = None,
        broker_name: str = "",
        queue_id: int = 0,
        queue_offset: int = 0,
        commit_log_offset: int = 0,
        sys_flag: int = 0,
        born_timestamp: int = 0,
        born_host: str = "0.0.0.0:0",
        store_timestamp: int = 0,
        store_host: str = "0.0.0.0:0",
        reconsume_times: int = 0,
        prepared_transaction_offset: int = 0,
        body_crc: int = 0,
    ) -> None:
        super().__init__(topic, body, tags=tags, keys=keys, flag=flag, properties=properties)
        self.broker_name = broker_name
        self.queue_id = queue_id
        self.queue_offset = queue_offset
        self.commit_log_offset = commit_log_offset
        self.born_timestamp = born_timestamp
        self.born_address = pack_socket_address(born_host)
        self.store_timestamp = store_timestamp
        self.store_address = pack_socket_address(store_host)
        self.reconsume_times = reconsume_times
        self.prepared_transaction_offset = prepared_transaction_offset
        self.body_crc = body_crc
        sys_flag &= ~(SysFlag.BORNHOST_V6 | SysFlag.STOREHOST_V6)
        if len(self.born_address) == 20:
            sys_flag |= SysFlag.BORNHOST_V6
        if len(self.store_address) == 20:
            sys_flag |= SysFlag.STOREHOST_V6
        self.sys_flag = sys_flag

    @property
    def born_host(self) -> str:
        """The producer's address as ``"ip:port"``."""
        return format_socket_address(self.born_address)

    @property
    def store_host(self) -> str:
        """The broker's store address as ``"ip:port"``."""
        return format_socket_address(self.store_address)

    @property
    def offset_msg_id(self) -> str:
        """The broker's msgId: store address + commit-log offset as uppercase hex (computed once)."""
        address, offset = self.store_address, self.commit_log_offset
        cached: tuple[bytes, int, str] | None = getattr(self, "_offset_msg_id", None)
        if cached is not None and cached[0] is address and cached[1] == offset:
            return cached[2]
        value = offset_msg_id_from_raw(address, offset)
        self._offset_msg_id = (address, offset, value)
        return value

    @property
    def msg_id(self) -> str:
        """What users call the msgId: property ``UNIQ_KEY`` if present, else :attr:`offset_msg_id`."""
        return self.properties.get(PropertyKey.UNIQ_KEY) or self.offset_msg_id

    @property
    def transaction_id(self) -> str | None:
        """The UNIQ_KEY of a transactional message (property ``TRAN_MSG`` = true), else ``None``."""
        prepared = self.properties.get(PropertyKey.TRANSACTION_PREPARED)
        if prepared is not None and prepared.lower() == "true":
            return self.properties.get(PropertyKey.UNIQ_KEY)
        return None

    def __eq__(self, other: object) -> bool:
        if type(other) is not MessageExt or type(self) is not MessageExt:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _EXT_FIELDS)

    __hash__ = None  # mutable

    def __repr__(self) -> str:
        return (
            f"MessageExt(topic={self.topic!r}, broker_name={self.broker_name!r}, queue_id={self.queue_id}, "
            f"queue_offset={self.queue_offset}, "
            f"msg_id={self.msg_id!r}, body={_short(self.body)}, properties={self.properties!r})"
        )
