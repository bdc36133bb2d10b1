"""``chunks_to_batch`` (reply bytes straight to columns) builds exactly what decoding to messages builds.

The reference is the general path: ``decode_messages`` of every reply, the ``[lo, hi)`` window and
the tag re-check per message, then ``messages_to_batch`` (itself pinned to a plain row loop in
``test_spark_batch_fast.py``). Hypothesis draws replies of stored records with any numbers, IPv4
and IPv6 hosts, compressed bodies, and raw property bytes: separators in odd places, empty names
or values, a name twice, invalid UTF-8. The columnar path must take the common case itself and
hand the rest to the general path; either way the batches are equal.

A query that gives a schema gets only its columns (a ``Projection``): for any subset of the
columns in any order, the batch equals the full batch's same columns, and the columnar path never
leaves to the general path a batch the full build keeps.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pyspark.sql.types import StructType

from rocketmq_py.consumer._filter import MessageFilter
from rocketmq_py.errors import MalformedMessage
from rocketmq_py.protocol import MessageExt, SysFlag, build_subscription_data
from rocketmq_py.protocol._stored import encode_stored_message
from spark_connector import _columns
from spark_connector._arrow_columns import any_entries, plain_entries
from spark_connector._columns import (
    _BUILDERS,
    ReplyChunk,
    _columnar,
    _Records,
    chunks_to_batch,
    chunks_to_messages,
    last_queue_offset,
    record_starts,
)
from spark_connector._schema import (
    ARROW_SCHEMA,
    COLUMNS,
    SPARK_SCHEMA,
    Projection,
    messages_to_batch,
    parse_read_schema,
)

TOPIC = "TopicA"


def record(raw_properties: bytes = b"", **fields: object) -> bytes:
    """One stored record whose properties are exactly ``raw_properties`` (any bytes)."""
    plain = encode_stored_message(MessageExt(fields.pop("topic", TOPIC), **fields))  # type: ignore[arg-type]
    assert plain.endswith(b"\x00\x00")  # no properties: an int16 zero length at the end
    out = bytearray(plain[:-2] + struct.pack(">h", len(raw_properties)) + raw_properties)
    out[0:4] = struct.pack(">i", len(out))
    return bytes(out)


def props(*pairs: tuple[str, str]) -> bytes:
    return "".join(f"{k}\x01{v}\x02" for k, v in pairs).encode()


def accept(expression: str = "*") -> MessageFilter:
    return MessageFilter(build_subscription_data(TOPIC, expression, sub_version=0))


def reference(broker: str, chunks: list[ReplyChunk], expression: str) -> pa.RecordBatch:
    return messages_to_batch(broker, chunks_to_messages(chunks, accept(expression)))


def chunk(records: list[bytes], lo: int = -(2**63), hi: int = 2**63 - 1) -> ReplyChunk:
    data = b"".join(records)
    return ReplyChunk(data, record_starts(data), lo, hi)


def common(i: int, **extra: object) -> bytes:
    fields: dict[str, object] = {
        "body": bytes([i % 256]) * (i % 7),
        "queue_id": 2,
        "queue_offset": 100 + i,
        "commit_log_offset": 4096 + 300 * i,
        "born_timestamp": 1_760_000_000_000 + i,
        "born_host": f"192.168.1.{20 + i % 3}:5341{i % 2}",
        "store_timestamp": 1_760_000_000_004 + i,
        "store_host": "192.168.1.10:10911" if i % 5 else "192.168.1.11:10911",
        "reconsume_times": i % 3,
    }
    fields.update(extra)
    raw = props(("TAGS", f"Tag{i % 3}"), ("KEYS", f"k{i} x" if i % 2 else f"k{i}"), ("UNIQ_KEY", f"U{i}"))
    if i % 4 == 0:
        raw = props(("TAGS", f"Tag{i % 3}"), ("WAIT", "true"))  # no UNIQ_KEY, no KEYS
    return record(raw, **fields)


def test_common_case_is_columnar_and_equal() -> None:
    chunks = [chunk([common(i) for i in range(j, j + 32)], 100 + j, 100 + j + 30) for j in (0, 32, 64)]
    for expression in ("*", "Tag1 || Tag2", "Nope"):
        batch = _columnar("broker-a", chunks, accept(expression))
        assert batch is not None, "the common case takes the columnar path"
        assert batch.schema.equals(ARROW_SCHEMA)
        assert batch.equals(reference("broker-a", chunks, expression))
    batch = chunks_to_batch("broker-a", chunks, accept())
    assert batch.num_rows == 90  # 30 of each 32 are in the windows
    assert batch.column("keys").to_pylist()[:3] == [[], ["k1", "x"], ["k2"]]  # 0: no KEYS
    assert batch.column("msg_id").to_pylist()[1] == "U1"
    assert batch.column("msg_id").to_pylist()[0] == batch.column("offset_msg_id").to_pylist()[0]
    assert batch.column("store_host").to_pylist()[:2] == ["192.168.1.11:10911", "192.168.1.10:10911"]


@pytest.mark.parametrize(
    "odd",
    [
        pytest.param(props(("TAGS", "a"), ("TAGS", "b")), id="a name twice"),
        pytest.param(b"TAGS\x01\xff\xfe\x02", id="invalid UTF-8"),
    ],
)
def test_what_the_columnar_path_leaves_to_the_general_one(odd: bytes) -> None:
    chunks = [chunk([common(0), record(odd, queue_offset=101), common(2)])]
    assert _columnar("b", chunks, accept()) is None
    assert chunks_to_batch("b", chunks, accept()).equals(reference("b", chunks, "*"))


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"born_host": "[::1]:5000"}, id="IPv6 born host"),
        pytest.param({"store_host": "[fe80::1]:10911"}, id="IPv6 store host"),
        pytest.param({"sys_flag": SysFlag.COMPRESSED, "body": b"z" * 300}, id="compressed body"),
        pytest.param({"topic": "T" * 130}, id="magic v2 topic"),
    ],
)
def test_other_layouts_go_the_general_way(fields: dict[str, object]) -> None:
    chunks = [chunk([common(0), common(1, **fields)])]
    assert _columnar("b", chunks, accept()) is None
    batch = chunks_to_batch("b", chunks, accept())
    assert batch.num_rows == 2
    assert batch.equals(reference("b", chunks, "*"))


def test_records_that_do_not_add_up_raise_malformed() -> None:
    good = common(0)
    truncated = good[:-1]
    assert record_starts(truncated) is None
    with pytest.raises(MalformedMessage):
        chunks_to_batch("b", [ReplyChunk(truncated, None, 0, 2**62)], accept())
    lying = bytearray(good)
    lying[84:88] = struct.pack(">i", 5000)  # a body length past the record
    data = bytes(lying)
    starts = record_starts(data)
    assert starts == [0]  # the walk only reads TOTALSIZE...
    assert _columnar("b", [ReplyChunk(data, starts, 0, 2**62)], accept()) is None  # ...this checks the rest
    with pytest.raises(MalformedMessage):
        chunks_to_batch("b", [ReplyChunk(data, starts, 0, 2**62)], accept())


def test_last_queue_offset_and_empty_chunks() -> None:
    c = chunk([common(0), common(5)])
    assert last_queue_offset(c) == 105
    assert last_queue_offset(chunk([])) is None
    empty = chunks_to_batch("b", [chunk([])], accept())
    assert empty.num_rows == 0
    assert empty.schema.equals(ARROW_SCHEMA)


names = st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "WAIT", "", "a", "é"])
values = st.text(st.sampled_from("ab \x01é"), max_size=6) | st.sampled_from(
    ["Tag1", "k1 k2", " k1  k2 ", " "]
)
entries = st.lists(st.tuples(names, values), max_size=5).map(lambda pairs: props(*pairs))
raw_properties = st.one_of(
    entries,
    entries.map(lambda raw: raw.rstrip(b"\x02")),  # no trailing separator
    st.binary(max_size=12),  # anything at all
)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
hosts = st.sampled_from(["127.0.0.1:10911", "10.0.0.2:10912", "255.255.255.255:65535", "[::1]:10911"])


@st.composite
def records(draw: st.DrawFn) -> bytes:
    return record(
        draw(raw_properties),
        topic=draw(st.sampled_from([TOPIC, "é"])),
        body=draw(st.binary(max_size=16)),
        queue_id=draw(int32),
        queue_offset=draw(st.integers(0, 40)),
        commit_log_offset=draw(int64),
        sys_flag=draw(st.sampled_from([0, 0, 0, 4, SysFlag.COMPRESSED])),
        born_timestamp=draw(st.integers(-(2**40), 2**43)),
        born_host=draw(hosts),
        store_timestamp=draw(st.integers(-(2**40), 2**43)),
        store_host=draw(hosts),
        reconsume_times=draw(int32),
    )


replies = st.tuples(st.lists(records(), max_size=6), st.integers(0, 40), st.integers(0, 41))


@given(st.lists(replies, max_size=4), st.sampled_from(["*", "Tag1", "Tag1 || é"]))
@example([([common(0)], 0, 2**40)], "*")
@settings(deadline=None, max_examples=300)
def test_columns_equal_the_message_path(replies: list[tuple[list[bytes], int, int]], expression: str) -> None:
    chunks = [chunk(recs, lo, hi) for recs, lo, hi in replies]
    batch = chunks_to_batch("broker-x", chunks, accept(expression))
    assert batch.schema.equals(ARROW_SCHEMA)
    assert batch.equals(reference("broker-x", chunks, expression))


@st.composite
def common_records(draw: st.DrawFn) -> bytes:
    """Records the columnar path takes itself (unless a property name comes twice)."""
    return record(
        draw(entries),
        body=draw(st.binary(max_size=16)),
        queue_id=draw(int32),
        queue_offset=draw(st.integers(0, 40)),
        commit_log_offset=draw(int64),
        sys_flag=draw(st.sampled_from([0, 4, 0x300])),
        born_timestamp=draw(st.integers(-(2**40), 2**43)),
        born_host=draw(hosts.filter(lambda h: not h.startswith("["))),
        store_timestamp=draw(st.integers(-(2**40), 2**43)),
        store_host=draw(hosts.filter(lambda h: not h.startswith("["))),
        reconsume_times=draw(int32),
    )


@given(
    st.lists(
        st.tuples(st.lists(common_records(), max_size=6), st.integers(0, 40), st.integers(0, 41)), max_size=4
    ),
    st.sampled_from(["*", "Tag1", "Tag1 || é"]),
)
@settings(deadline=None, max_examples=300)
def test_columnar_path_equals_the_message_path(
    replies: list[tuple[list[bytes], int, int]], expression: str
) -> None:
    chunks = [chunk(recs, lo, hi) for recs, lo, hi in replies]
    batch = _columnar("broker-x", chunks, accept(expression))
    expected = reference("broker-x", chunks, expression)
    if batch is None:  # only a name twice in one message sends a batch of these the general way
        assert any(len(set(names)) < len(names) for c in chunks for names in _raw_property_names(c))
        return
    assert batch.equals(expected)


def _raw_property_names(c: ReplyChunk) -> list[list[str]]:
    """Per record, the names of its counted properties (non-empty name and value), in order."""
    out: list[list[str]] = []
    for start in c.starts or []:
        (total,) = struct.unpack_from(">i", c.data, start)
        record_bytes = c.data[start : start + total]
        (body_len,) = struct.unpack_from(">i", record_bytes, 84)
        topic_len = record_bytes[88 + body_len]
        text = record_bytes[88 + body_len + 1 + topic_len + 2 :].decode()
        out.append([k for k, _, v in (e.partition("\x01") for e in text.split("\x02")) if k and v])
    return out


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda i: common(2 * i), id="one key each, no spaces: no split"),
        pytest.param(lambda i: common(i, store_host="10.0.0.9:10911", born_host="10.0.0.8:1"), id="one host"),
        pytest.param(lambda i: record(b"", queue_offset=i), id="no properties at all"),
    ],
)
def test_shortcuts_build_what_the_general_path_builds(make: Callable[[int], bytes]) -> None:
    chunks = [chunk([make(i) for i in range(10)])]
    batch = _columnar("b", chunks, accept())
    assert batch is not None
    assert batch.equals(reference("b", chunks, "*"))


def _texts(rows: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    bounds = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=bounds[1:])
    return np.frombuffer(b"".join(rows), np.uint8), bounds


plain_rows = st.lists(
    st.tuples(
        st.text(st.sampled_from("ab\x00é"), max_size=3), st.text(st.sampled_from("ab \x00"), max_size=3)
    ),
    max_size=4,
).map(lambda pairs: "".join(f"{k}\x01{v}\x02" for k, v in pairs).encode())


def _is_plain(row: bytes) -> bool:
    """``name\\x01value\\x02`` repeated: separators alternate from \\x01, a \\x02 last (or no text)."""
    kinds = [b for b in row if b in (1, 2)]
    return not row or (row.endswith(b"\x02") and kinds == [1, 2] * (len(kinds) // 2))


@given(st.lists(plain_rows | raw_properties, max_size=6))
@example([props(("TAGS", "a"), ("KEYS", "k")), b"", props(("UNIQ_KEY", "u"))])
@example([b"a\x01\x02\x01b\x02"])  # an empty value, then an empty name: both dropped
@settings(deadline=None, max_examples=500)
def test_plain_entries_equal_the_general_split(rows: list[bytes]) -> None:
    """The one-pass split takes exactly the broker-written layout and finds what the general split finds."""
    text, bounds = _texts(rows)
    plain = plain_entries(text, bounds)
    assert (plain is not None) == all(_is_plain(r) for r in rows)
    if plain is not None:
        for got, expected in zip(plain, any_entries(text, bounds), strict=True):
            assert got.tolist() == expected.tolist()


# --- column pruning: a schema's columns only -------------------------------------------------------


def projection(columns: list[str], *, not_null: frozenset[str] = frozenset()) -> Projection:
    """What ``reader()`` makes of a user schema naming ``columns`` (those in ``not_null`` NOT NULL)."""
    fields = [SPARK_SCHEMA[c] for c in columns]
    return parse_read_schema(
        StructType([f if f.name not in not_null else type(f)(f.name, f.dataType, False) for f in fields])
    )


column_lists = st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=len(COLUMNS), unique=True)


def test_every_column_has_a_builder() -> None:
    assert list(_BUILDERS) == list(COLUMNS)


@given(st.lists(replies, max_size=4), st.sampled_from(["*", "Tag1", "Tag1 || é"]), column_lists)
@example([([common(0), common(1)], 0, 2**40)], "*", ["body", "queue_offset"])
@settings(deadline=None, max_examples=300)
def test_any_columns_equal_the_full_batch(
    replies: list[tuple[list[bytes], int, int]], expression: str, columns: list[str]
) -> None:
    chunks = [chunk(recs, lo, hi) for recs, lo, hi in replies]
    wanted = projection(columns)
    full = chunks_to_batch("broker-x", chunks, accept(expression))
    batch = chunks_to_batch("broker-x", chunks, accept(expression), wanted)
    assert batch.schema.equals(wanted.arrow_schema)
    assert batch.schema.names == columns
    assert batch.equals(full.select(columns))


@given(
    st.lists(
        st.tuples(st.lists(common_records(), max_size=6), st.integers(0, 40), st.integers(0, 41)), max_size=4
    ),
    st.sampled_from(["*", "Tag1", "Tag1 || é"]),
    column_lists,
)
@settings(deadline=None, max_examples=300)
def test_pruned_columnar_path_equals_the_full_one(
    replies: list[tuple[list[bytes], int, int]], expression: str, columns: list[str]
) -> None:
    chunks = [chunk(recs, lo, hi) for recs, lo, hi in replies]
    full = _columnar("broker-x", chunks, accept(expression))
    batch = _columnar("broker-x", chunks, accept(expression), projection(columns))
    if full is not None:
        assert batch is not None, "fewer columns never send a batch the general way"
    if batch is not None:
        assert batch.equals(reference("broker-x", chunks, expression).select(columns))


def test_columns_that_do_not_read_the_properties_skip_their_checks() -> None:
    """A name twice sends the full batch the general way; without the split, the columnar path keeps it."""
    chunks = [chunk([common(0), record(props(("KEYS", "a"), ("KEYS", "b")), queue_offset=101), common(2)])]
    assert _columnar("b", chunks, accept()) is None
    for columns in (["queue_offset", "body"], ["offset_msg_id", "topic", "store_host"]):
        batch = _columnar("b", chunks, accept(), projection(columns))
        assert batch is not None
        assert batch.equals(reference("b", chunks, "*").select(columns))
    # The tag filter reads the tags, so it needs the split even when ``tags`` is not returned.
    assert _columnar("b", chunks, accept("Tag0 || Tag2"), projection(["queue_offset"])) is None
    pruned = chunks_to_batch("b", chunks, accept("Tag0 || Tag2"), projection(["queue_offset"]))
    assert pruned.column("queue_offset").to_pylist() == [100, 102]


def test_unasked_columns_cost_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """``queue_offset, body``: no properties split, no offset ids, no hosts, no keys."""

    def boom(*args: object) -> None:
        raise AssertionError("built a column nobody asked for")

    chunks = [chunk([common(i) for i in range(10)], 100, 108)]
    expected = chunks_to_batch("b", chunks, accept()).select(["queue_offset", "body"])
    monkeypatch.setattr(_columns, "split_properties", boom)
    monkeypatch.setattr(_columns, "hosts_column", boom)
    monkeypatch.setattr(_columns, "keys_column", boom)
    monkeypatch.setattr(_Records, "offset_ids", property(boom))
    batch = chunks_to_batch("b", chunks, accept(), projection(["queue_offset", "body"]))
    assert batch.equals(expected)
    assert batch.num_rows == 8
    for columns in (["msg_id"], ["tags"], ["store_host"], ["offset_msg_id"]):
        with pytest.raises(AssertionError, match="nobody asked"):
            chunks_to_batch("b", chunks, accept(), projection(columns))


def test_pruned_batches_keep_the_schema_given() -> None:
    chunks = [chunk([common(i) for i in range(5)])]
    wanted = projection(["sys_flag", "queue_offset", "keys"], not_null=frozenset({"queue_offset", "keys"}))
    assert not wanted.arrow_schema.field("queue_offset").nullable
    for c in (chunks, [chunk([common(0), record(b"\xff", queue_offset=1)])]):  # columnar, then general
        batch = chunks_to_batch("b", c, accept(), wanted)
        assert batch.schema.equals(wanted.arrow_schema)
        full = chunks_to_batch("b", c, accept())
        for name in wanted.columns:  # the same values; only the fields' nullability differs
            assert batch.column(name).equals(full.column(name))
    empty = chunks_to_batch("b", [chunk([])], accept(), wanted)
    assert (empty.num_rows, empty.schema) == (0, wanted.arrow_schema)


def test_malformed_records_raise_whatever_the_columns() -> None:
    lying = bytearray(common(0))
    lying[84:88] = struct.pack(">i", 5000)  # a body length past the record
    data = bytes(lying)
    only = projection(["queue_offset"])
    assert _columnar("b", [ReplyChunk(data, record_starts(data), 0, 2**62)], accept(), only) is None
    with pytest.raises(MalformedMessage):
        chunks_to_batch("b", [ReplyChunk(data, record_starts(data), 0, 2**62)], accept(), only)
