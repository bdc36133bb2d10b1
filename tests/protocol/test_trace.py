"""Trace records: Java's text layout, both ways.

``JAVA_BODY`` is laid out field by field as Java's ``TraceDataEncoder`` writes a send, a listener
call on two messages (SubBefore x2, SubAfter x2) and a transaction's end; the real broker's trace
topic, written by the Java client and by ours, is read back in ``integration/test_trace.py``.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py.protocol._trace import (
    ConsumeReturnType,
    EndTransactionTrace,
    PubTrace,
    SubAfterTrace,
    SubBeforeTrace,
    TraceMessageType,
    decode_trace_data,
    encode_trace_data,
    trace_keys,
)

S, F = "\x01", "\x02"
JAVA_BODY = (
    S.join(["Pub", "1764000000000", "DefaultRegion", "pg", "T", "ID1", "TagA", "k1 k2", "127.0.0.1:10911"])
    + S
    + S.join(["5", "3", "0", "OFFSET1", "true"])
    + F
    + S.join(["SubBefore", "1764000000100", "DefaultRegion", "cg", "REQ", "ID1", "0", "k1 k2"])
    + F
    + S.join(["SubBefore", "1764000000100", "DefaultRegion", "cg", "REQ", "ID2", "2", "null"])
    + F
    + S.join(["SubAfter", "REQ", "ID1", "4", "false", "k1 k2", "4", "1764000000100", "cg"])
    + F
    + S.join(["SubAfter", "REQ", "ID2", "4", "false", "null", "4", "1764000000100", "cg"])
    + F
    + S.join(
        [
            "EndTransaction",
            "1764000000200",
            "DefaultRegion",
            "pg",
            "T",
            "ID3",
            "null",
            "null",
            "127.0.0.1:10911",
        ]
    )
    + S
    + S.join(["2", "TX3", "COMMIT_MESSAGE", "false"])
    + F
)

PUB = PubTrace(
    timestamp=1764000000000,
    region_id="DefaultRegion",
    group="pg",
    topic="T",
    msg_id="ID1",
    tags="TagA",
    keys="k1 k2",
    store_host="127.0.0.1:10911",
    body_length=5,
    cost_ms=3,
    msg_type=TraceMessageType.NORMAL,
    offset_msg_id="OFFSET1",
    success=True,
)


def _sub(msg_id: str, retries: int, keys: str) -> tuple[SubBeforeTrace, SubAfterTrace]:
    before = SubBeforeTrace(
        timestamp=1764000000100,
        region_id="DefaultRegion",
        group="cg",
        request_id="REQ",
        msg_id=msg_id,
        retry_times=retries,
        keys=keys,
    )
    after = SubAfterTrace(
        request_id="REQ",
        msg_id=msg_id,
        cost_ms=4,
        success=False,
        keys=keys,
        context_code=ConsumeReturnType.FAILED,
        timestamp=1764000000100,
        group="cg",
    )
    return before, after


END = EndTransactionTrace(
    timestamp=1764000000200,
    region_id="DefaultRegion",
    group="pg",
    topic="T",
    msg_id="ID3",
    tags="",
    keys="",
    store_host="127.0.0.1:10911",
    msg_type=TraceMessageType.TRANSACTION_COMMIT,
    transaction_id="TX3",
    state="COMMIT_MESSAGE",
    from_check=False,
)


def test_java_records_decode_and_ours_encode_the_same_text() -> None:
    (b1, a1), (b2, a2) = _sub("ID1", 0, "k1 k2"), _sub("ID2", 2, "")
    records = [PUB, b1, b2, a1, a2, END]
    assert decode_trace_data(JAVA_BODY) == records
    # Absent tags and keys are "null" on both sides (Java's decoder needs every field present).
    assert encode_trace_data(records) == JAVA_BODY


def test_the_keys_of_a_record_are_its_message_id_and_keys() -> None:
    assert trace_keys(PUB) == ["ID1", "k1", "k2"]
    assert trace_keys(END) == ["ID3"]


def test_an_old_pub_record_without_offset_id_and_unknown_kinds_decode() -> None:
    old = S.join(["Pub", "1", "R", "g", "T", "ID", "", "", "h", "1", "2", "3", "false"]) + F
    [pub] = decode_trace_data(old + "Recall" + S + "1" + F)
    assert isinstance(pub, PubTrace)
    assert (pub.offset_msg_id, pub.success, pub.msg_type) == ("", False, TraceMessageType.DELAY)


_text = st.text(st.characters(exclude_characters="\x01\x02", exclude_categories=["Cs"])).filter(
    lambda t: t != "null"
)


@given(_text, _text, st.integers(0, 2**40), st.booleans(), st.sampled_from(ConsumeReturnType))
def test_records_round_trip(group: str, keys: str, ts: int, ok: bool, code: ConsumeReturnType) -> None:
    records = [
        SubBeforeTrace(
            timestamp=ts, region_id="R", group=group, request_id="r", msg_id="m", retry_times=1, keys=keys
        ),
        SubAfterTrace(
            request_id="r",
            msg_id="m",
            cost_ms=1,
            success=ok,
            keys=keys,
            context_code=code,
            timestamp=ts,
            group=group,
        ),
    ]
    assert decode_trace_data(encode_trace_data(records)) == records
