"""JSON headers read with the ``orjson`` extra and without it: the same header or the same error.

The dev install has orjson; each check runs the reader twice, once with the module-level hook
emptied (the pure path every default install takes).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rocketmq_py.errors import MalformedHeader
from rocketmq_py.protocol import _json_header
from rocketmq_py.protocol._command import RemotingCommand, decode_command

orjson = pytest.importorskip("orjson")  # installed by the dev extra: CI runs both paths

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=12,
)


def _read(header: bytes, fast: bool) -> tuple[str, object]:
    saved = _json_header._orjson
    _json_header._orjson = orjson if fast else None
    try:
        return "value", _json_header._decode_json_header(header)
    except MalformedHeader:
        return "error", None
    finally:
        _json_header._orjson = saved


def _same(a: object, b: object) -> bool:
    # NaN is not equal to itself: compare what both print.
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


header_like = st.fixed_dictionaries(
    {"code": st.integers(-(2**40), 2**40)},
    optional={
        "opaque": json_values,
        "flag": json_values,
        "version": json_values,
        "language": st.sampled_from(["JAVA", "GO", "NOPE"]) | json_values,
        "remark": st.text() | json_values,
        "extFields": st.dictionaries(st.text(), json_values | st.integers(), max_size=4) | json_values,
        "other": json_values,
    },
)


@given(json_values | header_like)
@example({"code": 0, "extFields": {"n": 123456789012345678901234567890}})
@example({"code": 0, "extFields": {"n": 1.5, "t": True, "s": "x"}})
def test_any_json_document_decodes_the_same(value: object) -> None:
    header = json.dumps(value).encode()
    fast, pure = _read(header, True), _read(header, False)
    assert fast[0] == pure[0]
    assert _same(fast[1], pure[1])


@given(st.binary(max_size=64))
@example(b'{"code":0,"opaque":NaN}')
@example(b'{"code":0,"opaque":123456789012345678901234567890}')
@example(b'{"remark":"\\ud800"}')
@example(b" " + b"[" * 2000 + b"]" * 2000)
@example(b'{"code":0} x')
@example(b"\xff{}")
def test_any_bytes_read_the_same_or_fail_the_same(header: bytes) -> None:
    fast, pure = _read(header, True), _read(header, False)
    assert fast[0] == pure[0]
    assert _same(fast[1], pure[1])


@pytest.fixture(params=[True, False], ids=["orjson", "pure"])
def json_path(request: pytest.FixtureRequest) -> Iterator[None]:
    saved = _json_header._orjson
    _json_header._orjson = orjson if request.param else None
    yield
    _json_header._orjson = saved


def test_a_broker_reply_decodes_the_same_on_both_paths(json_path: None) -> None:
    header = (
        b'{"code":0,"extFields":{"msgId":"7F00000100002A9F0000000000A1B2C3","queueId":"3",'
        b'"queueOffset":"123456","MSG_REGION":"DefaultRegion","TRACE_ON":"true"},"flag":1,'
        b'"language":"JAVA","opaque":12345,"serializeTypeCurrentRPC":"JSON","version":479}'
    )
    command = decode_command(len(header).to_bytes(4, "big") + header)
    assert command == RemotingCommand(
        0,
        opaque=12345,
        flag=1,
        ext_fields={
            "msgId": "7F00000100002A9F0000000000A1B2C3",
            "queueId": "3",
            "queueOffset": "123456",
            "MSG_REGION": "DefaultRegion",
            "TRACE_ON": "true",
        },
        language=0,
        version=479,
    )
