"""The declarative JSON body mapping: wire keys, value types, defaults, and what it refuses."""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Mapping
from typing import Any

import pytest

from rocketmq_py.errors import MalformedBody
from rocketmq_py.protocol import _bodies as b
from rocketmq_py.protocol import _json_body as jb
from rocketmq_py.protocol._ext_fields import wire_key
from rocketmq_py.protocol._json_body import JsonBody, decode_body, encode_body

# Every body class of _bodies with its wire keys in the order written, from the Java field names.
EXPECTED_KEYS: dict[type[JsonBody], list[str]] = {
    b.MessageQueue: ["brokerName", "queueId", "topic"],
    b.LockBatchRequestBody: ["clientId", "consumerGroup", "mqSet", "onlyThisBroker"],
    b.UnlockBatchRequestBody: ["clientId", "consumerGroup", "mqSet", "onlyThisBroker"],
    b.LockBatchResponseBody: ["lockOKMQSet"],
    b.ConsumerListBody: ["consumerIdList"],
    b.ResetOffsetBody: ["offsetTable"],
    b.SubscriptionData: [
        "classFilterMode", "codeSet", "expressionType", "subString", "subVersion", "tagsSet", "topic",
    ],
    b.ProducerData: ["groupName"],
    b.ConsumerData: [
        "consumeFromWhere", "consumeType", "groupName", "messageModel", "subscriptionDataSet", "unitMode",
    ],
    b.HeartbeatData: ["clientID", "consumerDataSet", "heartbeatFingerprint", "producerDataSet", "withoutSub"],
    b.QueueData: ["brokerName", "perm", "readQueueNums", "topicSysFlag", "writeQueueNums"],
    b.BrokerData: ["brokerAddrs", "brokerName", "cluster", "enableActingMaster", "zoneName"],
    b.TopicRouteData: [
        "brokerDatas", "filterServerTable", "orderTopicConf", "queueDatas", "topicQueueMappingByBroker",
    ],
}  # fmt: skip


def test_expected_table_covers_every_body_class() -> None:
    exported = {
        obj for name in b.__all__ if isinstance(obj := getattr(b, name), type) and issubclass(obj, JsonBody)
    }
    assert exported == set(EXPECTED_KEYS)


@pytest.mark.parametrize("cls", sorted(EXPECTED_KEYS, key=lambda cls: cls.__name__), ids=lambda c: c.__name__)
def test_wire_keys_in_alphabetical_order(cls: type[JsonBody]) -> None:
    assert [fp.key for fp in jb._plan_for(cls).fields] == EXPECTED_KEYS[cls]


# --- a body defined elsewhere ---------------------------------------------------------------------


class Color(enum.Enum):
    RED = 1
    GREEN = 2


@dataclasses.dataclass(frozen=True, kw_only=True)
class Inner(JsonBody):
    name: str
    weight: int = 0


@dataclasses.dataclass(frozen=True, kw_only=True)
class Outer(JsonBody):
    url: str = dataclasses.field(metadata=wire_key("URL"))
    color: Color
    inner: Inner | None = None
    inners: tuple[Inner, ...] = ()
    tags: frozenset[str] = frozenset()
    by_id: Mapping[int, Inner] = dataclasses.field(default_factory=dict)
    by_inner: Mapping[Inner, bool] = dataclasses.field(default_factory=dict)
    note: str | None = None
    raw: Any = None
    on: bool = False


def test_a_body_defined_elsewhere_uses_the_mapping() -> None:
    outer = Outer(
        url="u",
        color=Color.GREEN,
        inner=Inner(name="a"),
        inners=(Inner(name="c", weight=2), Inner(name="b")),
        tags=frozenset({"y", "x"}),
        by_id={-1: Inner(name="d")},
        raw=[1, {"k": None}],
    )
    assert outer.to_json() == {
        "URL": "u",
        "byId": {-1: {"name": "d", "weight": 0}},
        "byInner": {},
        "color": "GREEN",
        "inner": {"name": "a", "weight": 0},
        "inners": [{"name": "c", "weight": 2}, {"name": "b", "weight": 0}],
        "on": False,
        "raw": [1, {"k": None}],
        "tags": ["x", "y"],
    }
    assert list(outer.to_json()) == sorted(outer.to_json())
    assert decode_body(Outer, encode_body(outer)) == outer
    assert decode_body(Outer, b'{"URL":"u","color":"RED","note":null,"extra":[1]}') == Outer(
        url="u", color=Color.RED
    )


def test_object_keys_round_trip() -> None:
    outer = Outer(url="u", color=Color.RED, by_inner={Inner(name="k", weight=1): True})
    data = encode_body(outer, bare_keys=True)
    assert b'"byInner":{{"name":"k","weight":1}:true}' in data
    assert decode_body(Outer, data) == outer


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"[]", "Outer: expected a JSON object"),
        (b'{"color":"RED"}', "required key 'URL'"),
        (b'{"URL":"u"}', "required key 'color'"),
        (b'{"URL":"u","color":"BLUE"}', "Outer.color: unknown Color 'BLUE'"),
        (b'{"URL":"u","color":1}', "Outer.color: expected str"),
        (b'{"URL":1,"color":"RED"}', "Outer.URL: expected str"),
        (b'{"URL":"u","color":"RED","on":1}', "Outer.on: expected bool"),
        (b'{"URL":"u","color":"RED","inner":{"name":"a","weight":true}}', "Inner.weight: expected int"),
        (b'{"URL":"u","color":"RED","inner":{"name":"a","weight":1.0}}', "Inner.weight: expected int"),
        (b'{"URL":"u","color":"RED","inners":{}}', "Outer.inners: expected a JSON array"),
        (b'{"URL":"u","color":"RED","tags":["a",1]}', r"Outer.tags\[1\]: expected str"),
        (b'{"URL":"u","color":"RED","byId":[]}', "Outer.byId: expected a JSON object"),
        (b'{"URL":"u","color":"RED","byId":{"x":{"name":"a"}}}', "Outer.byId: expected a decimal map key"),
        (b'{"URL":"u","color":"RED","byInner":{"k":true}}', "Outer.byInner: expected Inner object keys"),
    ],
)
def test_schema_errors_name_the_key(body: bytes, match: str) -> None:
    with pytest.raises(MalformedBody, match=match):
        decode_body(Outer, body)


def test_int_keys_arrive_quoted_or_bare() -> None:
    expected = Outer(url="u", color=Color.RED, by_id={0: Inner(name="a"), -2: Inner(name="b")})
    for body in (
        b'{"URL":"u","color":"RED","byId":{"0":{"name":"a"},"-2":{"name":"b"}}}',
        b'{"URL":"u","color":"RED","byId":{0:{"name":"a"},-2:{"name":"b"}}}',
    ):
        assert decode_body(Outer, body) == expected
    assert json.loads(encode_body(expected))["byId"] == {
        "0": {"name": "a", "weight": 0},
        "-2": {"name": "b", "weight": 0},
    }


# --- what the plan builder refuses ---------------------------------------------------------------


def test_plan_builder_rejects_unsupported_classes() -> None:
    @dataclasses.dataclass(frozen=True)
    class ComplexBody(JsonBody):
        ratio: complex

    @dataclasses.dataclass(frozen=True)
    class UnionBody(JsonBody):
        either: int | str

    @dataclasses.dataclass(frozen=True)
    class KeyBody(JsonBody):
        table: Mapping[bool, int]

    class NotADataclass(JsonBody):
        pass

    with pytest.raises(TypeError, match=r"ComplexBody\.ratio"):
        ComplexBody(0.5j).to_json()
    with pytest.raises(TypeError, match=r"UnionBody\.either: unsupported union"):
        jb.prepare_bodies(UnionBody)
    with pytest.raises(TypeError, match=r"KeyBody\.table: unsupported map key"):
        KeyBody.from_json({})
    with pytest.raises(TypeError, match="not a body dataclass"):
        NotADataclass().to_json()
