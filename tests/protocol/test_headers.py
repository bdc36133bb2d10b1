"""Typed extFields headers: wire keys, Java-style values, unknown keys, V2 conversion."""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py.errors import LocalProtocolError, MalformedHeader
from rocketmq_py.protocol import _admin_headers as a
from rocketmq_py.protocol import _ext_fields as x
from rocketmq_py.protocol import _group_headers as g
from rocketmq_py.protocol import _headers as h
from rocketmq_py.protocol import _reply as r
from rocketmq_py.protocol._ext_fields import from_ext_fields, to_ext_fields
from rocketmq_py.protocol._group_headers import (
    LockBatchMqRequestHeader,
    UnregisterClientRequestHeader,
)
from rocketmq_py.protocol._headers import (
    GetMaxOffsetRequestHeader,
    PullMessageRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    send_header_from_v2,
    send_header_to_v2,
)

# Every header class with its request code and its complete set of wire keys, written out by
# hand from the Java field names (protocol.md section 3), so a camelCase slip shows up here.
EXPECTED: dict[type, tuple[int | None, set[str]]] = {
    h.SendMessageRequestHeader: (
        10,
        {
            "producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
            "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "batch",
            "maxReconsumeTimes", "bname",
        },
    ),
    h.SendMessageRequestHeaderV2: (310, set("abcdefghijklmn")),
    h.SendMessageResponseHeader: (
        None,
        {"msgId", "queueId", "queueOffset", "transactionId", "batchUniqId", "recallHandle"},
    ),
    h.PullMessageRequestHeader: (
        11,
        {
            "consumerGroup", "topic", "queueId", "queueOffset", "maxMsgNums", "sysFlag", "commitOffset",
            "suspendTimeoutMillis", "subscription", "subVersion", "expressionType", "maxMsgBytes",
            "requestSource", "proxyFrowardClientId", "bname",
        },
    ),
    h.PullMessageResponseHeader: (
        None,
        {
            "suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset", "offsetDelta",
            "topicSysFlag", "groupSysFlag", "forbiddenType",
        },
    ),
    h.QueryConsumerOffsetRequestHeader: (
        14, {"consumerGroup", "topic", "queueId", "setZeroIfNotFound", "bname"}
    ),
    h.QueryConsumerOffsetResponseHeader: (None, {"offset"}),
    h.UpdateConsumerOffsetRequestHeader: (
        15, {"consumerGroup", "topic", "queueId", "commitOffset", "bname"}
    ),
    h.GetMaxOffsetRequestHeader: (30, {"topic", "queueId", "committed", "bname"}),
    h.GetMaxOffsetResponseHeader: (None, {"offset"}),
    h.GetMinOffsetRequestHeader: (31, {"topic", "queueId", "bname"}),
    h.GetMinOffsetResponseHeader: (None, {"offset"}),
    h.SearchOffsetRequestHeader: (29, {"topic", "queueId", "timestamp", "boundaryType", "bname"}),
    h.SearchOffsetResponseHeader: (None, {"offset"}),
    g.HeartbeatRequestHeader: (34, set()),
    g.ConsumerSendMsgBackRequestHeader: (
        36,
        {"offset", "group", "delayLevel", "originMsgId", "originTopic", "unitMode", "maxReconsumeTimes", "bname"},
    ),
    g.GetConsumerListByGroupRequestHeader: (38, {"consumerGroup"}),
    g.UnregisterClientRequestHeader: (35, {"clientID", "producerGroup", "consumerGroup"}),
    g.NotifyConsumerIdsChangedRequestHeader: (40, {"consumerGroup"}),
    g.LockBatchMqRequestHeader: (41, set()),
    g.UnlockBatchMqRequestHeader: (42, set()),
    g.ResetOffsetRequestHeader: (220, {"topic", "group", "queueId", "offset", "timestamp", "isForce"}),
    g.GetConsumerRunningInfoRequestHeader: (307, {"consumerGroup", "clientId", "jstackEnable"}),
    g.ConsumeMessageDirectlyResultRequestHeader: (
        309,
        {"consumerGroup", "clientId", "msgId", "brokerName", "topic", "topicSysFlag", "groupSysFlag"},
    ),
    a.EndTransactionRequestHeader: (
        37,
        {
            "topic", "producerGroup", "tranStateTableOffset", "commitLogOffset", "commitOrRollback",
            "fromTransactionCheck", "msgId", "transactionId", "bname",
        },
    ),
    a.CheckTransactionStateRequestHeader: (
        39,
        {"topic", "tranStateTableOffset", "commitLogOffset", "msgId", "transactionId", "offsetMsgId", "bname"},
    ),
    a.GetRouteInfoRequestHeader: (105, {"topic", "acceptStandardJsonOnly"}),
    a.UpdateAndCreateTopicRequestHeader: (
        17,
        {
            "topic", "defaultTopic", "readQueueNums", "writeQueueNums", "perm", "topicFilterType",
            "topicSysFlag", "order", "attributes", "force",
        },
    ),
    a.ViewMessageRequestHeader: (33, {"offset", "topic"}),
    a.QueryMessageRequestHeader: (12, {"topic", "key", "maxNum", "beginTimestamp", "endTimestamp"}),
    a.QueryMessageResponseHeader: (None, {"indexLastUpdateTimestamp", "indexLastUpdatePhyoffset"}),
    a.GetTopicStatsInfoRequestHeader: (202, {"topic"}),
    a.GetConsumeStatsRequestHeader: (208, {"consumerGroup", "topic"}),
    a.GetConsumerConnectionListRequestHeader: (203, {"consumerGroup"}),
    a.DeleteTopicRequestHeader: (215, {"topic"}),
    r.ReplyMessageRequestHeader: (
        326,
        {
            "producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
            "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "bornHost", "storeHost",
            "storeTimestamp",
        },
    ),
}  # fmt: skip

ALL_HEADERS = sorted(EXPECTED, key=lambda cls: cls.__name__)


def _all_exported_headers() -> set[type]:
    return {
        obj
        for module in (h, g, a, r)
        for name in module.__all__
        if dataclasses.is_dataclass(obj := getattr(module, name)) and isinstance(obj, type)
    }


def test_expected_table_covers_every_header_class() -> None:
    assert _all_exported_headers() == set(EXPECTED)


@pytest.mark.parametrize("cls", ALL_HEADERS, ids=lambda cls: cls.__name__)
def test_request_code_and_wire_keys(cls: type) -> None:
    code, keys = EXPECTED[cls]
    assert code == cls.REQUEST_CODE  # type: ignore[attr-defined]
    assert set(x._plan_for(cls).keys) == keys


# --- hypothesis: every field filled with values of its Java type --------------------------------

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)


def _value_strategy(hint: Any) -> st.SearchStrategy[Any]:
    optional = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        (hint,) = args
        optional = True
    if hint is str:
        base: st.SearchStrategy[Any] = st.text()
    elif hint is bool:
        base = st.booleans()
    else:
        assert typing.get_origin(hint) is typing.Annotated
        base = INT32 if hint is x.Int32 else INT64
    return st.none() | base if optional else base


def header_strategy(cls: type) -> st.SearchStrategy[Any]:
    hints = typing.get_type_hints(cls, include_extras=True)
    known = x._plan_for(cls).keys
    kwargs: dict[str, st.SearchStrategy[Any]] = {
        f.name: _value_strategy(hints[f.name]) for f in dataclasses.fields(cls) if f.name != "extra"
    }
    kwargs["extra"] = st.dictionaries(st.text().filter(lambda k: k not in known), st.text(), max_size=3)
    return st.builds(cls, **kwargs)


@pytest.mark.parametrize("cls", ALL_HEADERS, ids=lambda cls: cls.__name__)
@given(data=st.data())
def test_round_trip(cls: type, data: st.DataObject) -> None:
    header = data.draw(header_strategy(cls))
    ext = to_ext_fields(header)
    assert all(type(k) is str and type(v) is str for k, v in ext.items())
    assert set(header.extra) <= set(ext)
    assert from_ext_fields(cls, ext) == header
    # None fields are left out, everything else is present
    for f in x._plan_for(cls).fields:
        assert (f.key in ext) == (getattr(header, f.attr) is not None)


@given(header=header_strategy(SendMessageRequestHeader))
def test_v2_conversion_round_trips_and_keeps_values(header: SendMessageRequestHeader) -> None:
    header = dataclasses.replace(
        header, extra={k: v for k, v in header.extra.items() if k not in LONG_TO_SHORT.values()}
    )
    v2 = send_header_to_v2(header)
    assert send_header_from_v2(v2) == header
    long_ext, short_ext = to_ext_fields(header), to_ext_fields(v2)
    renamed = {LONG_TO_SHORT.get(k, k): v for k, v in long_ext.items()}
    assert renamed == short_ext


LONG_TO_SHORT = {
    "producerGroup": "a", "topic": "b", "defaultTopic": "c", "defaultTopicQueueNums": "d",
    "queueId": "e", "sysFlag": "f", "bornTimestamp": "g", "flag": "h", "properties": "i",
    "reconsumeTimes": "j", "unitMode": "k", "maxReconsumeTimes": "l", "batch": "m", "bname": "n",
}  # fmt: skip


def test_v2_conversion_drops_extras_that_would_shadow_fields() -> None:
    v2 = SendMessageRequestHeaderV2(
        a="g", b="t", c="TBW102", d=4, e=0, f=0, g=1, h=0, extra={"topic": "evil", "bname": "x", "zz": "1"}
    )
    long = send_header_from_v2(v2)
    assert long.topic == "t"
    assert long.extra == {"zz": "1"}
    assert to_ext_fields(long)["topic"] == "t"
    back = send_header_to_v2(dataclasses.replace(long, extra={"a": "evil", "zz": "1"}))
    assert back.extra == {"zz": "1"}
    assert to_ext_fields(back)["a"] == "g"


@given(header=header_strategy(SendMessageRequestHeaderV2))
def test_v2_to_long_and_back(header: SendMessageRequestHeaderV2) -> None:
    header = dataclasses.replace(
        header, extra={k: v for k, v in header.extra.items() if k not in LONG_TO_SHORT}
    )
    assert send_header_to_v2(send_header_from_v2(header)) == header


# --- exact wire values ---------------------------------------------------------------------------


def test_send_v2_ext_fields_by_hand() -> None:
    header = SendMessageRequestHeaderV2(
        a="please_rename_unique_group_name",
        b="TopicTest",
        c="TBW102",
        d=4,
        e=3,
        f=0,
        g=1726000000123,
        h=0,
        i="KEYS\x01k1\x02UNIQ_KEY\x01AC110001\x02WAIT\x01true\x02TAGS\x01TagA\x02",
        j=0,
        n="broker-a",
    )
    assert to_ext_fields(header) == {
        "a": "please_rename_unique_group_name",
        "b": "TopicTest",
        "c": "TBW102",
        "d": "4",
        "e": "3",
        "f": "0",
        "g": "1726000000123",
        "h": "0",
        "i": "KEYS\x01k1\x02UNIQ_KEY\x01AC110001\x02WAIT\x01true\x02TAGS\x01TagA\x02",
        "j": "0",
        "k": "false",
        "m": "false",
        "n": "broker-a",
    }


def test_pull_header_by_hand_and_none_left_out() -> None:
    header = PullMessageRequestHeader(
        consumer_group="g",
        topic="t",
        queue_id=1,
        queue_offset=2**40,
        max_msg_nums=32,
        sys_flag=3,
        commit_offset=-1,
        suspend_timeout_millis=15000,
        sub_version=1726000000000,
        expression_type="TAG",
        proxy_forward_client_id="proxy",
        broker_name="broker-a",
    )
    assert to_ext_fields(header) == {
        "consumerGroup": "g",
        "topic": "t",
        "queueId": "1",
        "queueOffset": "1099511627776",
        "maxMsgNums": "32",
        "sysFlag": "3",
        "commitOffset": "-1",
        "suspendTimeoutMillis": "15000",
        "subVersion": "1726000000000",
        "expressionType": "TAG",
        "proxyFrowardClientId": "proxy",
        "bname": "broker-a",
    }


def test_booleans_are_java_style_and_defaults_written() -> None:
    assert to_ext_fields(GetMaxOffsetRequestHeader(topic="t", queue_id=0)) == {
        "topic": "t",
        "queueId": "0",
        "committed": "true",
    }
    assert to_ext_fields(UnregisterClientRequestHeader(client_id="10.0.0.1@1#2")) == {
        "clientID": "10.0.0.1@1#2"
    }


def test_send_response_with_broker_extras() -> None:
    ext = {
        "msgId": "0A00000100002A9F0000000000000042",
        "queueId": "2",
        "queueOffset": "17",
        "MSG_REGION": "DefaultRegion",
        "TRACE_ON": "true",
    }
    header = from_ext_fields(SendMessageResponseHeader, ext)
    assert header == SendMessageResponseHeader(
        msg_id="0A00000100002A9F0000000000000042",
        queue_id=2,
        queue_offset=17,
        extra={"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"},
    )
    assert to_ext_fields(header) == ext


def test_decode_accepts_what_java_parses() -> None:
    header = from_ext_fields(GetMaxOffsetRequestHeader, {"topic": "t", "queueId": "+7", "committed": "FALSE"})
    assert header.queue_id == 7
    assert header.committed is False
    assert from_ext_fields(QueryConsumerOffsetResponseHeader, {"offset": "-9223372036854775808"}).offset == -(
        2**63
    )


def test_no_ext_fields_at_all() -> None:
    assert from_ext_fields(LockBatchMqRequestHeader, None) == LockBatchMqRequestHeader()
    assert to_ext_fields(LockBatchMqRequestHeader()) == {}
    with pytest.raises(MalformedHeader, match=r"QueryConsumerOffsetResponseHeader.*'offset'"):
        from_ext_fields(QueryConsumerOffsetResponseHeader, None)


# --- decode errors -------------------------------------------------------------------------------

VALID_PULL_RESPONSE = {
    "suggestWhichBrokerId": "0",
    "nextBeginOffset": "10",
    "minOffset": "0",
    "maxOffset": "12",
}


@pytest.mark.parametrize("key", sorted(VALID_PULL_RESPONSE))
def test_missing_required_key(key: str) -> None:
    ext = {k: v for k, v in VALID_PULL_RESPONSE.items() if k != key}
    with pytest.raises(MalformedHeader, match=f"PullMessageResponseHeader.*'{key}'.*missing"):
        from_ext_fields(h.PullMessageResponseHeader, ext)


@pytest.mark.parametrize(
    "bad",
    ["", "abc", "1.5", " 1", "1 ", "1_0", "0x10", "\u0661", "--1", "+", "9223372036854775808", "1e3"],
)
def test_unparseable_long(bad: str) -> None:
    with pytest.raises(MalformedHeader, match=r"PullMessageResponseHeader.*'maxOffset'"):
        from_ext_fields(h.PullMessageResponseHeader, {**VALID_PULL_RESPONSE, "maxOffset": bad})


@pytest.mark.parametrize("bad", ["2147483648", "-2147483649", "99999999999999999999999"])
def test_int32_out_of_range(bad: str) -> None:
    with pytest.raises(MalformedHeader, match="'queueId'"):
        from_ext_fields(GetMaxOffsetRequestHeader, {"topic": "t", "queueId": bad})


@pytest.mark.parametrize("bad", ["", "yes", "1", "t", "truee"])
def test_unparseable_bool(bad: str) -> None:
    with pytest.raises(MalformedHeader, match=r"GetMaxOffsetRequestHeader.*'committed'"):
        from_ext_fields(GetMaxOffsetRequestHeader, {"topic": "t", "queueId": "0", "committed": bad})


def test_non_string_values_are_malformed() -> None:
    for ext in (
        {"topic": "t", "queueId": 0},
        {"topic": 5, "queueId": "0"},
        {"topic": "t", "queueId": "0", "committed": True},
    ):
        with pytest.raises(MalformedHeader):
            from_ext_fields(GetMaxOffsetRequestHeader, ext)  # type: ignore[arg-type]


@given(
    ext=st.dictionaries(
        st.sampled_from(sorted(EXPECTED[h.PullMessageRequestHeader][1])) | st.text(), st.text()
    )
)
def test_random_ext_fields_decode_or_raise_malformed(ext: dict[str, str]) -> None:
    try:
        header = from_ext_fields(PullMessageRequestHeader, ext)
    except MalformedHeader:
        return
    assert set(header.extra) == set(ext) - EXPECTED[h.PullMessageRequestHeader][1]


# --- unknown keys --------------------------------------------------------------------------------


def test_unknown_keys_are_kept_and_written_back() -> None:
    ext = {"topic": "t", "queueId": "3", "lo": "true", "ns": "prod", "futureField": "x"}
    header = from_ext_fields(h.GetMinOffsetRequestHeader, ext)
    assert header.extra == {"lo": "true", "ns": "prod", "futureField": "x"}
    assert header.queue_id == 3
    assert to_ext_fields(header) == ext


def test_no_unknown_keys_gives_empty_extra() -> None:
    assert from_ext_fields(h.GetMinOffsetRequestHeader, {"topic": "t", "queueId": "3"}).extra == {}


def test_extra_repeating_a_defined_key_is_refused() -> None:
    header = h.GetMinOffsetRequestHeader(topic="t", queue_id=3, extra={"queueId": "4"})
    with pytest.raises(LocalProtocolError, match="queueId"):
        to_ext_fields(header)


# --- encode errors -------------------------------------------------------------------------------


class _Flag(enum.IntFlag):
    COMMIT = 1
    SUSPEND = 2


class _Kind(enum.StrEnum):
    TAG = "TAG"


def test_int_enum_encodes_as_number_and_str_enum_as_value() -> None:
    header = h.GetMinOffsetRequestHeader(topic="t", queue_id=_Flag.COMMIT | _Flag.SUSPEND)
    assert to_ext_fields(header)["queueId"] == "3"
    kind = to_ext_fields(h.GetMinOffsetRequestHeader(topic=_Kind.TAG, queue_id=0))["topic"]
    assert type(kind) is str
    assert kind == "TAG"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"queue_id": 2**31}, "queueId.*int32"),
        ({"queue_id": -(2**31) - 1}, "queueId.*int32"),
        ({"queue_id": True}, "queueId.*expected int"),
        ({"queue_id": "1"}, "queueId.*expected int"),
        ({"queue_id": 1.0}, "queueId.*expected int"),
        ({"queue_id": None}, "queueId.*required"),
        ({"topic": b"t"}, "topic.*expected str"),
        ({"committed": 1}, "committed.*expected bool"),
        ({"broker_name": 7}, "bname.*expected str"),
    ],
)
def test_unencodable_values(kwargs: dict[str, Any], match: str) -> None:
    fields: dict[str, Any] = {"topic": "t", "queue_id": 0, **kwargs}
    header = GetMaxOffsetRequestHeader(**fields)
    with pytest.raises(LocalProtocolError, match=f"GetMaxOffsetRequestHeader.*{match}"):
        to_ext_fields(header)


def test_int64_range_on_encode() -> None:
    ok = QueryConsumerOffsetResponseHeader(offset=2**63 - 1)
    assert to_ext_fields(ok) == {"offset": "9223372036854775807"}
    with pytest.raises(LocalProtocolError, match="int64"):
        to_ext_fields(QueryConsumerOffsetResponseHeader(offset=2**63))


# --- value semantics and the plan builder --------------------------------------------------------


def test_headers_are_frozen_hashable_and_keyword_only() -> None:
    a = h.GetMinOffsetRequestHeader(topic="t", queue_id=1, extra={"x": "1"})
    b = h.GetMinOffsetRequestHeader(topic="t", queue_id=1, extra={"x": "1"})
    assert a == b
    assert hash(a) == hash(b)
    assert a != h.GetMinOffsetRequestHeader(topic="t", queue_id=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.topic = "u"  # type: ignore[misc]
    with pytest.raises(TypeError):
        h.GetMinOffsetRequestHeader("t", 1)  # type: ignore[call-arg]
    assert not hasattr(a, "__dict__")


def test_plan_builder_rejects_unsupported_classes() -> None:
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class FloatHeader:
        REQUEST_CODE: typing.ClassVar[int | None] = None
        ratio: float
        extra: typing.Mapping[str, str] = dataclasses.field(default_factory=dict)

    with pytest.raises(TypeError, match=r"FloatHeader\.ratio"):
        to_ext_fields(FloatHeader(ratio=0.5))
    with pytest.raises(TypeError, match="not a header dataclass"):
        x._plan_for(int)


def test_a_header_defined_elsewhere_works_with_the_generic_pair() -> None:
    @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
    class DeleteTopicRequestHeader:
        REQUEST_CODE: typing.ClassVar[int | None] = 215
        topic: str
        cluster_name: str | None = None
        extra: typing.Mapping[str, str] = dataclasses.field(default_factory=dict)

    header = DeleteTopicRequestHeader(topic="t", cluster_name="c")
    assert to_ext_fields(header) == {"topic": "t", "clusterName": "c"}
    assert from_ext_fields(DeleteTopicRequestHeader, {"topic": "t", "clusterName": "c"}) == header
