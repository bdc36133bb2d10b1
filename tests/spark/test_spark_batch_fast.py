"""``messages_to_batch`` (the column-at-a-time fast path) builds exactly what the plain row loop builds.

The reference below is the straightforward implementation the reader used before: one loop over
the messages, ``offset_msg_id_from_raw`` per message, keys split per message, timestamps scaled in
Python. Hypothesis draws batches with mixed store/born addresses (IPv4 and IPv6), any int64
commit-log offset (negative ones are two's complement in the id), keys with odd spacing, empty or
missing UNIQ_KEY, any property text; the two batches must be equal, schema included.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rocketmq_py.protocol import MessageExt, decode_messages
from rocketmq_py.protocol._ids import format_socket_address, offset_msg_id_from_raw
from rocketmq_py.protocol._stored import encode_stored_message
from spark_connector._schema import ARROW_SCHEMA, messages_to_batch

_TS = pa.timestamp("us", tz="UTC")
_MAP = pa.map_(pa.string(), pa.string())


def reference_batch(broker_name: str, messages: Sequence[MessageExt]) -> pa.RecordBatch:
    rows: dict[str, list[Any]] = {name: [] for name in ARROW_SCHEMA.names}
    for m in messages:
        props = m.properties
        offset_id = offset_msg_id_from_raw(m.store_address, m.commit_log_offset)
        joined = props.get("KEYS")
        rows["topic"].append(m.topic)
        rows["broker_name"].append(broker_name)
        rows["queue_id"].append(m.queue_id)
        rows["queue_offset"].append(m.queue_offset)
        rows["msg_id"].append(props.get("UNIQ_KEY") or offset_id)
        rows["offset_msg_id"].append(offset_id)
        rows["tags"].append(props.get("TAGS"))
        rows["keys"].append([k for k in joined.split(" ") if k] if joined else [])
        rows["body"].append(m.body)
        rows["properties"].append(list(props.items()))
        rows["born_timestamp"].append(m.born_timestamp * 1000)
        rows["store_timestamp"].append(m.store_timestamp * 1000)
        rows["born_host"].append(format_socket_address(m.born_address))
        rows["store_host"].append(format_socket_address(m.store_address))
        rows["reconsume_times"].append(m.reconsume_times)
        rows["sys_flag"].append(m.sys_flag)
    columns = [pa.array(rows[f.name], f.type) for f in ARROW_SCHEMA]
    return pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA)


int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
millis = st.integers(-(2**40), 2**43)  # * 1000 still fits int64 microseconds
ports = st.integers(0, 65535)
hosts = st.one_of(
    st.sampled_from(["127.0.0.1:10911", "10.0.0.2:10911"]),
    st.builds(lambda ip, port: f"{ip}:{port}", st.ip_addresses(v=4), ports),
    st.builds(lambda ip, port: f"[{ip}]:{port}", st.ip_addresses(v=6), ports),
)
texts = st.text(max_size=8)
key_texts = st.text(" ak\t", max_size=8) | st.sampled_from(["k1", "k1 k2", " k1  k2 ", " ", ""])
properties = st.fixed_dictionaries(
    {},
    optional={"UNIQ_KEY": st.sampled_from(["", "UNIQ1"]) | texts, "TAGS": texts, "KEYS": key_texts},
).flatmap(lambda known: st.dictionaries(texts, texts, max_size=3).map(lambda more: {**more, **known}))


@st.composite
def messages(draw: st.DrawFn) -> MessageExt:
    m = MessageExt(
        draw(st.sampled_from(["t1", "t2"]) | texts),
        draw(st.binary(max_size=16)),
        queue_id=draw(int32),
        queue_offset=draw(int64),
        commit_log_offset=draw(int64),
        sys_flag=draw(int32),
        born_timestamp=draw(millis),
        born_host=draw(hosts),
        store_timestamp=draw(millis),
        store_host=draw(hosts),
        reconsume_times=draw(int32),
    )
    m.properties = draw(properties)
    return m


@given(st.text(max_size=8), st.lists(messages(), max_size=12))
@example("broker-a", [MessageExt("t", b"x", commit_log_offset=-1, store_host="[::1]:10911")])
@settings(deadline=None)  # the first case pays pyarrow.compute's start-up
def test_fast_batch_equals_reference(broker_name: str, msgs: list[MessageExt]) -> None:
    batch = messages_to_batch(broker_name, msgs)
    assert batch.schema.equals(ARROW_SCHEMA)
    assert batch.equals(reference_batch(broker_name, msgs))


def test_one_store_address_and_two() -> None:
    one = [MessageExt("t", b"a", commit_log_offset=i, store_host="127.0.0.1:10911") for i in range(3)]
    two = [*one, MessageExt("t", b"b", commit_log_offset=-2, store_host="10.0.0.2:10912")]
    for msgs in (one, two):
        batch = messages_to_batch("b", msgs)
        assert batch.equals(reference_batch("b", msgs))
    assert messages_to_batch("b", two).column("offset_msg_id").to_pylist() == [
        "7F00000100002A9F0000000000000000",
        "7F00000100002A9F0000000000000001",
        "7F00000100002A9F0000000000000002",
        "0A00000200002AA0FFFFFFFFFFFFFFFE",
    ]


def test_decoded_pull_body_equals_reference() -> None:
    """What the reader really converts: messages decoded from stored records."""
    records = [
        encode_stored_message(
            MessageExt(
                "TopicA",
                bytes([i]) * 10,
                tags=f"Tag{i % 3}",
                keys=[f"k{i}", "x"] if i % 2 else [f"k{i}"],
                properties={"UNIQ_KEY": f"U{i}"} if i % 4 else {},
                queue_id=1,
                queue_offset=100 + i,
                commit_log_offset=5000 + 200 * i,
                born_timestamp=1_760_000_000_000 + i,
                born_host=f"192.168.1.{20 + i % 2}:5341{i % 2}",
                store_timestamp=1_760_000_000_004 + i,
                store_host="192.168.1.10:10911",
            )
        )
        for i in range(40)
    ]
    msgs = decode_messages(b"".join(records))
    batch = messages_to_batch("broker-b", msgs)
    assert batch.equals(reference_batch("broker-b", msgs))
    assert batch.num_rows == 40
    assert batch.column("keys").to_pylist()[:2] == [["k0"], ["k1", "x"]]
    assert batch.column("msg_id").to_pylist()[:2] == [
        msgs[0].properties.get("UNIQ_KEY") or batch.column("offset_msg_id")[0].as_py(),
        "U1",
    ]


def test_empty_batch_equals_reference() -> None:
    assert messages_to_batch("b", []).equals(reference_batch("b", []))
    assert messages_to_batch("b", []).schema.equals(ARROW_SCHEMA)
