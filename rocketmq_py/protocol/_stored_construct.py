"""The stored-message layout declared with ``construct``: the readable spec and the test oracle.

:data:`STORED_MESSAGE` declares one record of the commit-log layout drawn in ``_stored``, field by
field; :func:`decode_messages_construct` splits a reply body with its compiled form and the same
checks and post-processing as :func:`~rocketmq_py.protocol._stored.decode_messages_fast`, which
tests and ``benchmarks/codec.py`` hold against it. It is several times slower than the ``struct``
decoder, so :func:`~rocketmq_py.protocol._stored.decode_messages` never uses it.
"""

from __future__ import annotations

from typing import Any, Final

from construct import Bytes, IfThenElse, Int8sb, Int16sb, Int32sb, Int64sb, Struct, this

from rocketmq_py.protocol._compression import MAX_DECOMPRESSED_BYTES
from rocketmq_py.protocol._message import MessageExt, SysFlag
from rocketmq_py.protocol._stored import (
    _INT32,
    _MIN_V4_V1,
    MAGIC_CODE_V1,
    MAGIC_CODE_V2,
    _emit,
    _malformed,
    _Raw,
)

__all__ = ["STORED_MESSAGE", "decode_messages_construct"]

# --- the declaration -----------------------------------------------------------------------------

#: One stored message, declared with ``construct`` (compile with ``.compile()``). Parsing does not
#: validate: :func:`decode_messages_construct` checks the lengths it reads against what it got.
STORED_MESSAGE: Final[Any] = Struct(
    "total_size" / Int32sb,
    "magic" / Int32sb,
    "body_crc" / Int32sb,
    "queue_id" / Int32sb,
    "flag" / Int32sb,
    "queue_offset" / Int64sb,
    "commit_log_offset" / Int64sb,
    "sys_flag" / Int32sb,
    "born_timestamp" / Int64sb,
    "born_ip" / IfThenElse(this.sys_flag & SysFlag.BORNHOST_V6, Bytes(16), Bytes(4)),
    "born_port" / Int32sb,
    "store_timestamp" / Int64sb,
    "store_ip" / IfThenElse(this.sys_flag & SysFlag.STOREHOST_V6, Bytes(16), Bytes(4)),
    "store_port" / Int32sb,
    "reconsume_times" / Int32sb,
    "prepared_transaction_offset" / Int64sb,
    "body_length" / Int32sb,
    "body" / Bytes(this.body_length),
    "topic_length" / IfThenElse(this.magic == MAGIC_CODE_V2, Int16sb, Int8sb),
    "topic" / Bytes(this.topic_length),
    "properties_length" / Int16sb,
    "properties" / Bytes(this.properties_length),
)
_COMPILED: Final[Any] = STORED_MESSAGE.compile()

# --- the decoder ---------------------------------------------------------------------------------

_HOST_SIZE: Final = {4: 8, 16: 20}


def _parse_construct(data: bytes, pos: int) -> tuple[_Raw, int]:
    left = len(data) - pos
    if left < 4:
        raise _malformed(pos, f"only {left} bytes left, a record has at least {_MIN_V4_V1}")
    (total,) = _INT32.unpack_from(data, pos)
    if total < 4 or total > left:
        raise _malformed(pos, f"TOTALSIZE {total} with {left} bytes left")
    try:
        # Compiled construct takes shortcuts (short reads pass silently): everything is re-checked.
        c = _COMPILED.parse(data[pos : pos + total])
    except Exception as exc:  # construct raises many types on short input; all mean "malformed"
        raise _malformed(pos, f"does not parse ({type(exc).__name__})") from None
    if c.magic == MAGIC_CODE_V1:
        topic_len_size = 1
    elif c.magic == MAGIC_CODE_V2:
        topic_len_size = 2
    else:
        raise _malformed(pos, f"unknown magic code {c.magic & 0xFFFFFFFF:#010x}")
    born_ip: bytes = c.born_ip
    store_ip: bytes = c.store_ip
    if (
        c.body_length < 0
        or len(c.body) != c.body_length
        or c.topic_length < 0
        or len(c.topic) != c.topic_length
        or c.properties_length < 0
        or len(c.properties) != c.properties_length
        or len(born_ip) != (16 if c.sys_flag & SysFlag.BORNHOST_V6 else 4)
        or len(store_ip) != (16 if c.sys_flag & SysFlag.STOREHOST_V6 else 4)
    ):
        raise _malformed(pos, "a length field disagrees with the bytes available")
    size = (
        4 * 5 + 8 * 2 + 4 + 8 + _HOST_SIZE[len(born_ip)] + 8 + _HOST_SIZE[len(store_ip)] + 4 + 8
        + 4 + c.body_length + topic_len_size + c.topic_length + 2 + c.properties_length
    )  # fmt: skip
    if size != total:
        raise _malformed(pos, f"TOTALSIZE {total} does not match the {size} bytes of its fields")
    raw: _Raw = (
        total, c.magic, c.body_crc, c.queue_id, c.flag, c.queue_offset, c.commit_log_offset,
        c.sys_flag, c.born_timestamp, born_ip + _INT32.pack(c.born_port), c.store_timestamp,
        store_ip + _INT32.pack(c.store_port), c.reconsume_times, c.prepared_transaction_offset,
        c.body, c.topic, c.properties,
    )  # fmt: skip
    return raw, pos + total


def decode_messages_construct(
    body: bytes | bytearray | memoryview,
    *,
    broker_name: str = "",
    decompress: bool = True,
    unwrap_inner_batch: bool = True,
    check_crc: bool = False,
    max_decompressed_size: int = MAX_DECOMPRESSED_BYTES,
) -> list[MessageExt]:
    """:func:`decode_messages` through the compiled :data:`STORED_MESSAGE` declaration."""
    data = bytes(body)
    out: list[MessageExt] = []
    pos = 0
    while pos < len(data):
        raw, end = _parse_construct(data, pos)
        _emit(raw, pos, out, broker_name, decompress, unwrap_inner_batch, check_crc, max_decompressed_size)
        pos = end
    return out
