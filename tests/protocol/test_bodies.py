"""JSON bodies: heartbeat, locks, consumer list, routes (both JSON forms), offset resets."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import struct
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py.errors import ClientError, LocalProtocolError, MalformedBody
from rocketmq_py.protocol._bodies import (
    BrokerData,
    ConsumeFromWhere,
    ConsumerData,
    ConsumerListBody,
    ConsumeType,
    ExpressionType,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageModel,
    MessageQueue,
    ProducerData,
    QueueData,
    ResetOffsetBody,
    SubscriptionData,
    TopicRouteData,
    UnlockBatchRequestBody,
    build_subscription_data,
    java_string_hash,
)
from rocketmq_py.protocol._fastjson import dump_fastjson
from rocketmq_py.protocol._json_body import JsonBody, decode_body, encode_body

# --- Java String.hashCode ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("TagA", 2598919),
        ("hello", 99162322),
        ("abc", 96354),
        ("Aa", 2112),  # the classic collision pair
        ("BB", 2112),
        ("polygenelubricants", -(2**31)),  # wraps to Integer.MIN_VALUE
        ("TagA\u00e9", 2598919 * 31 + 0xE9),
        ("\U0001f600", 31 * 0xD83D + 0xDE00),  # non-BMP: two UTF-16 units, 1772899
        ("a\U0001f600b", ((97 * 31 + 0xD83D) * 31 + 0xDE00) * 31 + 98),
        ("\ud800", 0xD800),  # a lone surrogate is one unit, as in Java
    ],
)
def test_java_string_hash_vectors(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def _reference_hash(text: str) -> int:
    data = text.encode("utf-16-be", "surrogatepass")
    units = struct.unpack(f">{len(data) // 2}H", data)
    h = 0
    for unit in units:
        h = (h * 31 + unit) % 2**32
    return h - 2**32 if h >= 2**31 else h


@given(st.text())
def test_java_string_hash_matches_the_formula(text: str) -> None:
    value = java_string_hash(text)
    assert value == _reference_hash(text)
    assert -(2**31) <= value < 2**31


# --- subscriptions -------------------------------------------------------------------------------


@pytest.mark.parametrize("expression", ["*", "", None])
def test_subscribe_all(expression: str | None) -> None:
    sub = build_subscription_data("T", expression, sub_version=1726000000000)
    assert sub == SubscriptionData(topic="T", sub_string="*", sub_version=1726000000000)
    assert sub.tags_set == frozenset()
    assert sub.code_set == frozenset()


def test_tag_expression_split_trimmed_and_hashed() -> None:
    sub = build_subscription_data("T", " TagA ||TagB||  || TagA||\tTagC\n", sub_version=5)
    assert sub.sub_string == " TagA ||TagB||  || TagA||\tTagC\n"  # kept as written
    assert sub.tags_set == {"TagA", "TagB", "TagC"}
    assert sub.code_set == {2598919, java_string_hash("TagB"), java_string_hash("TagC")}
    assert sub.expression_type is ExpressionType.TAG


def test_tag_trim_is_java_trim_not_unicode_strip() -> None:
    sub = build_subscription_data("T", "\x01a\x1f || \u3000b", sub_version=0)
    assert sub.tags_set == {"a", "\u3000b"}  # U+3000 is whitespace to Python, not to String.trim


def test_star_with_spaces_is_a_tag_like_in_java() -> None:
    assert build_subscription_data("T", " * ", sub_version=0).tags_set == {"*"}


@pytest.mark.parametrize("expression", ["||", "||||"])
def test_expression_with_only_separators_is_refused(expression: str) -> None:
    with pytest.raises(ClientError):
        build_subscription_data("T", expression, sub_version=0)


def test_sql92_subscription() -> None:
    sql = "a > 5 AND b = 'x'"
    sub = build_subscription_data("T", sql, sub_version=9, expression_type=ExpressionType.SQL92)
    assert sub == SubscriptionData(
        topic="T", sub_string=sql, sub_version=9, expression_type=ExpressionType.SQL92
    )
    with pytest.raises(ClientError):
        build_subscription_data("T", "", sub_version=9, expression_type=ExpressionType.SQL92)


# --- heartbeat -----------------------------------------------------------------------------------


def _heartbeat() -> HeartbeatData:
    return HeartbeatData(
        client_id="10.0.0.5@4242#1726000000",
        producer_data_set=(ProducerData(group_name="CLIENT_INNER_PRODUCER"),),
        consumer_data_set=(
            ConsumerData(
                group_name="G",
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=MessageModel.CLUSTERING,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
                subscription_data_set=(
                    build_subscription_data("T", "TagB || TagA", sub_version=1726000000001),
                    build_subscription_data("%RETRY%G", "*", sub_version=1726000000002),
                ),
            ),
        ),
    )


def test_heartbeat_exact_bytes() -> None:
    assert encode_body(_heartbeat()) == (
        b'{"clientID":"10.0.0.5@4242#1726000000","consumerDataSet":[{"consumeFromWhere":'
        b'"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"G",'
        b'"messageModel":"CLUSTERING","subscriptionDataSet":[{"classFilterMode":false,'
        b'"codeSet":[2598919,2598920],"expressionType":"TAG","subString":"TagB || TagA",'
        b'"subVersion":1726000000001,"tagsSet":["TagA","TagB"],"topic":"T"},'
        b'{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*",'
        b'"subVersion":1726000000002,"tagsSet":[],"topic":"%RETRY%G"}],"unitMode":false}],'
        b'"heartbeatFingerprint":0,"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"}],'
        b'"withoutSub":false}'
    )


def test_heartbeat_round_trip_and_unknown_keys_ignored() -> None:
    data = json.loads(encode_body(_heartbeat()))
    data["newTopLevel"] = {"x": 1}
    data["consumerDataSet"][0]["subscriptionDataSet"][0]["attributes"] = {}
    assert decode_body(HeartbeatData, json.dumps(data).encode()) == _heartbeat()


def test_heartbeat_defaults_when_keys_absent() -> None:
    body = b'{"clientID":"c","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_TIMESTAMP",' \
        b'"consumeType":"CONSUME_ACTIVELY","groupName":"g","messageModel":"BROADCASTING",' \
        b'"subscriptionDataSet":[{"subString":"*","subVersion":1,"topic":"t"}]}]}'  # fmt: skip
    heartbeat = decode_body(HeartbeatData, body)
    assert heartbeat.producer_data_set == ()
    assert heartbeat.heartbeat_fingerprint == 0
    (consumer,) = heartbeat.consumer_data_set
    assert consumer.unit_mode is False
    assert consumer.subscription_data_set == (SubscriptionData(topic="t", sub_string="*", sub_version=1),)


# --- locks, consumer list ------------------------------------------------------------------------

MQ_B1 = MessageQueue("T", "broker-b", 1)
MQ_A2 = MessageQueue("T", "broker-a", 2)
MQ_A10 = MessageQueue("T", "broker-a", 10)


def test_message_queue_orders_like_java() -> None:
    queues = [MQ_B1, MQ_A10, MessageQueue("S", "broker-z", 0), MQ_A2]
    assert sorted(queues) == [MessageQueue("S", "broker-z", 0), MQ_A2, MQ_A10, MQ_B1]
    assert MessageQueue("T", "broker-a", 2) == MQ_A2
    assert len({MQ_A2, MessageQueue("T", "broker-a", 2)}) == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        MQ_A2.queue_id = 3  # type: ignore[misc]


def test_lock_request_exact_bytes_with_sorted_queues() -> None:
    body = LockBatchRequestBody(
        consumer_group="G",
        client_id="10.0.0.5@1",
        only_this_broker=True,
        mq_set=frozenset({MQ_B1, MQ_A10, MQ_A2}),
    )
    assert encode_body(body) == (
        b'{"clientId":"10.0.0.5@1","consumerGroup":"G","mqSet":['
        b'{"brokerName":"broker-a","queueId":2,"topic":"T"},'
        b'{"brokerName":"broker-a","queueId":10,"topic":"T"},'
        b'{"brokerName":"broker-b","queueId":1,"topic":"T"}],"onlyThisBroker":true}'
    )
    assert decode_body(LockBatchRequestBody, encode_body(body)) == body


def test_unlock_body_has_its_own_type() -> None:
    fields: dict[str, Any] = {"consumer_group": "G", "client_id": "c", "mq_set": frozenset({MQ_A2})}
    lock, unlock = LockBatchRequestBody(**fields), UnlockBatchRequestBody(**fields)
    assert encode_body(lock) == encode_body(unlock)
    assert lock != cast(object, unlock)  # same fields, different request
    decoded = decode_body(UnlockBatchRequestBody, encode_body(lock))
    assert type(decoded) is UnlockBatchRequestBody
    assert decoded == unlock


def test_lock_response() -> None:
    body = b'{"lockOKMQSet":[{"brokerName":"broker-b","queueId":1,"topic":"T"},{"topic":"T","queueId":2,"brokerName":"broker-a"}]}'
    assert decode_body(LockBatchResponseBody, body) == LockBatchResponseBody(
        lock_ok_mq_set=frozenset({MQ_B1, MQ_A2})
    )
    assert decode_body(LockBatchResponseBody, b"{}").lock_ok_mq_set == frozenset()


def test_consumer_list() -> None:
    body = b'{"consumerIdList":["10.0.0.6@77#1","10.0.0.5@42#9"]}'
    decoded = decode_body(ConsumerListBody, body)
    assert decoded.consumer_id_list == ("10.0.0.6@77#1", "10.0.0.5@42#9")
    assert encode_body(decoded) == body


# --- routes --------------------------------------------------------------------------------------

ROUTE_FASTJSON = (
    b'{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a",'
    b'"cluster":"DefaultCluster","enableActingMaster":false},'
    b'{"brokerAddrs":{0:"10.0.0.3:10911",1:"10.0.0.4:10911"},"brokerName":"broker-b",'
    b'"cluster":"DefaultCluster","enableActingMaster":false,"zoneName":"zone-1"}],'
    b'"filterServerTable":{},'
    b'"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4},'
    b'{"brokerName":"broker-b","perm":4,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":2}]}'
)
ROUTE_STANDARD = (
    b'{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"},"brokerName":"broker-a",'
    b'"cluster":"DefaultCluster","enableActingMaster":false},'
    b'{"brokerAddrs":{"0":"10.0.0.3:10911","1":"10.0.0.4:10911"},"brokerName":"broker-b",'
    b'"cluster":"DefaultCluster","enableActingMaster":false,"zoneName":"zone-1"}],'
    b'"filterServerTable":{},'
    b'"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4},'
    b'{"brokerName":"broker-b","perm":4,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":2}]}'
)
ROUTE = TopicRouteData(
    queue_datas=(
        QueueData(broker_name="broker-a", read_queue_nums=4, write_queue_nums=4, perm=6),
        QueueData(broker_name="broker-b", read_queue_nums=8, write_queue_nums=2, perm=4),
    ),
    broker_datas=(
        BrokerData(
            cluster="DefaultCluster",
            broker_name="broker-a",
            broker_addrs={0: "10.0.0.1:10911", 1: "10.0.0.2:10911"},
        ),
        BrokerData(
            cluster="DefaultCluster",
            broker_name="broker-b",
            broker_addrs={0: "10.0.0.3:10911", 1: "10.0.0.4:10911"},
            zone_name="zone-1",
        ),
    ),
)


@pytest.mark.parametrize("body", [ROUTE_FASTJSON, ROUTE_STANDARD], ids=["fastjson", "standard"])
def test_route_decodes_from_both_forms(body: bytes) -> None:
    route = decode_body(TopicRouteData, body)
    assert route == ROUTE
    assert route.broker_datas[0].broker_addrs[0] == "10.0.0.1:10911"
    assert route.order_topic_conf is None


def test_route_encodes_to_both_forms() -> None:
    assert encode_body(ROUTE) == ROUTE_STANDARD
    assert encode_body(ROUTE, bare_keys=True) == ROUTE_FASTJSON


def test_route_with_order_conf_filters_and_static_mapping() -> None:
    body = (
        b'{"brokerDatas":[],"filterServerTable":{"10.0.0.1:10911":["10.0.0.1:30000"]},'
        b'"orderTopicConf":"broker-a:4;broker-b:4","queueDatas":[],'
        b'"topicQueueMappingByBroker":{"broker-a":{"bname":"broker-a","epoch":3}},"unknownField":[1]}'
    )
    route = decode_body(TopicRouteData, body)
    assert route.order_topic_conf == "broker-a:4;broker-b:4"
    assert route.filter_server_table == {"10.0.0.1:10911": ("10.0.0.1:30000",)}
    assert route.topic_queue_mapping_by_broker == {"broker-a": {"bname": "broker-a", "epoch": 3}}
    assert decode_body(TopicRouteData, encode_body(route)) == route


def test_route_minimal_and_negative_broker_id() -> None:
    route = decode_body(
        TopicRouteData, b'{"brokerDatas":[{"brokerAddrs":{-1:"h:1"},"brokerName":"b","cluster":"c"}]}'
    )
    assert route.queue_datas == ()
    assert route.broker_datas[0].broker_addrs == {-1: "h:1"}
    assert route.broker_datas[0].enable_acting_master is False


# --- reset offset --------------------------------------------------------------------------------

RESET_BODY = (
    b'{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:120,'
    b'{"brokerName":"broker-a","queueId":1,"topic":"T"}:98,'
    b'{"brokerName":"broker-b","queueId":0,"topic":"T"}:-1}}'
)


def test_reset_offset_body_with_object_keys() -> None:
    body = decode_body(ResetOffsetBody, RESET_BODY)
    assert body.offset_table == {
        MessageQueue("T", "broker-a", 0): 120,
        MessageQueue("T", "broker-a", 1): 98,
        MessageQueue("T", "broker-b", 0): -1,
    }
    assert encode_body(body) == RESET_BODY


def test_reset_offset_body_spaced_and_empty() -> None:
    spaced = b'{ "offsetTable" : { { "topic" : "T", "queueId" : 3, "brokerName" : "b" } : 7 } }'
    assert decode_body(ResetOffsetBody, spaced).offset_table == {MessageQueue("T", "b", 3): 7}
    assert decode_body(ResetOffsetBody, b'{"offsetTable":{}}').offset_table == {}
    assert decode_body(ResetOffsetBody, b"{}").offset_table == {}


# --- schema errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "body"),
    [
        (TopicRouteData, b"[]"),
        (TopicRouteData, b'{"queueDatas":{}}'),
        (
            TopicRouteData,
            b'{"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":"4","writeQueueNums":4}]}',
        ),
        (
            TopicRouteData,
            b'{"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":4.0,"writeQueueNums":4}]}',
        ),
        (
            TopicRouteData,
            b'{"queueDatas":[{"brokerName":"b","perm":true,"readQueueNums":4,"writeQueueNums":4}]}',
        ),
        (TopicRouteData, b'{"queueDatas":[{"perm":6,"readQueueNums":4,"writeQueueNums":4}]}'),
        (TopicRouteData, b'{"brokerDatas":[{"brokerAddrs":{"x":"h:1"},"brokerName":"b","cluster":"c"}]}'),
        (TopicRouteData, b'{"brokerDatas":[{"brokerAddrs":{0:1},"brokerName":"b","cluster":"c"}]}'),
        (TopicRouteData, b'{"brokerDatas":[{"brokerAddrs":{{"a":1}:"h"},"brokerName":"b","cluster":"c"}]}'),
        (TopicRouteData, b'{"brokerDatas":[{"brokerAddrs":{0:"h"},"brokerName":"b"}]}'),
        (TopicRouteData, b'{"filterServerTable":{"a":"b"}}'),
        (TopicRouteData, b'{"filterServerTable":{"a":[1]}}'),
        (TopicRouteData, b'{"orderTopicConf":5}'),
        (ResetOffsetBody, b'{"offsetTable":{"T":1}}'),
        (ResetOffsetBody, b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:"1"}}'),
        (ResetOffsetBody, b'{"offsetTable":{{"brokerName":"b","queueId":"0","topic":"t"}:1}}'),
        (ResetOffsetBody, b'{"offsetTable":[]}'),
        (HeartbeatData, b'{"consumerDataSet":[]}'),
        (HeartbeatData, b'{"clientID":"c","producerDataSet":[{"groupName":null}]}'),
        (
            HeartbeatData,
            b'{"clientID":"c","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_NOWHERE",'
            b'"consumeType":"CONSUME_ACTIVELY","groupName":"g","messageModel":"CLUSTERING"}]}',
        ),
        (
            HeartbeatData,
            b'{"clientID":"c","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",'
            b'"consumeType":"CONSUME_ACTIVELY","groupName":"g","messageModel":"CLUSTERING",'
            b'"subscriptionDataSet":[{"codeSet":["1"],"subString":"*","subVersion":1,"topic":"t"}]}]}',
        ),
        (ConsumerListBody, b'{"consumerIdList":[1]}'),
        (ConsumerListBody, b'{"consumerIdList":"a"}'),
        (LockBatchResponseBody, b'{"lockOKMQSet":[5]}'),
        (LockBatchRequestBody, b'{"clientId":"c","consumerGroup":"g","onlyThisBroker":"true"}'),
        (ConsumerListBody, b"{"),
        (ConsumerListBody, b"\xff"),
    ],
)
def test_wrong_shapes_are_malformed(cls: type[JsonBody], body: bytes) -> None:
    with pytest.raises(MalformedBody):
        decode_body(cls, body)


BODY_CLASSES: list[type[JsonBody]] = [
    HeartbeatData,
    LockBatchRequestBody,
    UnlockBatchRequestBody,
    LockBatchResponseBody,
    ConsumerListBody,
    TopicRouteData,
    ResetOffsetBody,
    MessageQueue,
]


@pytest.mark.parametrize("cls", BODY_CLASSES, ids=lambda cls: cls.__name__)
@given(data=st.binary(max_size=120))
def test_random_bytes_decode_or_raise_malformed(cls: type[JsonBody], data: bytes) -> None:
    with contextlib.suppress(MalformedBody):  # any other exception fails the test
        decode_body(cls, data)


# JSON documents built from the real wire keys with values of random types, to reach the schema
# checks rather than stop at the parser.
WIRE_KEYS = st.sampled_from(
    [
        "clientID", "producerDataSet", "consumerDataSet", "heartbeatFingerprint", "withoutSub", "groupName",
        "consumeType", "messageModel", "consumeFromWhere", "subscriptionDataSet", "unitMode", "topic",
        "subString", "subVersion", "tagsSet", "codeSet", "expressionType", "classFilterMode", "brokerName",
        "queueId", "consumerGroup", "clientId", "onlyThisBroker", "mqSet", "lockOKMQSet", "consumerIdList",
        "queueDatas", "brokerDatas", "brokerAddrs", "cluster", "zoneName", "enableActingMaster", "perm",
        "readQueueNums", "writeQueueNums", "topicSysFlag", "filterServerTable", "orderTopicConf",
        "offsetTable", "0",
    ]
)  # fmt: skip
SCHEMA_FUZZ = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["*", "TAG", "CLUSTERING"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(WIRE_KEYS, children, max_size=6),
    max_leaves=25,
)


@pytest.mark.parametrize("cls", BODY_CLASSES, ids=lambda cls: cls.__name__)
@given(value=st.dictionaries(WIRE_KEYS, SCHEMA_FUZZ, max_size=8), bare_keys=st.booleans())
def test_schema_fuzz_decodes_or_raises_malformed(cls: type[JsonBody], value: Any, bare_keys: bool) -> None:
    data = dump_fastjson(value) if bare_keys else json.dumps(value).encode()
    with contextlib.suppress(MalformedBody):
        decode_body(cls, data)


def test_unencodable_string() -> None:
    with pytest.raises(LocalProtocolError):
        encode_body(ConsumerListBody(consumer_id_list=("\ud800",)))
    with pytest.raises(LocalProtocolError):
        encode_body(ResetOffsetBody(offset_table={MessageQueue("\ud800", "b", 0): 1}))


# --- property-based round trips ------------------------------------------------------------------

TEXT = st.text(max_size=8)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
QUEUES = st.builds(MessageQueue, TEXT, TEXT, INT32)
SUBSCRIPTIONS = st.builds(
    SubscriptionData,
    topic=TEXT,
    sub_string=TEXT,
    sub_version=INT64,
    expression_type=st.sampled_from(ExpressionType),
    tags_set=st.frozensets(TEXT, max_size=3),
    code_set=st.frozensets(INT32, max_size=3),
    class_filter_mode=st.booleans(),
)
HEARTBEATS = st.builds(
    HeartbeatData,
    client_id=TEXT,
    producer_data_set=st.lists(st.builds(ProducerData, group_name=TEXT), max_size=3).map(tuple),
    consumer_data_set=st.lists(
        st.builds(
            ConsumerData,
            group_name=TEXT,
            consume_type=st.sampled_from(ConsumeType),
            message_model=st.sampled_from(MessageModel),
            consume_from_where=st.sampled_from(ConsumeFromWhere),
            subscription_data_set=st.lists(SUBSCRIPTIONS, max_size=3).map(tuple),
            unit_mode=st.booleans(),
        ),
        max_size=2,
    ).map(tuple),
    heartbeat_fingerprint=INT32,
    without_sub=st.booleans(),
)
ROUTES = st.builds(
    TopicRouteData,
    queue_datas=st.lists(
        st.builds(
            QueueData,
            broker_name=TEXT,
            read_queue_nums=INT32,
            write_queue_nums=INT32,
            perm=INT32,
            topic_sys_flag=INT32,
        ),
        max_size=3,
    ).map(tuple),
    broker_datas=st.lists(
        st.builds(
            BrokerData,
            cluster=TEXT,
            broker_name=TEXT,
            broker_addrs=st.dictionaries(INT64, TEXT, max_size=3),
            zone_name=st.none() | TEXT,
            enable_acting_master=st.booleans(),
        ),
        max_size=3,
    ).map(tuple),
    order_topic_conf=st.none() | TEXT,
    filter_server_table=st.dictionaries(TEXT, st.lists(TEXT, max_size=2).map(tuple), max_size=2),
)
BODIES: st.SearchStrategy[JsonBody] = st.one_of(
    QUEUES,
    HEARTBEATS,
    ROUTES,
    st.builds(ResetOffsetBody, offset_table=st.dictionaries(QUEUES, INT64, max_size=4)),
    st.builds(
        LockBatchRequestBody, consumer_group=TEXT, client_id=TEXT, only_this_broker=st.booleans(),
        mq_set=st.frozensets(QUEUES, max_size=4),
    ),
    st.builds(
        UnlockBatchRequestBody, consumer_group=TEXT, client_id=TEXT, only_this_broker=st.booleans(),
        mq_set=st.frozensets(QUEUES, max_size=4),
    ),
    st.builds(LockBatchResponseBody, lock_ok_mq_set=st.frozensets(QUEUES, max_size=4)),
    st.builds(ConsumerListBody, consumer_id_list=st.lists(TEXT, max_size=4).map(tuple)),
)  # fmt: skip


@given(body=BODIES, bare_keys=st.booleans())
def test_round_trip(body: JsonBody, bare_keys: bool) -> None:
    try:
        encoded = encode_body(body, bare_keys=bare_keys)
    except LocalProtocolError:
        return  # hypothesis text may hold lone surrogates, which UTF-8 cannot carry
    assert decode_body(type(body), encoded) == body
    assert encode_body(body, bare_keys=bare_keys) == encoded  # deterministic
