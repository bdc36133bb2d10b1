"""POP protocol pieces: headers on the wire, QUERY_ASSIGNMENT bodies, the checkpoint string."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py.protocol import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    MessageModel,
    MessageQueue,
    MessageQueueAssignment,
    MessageRequestMode,
    PopCheckpoint,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    PropertyKey,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    RemotingCommand,
    RequestCode,
    build_offset_info,
    decode_body,
    decode_command,
    encode_body,
    from_ext_fields,
    parse_offset_info,
    pop_checkpoints,
    retry_mark,
    to_ext_fields,
)
from rocketmq_py.protocol._message import MessageExt

int64 = st.integers(0, 2**63 - 1)
int32 = st.integers(0, 2**31 - 1)
names = st.text("abcXYZ019_-", min_size=1, max_size=12)


def test_codes_match_java() -> None:
    assert int(RequestCode.POP_MESSAGE) == 200050
    assert int(RequestCode.ACK_MESSAGE) == 200051
    assert int(RequestCode.CHANGE_MESSAGE_INVISIBLETIME) == 200053
    assert int(RequestCode.BATCH_ACK_MESSAGE) == 200151
    assert int(RequestCode.QUERY_ASSIGNMENT) == 400


def test_pop_request_header_on_the_wire_round_trips_through_a_json_frame() -> None:
    header = PopMessageRequestHeader(
        consumer_group="g",
        topic="t",
        queue_id=3,
        max_msg_nums=32,
        invisible_time=60000,
        poll_time=15000,
        born_time=1700000000000,
        init_mode=0,
        exp_type="TAG",
        exp="*",
        order=False,
        broker_name="broker-a",
    )
    fields = to_ext_fields(header)
    assert fields["consumerGroup"] == "g"
    assert fields["invisibleTime"] == "60000"
    assert fields["bname"] == "broker-a"
    assert fields["order"] == "false"
    command = RemotingCommand.request(RequestCode.POP_MESSAGE, ext_fields=fields)
    frame = command.encode()
    decoded = decode_command(frame[4:])
    assert decoded.code == 200050
    assert from_ext_fields(PopMessageRequestHeader, decoded.ext_fields) == header


def test_ack_and_change_invisible_headers_use_java_keys() -> None:
    ack = AckMessageRequestHeader(consumer_group="g", topic="t", queue_id=1, extra_info="x", offset=7)
    assert to_ext_fields(ack) == {
        "consumerGroup": "g",
        "topic": "t",
        "queueId": "1",
        "extraInfo": "x",
        "offset": "7",
    }
    change = ChangeInvisibleTimeRequestHeader(
        consumer_group="g", topic="t", queue_id=1, extra_info="x", offset=7, invisible_time=10000
    )
    assert to_ext_fields(change)["invisibleTime"] == "10000"
    assert ChangeInvisibleTimeRequestHeader.REQUEST_CODE == 200053


def test_query_assignment_bodies_read_the_brokers_json() -> None:
    request = QueryAssignmentRequestBody(
        topic="t",
        consumer_group="g",
        client_id="c@1",
        strategy_name="AVG",
        message_model=MessageModel.CLUSTERING,
    )
    assert encode_body(request) == (
        b'{"clientId":"c@1","consumerGroup":"g","messageModel":"CLUSTERING","strategyName":"AVG","topic":"t"}'
    )
    reply = (
        b'{"messageQueueAssignments":[{"messageQueue":{"brokerName":"b","queueId":0,"topic":"t"},'
        b'"mode":"POP"},{"messageQueue":{"brokerName":"b","queueId":1,"topic":"t"},"mode":"POP",'
        b'"attachments":{}}]}'
    )
    body = decode_body(QueryAssignmentResponseBody, reply)
    assert [a.message_queue for a in body.message_queue_assignments] == [
        MessageQueue("t", "b", 0),
        MessageQueue("t", "b", 1),
    ]
    assert {a.mode for a in body.message_queue_assignments} == {MessageRequestMode.POP}
    assert decode_body(QueryAssignmentResponseBody, b"{}").message_queue_assignments == ()
    assert decode_body(MessageQueueAssignment, b"{}").mode is MessageRequestMode.PULL


@pytest.mark.parametrize(
    ("topic", "mark"),
    [("t", "0"), ("%RETRY%g_t", "1"), ("%RETRY%g+t", "2"), ("%RETRY%g", "1"), ("a+b", "0")],
)
def test_retry_mark_follows_the_retry_topic_forms(topic: str, mark: str) -> None:
    assert retry_mark(topic) == mark


checkpoints = st.builds(
    PopCheckpoint, int64, int64, int64, int32, st.sampled_from(["0", "1", "2"]), names, int32, int64
)


@given(checkpoints)
def test_checkpoint_round_trips(ck: PopCheckpoint) -> None:
    text = ck.encode()
    assert len(text.split(" ")) == 8
    assert PopCheckpoint.parse(text) == ck


@pytest.mark.parametrize(
    "text", ["", "1 2 3 4 0 b 1", "1 2 3 4 5 b 1 2", "1 2 3 4 0  1 2", "x 2 3 4 0 b 1 2"]
)
def test_checkpoint_parse_refuses_garbage(text: str) -> None:
    with pytest.raises(ValueError, match="POP checkpoint"):
        PopCheckpoint.parse(text)


def test_checkpoint_names_the_stored_topic() -> None:
    ck = PopCheckpoint(0, 1, 2, 3, "0", "b", 0, 5)
    assert ck.stored_topic("t", "g") == "t"
    assert PopCheckpoint(0, 1, 2, 3, "1", "b", 0, 5).stored_topic("t", "g") == "%RETRY%g_t"
    assert PopCheckpoint(0, 1, 2, 3, "2", "b", 0, 5).stored_topic("t", "g") == "%RETRY%g+t"


offset_items = st.lists(
    st.tuples(st.sampled_from(["0", "1", "2"]), int32, st.lists(int64, min_size=1, max_size=4)),
    max_size=5,
    unique_by=lambda item: (item[0], item[1]),
)


@given(offset_items)
def test_offset_info_round_trips(items: list[tuple[str, int, list[int]]]) -> None:
    parsed = parse_offset_info(build_offset_info(items))
    assert parsed == {f"{r}@{q}": tuple(n) for r, q, n in items}


def test_offset_info_examples_and_errors() -> None:
    assert parse_offset_info(None) == {}
    assert parse_offset_info("0 1 5;1 0 7") == {"0@1": (5,), "1@0": (7,)}
    assert parse_offset_info("0 1 5,6,9") == {"0@1": (5, 6, 9)}
    with pytest.raises(ValueError, match="3 fields"):
        parse_offset_info("0 1")
    with pytest.raises(ValueError, match="repeats"):
        parse_offset_info("0 1 5;0 1 6")


def _msg(topic: str, queue_id: int, offset: int, properties: dict[str, str] | None = None) -> MessageExt:
    return MessageExt(topic, b"x", properties=properties or {}, queue_id=queue_id, queue_offset=offset)


def _header(start: str | None, offsets: str | None) -> PopMessageResponseHeader:
    return PopMessageResponseHeader(
        pop_time=1000,
        invisible_time=60000,
        revive_qid=2,
        rest_num=0,
        start_offset_info=start,
        msg_offset_info=offsets,
    )


def test_checkpoints_from_the_offset_info() -> None:
    msgs = [_msg("t", 1, 10), _msg("t", 1, 11), _msg("%RETRY%g+t", 0, 4), _msg("t", 2, 20)]
    header = _header("0 1 10;2 0 4;0 2 20", "0 1 10,11;2 0 4;0 2 20")
    pop_checkpoints(msgs, header, "broker-a")
    cks = [PopCheckpoint.parse(m.properties[PropertyKey.POP_CK]) for m in msgs]
    assert cks[0] == PopCheckpoint(10, 1000, 60000, 2, "0", "broker-a", 1, 10)
    assert cks[1] == PopCheckpoint(10, 1000, 60000, 2, "0", "broker-a", 1, 11)
    assert cks[2] == PopCheckpoint(4, 1000, 60000, 2, "2", "broker-a", 0, 4)
    assert cks[3].queue_offset == 20
    assert all(m.properties[PropertyKey.FIRST_POP_TIME] == "1000" for m in msgs)


def test_checkpoints_keep_an_existing_one_and_a_first_pop_time() -> None:
    msg = _msg("t", 1, 10, {PropertyKey.POP_CK: "kept", PropertyKey.FIRST_POP_TIME: "7"})
    pop_checkpoints([msg], _header("0 1 10", "0 1 10"), "b")
    assert msg.properties[PropertyKey.POP_CK] == "kept"
    assert msg.properties[PropertyKey.FIRST_POP_TIME] == "7"


def test_checkpoints_without_offset_info_start_at_each_queues_first_message() -> None:
    msgs = [_msg("t", 1, 10), _msg("t", 1, 12), _msg("t", 3, 5)]
    pop_checkpoints(msgs, _header(None, None), "b")
    cks = [PopCheckpoint.parse(m.properties[PropertyKey.POP_CK]) for m in msgs]
    assert [(c.ck_queue_offset, c.queue_offset) for c in cks] == [(10, 10), (10, 12), (5, 5)]


def test_checkpoints_refuse_a_message_the_offset_info_does_not_cover() -> None:
    with pytest.raises(ValueError, match="no offset info"):
        pop_checkpoints([_msg("t", 4, 1)], _header("0 1 10", "0 1 10"), "b")
