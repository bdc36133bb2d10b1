"""Executor hot path: PULL_MESSAGE reply bodies straight to one Arrow batch, column by column.

The reader does not need :class:`~rocketmq_py.protocol.MessageExt` objects: it needs columns. A
batch is built from the reply bodies of several pulls (:class:`ReplyChunk`) without a Python
object per message and without a numpy operation per byte:

* the records are found by walking their TOTALSIZE fields (:func:`record_starts`, done once per
  reply while pulling);
* the fixed parts (88 bytes, up to the body length) of all records are copied side by side in one
  numpy indexing and read as one structured array (:data:`_HEAD`), a field a column;
* the variable parts (body, topic, properties) are cut out of the replies by Arrow: the replies'
  bytes, zero-copy, become one binary array whose elements are the parts and the gaps between
  them (the cut points are ascending), and ``take`` of every other element copies the parts end
  to end (:func:`_pieces`, :func:`_every`);
* the properties are split into the map column, the tags, keys and UNIQ_KEY the same way, after
  one pass finds the separators (:func:`_plain_entries`: the layout brokers write; anything else
  goes through :func:`_any_entries`);
* offset message ids are the hex of the store address and commit-log offset bytes, in one call.

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
from numpy.lib.stride_tricks import sliding_window_view

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
#: The fixed part of a record (magic v1, IPv4 hosts; ``rocketmq_py.protocol._stored``), as
#: stored: big-endian. Not read: BODYCRC (8), FLAG (16), PREPARED TRANSACTION OFFSET (76).
_HEAD_FIELDS: Final = (
    ("total", ">i4", 0),
    ("magic", ">i4", 4),
    ("queue_id", ">i4", 12),
    ("queue_offset", ">i8", 20),
    ("commit_log_offset", ">i8", 28),
    ("sys_flag", ">i4", 36),
    ("born_timestamp", ">i8", 40),
    ("born_host", ">u8", 48),  # 4-byte IPv4 + int32 port
    ("store_timestamp", ">i8", 56),
    ("store_host", ">u8", 64),
    ("reconsume_times", ">i4", 72),
    ("body_len", ">i4", 84),
)
_HEAD: Final = np.dtype(
    {
        "names": [name for name, _, _ in _HEAD_FIELDS],
        "formats": [fmt for _, fmt, _ in _HEAD_FIELDS],
        "offsets": [at for _, _, at in _HEAD_FIELDS],
        "itemsize": _FIXED,
    }
)
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


def _pieces(data: pa.Buffer, bounds: np.ndarray) -> pa.Array:
    """``data`` cut at ``bounds`` (ascending): element ``i`` is ``data[bounds[i] : bounds[i + 1]]``, not copied."""
    cuts = pa.py_buffer(bounds.astype(np.int32, copy=False))
    return pa.Array.from_buffers(pa.binary(), len(bounds) - 1, [None, cuts, data])


def _every(pieces: pa.Array, first: int, step: int) -> pa.Array:
    """Elements ``first``, ``first + step``, ... of ``pieces``, copied end to end by Arrow."""
    return pieces.take(pa.array(np.arange(first, len(pieces), step, dtype=np.int32)))


def _hosts(raw: np.ndarray) -> pa.Array:
    """``ip:port`` strings of raw IPv4 addresses (big-endian uint64), formatted once per distinct one."""
    if bool((raw == raw[0]).all()):  # the usual store host: one per broker
        return pa.repeat(pa.scalar(_host(raw[0]), _STRING), len(raw))
    distinct, inverse = np.unique(raw, return_inverse=True)
    names = [_host(d) for d in distinct]
    return pa.array(names, _STRING).take(pa.array(inverse.reshape(-1).astype(np.int32)))


def _host(raw: Any) -> str:
    return format_socket_address(int(raw).to_bytes(8, "big"))


def _offsets_from_parents(n: int, parents: np.ndarray) -> pa.Array:
    """List offsets of ``n`` rows whose row ``parents[i]`` holds element ``i`` (parents ascending)."""
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(np.bincount(parents, minlength=n), out=offsets[1:])
    return pa.array(offsets)


_Entries = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _plain_entries(text: np.ndarray, rows: np.ndarray) -> _Entries | None:
    """:func:`_any_entries` when every row is ``name\\x01value\\x02`` repeated (as brokers store them), else None.

    Then the separators alternate \\x01, \\x02 and every row ends at a \\x02: entry ``i`` runs from
    just after \\x02 number ``i - 1`` to \\x02 number ``i``, its \\x01 is separator ``2 i``, and
    a row's entries are the \\x02 inside it (one pass over the text, one search per row).
    """
    seps = np.flatnonzero(text - np.uint8(1) < 2)  # the \x01 and \x02 (a \x00 wraps to 255)
    kinds = text[seps]
    nonempty = rows[1:] > rows[:-1]
    if (
        len(seps) % 2
        or not bool(np.all(kinds[0::2] == 1))
        or not bool(np.all(kinds[1::2] == 2))
        or not bool(np.all(text[rows[1:][nonempty] - 1] == 2))
    ):
        return None
    first, ends = seps[0::2], seps[1::2]
    starts = np.empty_like(ends)
    starts[:1] = 0
    starts[1:] = ends[:-1] + 1
    keep = (first > starts) & (first + 1 < ends)
    if not bool(keep.all()):
        starts, first, ends = starts[keep], first[keep], ends[keep]
    offsets = np.searchsorted(ends, rows)  # entries ending before each row's start
    return starts, first, ends, offsets


def _any_entries(text: np.ndarray, rows: np.ndarray) -> _Entries:
    """The entries' starts, \\x01 positions and ends (non-empty name and value), and each row's first entry."""
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
    offsets = np.zeros(len(rows), np.int64)
    np.cumsum(np.bincount(owners, minlength=len(rows) - 1), out=offsets[1:])
    return starts, first, ends, offsets


def _properties(
    props: pa.Array, rows: np.ndarray, wanted: tuple[str, ...]
) -> tuple[pa.Array | None, list[pa.Array]]:
    """The map column of the property strings ``props`` (row bounds ``rows``) and the values of ``wanted``.

    Entries are separated by \\x02; an entry is ``name\\x01value`` (the value is everything after
    the first \\x01) and counts when both are non-empty. Both separators are ASCII, so cutting the
    bytes is cutting the (valid UTF-8) text. Returns ``(None, [])`` when a message has a name twice.
    """
    n = len(rows) - 1
    text_buffer = props.buffers()[2]  # props is fresh from a take: offset 0, bounds ``rows``
    text = np.frombuffer(text_buffer, np.uint8, count=int(rows[-1])) if rows[-1] else np.zeros(0, np.uint8)
    starts, first, ends, offsets = _plain_entries(text, rows) or _any_entries(text, rows)
    if len(starts) == 0:
        empty = pa.array([], _STRING)
        properties = pa.MapArray.from_arrays(pa.array(offsets.astype(np.int32)), empty, empty).cast(_MAP)
        return properties, [pa.nulls(n, _STRING) for _ in wanted]
    owners = np.repeat(np.arange(n), np.diff(offsets))
    # name, \x01, value, what lies up to the next entry: four pieces an entry, in text order.
    pieces = _pieces(text_buffer, np.stack([starts, first, first + 1, ends], axis=1).reshape(-1))
    names = _every(pieces, 0, 4).view(_STRING)
    values = _every(pieces, 2, 4).view(_STRING)
    encoded = pc.dictionary_encode(names)
    codes = np.asarray(encoded.indices).astype(np.int64)
    distinct = encoded.dictionary
    pairs = owners * len(distinct) + codes
    if n * len(distinct) <= 1 << 22:
        twice = bool(np.bincount(pairs).max() > 1)
    else:
        twice = len(np.unique(pairs)) != len(pairs)
    if twice:
        return None, []
    properties = pa.MapArray.from_arrays(pa.array(offsets.astype(np.int32)), names, values).cast(_MAP)
    position = {name: i for i, name in enumerate(distinct.to_pylist())}
    found_values: list[pa.Array] = []
    for name in wanted:
        code = position.get(name)
        if code is None:
            found_values.append(pa.nulls(n, _STRING))
            continue
        at = np.flatnonzero(codes == code)
        index = np.full(n, -1, np.int64)
        index[owners[at]] = at
        found_values.append(values.take(pa.array(index, mask=index < 0)))
    return properties, found_values


def _keys(joined: pa.Array) -> pa.Array:
    """The KEYS values split at spaces, empty keys dropped (no KEYS: an empty list)."""
    n = len(joined)
    if not pc.any(pc.match_substring(joined, " ")).as_py():  # one key a message (or none): no split
        present = np.asarray(pc.fill_null(pc.greater(pc.binary_length(joined), 0), False))
        values = joined.filter(pa.array(present))
        return pa.ListArray.from_arrays(_offsets_from_parents(n, np.flatnonzero(present)), values).cast(_LIST)
    split = pc.split_pattern(pc.fill_null(joined, ""), " ")
    parents = np.asarray(pc.list_parent_indices(split))
    flat = split.flatten()
    nonempty = np.asarray(pc.greater(pc.binary_length(flat), 0))
    return pa.ListArray.from_arrays(
        _offsets_from_parents(n, parents[nonempty]), flat.filter(pa.array(nonempty))
    ).cast(_LIST)


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
    # The fixed parts of all records, copied side by side (every record has them: record_starts
    # checked _MIN_RECORD), read as one structured array.
    raw_heads = sliding_window_view(buf, _FIXED)[pos]
    heads = raw_heads.view(_HEAD).reshape(n)
    end = pos + heads["total"]
    sys_flag = heads["sys_flag"].astype(np.int32)
    body_len = heads["body_len"].astype(np.int64)
    body_at = pos + _FIXED
    topic_len_at = body_at + body_len
    if not (
        bool(np.all(heads["magic"] == MAGIC_CODE_V1))
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

    # Body, topic and properties of every record: six cuts a record, in record order.
    bounds = np.stack([body_at, topic_len_at, topic_len_at + 1, props_len_at, props_at, end], axis=1)
    pieces = _pieces(pa.py_buffer(data), bounds.reshape(-1))
    topics = _every(pieces, 2, 6).view(_STRING)
    props = _every(pieces, 4, 6).view(_STRING)
    try:
        topics.validate(full=True)  # UTF-8: the general path replaces bad bytes
        props.validate(full=True)
    except pa.ArrowInvalid:
        return None
    rows = np.zeros(n + 1, np.int64)
    np.cumsum(props_len, out=rows[1:])
    properties, lookups = _properties(props, rows, (_TAGS, _UNIQ, _KEYS))
    if properties is None:
        return None  # a name twice in one message: the general path keeps the last value
    tags, uniq, joined_keys = lookups

    # Offset msg id: hex of the store address and the commit-log offset, both as stored.
    id_bytes = np.concatenate([raw_heads[:, 64:72], raw_heads[:, 28:36]], axis=1)
    offset_ids = pa.StringArray.from_buffers(
        n,
        pa.py_buffer(np.arange(0, 32 * n + 1, 32, dtype=np.int32)),
        pa.py_buffer(id_bytes.tobytes().hex().upper().encode()),
    )
    queue_offsets = heads["queue_offset"].astype(np.int64)
    columns: list[Any] = [
        topics,
        pa.repeat(pa.scalar(broker_name, _STRING), n),
        pa.array(heads["queue_id"].astype(np.int32), pa.int32()),
        pa.array(queue_offsets, pa.int64()),
        pc.coalesce(uniq, offset_ids),
        offset_ids,
        tags,
        _keys(joined_keys),
        _every(pieces, 0, 6),
        properties,
        pa.array(heads["born_timestamp"].astype(np.int64), _TS_MS).cast(_TS),
        pa.array(heads["store_timestamp"].astype(np.int64), _TS_MS).cast(_TS),
        _hosts(heads["born_host"]),
        _hosts(heads["store_host"]),
        pa.array(heads["reconsume_times"].astype(np.int32), pa.int32()),
        pa.array(sys_flag, pa.int32()),
    ]
    batch = pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA)

    lo = np.repeat(np.array(lo_list, np.int64), counts)
    hi = np.repeat(np.array(hi_list, np.int64), counts)
    mask = (queue_offsets >= lo) & (queue_offsets < hi)
    if not accept.accepts_all:
        mask &= np.asarray(pc.fill_null(pc.is_in(tags, pa.array(sorted(accept.tags), _STRING)), False))
    if not bool(mask.all()):
        batch = batch.filter(pa.array(mask))
    return batch
