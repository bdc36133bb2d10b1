"""Executor hot path: PULL_MESSAGE reply bodies straight to one Arrow batch, column by column.

The reader does not need :class:`~rocketmq_py.protocol.MessageExt` objects: it needs columns. A
batch is built from the reply bodies of several pulls (:class:`ReplyChunk`) without a Python
object per message and without a numpy operation per byte:

* the records are found by walking their TOTALSIZE fields (:func:`record_starts`, done once per
  reply while pulling);
* the fixed parts (88 bytes, up to the body length) of all records are copied side by side in one
  numpy indexing and read as one structured array (:data:`_HEAD`), a field a column;
* each variable part (body, topic, properties) is cut out of the replies by Arrow: the replies'
  bytes, zero-copy, become one binary array whose elements are the parts and the gaps between
  them (the cut points are ascending), and ``take`` of every other element copies the parts end
  to end (:func:`~spark_connector._arrow_columns.cut`, :func:`~spark_connector._arrow_columns.every`;
  the Arrow kernels live in :mod:`~spark_connector._arrow_columns`);
* the properties are split into the map column, the tags, keys and UNIQ_KEY the same way, after
  one pass finds the separators (``plain_entries``: the layout brokers write; anything else goes
  through ``any_entries``);
* offset message ids are the hex of the store address and commit-log offset bytes, in one call.

Only the columns the reader's :class:`~spark_connector._schema.Projection` names are built, in its
order (all sixteen unless the query gave a schema). Each column has its builder (:data:`_BUILDERS`)
over the checked records (:class:`_Records`), and what several columns share is computed once,
when the first of them asks: the properties split (``msg_id``, ``tags``, ``keys``, ``properties``,
and the tag filter even when ``tags`` is not returned), the offset ids (``msg_id``,
``offset_msg_id``). So ``queue_offset, body`` costs the fixed parts and one cut, no split, no hex,
no host formatting.

Only the common case takes this path: magic v1, IPv4 hosts, a plain body (not compressed, not an
inner batch), valid UTF-8 text and no property name twice in one message. Anything else in a
batch (or anything that does not add up) sends the whole batch through the general path,
:func:`~rocketmq_py.protocol.decode_messages` + :func:`~spark_connector._schema.messages_to_batch`
(all columns, then the projection's), which handles it or raises
:class:`~rocketmq_py.errors.MalformedMessage` precisely; the two paths build equal batches
(``tests/spark/test_spark_columns.py``; speed in ``benchmarks/spark_arrow.py``). The layout checks
run whatever the columns, so a batch that would raise still raises; the text checks run with the
columns that read the text (UTF-8 of the topics with ``topic``; of the properties, and a name
twice, with the split), so a batch without those columns may stay here where the full batch would
not, with equal values: any subset equals the full batch's same columns.

Each chunk keeps the records whose queue offset lies in its ``[lo, hi)`` window and, with a TAG
subscription, whose TAGS is one of the subscribed tags (the client-side re-check of a broker's
tag-hash filter), as the message path did.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any, Final, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.lib.stride_tricks import sliding_window_view

from rocketmq_py.lowlevel import MessageFilter
from rocketmq_py.protocol import MAGIC_CODE_V1, PropertyKey, SysFlag, decode_messages
from spark_connector._arrow_columns import (
    PropertySplit,
    cut,
    every,
    hosts_column,
    int32_column,
    keys_column,
    property_map,
    property_values,
    split_properties,
    timestamps_column,
)
from spark_connector._schema import ALL_COLUMNS, Projection, empty_batch, messages_to_batch

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


def chunks_to_messages(
    chunks: Sequence[ReplyChunk], accept: MessageFilter, *, broker_name: str = ""
) -> list[Any]:
    """The kept messages of ``chunks`` as MessageExt objects (the general path; tests and tools).

    ``broker_name``, the broker the replies came from, is set on every message (``""``: unknown).
    """
    kept: list[Any] = []
    for chunk in chunks:
        msgs = [
            m
            for m in decode_messages(chunk.data, broker_name=broker_name)
            if chunk.lo <= m.queue_offset < chunk.hi
        ]
        kept.extend(msgs if accept.accepts_all else accept.filter_messages(msgs))
    return kept


def chunks_to_batch(
    broker_name: str,
    chunks: Sequence[ReplyChunk],
    accept: MessageFilter,
    projection: Projection = ALL_COLUMNS,
) -> pa.RecordBatch:
    """The kept records of ``chunks`` as one batch of the columns of ``projection`` (see the module doc).

    Args:
        broker_name: the ``broker_name`` column's value.
        chunks: the replies, in offset order.
        accept: the subscription's tag filter (re-checked on the tags).
        projection: the columns to build, in order, and the batch's exact schema (by default all
            of them, :data:`~spark_connector._schema.ARROW_SCHEMA`).

    Raises:
        MalformedMessage: a record that does not decode.
    """
    batch = _columnar(broker_name, chunks, accept, projection)
    if batch is None:
        batch = messages_to_batch(broker_name, chunks_to_messages(chunks, accept, broker_name=broker_name))
        if not batch.schema.equals(projection.arrow_schema):
            columns = [batch.column(name) for name in projection.columns]
            batch = pa.RecordBatch.from_arrays(columns, schema=projection.arrow_schema)
    return batch


# --- the columnar path ---------------------------------------------------------------------------


class _GeneralPath(Exception):
    """A check failed while building a column: the general path builds the batch."""


class _Records:
    """The records of a batch's replies with their layout checked; the columns are built from it on demand.

    Construction reads the fixed parts and checks the layout the columnar path handles (raising
    :class:`_GeneralPath` otherwise). What several columns share is computed once, when the
    first of them asks: the properties split (``msg_id``, ``tags``, ``keys``, ``properties`` and
    the tag filter), the offset message ids (``msg_id``, ``offset_msg_id``), the topics' UTF-8
    check. A column nobody asks for costs nothing.
    """

    def __init__(self, broker_name: str, chunks: Sequence[ReplyChunk], n: int) -> None:
        data = b"".join(chunk.data for chunk in chunks)
        if len(data) > _INT32_MAX:
            raise _GeneralPath
        buf = np.frombuffer(data, np.uint8)
        base = 0
        starts_list: list[int] = []
        counts: list[int] = []
        for chunk in chunks:
            starts = chunk.starts or []
            starts_list.extend([base + s for s in starts] if base else starts)
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
            raise _GeneralPath
        topic_len = buf[topic_len_at].astype(np.int64)
        props_len_at = topic_len_at + 1 + topic_len
        if bool(np.any(topic_len >= 128)) or not bool(np.all(props_len_at + 2 <= end)):
            raise _GeneralPath
        props_len = (buf[props_len_at].astype(np.int64) << 8) | buf[props_len_at + 1]
        props_at = props_len_at + 2
        if bool(np.any(props_len >= 32768)) or not bool(np.all(props_at + props_len == end)):
            raise _GeneralPath
        self.broker_name = broker_name
        self.n = n
        self.data = data
        self.raw_heads = raw_heads
        self.heads = heads
        self.sys_flag = sys_flag
        self.queue_offsets = heads["queue_offset"].astype(np.int64)
        self.body_at, self.topic_len_at = body_at, topic_len_at
        self.props_len_at, self.props_at, self.end = props_len_at, props_at, end
        self.props_len = props_len
        self.lo = np.repeat(np.array([chunk.lo for chunk in chunks], np.int64), counts)
        self.hi = np.repeat(np.array([chunk.hi for chunk in chunks], np.int64), counts)
        self._values: dict[str, pa.Array] = {}

    def segment(self, start: np.ndarray, stop: np.ndarray) -> pa.Array:
        """Bytes ``[start[i], stop[i])`` of each record ``i`` (inside it), copied end to end by Arrow."""
        return every(cut(self.buffer, np.stack([start, stop], axis=1).reshape(-1)), 0, 2)

    @cached_property
    def buffer(self) -> pa.Buffer:
        return pa.py_buffer(self.data)

    @cached_property
    def topics(self) -> pa.Array:
        topics = self.segment(self.topic_len_at + 1, self.props_len_at).view(_STRING)
        try:
            topics.validate(full=True)  # UTF-8: the general path replaces bad bytes
        except pa.ArrowInvalid:
            raise _GeneralPath from None
        return topics

    @cached_property
    def split(self) -> PropertySplit:
        props = self.segment(self.props_at, self.end).view(_STRING)
        try:
            props.validate(full=True)
        except pa.ArrowInvalid:
            raise _GeneralPath from None
        rows = np.zeros(self.n + 1, np.int64)
        np.cumsum(self.props_len, out=rows[1:])
        split = split_properties(props, rows)
        if split is None:
            raise _GeneralPath  # a name twice in one message: the general path keeps the last value
        return split

    def value(self, name: str) -> pa.Array:
        """Each record's value of property ``name`` (null where it has none)."""
        found = self._values.get(name)
        if found is None:
            found = self._values[name] = property_values(self.split, name)
        return found

    @cached_property
    def offset_ids(self) -> pa.Array:
        """Offset msg ids: hex of the store address and the commit-log offset, both as stored."""
        raw = self.raw_heads
        id_bytes = np.concatenate([raw[:, 64:72], raw[:, 28:36]], axis=1)
        return pa.StringArray.from_buffers(
            self.n,
            pa.py_buffer(np.arange(0, 32 * self.n + 1, 32, dtype=np.int32)),
            pa.py_buffer(id_bytes.tobytes().hex().upper().encode()),
        )

    def kept(self, accept: MessageFilter) -> np.ndarray | None:
        """Which records the chunks' windows and the tag filter keep (None: all of them)."""
        offsets = self.queue_offsets
        mask = (offsets >= self.lo) & (offsets < self.hi)
        if not accept.accepts_all:
            tags = self.value(_TAGS)
            mask &= np.asarray(pc.fill_null(pc.is_in(tags, pa.array(sorted(accept.tags), _STRING)), False))
        return None if bool(mask.all()) else mask


#: How each column is built from the records (the keys are exactly :data:`COLUMNS`).
_BUILDERS: Final[dict[str, Callable[[_Records], pa.Array]]] = {
    "topic": lambda r: r.topics,
    "broker_name": lambda r: pa.repeat(pa.scalar(r.broker_name, _STRING), r.n),
    "queue_id": lambda r: int32_column(r.heads["queue_id"]),
    "queue_offset": lambda r: pa.array(r.queue_offsets, pa.int64()),
    "msg_id": lambda r: pc.coalesce(r.value(_UNIQ), r.offset_ids),
    "offset_msg_id": lambda r: r.offset_ids,
    "tags": lambda r: r.value(_TAGS),
    "keys": lambda r: keys_column(r.value(_KEYS)),
    "body": lambda r: r.segment(r.body_at, r.topic_len_at),
    "properties": lambda r: property_map(r.split),
    "born_timestamp": lambda r: timestamps_column(r.heads["born_timestamp"]),
    "store_timestamp": lambda r: timestamps_column(r.heads["store_timestamp"]),
    "born_host": lambda r: hosts_column(r.heads["born_host"]),
    "store_host": lambda r: hosts_column(r.heads["store_host"]),
    "reconsume_times": lambda r: int32_column(r.heads["reconsume_times"]),
    "sys_flag": lambda r: int32_column(r.sys_flag),
}


def _columnar(
    broker_name: str,
    chunks: Sequence[ReplyChunk],
    accept: MessageFilter,
    projection: Projection = ALL_COLUMNS,
) -> pa.RecordBatch | None:
    """The batch of ``projection`` built without MessageExt objects, or None when the general path must build it."""
    if any(chunk.starts is None for chunk in chunks):
        return None
    n = sum(chunk.rows for chunk in chunks)
    if n == 0:
        return empty_batch(projection.arrow_schema)
    try:
        records = _Records(broker_name, chunks, n)
        columns = [_BUILDERS[name](records) for name in projection.columns]
        mask = records.kept(accept)
    except _GeneralPath:
        return None
    batch = pa.RecordBatch.from_arrays(columns, schema=projection.arrow_schema)
    return batch if mask is None else batch.filter(pa.array(mask))
