"""The properties string: Java's split rules, encoding rules, the int16 size limit."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py.errors import LocalProtocolError
from rocketmq_py.protocol._properties import (
    MAX_PROPERTIES_BYTES,
    SYSTEM_PROPERTY_KEYS,
    PropertyKey,
    check_properties_size,
    decode_properties,
    encode_properties,
    encode_properties_bytes,
)

prop_keys = st.text(st.characters(codec="utf-8", exclude_characters="\x01\x02"), min_size=1, max_size=12)
prop_values = st.text(st.characters(codec="utf-8", exclude_characters="\x02"), min_size=1, max_size=24)


def test_encode_exact_string() -> None:
    text = encode_properties({"TAGS": "TagA", "KEYS": "k1 k2", "WAIT": "true"})
    assert text == "TAGS\x01TagA\x02KEYS\x01k1 k2\x02WAIT\x01true\x02"


def test_encode_drops_none_and_empty_values() -> None:
    assert encode_properties({"a": None, "b": "", "c": "x"}) == "c\x01x\x02"
    assert encode_properties({}) == ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("a\x01b\x02", {"a": "b"}),
        ("a\x01b", {"a": "b"}),  # the last separator is optional
        ("\x01b\x02", {}),  # empty key
        ("a\x01\x02", {}),  # empty value: dropped, as Java drops it
        ("ab\x02", {}),  # no name/value separator
        ("a\x02", {}),  # shorter than three characters
        ("\x02\x02a\x01b\x02\x02", {"a": "b"}),  # empty chunks skipped
        ("a\x01b\x01c\x02", {"a": "b\x01c"}),  # the key ends at the first U+0001
        ("a\x01x\x02a\x01y\x02", {"a": "y"}),  # the later duplicate wins
        ("a\x01x\x02a\x01\x02", {"a": "x"}),  # a dropped empty value does not erase the earlier one
        ("clé\x01välue 日本\x02", {"clé": "välue 日本"}),
    ],
)
def test_decode_follows_java_rules(text: str, expected: dict[str, str]) -> None:
    assert decode_properties(text) == expected


@pytest.mark.parametrize("key", ["", "a\x01b", "a\x02b", "\x01", "\x02"])
def test_encode_rejects_keys_that_cannot_round_trip(key: str) -> None:
    with pytest.raises(LocalProtocolError):
        encode_properties({key: "v"})


def test_encode_rejects_value_with_property_separator() -> None:
    with pytest.raises(LocalProtocolError):
        encode_properties({"k": "a\x02b"})


def test_value_with_name_value_separator_round_trips() -> None:
    props = {"k": "a\x01b"}
    assert decode_properties(encode_properties(props)) == props


@given(st.dictionaries(prop_keys, prop_values, max_size=8))
def test_round_trip(props: dict[str, str]) -> None:
    assert decode_properties(encode_properties(props)) == props
    assert decode_properties(encode_properties_bytes(props).decode("utf-8")) == props


@given(st.text(max_size=60))
def test_decode_never_raises_and_keeps_only_non_empty(text: str) -> None:
    result = decode_properties(text)
    assert all(key and value and "\x01" not in key for key, value in result.items())


def test_size_limit_is_in_utf8_bytes() -> None:
    # "k" U+0001 value U+0002 = value + 3 bytes
    fits = {"k": "x" * (MAX_PROPERTIES_BYTES - 3)}
    assert len(encode_properties_bytes(fits)) == MAX_PROPERTIES_BYTES
    with pytest.raises(LocalProtocolError, match="32767"):
        encode_properties_bytes({"k": "x" * (MAX_PROPERTIES_BYTES - 2)})
    # 'é' is two bytes in UTF-8: half as many characters already overflow
    with pytest.raises(LocalProtocolError):
        encode_properties_bytes({"k": "é" * (MAX_PROPERTIES_BYTES // 2)})


def test_check_properties_size() -> None:
    check_properties_size(b"x" * MAX_PROPERTIES_BYTES)
    with pytest.raises(LocalProtocolError):
        check_properties_size(b"x" * (MAX_PROPERTIES_BYTES + 1))


def test_lone_surrogate_is_a_local_error() -> None:
    with pytest.raises(LocalProtocolError, match="UTF-8"):
        encode_properties_bytes({"k": "\ud800"})


def test_non_ascii_bytes() -> None:
    assert encode_properties_bytes({"키": "値 Ünïcödé"}) == "키\x01値 Ünïcödé\x02".encode()


def test_well_known_keys() -> None:
    assert PropertyKey.UNIQ_KEY == "UNIQ_KEY"
    assert PropertyKey.WAIT_STORE_MSG_OK == "WAIT"
    assert PropertyKey.DELAY_TIME_LEVEL == "DELAY"
    assert PropertyKey.REAL_QUEUE_ID == "REAL_QID"
    assert PropertyKey.TRANSACTION_PREPARED == "TRAN_MSG"
    assert PropertyKey.CONSUME_START_TIMESTAMP == "CONSUME_START_TIME"
    assert PropertyKey.SHARDING_KEY == "__SHARDINGKEY"
    assert PropertyKey.FIRST_POP_TIME == "1ST_POP_TIME"
    assert PropertyKey.CRC32 == "__CRC32#"
    assert {"UNIQ_KEY", "TAGS", "KEYS", "WAIT", "DELAY", "MIN_OFFSET"} <= SYSTEM_PROPERTY_KEYS
    assert "my-user-property" not in SYSTEM_PROPERTY_KEYS
