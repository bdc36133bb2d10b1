"""Consumer running info and direct-consumption results: round trips, and what a real Java consumer sent.

The golden vectors under ``protocol/vectors/running_info/`` are the broker's replies to
GET_CONSUMER_RUNNING_INFO and CONSUME_MESSAGE_DIRECTLY for the Java 5.x benchmark Consumer (see the
README there); the body is the Java client's own bytes, passed through by the broker.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py.errors import MalformedBody
from rocketmq_py.protocol import (
    PROP_ALLOCATE_STRATEGY,
    PROP_CONSUME_TYPE,
    PROP_CONSUMER_START_TIMESTAMP,
    ConsumeMessageDirectlyResult,
    ConsumeMessageDirectlyResultRequestHeader,
    ConsumeRateStatus,
    ConsumeResult,
    ConsumerRunningInfo,
    GetConsumerRunningInfoRequestHeader,
    MessageQueue,
    PopProcessQueueInfo,
    ProcessQueueInfo,
    RequestCode,
    ResetOffsetBody,
    ResetOffsetRequestHeader,
    ResponseCode,
    SubscriptionData,
    build_subscription_data,
    decode_body,
    decode_command,
    encode_body,
    from_ext_fields,
    parse_fastjson,
    to_ext_fields,
)

VECTORS = Path(__file__).resolve().parents[2] / "protocol" / "vectors" / "running_info"
MANIFEST: dict[str, Any] = json.loads((VECTORS / "manifest.json").read_text(encoding="utf-8"))


def frame(name: str) -> bytes:
    return (VECTORS / name).read_bytes()


# --- strategies ----------------------------------------------------------------------------------

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
ints64 = st.integers(-(2**63), 2**63 - 1)
finite = st.floats(allow_nan=False, allow_infinity=False)
queues = st.builds(MessageQueue, names, names, st.integers(0, 2**31 - 1))
process_queues = st.builds(
    ProcessQueueInfo,
    ints64,
    ints64,
    ints64,
    st.integers(0, 2**31 - 1),
    st.integers(0, 2**31 - 1),
    ints64,
    ints64,
    st.integers(0, 2**31 - 1),
    st.booleans(),
    ints64,
    ints64,
    st.booleans(),
    ints64,
    ints64,
)
pop_queues = st.builds(PopProcessQueueInfo, st.integers(0, 2**31 - 1), st.booleans(), ints64)
rates = st.builds(ConsumeRateStatus, finite, finite, finite, finite, finite, ints64)
subscriptions = st.builds(
    lambda topic, tags, version: build_subscription_data(topic, tags, sub_version=version),
    names.filter(bool),
    st.sampled_from(["*", "a", "a || b", "TagA||TagB"]),
    ints64,
)


def _unique_subs(subs: list[SubscriptionData]) -> tuple[SubscriptionData, ...]:
    seen: dict[str, SubscriptionData] = {}
    for sub in subs:
        seen.setdefault(f"{sub.topic}@{sub.sub_string}", sub)
    return tuple(sorted(seen.values(), key=lambda s: f"{s.topic}@{s.sub_string}"))


running_infos = st.builds(
    lambda props, subs, mqs, status, jstack, user, pops: ConsumerRunningInfo(
        props, _unique_subs(subs), mqs, status, jstack, user, pops
    ),
    st.dictionaries(names, names, max_size=5),
    st.lists(subscriptions, max_size=3),
    st.dictionaries(queues, process_queues, max_size=5),
    st.dictionaries(names, rates, max_size=3),
    st.none() | names,
    st.dictionaries(names, names, max_size=2),
    st.dictionaries(queues, pop_queues, max_size=3),
)
directly_results = st.builds(
    ConsumeMessageDirectlyResult,
    st.booleans(),
    st.booleans(),
    st.sampled_from(list(ConsumeResult)),
    st.none() | names,
    ints64,
)


# --- round trips ---------------------------------------------------------------------------------


@given(running_infos)
def test_running_info_round_trip(info: ConsumerRunningInfo) -> None:
    body = info.encode()
    assert ConsumerRunningInfo.decode(body) == info
    assert ConsumerRunningInfo.decode(body).encode() == body  # deterministic output


@given(directly_results)
def test_consume_directly_result_round_trip(result: ConsumeMessageDirectlyResult) -> None:
    body = result.encode()
    assert ConsumeMessageDirectlyResult.decode(body) == result
    assert json.loads(body)["consumeResult"] == result.consume_result.name


@given(process_queues)
def test_process_queue_info_writes_java_533_droped(pq: ProcessQueueInfo) -> None:
    as_json = pq.to_json()
    assert as_json["droped"] is pq.dropped
    assert "dropped" not in as_json
    assert ProcessQueueInfo.from_json(as_json) == pq


def test_newer_java_spelling_dropped_is_read_too() -> None:
    assert ProcessQueueInfo.from_json({"dropped": True, "commitOffset": 7}) == ProcessQueueInfo(
        commit_offset=7, dropped=True
    )


def test_defaults_are_zero_and_false() -> None:
    pq = ProcessQueueInfo()
    assert pq.to_json() == dict.fromkeys(pq.to_json(), 0) | {"droped": False, "locked": False}
    assert ProcessQueueInfo.from_json({}) == pq
    assert ConsumeRateStatus.from_json({}) == ConsumeRateStatus(0.0, 0.0, 0.0, 0.0, 0.0, 0)
    assert ConsumerRunningInfo.decode(b"{}") == ConsumerRunningInfo({}, (), {}, {})


def test_running_info_wire_form_has_object_keys_and_sorted_fields() -> None:
    mq = MessageQueue("T", "broker-a", 3)
    info = ConsumerRunningInfo(
        {PROP_CONSUME_TYPE: "CONSUME_PASSIVELY"},
        (build_subscription_data("T", "*", sub_version=5),),
        {mq: ProcessQueueInfo(commit_offset=12, locked=True)},
        {"T": ConsumeRateStatus(1.5, 2.0, 0.25, 3.0, 0.0, 4)},
    )
    body = info.encode().decode()
    assert body.startswith('{"mqPopTable":{},"mqTable":{{"brokerName":"broker-a","queueId":3,"topic":"T"}:{')
    assert '"statusTable":{"T":{"consumeFailedMsgs":4,"consumeFailedTPS":0.0,"consumeOKTPS":3.0,' in body
    assert '"consumeRT":0.25,"pullRT":1.5,"pullTPS":2.0}}' in body
    assert '"properties":{"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY"}' in body
    assert "jstack" not in body
    assert body.endswith('"userConsumerInfo":{}}')


def test_subscriptions_are_written_in_java_treeset_order() -> None:
    subs = tuple(build_subscription_data(t, "*", sub_version=1) for t in ("b", "%RETRY%g", "a"))
    body = ConsumerRunningInfo({}, subs, {}, {}).to_json()
    assert [s["topic"] for s in body["subscriptionSet"]] == ["%RETRY%g", "a", "b"]


def test_non_string_property_values_become_text() -> None:
    info = ConsumerRunningInfo.decode(b'{"properties":{"a":1,"b":true,"c":"x"}}')
    assert info.properties == {"a": "1", "b": "true", "c": "x"}


@pytest.mark.parametrize(
    "body",
    [
        b"[]",
        b'{"mqTable":{"notAQueue":{}}}',
        b'{"mqTable":[]}',
        b'{"subscriptionSet":{}}',
        b'{"mqTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"commitOffset":"1"}}}',
        b'{"statusTable":{"t":{"pullRT":"fast"}}}',
        b'{"jstack":5}',
        b"{",
    ],
)
def test_malformed_running_info(body: bytes) -> None:
    with pytest.raises(MalformedBody):
        ConsumerRunningInfo.decode(body)


@pytest.mark.parametrize(
    "body",
    [
        b"{}",
        b'{"consumeResult":"CR_MAYBE"}',
        b'{"consumeResult":1}',
        b'{"consumeResult":"CR_SUCCESS","order":"yes"}',
        b'{"consumeResult":"CR_SUCCESS","remark":1}',
    ],
)
def test_malformed_consume_directly_result(body: bytes) -> None:
    with pytest.raises(MalformedBody):
        ConsumeMessageDirectlyResult.decode(body)


def test_consume_result_names_are_javas_cmresult() -> None:
    assert [r.name for r in ConsumeResult] == [
        "CR_SUCCESS",
        "CR_LATER",
        "CR_ROLLBACK",
        "CR_COMMIT",
        "CR_THROW_EXCEPTION",
        "CR_RETURN_NULL",
    ]


# --- golden: a real Java consumer ------------------------------------------------------------------


def test_running_info_request_header_as_sent_to_the_broker() -> None:
    request = decode_command(frame("running-info-request.bin")[4:])
    assert request.code == RequestCode.GET_CONSUMER_RUNNING_INFO
    header = from_ext_fields(GetConsumerRunningInfoRequestHeader, request.ext_fields)
    assert header.consumer_group == MANIFEST["group"]
    assert header.client_id == MANIFEST["client_id"]
    assert to_ext_fields(header) == dict(request.ext_fields)


def test_java_consumer_running_info_decodes() -> None:
    reply = decode_command(frame("running-info-response.bin")[4:])
    assert reply.code == ResponseCode.SUCCESS
    info = ConsumerRunningInfo.decode(reply.body)
    topic, group = MANIFEST["topic"], MANIFEST["group"]
    assert {s.topic for s in info.subscription_set} == {topic, f"%RETRY%{group}"}
    assert all(s.sub_string == "*" for s in info.subscription_set)
    # The benchmark consumer alone in its group owns every queue: 2 per broker, and the retry
    # topic's queue on each broker.
    assert sorted(mq for mq in info.mq_table if mq.topic == topic) == [
        MessageQueue(topic, broker, q) for broker in ("broker-a", "broker-b") for q in (0, 1)
    ]
    assert {mq.topic for mq in info.mq_table} == {topic, f"%RETRY%{group}"}
    offsets = [pq.commit_offset for mq, pq in info.mq_table.items() if mq.topic == topic]
    assert sum(offsets) == MANIFEST["messages"]
    assert not any(pq.dropped for pq in info.mq_table.values())
    assert all(pq.last_pull_timestamp > 1_700_000_000_000 for pq in info.mq_table.values())
    assert set(info.status_table) == {topic, f"%RETRY%{group}"}
    assert info.status_table[topic].consume_ok_tps > 0
    assert info.properties[PROP_CONSUME_TYPE] == "CONSUME_PASSIVELY"
    assert int(info.properties[PROP_CONSUMER_START_TIMESTAMP]) > 1_700_000_000_000
    assert info.properties["consumerGroup"] == group
    assert info.properties[PROP_ALLOCATE_STRATEGY].startswith(
        "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely@"
    )
    assert info.jstack is None


def test_java_running_info_re_encodes_to_the_same_json() -> None:
    # Java writes Properties in hash order, we sort: compare the parsed values (object keys too).
    body = decode_command(frame("running-info-response.bin")[4:]).body
    ours = ConsumerRunningInfo.decode(body).encode()
    assert parse_fastjson(ours) == parse_fastjson(body)
    # Bean fields are sorted alike; map entries differ in order only (Java: Properties in hash
    # order, mqTable in MessageQueue order; ours: by written key). What follows is byte-identical.
    java_text, our_text = body.decode(), ours.decode()
    assert java_text.split(',"statusTable":')[1] == our_text.split(',"statusTable":')[1]


def test_consume_message_directly_golden() -> None:
    request = decode_command(frame("consume-directly-request.bin")[4:])
    header = from_ext_fields(ConsumeMessageDirectlyResultRequestHeader, request.ext_fields)
    assert (header.consumer_group, header.client_id) == (MANIFEST["group"], MANIFEST["client_id"])
    reply = decode_command(frame("consume-directly-response.bin")[4:])
    assert reply.code == ResponseCode.SUCCESS
    result = ConsumeMessageDirectlyResult.decode(reply.body)
    assert result.consume_result is ConsumeResult.CR_SUCCESS
    assert result.order is False
    assert result.auto_commit is True
    assert result.spent_time_mills >= 0
    assert result.encode() == reply.body


def test_reset_request_a_broker_sends_to_consumers() -> None:
    request = decode_command(frame("reset-offset-broker-request.bin")[4:])
    assert request.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET
    assert request.is_oneway
    header = from_ext_fields(ResetOffsetRequestHeader, request.ext_fields)
    assert (header.topic, header.group, header.timestamp) == (
        MANIFEST["raw_topic"],
        MANIFEST["raw_group"],
        MANIFEST["reset_since"],
    )
    assert header.queue_id == -1
    assert header.extra == {}
    assert to_ext_fields(header) == dict(request.ext_fields)
    body = decode_body(ResetOffsetBody, request.body)
    topic = MANIFEST["raw_topic"]
    assert body.offset_table == {MessageQueue(topic, "broker-a", 0): 0, MessageQueue(topic, "broker-a", 1): 0}
    assert parse_fastjson(encode_body(body)) == parse_fastjson(request.body)


def test_running_info_request_as_the_broker_forwards_it() -> None:
    request = decode_command(frame("running-info-broker-request.bin")[4:])
    assert request.code == RequestCode.GET_CONSUMER_RUNNING_INFO
    assert not request.is_oneway
    header = from_ext_fields(GetConsumerRunningInfoRequestHeader, request.ext_fields)
    assert (header.consumer_group, header.client_id, header.jstack_enable) == (
        MANIFEST["raw_group"],
        MANIFEST["raw_client_id"],
        False,
    )
    assert to_ext_fields(header) == dict(request.ext_fields)


def test_pop_queues_are_written_as_java_writes_mq_pop_table() -> None:
    mq = MessageQueue("T", "broker-a", 1)
    info = ConsumerRunningInfo(
        mq_pop_table={mq: PopProcessQueueInfo(wait_ack_count=5, last_pop_timestamp=1_700_000_000_123)}
    )
    body = info.encode().decode()
    assert body.startswith(
        '{"mqPopTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:'
        '{"droped":false,"lastPopTimestamp":1700000000123,"waitAckCount":5}},"mqTable":{},'
    )
    assert ConsumerRunningInfo.decode(body) == info
    # Newer Java sources spell the flag "dropped": read either.
    newer = '{"mqPopTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"dropped":true,"waitAckCount":2}}}'
    (read,) = ConsumerRunningInfo.decode(newer).mq_pop_table.values()
    assert read == PopProcessQueueInfo(wait_ack_count=2, dropped=True)
