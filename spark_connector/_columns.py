"""Executor hot path: PULL_MESSAGE reply bodies straight to one Arrow batch, column by column.

The reader does not need :class:`~rocketmq_py.protocol.MessageExt` objects: it needs columns. A
batch is built from the reply bodies of several pulls (:class:`ReplyChunk`) without a Python
object per message: the records are found by walking their TOTALSIZE fields (:func:`record_starts`,
done once per reply while pulling), then every fixed field is gathered for all records at once
with numpy, the variable parts (body, topic, properties) are copied out by index arithmetic, and
the properties are split into the map column, the tags, keys and UNIQ_KEY by Arrow compute
kernels. Offset message ids are hexed by a lookup table.

Only the common case takes this path: magic v1, IPv4 hosts, a plain body (not compressed, not an
inner batch), valid UTF-8 text and no property name twice in one message. Anything else in a
batch (or anything that does not add up) sends the whole batch through the general path,
:func:`~rocketmq_py.protocol.decode_messages` + :func:`~spark_connector._schema.messages_to_batch`,
which handles it or raises :class:`~rocketmq_py.errors.MalformedMessage` precisely; the two paths
build equal batches (``tests/spark/test_spark_columns.py``; speed in ``benchmarks/spark_arrow.py``).

Each chunk keeps the records whose queue offset lies in its ``[lo, hi)`` window and, with a TAG
subscription, whose TAGS is one of the subscribed tags (the client-side re-check of a broker's
tag-hash filter), as the message path did.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rocketmq_py.consumer._filter import MessageFilter
from rocketmq_py.protocol import decode_messages
from rocketmq_py.protocol._ids import format_socket_address
from rocketmq_py.protocol._message import SysFlag
from rocketmq_py.protocol._properties import PropertyKey
from rocketmq_py.protocol._stored import MAGIC_CODE_V1
from spark_connector._schema import ARROW_SCHEMA, empty_batch, messages_to_batch

__all__ = ["ReplyChunk", "chunks_to_batch", "chunks_to_messages", "record_starts"]


class ReplyChunk(NamedTuple):
    """One PULL_MESSAGE reply body and the records of it the reader keeps."""

    data: bytes
    #: Where each record starts (:func:`record_starts`), or None when the walk did not add up.
    starts: list[int] | None
    #: Queue offsets kept: ``lo <= queue_offset < hi``.
    lo: int
    hi: int

    @property
    def rows(self) -> int:
        """Records in the reply (0 when the walk did not add up: the general path decodes it)."""
        return len(self.starts or ())


_MIN_RECORD: Final = 91  # fixed part of an IPv4, magic v1 record + topic and properties lengths
_TOTAL: Final = struct.Struct(">i")
_QUEUE_OFFSET: Final = struct.Struct(">q")
_QUEUE_OFFSET_AT: Final = 20
_FIXED: Final = 88  # up to the body length, IPv4 hosts
_SLOW_BITS: Final = (
    SysFlag.COMPRESSED
    | SysFlag.BORNHOST_V6
    | SysFlag.STOREHOST_V6
    | SysFlag.INNER_BATCH
    | SysFlag.NEED_UNWRAP
)
_HEX: Final = np.frombuffer(b"".join(b"%02X" % i for i in range(256)), np.uint8).reshape(256, 2)
_TS_MS: Final = pa.timestamp("ms", tz="UTC")
_TS: Final = pa.timestamp("us", tz="UTC")
_MAP: Final = pa.map_(pa.string(), pa.string())
_LIST: Final = pa.list_(pa.string())
_STRING: Final = pa.string()
_INT32_MAX: Final = 2**31 - 1
_TAGS: Final = str(PropertyKey.TAGS)
_UNIQ: Final = str(PropertyKey.UNIQ_KEY)
_KEYS: Final = str(PropertyKey.KEYS)


def record_starts(data: bytes) -> list[int] | None:
    """The offsets of the records in ``data`` by their TOTALSIZE fields; None if they do not add up."""
    starts: list[int] = []
    append = starts.append
    unpack = _TOTAL.unpack_from
    n = len(data)
    pos = 0
    while pos < n:
        if n - pos < _MIN_RECORD:
            return None
        (total,) = unpack(data, pos)
        if total < _MIN_RECORD:
            return None
        append(pos)
        pos += total
    return starts if pos == n else None


def last_queue_offset(chunk: ReplyChunk) -> int | None:
    """The queue offset of the chunk's last record (None without records or a walk)."""
    if not chunk.starts:
        return None
    (offset,) = _QUEUE_OFFSET.unpack_from(chunk.data, chunk.starts[-1] + _QUEUE_OFFSET_AT)
    return int(offset)


def chunks_to_messages(chunks: Sequence[ReplyChunk], accept: MessageFilter) -> list[Any]:
    """The kept messages of ``chunks`` as MessageExt objects (the general path; tests and tools)."""
    kept: list[Any] = []
    for chunk in chunks:
        msgs = [m for m in decode_messages(chunk.data) if chunk.lo <= m.queue_offset < chunk.hi]
        kept.extend(msgs if accept.accepts_all else accept.filter_messages(msgs))
    return kept


def chunks_to_batch(broker_name: str, chunks: Sequence[ReplyChunk], accept: MessageFilter) -> pa.RecordBatch:
    """The kept records of ``chunks`` as one batch of exactly :data:`ARROW_SCHEMA` (see the module doc)."""
    batch = _columnar(broker_name, chunks, accept)
    if batch is None:
        batch = messages_to_batch(broker_name, chunks_to_messages(chunks, accept))
    return batch


# --- the columnar path ---------------------------------------------------------------------------


def _gather(buf: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """``width`` bytes at each of ``at``: an (n, width) uint8 array."""
    return buf[at[:, None] + np.arange(width)]


def _int(buf: np.ndarray, at: np.ndarray, dtype: str) -> np.ndarray:
    """The big-endian integers at ``at`` (``dtype`` like ``">i4"``), in native byte order."""
    width = np.dtype(dtype).itemsize
    return _gather(buf, at, width).view(dtype).reshape(-1).astype(dtype[1:])


def _var(buf: np.ndarray, at: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Offsets (int64, n + 1) and bytes of the strings ``buf[at[i] : at[i] + lengths[i]]``, end to end."""
    offsets = np.zeros(len(at) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    index = np.arange(offsets[-1], dtype=np.int64) - np.repeat(offsets[:-1] - at, lengths)
    return offsets, buf[index]


def _cut(data: bytes, at: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_var` by slicing and joining: cheaper for longer strings (bodies, property texts)."""
    offsets = np.zeros(len(at) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    joined = b"".join([data[a:b] for a, b in zip(at.tolist(), (at + lengths).tolist(), strict=True)])
    return offsets, np.frombuffer(joined, np.uint8)


def _array(parts: tuple[np.ndarray, np.ndarray], type_: Any = _STRING) -> pa.Array:
    """An Arrow string (or binary) array of :func:`_var`'s offsets and bytes (not validated)."""
    offsets, data = parts
    buffers = [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
    return pa.Array.from_buffers(type_, len(offsets) - 1, buffers)


def _hosts(raw: np.ndarray) -> pa.Array:
    """``ip:port`` strings of (n, 8) raw IPv4 addresses, formatted once per distinct address."""
    distinct, inverse = np.unique(raw.view(">u8").reshape(-1), return_inverse=True)
    names = [format_socket_address(int(d).to_bytes(8, "big")) for d in distinct]
    return pa.array(names, pa.string()).take(pa.array(inverse.reshape(-1).astype(np.int32)))


def _offsets_from_parents(n: int, parents: np.ndarray) -> pa.Array:
    """List offsets of ``n`` rows whose row ``parents[i]`` holds element ``i`` (parents ascending)."""
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(np.bincount(parents, minlength=n), out=offsets[1:])
    return pa.array(offsets)


def _properties(
    n: int, text: np.ndarray, rows: np.ndarray, wanted: tuple[str, ...]
) -> tuple[pa.Array | None, list[pa.Array]]:
    """The map column of ``n`` property strings (``text`` cut at ``rows``) and the values of ``wanted``.

    Entries are separated by \\x02; an entry is ``name\\x01value`` (the value is everything after
    the first \\x01) and counts when both are non-empty. Both separators are ASCII, so cutting the
    bytes is cutting the (valid UTF-8) text. Returns ``(None, [])`` when a message has a name twice.
    """
    seps = np.flatnonzero(text == 2)
    # Entries [start, end): they run between row boundaries and separators, in order, so the
    # sorted starts and sorted ends pair up (merging sorted runs: the stable sort is linear).
    starts = np.sort(np.concatenate([rows[:-1], seps + 1]), kind="stable")
    ends = np.sort(np.concatenate([seps, rows[1:]]), kind="stable")
    ones = np.flatnonzero(text == 1)
    if len(ones) == 0:
        first = np.full(len(starts), len(text), np.int64)
    else:
        found = np.searchsorted(ones, starts)
        first = np.where(found < len(ones), ones[np.minimum(found, len(ones) - 1)], len(text))
    keep = (first > starts) & (first + 1 < ends)
    starts, first, ends = starts[keep], first[keep], ends[keep]
    owners = np.searchsorted(rows, starts, side="right") - 1
    names = _array(_var(text, starts, first - starts))
    values = _array(_var(text, first + 1, ends - first - 1))
    encoded = pc.dictionary_encode(names)
    codes = np.asarray(encoded.indices).astype(np.int64)
    distinct = encoded.dictionary
    if len(codes):
        pairs = owners * len(distinct) + codes
        if n * len(distinct) <= 1 << 22:
            twice = bool(np.bincount(pairs, minlength=1).max() > 1)
        else:
            twice = len(np.unique(pairs)) != len(pairs)
        if twice:
            return None, []
    properties = pa.MapArray.from_arrays(_offsets_from_parents(n, owners), names, values).cast(_MAP)
    position = {name: i for i, name in enumerate(distinct.to_pylist())}
    found_values: list[pa.Array] = []
    for name in wanted:
        code = position.get(name)
        if code is None:
            found_values.append(pa.nulls(n, pa.string()))
            continue
        at = np.flatnonzero(codes == code)
        index = np.full(n, -1, np.int64)
        index[owners[at]] = at
        found_values.append(values.take(pa.array(index, mask=index < 0)))
    return properties, found_values


def _columnar(broker_name: str, chunks: Sequence[ReplyChunk], accept: MessageFilter) -> pa.RecordBatch | None:
    """The batch built without MessageExt objects, or None when the general path must build it."""
    if any(chunk.starts is None for chunk in chunks):
        return None
    n = sum(chunk.rows for chunk in chunks)
    if n == 0:
        return empty_batch()
    data = b"".join(chunk.data for chunk in chunks)
    if len(data) > _INT32_MAX:
        return None
    buf = np.frombuffer(data, np.uint8)
    base = 0
    starts_list: list[int] = []
    lo_list: list[int] = []
    hi_list: list[int] = []
    counts: list[int] = []
    for chunk in chunks:
        starts = chunk.starts or []
        starts_list.extend([base + s for s in starts] if base else starts)
        lo_list.append(chunk.lo)
        hi_list.append(chunk.hi)
        counts.append(len(starts))
        base += len(chunk.data)
    pos = np.array(starts_list, np.int64)
    total = _int(buf, pos, ">i4").astype(np.int64)
    end = pos + total
    magic = _int(buf, pos + 4, ">i4")
    sys_flag = _int(buf, pos + 36, ">i4")
    body_len = _int(buf, pos + 84, ">i4").astype(np.int64)
    body_at = pos + _FIXED
    topic_len_at = body_at + body_len
    if not (
        bool(np.all(magic == MAGIC_CODE_V1))
        and not bool(np.any(sys_flag & _SLOW_BITS))
        and bool(np.all(body_len >= 0))
        and bool(np.all(topic_len_at + 3 <= end))
    ):
        return None
    topic_len = buf[topic_len_at].astype(np.int64)
    props_len_at = topic_len_at + 1 + topic_len
    if bool(np.any(topic_len >= 128)) or not bool(np.all(props_len_at + 2 <= end)):
        return None
    props_len = (buf[props_len_at].astype(np.int64) << 8) | buf[props_len_at + 1]
    props_at = props_len_at + 2
    if bool(np.any(props_len >= 32768)) or not bool(np.all(props_at + props_len == end)):
        return None

    string = _STRING
    props_parts = _cut(data, props_at, props_len)
    try:
        topics = _array(_var(buf, topic_len_at + 1, topic_len))
        topics.validate(full=True)  # UTF-8: the general path replaces bad bytes
        _array(props_parts).validate(full=True)
    except pa.ArrowInvalid:
        return None

    properties, lookups = _properties(n, props_parts[1], props_parts[0], (_TAGS, _UNIQ, _KEYS))
    if properties is None:
        return None  # a name twice in one message: the general path keeps the last value
    tags, uniq, joined_keys = lookups
    split_keys = pc.split_pattern(pc.fill_null(joined_keys, ""), " ")
    key_parents = np.asarray(pc.list_parent_indices(split_keys))
    key_values = split_keys.flatten()
    nonempty = np.asarray(pc.greater(pc.binary_length(key_values), 0))
    key_offsets = _offsets_from_parents(n, key_parents[nonempty])
    keys = pa.ListArray.from_arrays(key_offsets, key_values.filter(pa.array(nonempty))).cast(_LIST)

    queue_offsets = _int(buf, pos + _QUEUE_OFFSET_AT, ">i8")
    store_raw = _gather(buf, pos + 64, 8)
    id_bytes = np.concatenate([store_raw, _gather(buf, pos + 28, 8)], axis=1)  # address + commit-log offset
    id_hex = _HEX[id_bytes].reshape(n, 32)
    offset_ids = pa.StringArray.from_buffers(
        n, pa.py_buffer(np.arange(0, 32 * n + 1, 32, dtype=np.int32)), pa.py_buffer(id_hex)
    )
    columns: list[Any] = [
        topics,
        pa.array([broker_name] * n, string),
        pa.array(_int(buf, pos + 12, ">i4"), pa.int32()),
        pa.array(queue_offsets, pa.int64()),
        pc.coalesce(uniq, offset_ids),
        offset_ids,
        tags,
        keys,
        _array(_cut(data, body_at, body_len), pa.binary()),
        properties,
        pa.array(_int(buf, pos + 40, ">i8"), _TS_MS).cast(_TS),
        pa.array(_int(buf, pos + 56, ">i8"), _TS_MS).cast(_TS),
        _hosts(_gather(buf, pos + 48, 8)),
        _hosts(store_raw),
        pa.array(_int(buf, pos + 72, ">i4"), pa.int32()),
        pa.array(sys_flag, pa.int32()),
    ]
    batch = pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA)

    lo = np.repeat(np.array(lo_list, np.int64), counts)
    hi = np.repeat(np.array(hi_list, np.int64), counts)
    mask = (queue_offsets >= lo) & (queue_offsets < hi)
    if not accept.accepts_all:
        mask &= np.asarray(pc.fill_null(pc.is_in(tags, pa.array(sorted(accept.tags), string)), False))
    if not bool(mask.all()):
        batch = batch.filter(pa.array(mask))
    return batch
