"""BATCH_ACK_MESSAGE bodies: Java's bytes (protocol/vectors/batch_ack_body.json, written by
protocol/recorder/BatchAckBody.java with BatchAckMessageRequestBody.encode()), both ways."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py.errors import MalformedBody
from rocketmq_py.protocol import (
    BatchAck,
    PopCheckpoint,
    batch_acks,
    decode_batch_ack_body,
    encode_batch_ack_body,
)

VECTORS = json.loads(
    (Path(__file__).resolve().parents[2] / "protocol" / "vectors" / "batch_ack_body.json").read_text("utf-8")
)
CASES = VECTORS["cases"]


def _ack(fields: dict[str, object]) -> BatchAck:
    return BatchAck(**{**fields, "offsets": tuple(fields["offsets"])})  # type: ignore[arg-type]


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{len(case['acks'])} entries")
def test_our_body_is_the_java_clients_bytes(case: dict[str, object]) -> None:
    acks = [_ack(fields) for fields in case["acks"]]  # type: ignore[attr-defined]
    assert encode_batch_ack_body(str(case["broker_name"]), acks) == str(case["body"]).encode("utf-8")


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{len(case['acks'])} entries")
def test_java_bodies_decode_to_their_inputs(case: dict[str, object]) -> None:
    broker, acks = decode_batch_ack_body(str(case["body"]).encode("utf-8"))
    assert broker == case["broker_name"]
    assert acks == [_ack(fields) for fields in case["acks"]]  # type: ignore[attr-defined]


def test_the_bit_set_is_javas_little_endian_bytes() -> None:
    ack = BatchAck("g", "t", "0", 100, 1, 2, 3, 4, (100, 101, 103, 109, 131))
    assert ack.bits() == bytes([0x0B, 0x02, 0x00, 0x80])
    assert BatchAck("g", "t", "0", 5, 1, 2, 3, 4, ()).bits() == b""
    with pytest.raises(ValueError, match="outside the checkpoint"):
        BatchAck("g", "t", "0", 5, 1, 2, 3, 4, (4,)).bits()


def _ck(start: int, offset: int, *, retry: str = "0", queue: int = 1, pop_time: int = 1000) -> PopCheckpoint:
    return PopCheckpoint(start, pop_time, 60000, 3, retry, "broker-a", queue, offset)


def test_messages_merge_per_checkpoint_in_first_seen_order() -> None:
    items = [
        ("t", _ck(10, 12)),
        ("t", _ck(10, 10)),
        ("t", _ck(10, 11, retry="2")),  # the retry topic's checkpoint: another entry
        ("t", _ck(10, 13, queue=2)),  # another queue
        ("t", _ck(10, 14, pop_time=2000)),  # another pop of the same queue
        ("u", _ck(10, 15)),  # another topic
        ("t", _ck(10, 17)),
    ]
    acks = batch_acks("g", items)
    assert [(a.topic, a.retry, a.queue_id, a.pop_time, a.offsets) for a in acks] == [
        ("t", "0", 1, 1000, (12, 10, 17)),
        ("t", "2", 1, 1000, (11,)),
        ("t", "0", 2, 1000, (13,)),
        ("t", "0", 1, 2000, (14,)),
        ("u", "0", 1, 1000, (15,)),
    ]
    assert {(a.consumer_group, a.start_offset, a.revive_queue_id, a.invisible_time) for a in acks} == {
        ("g", 10, 3, 60000)
    }


@given(
    start=st.integers(0, 2**40),
    deltas=st.sets(st.integers(0, 300), min_size=1, max_size=40),
    group=st.text(min_size=1, max_size=20),
    topic=st.text(min_size=1, max_size=20),
)
def test_bodies_round_trip(start: int, deltas: set[int], group: str, topic: str) -> None:
    ack = BatchAck(
        group, topic, "1", start, 7, 2, 1_700_000_000_000, 60_000, tuple(start + d for d in sorted(deltas))
    )
    assert decode_batch_ack_body(encode_batch_ack_body("broker-x", [ack, ack])) == ("broker-x", [ack, ack])


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"[]",
        b'{"acks":[{}],"brokerName":"b"}',
        b'{"acks":[{"b":"!!","c":"g","it":1,"pt":1,"q":1,"r":"0","rq":1,"so":1,"t":"t"}],"brokerName":"b"}',
    ],
)
def test_malformed_bodies_are_a_typed_error(body: bytes) -> None:
    with pytest.raises(MalformedBody):
        decode_batch_ack_body(body)
