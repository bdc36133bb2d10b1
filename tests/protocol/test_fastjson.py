"""The tolerant fastjson reader and the matching writer."""

from __future__ import annotations

import contextlib
import json
import math
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rocketmq_py.errors import LocalProtocolError, MalformedBody
from rocketmq_py.protocol._fastjson import MAX_DEPTH, FrozenObject, _Scanner, dump_fastjson, parse_fastjson


def scan(text: str) -> Any:
    """The hand-written scanner alone, without the json.loads fast path."""
    return _Scanner(text).document()


# --- what fastjson writes ------------------------------------------------------------------------


def test_standard_json_takes_the_fast_path() -> None:
    body = b'{"consumerIdList":["10.0.0.1@1#2","10.0.0.2@3#4"]}'
    assert parse_fastjson(body) == {"consumerIdList": ["10.0.0.1@1#2", "10.0.0.2@3#4"]}


def test_bare_integer_keys_parse_like_quoted_ones() -> None:
    fast = b'{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a"}'
    standard = b'{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"},"brokerName":"broker-a"}'
    assert parse_fastjson(fast) == parse_fastjson(standard) == json.loads(standard)


def test_negative_and_spaced_bare_keys() -> None:
    assert parse_fastjson(' { -1 : "a" ,\n 20 :\t"b" } ') == {"-1": "a", "20": "b"}


def test_object_keys_become_frozen_objects() -> None:
    body = (
        b'{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:123,'
        b'{"brokerName":"broker-a","queueId":1,"topic":"T"}:-1}}'
    )
    table = parse_fastjson(body)["offsetTable"]
    key0 = FrozenObject({"brokerName": "broker-a", "queueId": 0, "topic": "T"})
    key1 = FrozenObject({"topic": "T", "queueId": 1, "brokerName": "broker-a"})  # order is irrelevant
    assert table == {key0: 123, key1: -1}
    (first,) = (k for k in table if k["queueId"] == 0)
    assert first["topic"] == "T"
    assert dict(first) == {"brokerName": "broker-a", "queueId": 0, "topic": "T"}


def test_nested_containers_in_keys_are_frozen() -> None:
    parsed = parse_fastjson('{{"a":[1,{"b":[2]}]}:"x",[1,[2]]:"y"}')
    key = FrozenObject({"a": (1, FrozenObject({"b": (2,)}))})
    assert parsed == {key: "x", (1, (2,)): "y"}
    assert hash(next(iter(parsed))) == hash(key)


def test_frozen_object_value_semantics() -> None:
    a = FrozenObject({"x": [1, 2], "y": {"z": None}})
    assert a == {"x": (1, 2), "y": {"z": None}}
    assert a == FrozenObject({"y": {"z": None}, "x": (1, 2)})
    assert hash(a) == hash(FrozenObject({"y": {"z": None}, "x": (1, 2)}))
    assert a != {"x": (1, 2)}
    assert a != 5
    assert len(a) == 2
    assert sorted(a) == ["x", "y"]
    assert repr(FrozenObject({"q": 1})) == "FrozenObject({'q': 1})"
    with pytest.raises(TypeError):
        a["x"] = 3  # type: ignore[index]
    assert FrozenObject() == {}


def test_escapes_and_unicode_match_json() -> None:
    text = r'{7:"tab\tquote\"slash\/u\u00e9 pair\ud83d\ude00 lone\ud800"}'
    assert scan(text) == {"7": 'tab\tquote"slash/u\u00e9 pair\U0001f600 lone\ud800'}
    assert parse_fastjson('{1:"h\u00e9llo"}'.encode()) == {"1": "h\u00e9llo"}


def test_numbers_and_literals() -> None:
    assert scan("{1:[0,-0,12,-3.5,1e3,2E-2,true,false,null]}") == {
        "1": [0, 0, 12, -3.5, 1000.0, 0.02, True, False, None]
    }
    value = scan("{1:1.0}")["1"]
    assert isinstance(value, float)


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"   ",
        b"{",
        b"{0:",
        b'{0:"a"',
        b'{0:"a",}',
        b'{0 "a"}',
        b"[1,]",
        b"[1 2]",
        b'{0:"a"} x',
        b'{"a":NaN}',
        b'{0:"a","b":Infinity}',
        b"{true:1}",
        b"{'a':1}",
        b'{0:"\\x"}',
        b'{0:"\\u12"}',
        b'{0:"raw\nnewline"}',
        b'{0:"unterminated}',
        b"{01:1}",
        b"{0:-}",
        b"{0:tru}",
        b"\xff\xfe{}",
        b'{0:"\xc3"}',
        b"\xef\xbb\xbf{}",
        b"1" * 5000,
        b"{0:" + b"1" * 5000 + b"}",
    ],
)
def test_malformed_bodies(body: bytes) -> None:
    with pytest.raises(MalformedBody):
        parse_fastjson(body)


def test_depth_limit() -> None:
    ok = "{0:" * MAX_DEPTH + "1" + "}" * MAX_DEPTH
    assert parse_fastjson(ok) is not None
    with pytest.raises(MalformedBody, match="deeper"):
        parse_fastjson("{0:" * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1))
    with pytest.raises(MalformedBody):
        parse_fastjson("[" * 100_000)  # json.loads gives up (RecursionError), so does the scanner
    with pytest.raises(MalformedBody, match="deeper"):
        parse_fastjson("{{" * 1000)


def test_non_utf8_is_malformed() -> None:
    with pytest.raises(MalformedBody, match="UTF-8"):
        parse_fastjson('{"a":"\u00e9"}'.encode("latin-1"))


# --- fuzzing -------------------------------------------------------------------------------------

JSONISH = st.text(alphabet='{}[]:,"\\0123456789-+.eEtruefalsn u\t', max_size=60)


def _parse_or_malformed(data: bytes | str) -> None:
    with contextlib.suppress(MalformedBody):  # anything else (IndexError, ValueError...) fails
        parse_fastjson(data)


@given(data=st.binary(max_size=200))
def test_random_bytes(data: bytes) -> None:
    _parse_or_malformed(data)


@given(text=JSONISH)
@example(text='{1:{[{"a":1}]:2}}')
@example(text="{-:1}")
def test_random_jsonish_text(text: str) -> None:
    _parse_or_malformed(text)


JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@given(value=JSON_VALUES, ensure_ascii=st.booleans(), indent=st.sampled_from([None, 0, 2]))
def test_scanner_agrees_with_json_on_standard_json(
    value: Any, ensure_ascii: bool, indent: int | None
) -> None:
    text = json.dumps(value, ensure_ascii=ensure_ascii, indent=indent)
    assert scan(text) == json.loads(text)


FASTJSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.integers(-(2**63), 2**63 - 1), children, max_size=4)
        | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


def _keys_as_text(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _keys_as_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_keys_as_text(v) for v in value]
    return value


@given(value=FASTJSON_VALUES)
def test_bare_int_key_documents_round_trip(value: Any) -> None:
    body = dump_fastjson(value)
    assert parse_fastjson(body) == _keys_as_text(value)


@given(
    value=FASTJSON_VALUES,
    cut=st.integers(min_value=0),
    junk=st.sampled_from(["", "{", "}", ":", ",", '"', "0"]),
)
def test_truncated_and_corrupted_documents(value: Any, cut: int, junk: str) -> None:
    text = dump_fastjson({"k": value, 1: [value]}).decode()
    cut %= len(text)
    _parse_or_malformed(text[:cut] + junk + text[cut + 1 :])


# --- writing -------------------------------------------------------------------------------------


def test_dump_writes_fastjson_default_form() -> None:
    table = {
        FrozenObject({"topic": "T", "queueId": 1, "brokerName": "b"}): 7,
        FrozenObject({"topic": "T", "queueId": 0, "brokerName": "b"}): 5,
    }
    assert dump_fastjson({"offsetTable": table}) == (
        b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:5,'
        b'{"brokerName":"b","queueId":1,"topic":"T"}:7}}'
    )
    assert (
        dump_fastjson({1: "x", 0: ["\u00e9", None, True, 1.5, (2,)]})
        == '{0:["\u00e9",null,true,1.5,[2]],1:"x"}'.encode()
    )
    assert parse_fastjson(dump_fastjson({"offsetTable": table})) == {"offsetTable": table}


@pytest.mark.parametrize(
    "value",
    [math.nan, math.inf, {1, 2}, {True: 1}, {1.5: 1}, {None: 1}, b"bytes", "\ud800", {"k": object()}],
)
def test_dump_refuses_what_json_cannot_carry(value: Any) -> None:
    with pytest.raises(LocalProtocolError):
        dump_fastjson(value)
