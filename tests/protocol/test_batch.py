"""The batch body: exact bytes, round trips, malformed input, Java's batch rules."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py.errors import InvalidMessage, LocalProtocolError, MalformedMessage
from rocketmq_py.protocol._batch import (
    decode_batch,
    encode_batch,
    encode_keyed_batch,
    iter_batch,
    validate_batch,
)
from rocketmq_py.protocol._ids import UniqKeyGenerator
from rocketmq_py.protocol._message import Message
from rocketmq_py.protocol._properties import encode_properties

prop_keys = st.text(st.characters(codec="utf-8", exclude_characters="\x01\x02"), min_size=1, max_size=10)
prop_values = st.text(st.characters(codec="utf-8", exclude_characters="\x02"), min_size=1, max_size=16)
messages = st.builds(
    lambda body, flag, props: Message("TopicB", body, flag=flag, properties=props),
    st.binary(max_size=64),
    st.integers(-(2**31), 2**31 - 1),
    st.dictionaries(prop_keys, prop_values, max_size=4),
)


def test_exact_bytes() -> None:
    msg = Message("T", b"hi", flag=7, properties={"a": "b"})
    expected = bytes.fromhex(
        "0000001c"  # TOTALSIZE 28 = 4+4+4+4+4 + 2 + 2 + 4
        "00000000"  # MAGICCODE 0
        "00000000"  # BODYCRC 0
        "00000007"  # FLAG
        "00000002"  # body length
        "6869"  # "hi"
        "0004"  # properties length (int16)
        "61016202"  # "a" U+0001 "b" U+0002
    )
    assert encode_batch([msg]) == expected
    assert encode_batch([msg, msg]) == expected * 2
    assert decode_batch(expected, "T") == [msg]


def test_empty_batch_and_empty_entries() -> None:
    assert encode_batch([]) == b""
    assert decode_batch(b"") == []
    empty = encode_batch([Message("T")])
    assert len(empty) == 22
    assert decode_batch(empty, "T") == [Message("T")]


@given(st.lists(messages, max_size=5))
def test_round_trip(batch: list[Message]) -> None:
    data = encode_batch(batch)
    assert decode_batch(data, "TopicB") == batch
    assert [flag for flag, _, _ in iter_batch(data)] == [m.flag for m in batch]


def test_reader_ignores_magic_and_crc_like_java() -> None:
    data = bytearray(encode_batch([Message("T", b"x")]))
    data[4:12] = b"\xff" * 8
    assert decode_batch(bytes(data), "T") == [Message("T", b"x")]


def test_properties_use_replacement_for_bad_utf8() -> None:
    body = struct.pack(">iiiii", 22 + 4, 0, 0, 0, 0) + struct.pack(">h", 4) + b"k\x01\xff\x02"
    assert decode_batch(body)[0].properties == {"k": "\ufffd"}


@pytest.mark.parametrize(
    "data",
    [
        b"\x00" * 21,  # shorter than the fixed part
        struct.pack(">iiiii", 21, 0, 0, 0, 0) + b"\x00\x00",  # TOTALSIZE below the minimum
        struct.pack(">iiiii", 100, 0, 0, 0, 0) + b"\x00\x00",  # TOTALSIZE past the end
        struct.pack(">iiiii", 22, 0, 0, 0, -1) + b"\x00\x00",  # negative body length
        struct.pack(">iiiii", 23, 0, 0, 0, 2) + b"\x00\x00\x00",  # body runs into the props length
        struct.pack(">iiiii", 24, 0, 0, 0, 0) + b"\xff\xff\x00\x00",  # negative props length
        struct.pack(">iiiii", 24, 0, 0, 0, 0) + b"\x00\x01\x00\x00",  # lengths disagree with TOTALSIZE
        encode_batch([Message("T", b"x")]) + b"\x00",  # trailing byte
    ],
)
def test_malformed(data: bytes) -> None:
    with pytest.raises(MalformedMessage):
        decode_batch(data)


@given(st.binary(max_size=80))
def test_garbage_only_raises_malformed(data: bytes) -> None:
    try:
        result = decode_batch(data)
    except MalformedMessage:
        return
    assert sum(22 + len(m.body) for m in result) <= len(data)


@given(st.lists(messages, min_size=1, max_size=3), st.data())
def test_truncation_is_malformed(batch: list[Message], data: st.DataObject) -> None:
    encoded = encode_batch(batch)
    last_starts = len(encode_batch(batch[:-1]))
    cut = data.draw(st.integers(last_starts + 1, len(encoded) - 1))  # inside the last entry
    with pytest.raises(MalformedMessage):
        decode_batch(encoded[:cut])


def test_encode_rejects_oversized_properties_and_flag() -> None:
    with pytest.raises(LocalProtocolError):
        encode_batch([Message("T", properties={"k": "x" * 40000})])
    with pytest.raises(LocalProtocolError):
        encode_batch([Message("T", flag=2**31)])


def _copies(batch: list[Message]) -> tuple[list[Message], list[Message]]:
    def copy() -> list[Message]:
        return [Message(m.topic, m.body, flag=m.flag, properties=dict(m.properties)) for m in batch]

    return copy(), copy()


keys = st.one_of(
    st.just(UniqKeyGenerator().next_many(5)),  # the producer's own: the one-pass template
    st.just(UniqKeyGenerator(ip="::1").next_many(5)),  # IPv6: 56 characters
    st.lists(st.text(max_size=40), min_size=5, max_size=5),  # anything else: the general encoder
)


@given(st.lists(messages, min_size=1, max_size=5), keys, st.booleans())
def test_keyed_batch_is_the_keys_set_then_encoded(batch: list[Message], uniq: list[str], plain: bool) -> None:
    """encode_keyed_batch gives every message its key and the bytes of encode_batch after that."""
    if plain:
        batch = [Message(m.topic, m.body, flag=m.flag) for m in batch]
    uniq = uniq[: len(batch)]
    ours, reference = _copies(batch)
    for message, key in zip(reference, uniq, strict=True):
        message.properties["UNIQ_KEY"] = key
    try:
        expected: bytes | type[Exception] = encode_batch(reference)
    except LocalProtocolError:
        expected = LocalProtocolError
    if expected is LocalProtocolError:
        with pytest.raises(LocalProtocolError):
            encode_keyed_batch(ours, uniq)
    else:
        assert encode_keyed_batch(ours, uniq) == expected
    assert [m.properties for m in ours] == [m.properties for m in reference]


def test_keyed_batch_of_plain_messages_decodes_with_the_keys() -> None:
    uniq = UniqKeyGenerator().next_many(3)
    batch = [Message("T", b"a"), Message("T", b"", flag=7), Message("T", b"c" * 300)]
    decoded = decode_batch(encode_keyed_batch(batch, uniq), "T")
    assert [(m.body, m.flag, m.properties) for m in decoded] == [
        (b"a", 0, {"UNIQ_KEY": uniq[0]}),
        (b"", 7, {"UNIQ_KEY": uniq[1]}),
        (b"c" * 300, 0, {"UNIQ_KEY": uniq[2]}),
    ]


def test_keyed_batch_refuses_what_encode_batch_refuses() -> None:
    with pytest.raises(LocalProtocolError, match="flag"):
        encode_keyed_batch([Message("T", flag=2**31)], UniqKeyGenerator().next_many(1))
    with pytest.raises(ValueError, match="2 keys for 1 messages"):
        encode_keyed_batch([Message("T")], ["A", "B"])


def test_validate_batch_accepts_java_valid_batches() -> None:
    validate_batch([Message("T", b"1"), Message("T", b"2", properties={"WAIT": "true"})])
    validate_batch([Message("T", delay_level=0)])


@pytest.mark.parametrize(
    ("batch", "why"),
    [
        ([], "at least one"),
        ([Message("A"), Message("B")], "one topic"),
        ([Message("%RETRY%group")], "retry topic"),
        ([Message("T"), Message("T", delay_level=3)], "delayed"),
        ([Message("T", properties={"WAIT": "false"}), Message("T")], "WAIT"),
    ],
)
def test_validate_batch_rejects(batch: list[Message], why: str) -> None:
    with pytest.raises(InvalidMessage, match=why):
        validate_batch(batch)


two_properties = st.dictionaries(
    st.text(st.characters(codec="utf-8"), max_size=6),
    st.one_of(st.none(), st.text(st.characters(codec="utf-8"), max_size=6)),
    min_size=2,
    max_size=2,
)


@given(st.lists(two_properties, min_size=1, max_size=4))
def test_two_property_entries_encode_as_each_messages_properties(
    properties: list[dict[str, str | None]],
) -> None:
    """Entries of two properties (a tag or keys and the UNIQ_KEY, the sink's and most batches')
    have their own path in encode_batch: its bytes are each message's encode_properties, and what
    that refuses (an empty key, a separator in a key) is refused alike."""
    batch = [Message("TopicB", b"b", properties={}) for _ in properties]
    for message, props in zip(batch, properties, strict=True):
        message.properties = props  # type: ignore[assignment]  # None values, as a decoder never gives
    try:
        texts = [encode_properties(props).encode() for props in properties]
    except LocalProtocolError:
        with pytest.raises(LocalProtocolError):
            encode_batch(batch)
        return
    expected = b"".join(
        struct.pack(">iiiii", 22 + 1 + len(text), 0, 0, 0, 1) + b"b" + struct.pack(">h", len(text)) + text
        for text in texts
    )
    assert encode_batch(batch) == expected
