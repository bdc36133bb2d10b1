"""Message properties: the ``key U+0001 value U+0002`` string and the well-known keys.

Wire layout (protocol.md §4.1)::

    properties := ( key "\\x01" value "\\x02" )*          UTF-8 encoded

On send the string travels in the SEND_MESSAGE header (field ``properties``, or ``i`` in the V2
header) and, inside batches and stored messages, behind a **signed int16** length prefix, so its
UTF-8 form is at most :data:`MAX_PROPERTIES_BYTES` (32767) bytes.

Decoding follows the Java rules exactly: split on U+0002; a chunk is kept only when it holds a
U+0001 with a non-empty key before it and a non-empty value after it (so chunks shorter than three
characters and empty-valued properties silently disappear); the key ends at the first U+0001, the
value may contain further U+0001 characters; a later duplicate key wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from rocketmq_py.errors import LocalProtocolError

__all__ = [
    "KEY_SEPARATOR",
    "MAX_PROPERTIES_BYTES",
    "NAME_VALUE_SEPARATOR",
    "PROPERTY_SEPARATOR",
    "SYSTEM_PROPERTY_KEYS",
    "TRANSIENT_PREFIX",
    "PropertyKey",
    "check_properties_size",
    "decode_properties",
    "encode_properties",
    "encode_properties_bytes",
]

#: Between a key and its value (Java ``MessageDecoder.NAME_VALUE_SEPARATOR``, char 1).
NAME_VALUE_SEPARATOR: Final = "\x01"
#: After each value (Java ``MessageDecoder.PROPERTY_SEPARATOR``, char 2).
PROPERTY_SEPARATOR: Final = "\x02"
#: Joins several message keys inside the ``KEYS`` property (Java ``MessageConst.KEY_SEPARATOR``).
KEY_SEPARATOR: Final = " "
#: The UTF-8 properties string is length-prefixed by a signed int16 in batches and stored messages.
MAX_PROPERTIES_BYTES: Final = 32767
#: Properties whose key starts with this prefix are never stored by the broker.
TRANSIENT_PREFIX: Final = "__RMQ.TRANSIENT."


class PropertyKey:
    """The property keys the Java client and broker give a meaning to (Java ``MessageConst``)."""

    KEYS: Final = "KEYS"
    TAGS: Final = "TAGS"
    WAIT_STORE_MSG_OK: Final = "WAIT"
    DELAY_TIME_LEVEL: Final = "DELAY"
    RETRY_TOPIC: Final = "RETRY_TOPIC"
    REAL_TOPIC: Final = "REAL_TOPIC"
    REAL_QUEUE_ID: Final = "REAL_QID"
    TRANSACTION_PREPARED: Final = "TRAN_MSG"
    PRODUCER_GROUP: Final = "PGROUP"
    MIN_OFFSET: Final = "MIN_OFFSET"
    MAX_OFFSET: Final = "MAX_OFFSET"
    BUYER_ID: Final = "BUYER_ID"
    ORIGIN_MESSAGE_ID: Final = "ORIGIN_MESSAGE_ID"
    TRANSFER_FLAG: Final = "TRANSFER_FLAG"
    CORRECTION_FLAG: Final = "CORRECTION_FLAG"
    MQ2_FLAG: Final = "MQ2_FLAG"
    RECONSUME_TIME: Final = "RECONSUME_TIME"
    MSG_REGION: Final = "MSG_REGION"
    TRACE_SWITCH: Final = "TRACE_ON"
    UNIQ_KEY: Final = "UNIQ_KEY"
    EXTEND_UNIQ_INFO: Final = "EXTEND_UNIQ_INFO"
    MAX_RECONSUME_TIMES: Final = "MAX_RECONSUME_TIMES"
    CONSUME_START_TIMESTAMP: Final = "CONSUME_START_TIME"
    INNER_NUM: Final = "INNER_NUM"
    INNER_BASE: Final = "INNER_BASE"
    DUP_INFO: Final = "DUP_INFO"
    CHECK_IMMUNITY_TIME_IN_SECONDS: Final = "CHECK_IMMUNITY_TIME_IN_SECONDS"
    TRANSACTION_PREPARED_QUEUE_OFFSET: Final = "TRAN_PREPARED_QUEUE_OFFSET"
    TRANSACTION_ID: Final = "__transactionId__"
    TRANSACTION_CHECK_TIMES: Final = "TRANSACTION_CHECK_TIMES"
    INSTANCE_ID: Final = "INSTANCE_ID"
    CORRELATION_ID: Final = "CORRELATION_ID"
    REPLY_TO_CLIENT: Final = "REPLY_TO_CLIENT"
    MESSAGE_TTL: Final = "TTL"
    REPLY_MESSAGE_ARRIVE_TIME: Final = "ARRIVE_TIME"
    PUSH_REPLY_TIME: Final = "PUSH_REPLY_TIME"
    CLUSTER: Final = "CLUSTER"
    MESSAGE_TYPE: Final = "MSG_TYPE"
    POP_CK: Final = "POP_CK"
    POP_CK_OFFSET: Final = "POP_CK_OFFSET"
    FIRST_POP_TIME: Final = "1ST_POP_TIME"
    SHARDING_KEY: Final = "__SHARDINGKEY"
    FORWARD_QUEUE_ID: Final = "PROPERTY_FORWARD_QUEUE_ID"
    REDIRECT: Final = "REDIRECT"
    INNER_MULTI_DISPATCH: Final = "INNER_MULTI_DISPATCH"
    INNER_MULTI_QUEUE_OFFSET: Final = "INNER_MULTI_QUEUE_OFFSET"
    TRACE_CONTEXT: Final = "TRACE_CONTEXT"
    TIMER_DELAY_SEC: Final = "TIMER_DELAY_SEC"
    TIMER_DELAY_MS: Final = "TIMER_DELAY_MS"
    TIMER_DELIVER_MS: Final = "TIMER_DELIVER_MS"
    TIMER_ENQUEUE_MS: Final = "TIMER_ENQUEUE_MS"
    TIMER_DEQUEUE_MS: Final = "TIMER_DEQUEUE_MS"
    TIMER_ROLL_TIMES: Final = "TIMER_ROLL_TIMES"
    TIMER_OUT_MS: Final = "TIMER_OUT_MS"
    TIMER_DEL_UNIQKEY: Final = "TIMER_DEL_UNIQKEY"
    TIMER_DELAY_LEVEL: Final = "TIMER_DELAY_LEVEL"
    BORN_HOST: Final = "__BORNHOST"
    BORN_TIMESTAMP: Final = "BORN_TIMESTAMP"
    DLQ_ORIGIN_TOPIC: Final = "DLQ_ORIGIN_TOPIC"
    DLQ_ORIGIN_MESSAGE_ID: Final = "DLQ_ORIGIN_MESSAGE_ID"
    CRC32: Final = "__CRC32#"


#: Keys reserved for the system: Java refuses them in ``Message.putUserProperty``.
SYSTEM_PROPERTY_KEYS: Final[frozenset[str]] = frozenset(
    {
        PropertyKey.TRACE_SWITCH,
        PropertyKey.MSG_REGION,
        PropertyKey.KEYS,
        PropertyKey.TAGS,
        PropertyKey.WAIT_STORE_MSG_OK,
        PropertyKey.DELAY_TIME_LEVEL,
        PropertyKey.RETRY_TOPIC,
        PropertyKey.REAL_TOPIC,
        PropertyKey.REAL_QUEUE_ID,
        PropertyKey.TRANSACTION_PREPARED,
        PropertyKey.PRODUCER_GROUP,
        PropertyKey.MIN_OFFSET,
        PropertyKey.MAX_OFFSET,
        PropertyKey.BUYER_ID,
        PropertyKey.ORIGIN_MESSAGE_ID,
        PropertyKey.TRANSFER_FLAG,
        PropertyKey.CORRECTION_FLAG,
        PropertyKey.MQ2_FLAG,
        PropertyKey.RECONSUME_TIME,
        PropertyKey.UNIQ_KEY,
        PropertyKey.MAX_RECONSUME_TIMES,
        PropertyKey.CONSUME_START_TIMESTAMP,
        PropertyKey.POP_CK,
        PropertyKey.POP_CK_OFFSET,
        PropertyKey.FIRST_POP_TIME,
        PropertyKey.TRANSACTION_PREPARED_QUEUE_OFFSET,
        PropertyKey.DUP_INFO,
        PropertyKey.EXTEND_UNIQ_INFO,
        PropertyKey.INSTANCE_ID,
        PropertyKey.CORRELATION_ID,
        PropertyKey.REPLY_TO_CLIENT,
        PropertyKey.MESSAGE_TTL,
        PropertyKey.REPLY_MESSAGE_ARRIVE_TIME,
        PropertyKey.PUSH_REPLY_TIME,
        PropertyKey.CLUSTER,
        PropertyKey.MESSAGE_TYPE,
        PropertyKey.INNER_MULTI_QUEUE_OFFSET,
        PropertyKey.TIMER_DELAY_MS,
        PropertyKey.TIMER_DELAY_SEC,
        PropertyKey.TIMER_DELIVER_MS,
        PropertyKey.TIMER_ENQUEUE_MS,
        PropertyKey.TIMER_DEQUEUE_MS,
        PropertyKey.TIMER_ROLL_TIMES,
        PropertyKey.TIMER_OUT_MS,
        PropertyKey.TIMER_DEL_UNIQKEY,
        PropertyKey.TIMER_DELAY_LEVEL,
        PropertyKey.BORN_HOST,
        PropertyKey.BORN_TIMESTAMP,
        PropertyKey.DLQ_ORIGIN_TOPIC,
        PropertyKey.DLQ_ORIGIN_MESSAGE_ID,
        PropertyKey.CRC32,
    }
)


def encode_properties(properties: Mapping[str, str | None]) -> str:
    """Join properties into the wire string; ``None`` and empty values are left out.

    Empty values are dropped here because every decoder (Java's included) drops them anyway, so
    sending them would only cost bytes.

    Raises:
        LocalProtocolError: a key is empty or contains U+0001/U+0002, or a value contains U+0002
            (the string could not be split back into the same properties).
    """
    if len(properties) == 1:  # a plain message: only its UNIQ_KEY
        ((key, value),) = properties.items()
        if value and key and "\x01" not in key and "\x02" not in key and "\x02" not in value:
            return f"{key}\x01{value}\x02"
    # Fast path: joined at once, then checked by counting separators (one per entry each).
    parts = [f"{key}\x01{value}\x02" for key, value in properties.items() if value]
    text = "".join(parts)
    count = len(parts)
    if (
        text.count(NAME_VALUE_SEPARATOR) == count
        and text.count(PROPERTY_SEPARATOR) == count
        and "" not in properties
    ):
        return text
    return _encode_properties_checked(properties)  # precise errors; allows U+0001 in values


def _encode_properties_checked(properties: Mapping[str, str | None]) -> str:
    parts: list[str] = []
    for key, value in properties.items():
        if not value:
            continue
        if not key or NAME_VALUE_SEPARATOR in key or PROPERTY_SEPARATOR in key:
            raise LocalProtocolError(f"property key {key!r} is empty or contains U+0001/U+0002")
        if PROPERTY_SEPARATOR in value:
            raise LocalProtocolError(f"value of property {key!r} contains U+0002")
        parts.append(f"{key}\x01{value}\x02")
    return "".join(parts)


def decode_properties(text: str) -> dict[str, str]:
    """Split a properties string with Java's rules (see the module docstring); never raises."""
    result: dict[str, str] = {}
    for chunk in text.split("\x02"):
        key, _, value = chunk.partition("\x01")
        if key and value:
            result[key] = value
    return result


def check_properties_size(encoded: bytes) -> None:
    """Raise :class:`LocalProtocolError` if ``encoded`` does not fit the signed int16 length prefix."""
    if len(encoded) > MAX_PROPERTIES_BYTES:
        raise LocalProtocolError(
            f"properties take {len(encoded)} bytes in UTF-8, above the limit of {MAX_PROPERTIES_BYTES}"
        )


def encode_properties_bytes(properties: Mapping[str, str | None]) -> bytes:
    """:func:`encode_properties`, then UTF-8, checked against :data:`MAX_PROPERTIES_BYTES`.

    Raises:
        LocalProtocolError: as :func:`encode_properties`, or the string is not encodable as UTF-8
            (lone surrogates), or it is longer than 32767 bytes.
    """
    text = encode_properties(properties)
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise LocalProtocolError(f"properties are not encodable as UTF-8: {exc}") from None
    check_properties_size(encoded)
    return encoded
