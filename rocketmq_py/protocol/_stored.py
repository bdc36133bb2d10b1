"""Stored messages: the body of PULL_MESSAGE, VIEW_MESSAGE_BY_ID, QUERY_MESSAGE replies and of
CHECK_TRANSACTION_STATE requests is a concatenation of messages in the broker's commit-log layout.

Wire layout (protocol.md §5.1), big-endian; offsets for IPv4 hosts::

     0  TOTALSIZE                    int32   size of this whole record
     4  MAGICCODE                    int32   0xDAA320A7 (v1) or 0xDAA320AB (v2)
     8  BODYCRC                      int32   CRC32 of the stored body, masked to 31 bits
    12  QUEUEID                      int32
    16  FLAG                         int32   the application's flag
    20  QUEUEOFFSET                  int64
    28  PHYSICALOFFSET               int64   commit-log offset
    36  SYSFLAG                      int32   COMPRESSED 0x1, BORNHOST_V6 0x10, STOREHOST_V6 0x20,
                                             NEED_UNWRAP 0x40, INNER_BATCH 0x80, codec bits 0x700
    40  BORNTIMESTAMP                int64   epoch ms
    48  BORNHOST                     4-byte IPv4 (16 if BORNHOST_V6) + int32 port
    56  STORETIMESTAMP               int64   epoch ms
    64  STOREHOST                    4-byte IPv4 (16 if STOREHOST_V6) + int32 port
    72  RECONSUMETIMES               int32
    76  PREPARED TRANSACTION OFFSET  int64
    84  BODY length + body           int32 + bytes
        TOPIC length + topic         int8 (v1) or int16 (v2), signed, + UTF-8
        PROPERTIES length + props    int16, signed, + UTF-8 properties string (see _properties)

With IPv4 hosts and magic v1 the fixed overhead is 91 bytes. The broker writes magic v2 only when
the topic is longer than 127 bytes. TOTALSIZE must equal the sum of the parts: a record whose
lengths disagree, run past the buffer or are negative, or whose magic is unknown, makes the whole
decode fail with :class:`~rocketmq_py.errors.MalformedMessage` (Java silently drops the rest of
the buffer; we would rather say so).

After the split (as Java's client does): a COMPRESSED body is inflated by its codec and the bit is
cleared (codec bits stay); a record with both INNER_BATCH and NEED_UNWRAP has a batch body
(see ``_batch``) that becomes one :class:`MessageExt` per entry, with queue offset = outer offset
+ index and the hosts, timestamps, sys_flag and commit-log offset of the outer record. Text
(topic, properties) is decoded as UTF-8 with U+FFFD for bad bytes, like Java's ``new String``. A
record does not name its broker: a caller that knows which broker answered passes
``broker_name``, which every decoded message gets (``""`` by default).

Two decoders implement this: :func:`decode_messages_fast` here, precompiled ``struct`` unpacking
with an inlined common case (IPv4 hosts, v1 magic, plain body), which is what
:func:`decode_messages` uses, and the compiled ``construct`` declaration in ``_stored_construct``,
the readable spec and the test oracle, several times slower (numbers in ``benchmarks/codec.py``).
Both share the checks and post-processing of one record (:func:`_emit`). The encoder,
:func:`encode_stored_message`, writes what the fake broker serves.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import Final

from rocketmq_py.errors import LocalProtocolError, MalformedMessage
from rocketmq_py.protocol._batch import iter_batch
from rocketmq_py.protocol._compression import (
    MAX_DECOMPRESSED_BYTES,
    compress_body,
    compression_type_of,
    decompress_body,
)
from rocketmq_py.protocol._message import MessageExt, SysFlag
from rocketmq_py.protocol._properties import encode_properties_bytes

__all__ = [
    "BLANK_MAGIC_CODE",
    "MAGIC_CODE_V1",
    "MAGIC_CODE_V2",
    "decode_messages",
    "decode_messages_fast",
    "encode_stored_message",
]

#: 0xDAA320A7 as a signed int32: topic length is one byte.
MAGIC_CODE_V1: Final = -626843481
#: 0xDAA320AB as a signed int32: topic length is two bytes.
MAGIC_CODE_V2: Final = -626843477
#: 0xCBD43194: end-of-file filler in commit-log files, never in a reply (decoding it fails).
BLANK_MAGIC_CODE: Final = -875286124

_CRC_MASK: Final = 0x7FFFFFFF  # Java UtilAll.crc32 drops the top bit
_V6_BITS: Final = SysFlag.BORNHOST_V6 | SysFlag.STOREHOST_V6
_UNWRAP_BITS: Final = SysFlag.INNER_BATCH | SysFlag.NEED_UNWRAP
# Bits that take a record off the inlined fast path: codec, v6 hosts, inner batch.
_SLOW_BITS: Final = SysFlag.COMPRESSED | _V6_BITS | _UNWRAP_BITS

# --- struct layouts ------------------------------------------------------------------------------


def _fixed(born: int, store: int) -> struct.Struct:
    # TOTALSIZE .. BODY length; born/store are the host sizes incl. port (8 or 20).
    return struct.Struct(f">iiiiiqqiq{born}sq{store}siqi")


# Indexed by (sys_flag >> 4) & 3: bit 0 = BORNHOST_V6, bit 1 = STOREHOST_V6.
_FIXED_BY_HOSTS: Final = (_fixed(8, 8), _fixed(20, 8), _fixed(8, 20), _fixed(20, 20))
_FIXED_V4: Final = _FIXED_BY_HOSTS[0]  # 88 bytes
_SYS_FLAG_AT: Final = 36
_INT32: Final = struct.Struct(">i")
_INT16: Final = struct.Struct(">h")
_MIN_V4_V1: Final = _FIXED_V4.size + 1 + 2  # 91: empty body, topic and properties
_UNIQ_PREFIX: Final = b"UNIQ_KEY\x01"  # how a producer's properties start (PropertyKey.UNIQ_KEY)
_UNIQ_PREFIX_LEN: Final = len(_UNIQ_PREFIX)

_Raw = tuple[int, int, int, int, int, int, int, int, int, bytes, int, bytes, int, int, bytes, bytes, bytes]
# (total, magic, body_crc, queue_id, flag, queue_offset, commit_log_offset, sys_flag,
#  born_timestamp, born_address, store_timestamp, store_address, reconsume_times,
#  prepared_transaction_offset, body, topic, properties): one record, lengths already checked.


def _malformed(pos: int, why: str) -> MalformedMessage:
    return MalformedMessage(f"stored message at byte {pos}: {why}")


# --- shared post-processing ----------------------------------------------------------------------

_new = object.__new__


def _make(
    topic: str,
    body: bytes,
    flag: int,
    properties: dict[str, str],
    broker_name: str,
    queue_id: int,
    queue_offset: int,
    commit_log_offset: int,
    sys_flag: int,
    born_timestamp: int,
    born_address: bytes,
    store_timestamp: int,
    store_address: bytes,
    reconsume_times: int,
    prepared_transaction_offset: int,
    body_crc: int,
) -> MessageExt:
    m: MessageExt = _new(MessageExt)
    m.topic = topic
    m.body = body
    m.flag = flag
    m.properties = properties
    m.broker_name = broker_name
    m.queue_id = queue_id
    m.queue_offset = queue_offset
    m.commit_log_offset = commit_log_offset
    m.sys_flag = sys_flag
    m.born_timestamp = born_timestamp
    m.born_address = born_address
    m.store_timestamp = store_timestamp
    m.store_address = store_address
    m.reconsume_times = reconsume_times
    m.prepared_transaction_offset = prepared_transaction_offset
    m.body_crc = body_crc
    return m


def _split_properties(raw: bytes) -> dict[str, str]:
    # Same rules as _properties.decode_properties, inlined in the fast path below.
    result: dict[str, str] = {}
    if raw:
        for chunk in raw.decode("utf-8", "replace").split("\x02"):
            key, _, value = chunk.partition("\x01")
            if key and value:
                result[key] = value
    return result


def _emit(
    raw: _Raw,
    pos: int,
    out: list[MessageExt],
    broker_name: str,
    decompress: bool,
    unwrap_inner_batch: bool,
    check_crc: bool,
    max_decompressed_size: int,
) -> None:
    """Turn one checked record into MessageExt(s): CRC, decompression, inner-batch unwrapping."""
    (_, _, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts, born, store_ts, store,
     reconsume, prepared, body, topic_raw, props_raw) = raw  # fmt: skip
    if check_crc and zlib.crc32(body) & _CRC_MASK != crc:
        raise _malformed(pos, f"body CRC {zlib.crc32(body) & _CRC_MASK} differs from stored {crc}")
    # Java skips an empty body entirely, leaving the COMPRESSED bit set.
    if decompress and sys_flag & SysFlag.COMPRESSED and body:
        body = decompress_body(body, sys_flag, max_size=max_decompressed_size)
        sys_flag &= ~SysFlag.COMPRESSED
    topic = topic_raw.decode("utf-8", "replace")
    if unwrap_inner_batch and sys_flag & _UNWRAP_BITS == _UNWRAP_BITS and not sys_flag & SysFlag.COMPRESSED:
        for index, (inner_flag, inner_body, inner_props) in enumerate(iter_batch(body)):
            out.append(
                _make(topic, inner_body, inner_flag, inner_props, broker_name, queue_id, queue_offset + index,
                      phys, sys_flag, born_ts, born, store_ts, store, 0, 0, 0)
            )  # fmt: skip
        return
    out.append(
        _make(topic, body, flag, _split_properties(props_raw), broker_name, queue_id, queue_offset, phys,
              sys_flag, born_ts, born, store_ts, store, reconsume, prepared, crc)
    )  # fmt: skip


# --- the struct decoder --------------------------------------------------------------------------


def _read_record(data: bytes, pos: int) -> tuple[_Raw, int]:
    """Parse and check the record at ``pos`` with struct; returns it and where the next one starts."""
    left = len(data) - pos
    if left < _FIXED_V4.size:
        raise _malformed(pos, f"only {left} bytes left, a record has at least {_MIN_V4_V1}")
    (sys_flag,) = _INT32.unpack_from(data, pos + _SYS_FLAG_AT)
    layout = _FIXED_BY_HOSTS[(sys_flag >> 4) & 3]
    if left < layout.size:
        raise _malformed(pos, f"only {left} bytes left for a {layout.size}-byte fixed part")
    fields = layout.unpack_from(data, pos)
    total, magic, body_len = fields[0], fields[1], fields[14]
    if magic == MAGIC_CODE_V1:
        topic_len_size = 1
    elif magic == MAGIC_CODE_V2:
        topic_len_size = 2
    else:
        raise _malformed(pos, f"unknown magic code {magic & 0xFFFFFFFF:#010x}")
    if total < layout.size + topic_len_size + 2 or total > left:
        raise _malformed(pos, f"TOTALSIZE {total} with {left} bytes left")
    end = pos + total
    body_at = pos + layout.size
    topic_len_at = body_at + body_len
    if body_len < 0 or topic_len_at + topic_len_size + 2 > end:
        raise _malformed(pos, f"body length {body_len} does not fit TOTALSIZE {total}")
    if topic_len_size == 1:
        topic_len = data[topic_len_at]
        if topic_len > 127:  # a signed byte in Java
            topic_len -= 256
    else:
        (topic_len,) = _INT16.unpack_from(data, topic_len_at)
    topic_at = topic_len_at + topic_len_size
    props_len_at = topic_at + topic_len
    if topic_len < 0 or props_len_at + 2 > end:
        raise _malformed(pos, f"topic length {topic_len} does not fit TOTALSIZE {total}")
    (props_len,) = _INT16.unpack_from(data, props_len_at)
    props_at = props_len_at + 2
    if props_len < 0 or props_at + props_len != end:
        raise _malformed(
            pos, f"TOTALSIZE {total} does not match the lengths inside (properties length {props_len})"
        )
    raw: _Raw = (
        *fields[:14],
        data[body_at:topic_len_at],
        data[topic_at:props_len_at],
        data[props_at:end],
    )
    return raw, end


def decode_messages_fast(
    body: bytes | bytearray | memoryview,
    *,
    broker_name: str = "",
    decompress: bool = True,
    unwrap_inner_batch: bool = True,
    check_crc: bool = False,
    max_decompressed_size: int = MAX_DECOMPRESSED_BYTES,
) -> list[MessageExt]:
    """:func:`decode_messages` with precompiled ``struct`` layouts (the default implementation)."""
    data = body if type(body) is bytes else bytes(body)
    n = len(data)
    out: list[MessageExt] = []
    append = out.append
    unpack = _FIXED_V4.unpack_from
    new = _new
    cls = MessageExt
    crc32 = zlib.crc32
    last_topic_raw = b""
    last_topic = ""
    last_tail = b""
    last_tail_props: dict[str, str] = {}
    pos = 0
    while pos < n:
        # Inlined common case: IPv4 hosts, magic v1, plain body. Anything else, or anything that
        # does not add up, goes to the general path, which handles it or raises precisely.
        if n - pos >= _MIN_V4_V1:
            (total, magic, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts, born, store_ts,
             store, reconsume, prepared, body_len) = unpack(data, pos)  # fmt: skip
            end = pos + total
            topic_len_at = pos + 88 + body_len
            if (
                magic == MAGIC_CODE_V1
                and not sys_flag & _SLOW_BITS
                and body_len >= 0
                and end <= n
                and topic_len_at + 3 <= end
            ):
                topic_len = data[topic_len_at]
                props_len_at = topic_len_at + 1 + topic_len
                if topic_len < 128 and props_len_at + 2 <= end:
                    props_len = (data[props_len_at] << 8) | data[props_len_at + 1]
                    if props_len < 32768 and props_len_at + 2 + props_len == end:
                        payload = data[pos + 88 : topic_len_at]
                        if not check_crc or crc32(payload) & _CRC_MASK == crc:
                            topic_raw = data[topic_len_at + 1 : props_len_at]
                            if topic_raw != last_topic_raw:
                                last_topic_raw = topic_raw
                                last_topic = topic_raw.decode("utf-8", "replace")
                            props: dict[str, str] = {}
                            if props_len:
                                props_at = props_len_at + 2
                                # A producer's message starts with its own UNIQ_KEY and shares
                                # the rest with its neighbours (region, cluster, WAIT, ...):
                                # parse the rest once while it repeats.
                                key_end = data.find(2, props_at + _UNIQ_PREFIX_LEN, end)
                                if key_end > props_at + _UNIQ_PREFIX_LEN and data.startswith(
                                    _UNIQ_PREFIX, props_at
                                ):
                                    tail = data[key_end + 1 : end]
                                    if tail != last_tail:
                                        last_tail = tail
                                        last_tail_props = _split_properties(tail)
                                    props["UNIQ_KEY"] = data[props_at + _UNIQ_PREFIX_LEN : key_end].decode(
                                        "utf-8", "replace"
                                    )
                                    props.update(last_tail_props)
                                else:
                                    text = data[props_at:end].decode("utf-8", "replace")
                                    for chunk in text.split("\x02"):
                                        key, _, value = chunk.partition("\x01")
                                        if key and value:
                                            props[key] = value
                            m: MessageExt = new(cls)
                            m.topic = last_topic
                            m.body = payload
                            m.flag = flag
                            m.properties = props
                            m.broker_name = broker_name
                            m.queue_id = queue_id
                            m.queue_offset = queue_offset
                            m.commit_log_offset = phys
                            m.sys_flag = sys_flag
                            m.born_timestamp = born_ts
                            m.born_address = born
                            m.store_timestamp = store_ts
                            m.store_address = store
                            m.reconsume_times = reconsume
                            m.prepared_transaction_offset = prepared
                            m.body_crc = crc
                            append(m)
                            pos = end
                            continue
        raw, end = _read_record(data, pos)
        _emit(raw, pos, out, broker_name, decompress, unwrap_inner_batch, check_crc, max_decompressed_size)
        pos = end
    return out


def decode_messages(
    body: bytes | bytearray | memoryview,
    *,
    broker_name: str = "",
    decompress: bool = True,
    unwrap_inner_batch: bool = True,
    check_crc: bool = False,
    max_decompressed_size: int = MAX_DECOMPRESSED_BYTES,
) -> list[MessageExt]:
    """Split a reply body of stored messages into :class:`MessageExt` objects.

    Args:
        body: the concatenated records (the whole buffer is consumed).
        broker_name: the broker the records were read from, stored in every message's
            :attr:`~MessageExt.broker_name` (the record itself does not name it); ``""`` when
            not known.
        decompress: inflate COMPRESSED bodies and clear the bit (Java's client always does).
        unwrap_inner_batch: expand INNER_BATCH + NEED_UNWRAP records into their entries (only
            when the body is not, or no longer, compressed).
        check_crc: verify BODYCRC against the stored body (Java's client does not).
        max_decompressed_size: refuse bodies that inflate beyond this many bytes.

    Returns:
        The messages in buffer order.

    Raises:
        MalformedMessage: a record is truncated, lies about a length, has an unknown magic code or
            compression type, a corrupt compressed body or inner batch, or (with ``check_crc``) a
            CRC mismatch.
        CompressionUnavailable: an LZ4/ZSTD body while the ``lz4``/``zstandard`` package is missing.
    """
    return _decode(
        body,
        broker_name=broker_name,
        decompress=decompress,
        unwrap_inner_batch=unwrap_inner_batch,
        check_crc=check_crc,
        max_decompressed_size=max_decompressed_size,
    )


_decode: Callable[..., list[MessageExt]] = decode_messages_fast


# --- encoding (fake broker, tests) ---------------------------------------------------------------


def encode_stored_message(message: MessageExt, *, compress: bool = True, magic: int | None = None) -> bytes:
    """Lay out one message exactly as the broker stores it (the inverse of :func:`decode_messages`).

    BODYCRC is computed (masked to 31 bits, as the broker does); the BORNHOST_V6/STOREHOST_V6 bits
    follow the addresses; the magic is v2 only when the UTF-8 topic is longer than 127 bytes.

    Args:
        message: the record to write; its ``body_crc`` is ignored.
        compress: if ``sys_flag`` has COMPRESSED, compress ``body`` with the codec its bits name
            first (level 5); pass ``False`` when ``body`` is already compressed.
        magic: force :data:`MAGIC_CODE_V1` or :data:`MAGIC_CODE_V2`.

    Raises:
        LocalProtocolError: a topic too long for the magic, properties over 32767 bytes or not
            encodable, an unknown magic, or a number that does not fit its field.
        CompressionUnavailable: LZ4/ZSTD requested without the optional package.
    """
    sys_flag = message.sys_flag
    body = message.body
    if compress and sys_flag & SysFlag.COMPRESSED:
        try:
            kind = compression_type_of(sys_flag)
        except MalformedMessage as exc:
            raise LocalProtocolError(str(exc)) from None
        body = compress_body(body, kind)
    try:
        topic = message.topic.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise LocalProtocolError(f"topic is not encodable as UTF-8: {exc}") from None
    props = encode_properties_bytes(message.properties)
    if magic is None:
        magic = MAGIC_CODE_V2 if len(topic) > 127 else MAGIC_CODE_V1
    if magic == MAGIC_CODE_V1:
        if len(topic) > 127:
            raise LocalProtocolError(f"topic of {len(topic)} bytes needs magic v2")
        topic_len = bytes((len(topic),))
    elif magic == MAGIC_CODE_V2:
        if len(topic) > 32767:
            raise LocalProtocolError(f"topic of {len(topic)} bytes exceeds 32767")
        topic_len = _INT16.pack(len(topic))
    else:
        raise LocalProtocolError(f"unknown magic code {magic:#x}")
    born, store = message.born_address, message.store_address
    sys_flag &= ~_V6_BITS
    if len(born) == 20:
        sys_flag |= SysFlag.BORNHOST_V6
    if len(store) == 20:
        sys_flag |= SysFlag.STOREHOST_V6
    layout = _FIXED_BY_HOSTS[(sys_flag >> 4) & 3]
    total = layout.size + len(body) + len(topic_len) + len(topic) + 2 + len(props)
    try:
        head = layout.pack(
            total, magic, zlib.crc32(body) & _CRC_MASK, message.queue_id, message.flag,
            message.queue_offset, message.commit_log_offset, sys_flag, message.born_timestamp, born,
            message.store_timestamp, store, message.reconsume_times,
            message.prepared_transaction_offset, len(body),
        )  # fmt: skip
    except struct.error as exc:
        raise LocalProtocolError(f"a field does not fit the stored layout: {exc}") from None
    return b"".join((head, body, topic_len, topic, _INT16.pack(len(props)), props))
