"""Stored messages: exact layout, round trips, inner batches, compression, and garbage.

Both decoders (compiled construct and the struct fast path) are run on everything; a property
test checks they agree on valid, mutated and random bytes.
"""

from __future__ import annotations

import sys
import zlib
from collections.abc import Callable

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rocketmq_py.errors import CompressionUnavailable, LocalProtocolError, MalformedMessage
from rocketmq_py.protocol import _stored, _stored_construct
from rocketmq_py.protocol._batch import encode_batch
from rocketmq_py.protocol._message import Message, MessageExt, SysFlag
from rocketmq_py.protocol._stored import (
    BLANK_MAGIC_CODE,
    MAGIC_CODE_V1,
    MAGIC_CODE_V2,
    decode_messages,
    decode_messages_fast,
    encode_stored_message,
)
from rocketmq_py.protocol._stored_construct import decode_messages_construct

Decoder = Callable[..., list[MessageExt]]
DECODERS = pytest.mark.parametrize(
    "decode", [decode_messages_fast, decode_messages_construct], ids=["struct", "construct"]
)
CRC_MASK = 0x7FFFFFFF

# --- a hand-built message ------------------------------------------------------------------------

SAMPLE = MessageExt(
    "TopicTest",
    b"a",
    flag=16,
    properties={"TAGS": "TagA", "WAIT": "true"},
    queue_id=3,
    queue_offset=42,
    commit_log_offset=123456,
    born_timestamp=1709640000123,
    born_host="192.168.1.20:53412",
    store_timestamp=1709640000127,
    store_host="192.168.1.10:10911",
    reconsume_times=1,
    body_crc=0x68B7BE43,
)
SAMPLE_BYTES = bytes.fromhex(  # fromhex skips the spaces
    "00000079"  # 0   TOTALSIZE 121 = 91 fixed + 1 body + 9 topic + 20 properties
    "daa320a7"  # 4   MAGICCODE v1
    "68b7be43"  # 8   BODYCRC: crc32(b"a") = 0xE8B7BE43, top bit dropped as Java does
    "00000003"  # 12  QUEUEID
    "00000010"  # 16  FLAG
    "000000000000002a"  # 20  QUEUEOFFSET 42
    "000000000001e240"  # 28  PHYSICALOFFSET 123456
    "00000000"  # 36  SYSFLAG
    "0000018e0e7c227b"  # 40  BORNTIMESTAMP 1709640000123
    "c0a80114 0000d0a4"  # 48  BORNHOST 192.168.1.20 : 53412
    "0000018e0e7c227f"  # 56  STORETIMESTAMP 1709640000127
    "c0a8010a 00002a9f"  # 64  STOREHOST 192.168.1.10 : 10911
    "00000001"  # 72  RECONSUMETIMES
    "0000000000000000"  # 76  PREPARED TRANSACTION OFFSET
    "00000001 61"  # 84  BODY length + "a"
    "09 546f70696354657374"  # 89  TOPIC length (1 byte, v1) + "TopicTest"
    "0014 54414753015461674102 57414954017472756502"  # 99  PROPERTIES length + TAGS/WAIT
)


def test_sample_encodes_to_exact_bytes() -> None:
    assert encode_stored_message(SAMPLE) == SAMPLE_BYTES


@DECODERS
def test_sample_decodes(decode: Decoder) -> None:
    [msg] = decode(SAMPLE_BYTES)
    assert msg == SAMPLE
    assert msg.born_host == "192.168.1.20:53412"
    assert msg.store_host == "192.168.1.10:10911"
    assert msg.offset_msg_id == "C0A8010A00002A9F000000000001E240"
    assert msg.msg_id == msg.offset_msg_id
    assert (msg.tags, msg.keys) == ("TagA", ())


V2_V6 = MessageExt(
    "T", b"", queue_offset=7, commit_log_offset=9, born_host="10.0.0.1:1", store_host="[fe80::1]:10911"
)
V2_V6_BYTES = bytes.fromhex(
    "00000069"  # TOTALSIZE 105 = 91 + 12 (16-byte store IP) + 1 (2-byte topic length) + 1 topic
    "daa320ab"  # MAGICCODE v2
    "00000000"  # BODYCRC of the empty body
    "00000000 00000000"  # QUEUEID, FLAG
    "0000000000000007 0000000000000009"  # QUEUEOFFSET, PHYSICALOFFSET
    "00000020"  # SYSFLAG: STOREHOST_V6
    "0000000000000000"  # BORNTIMESTAMP
    "0a000001 00000001"  # BORNHOST 10.0.0.1:1
    "0000000000000000"  # STORETIMESTAMP
    "fe800000000000000000000000000001 00002a9f"  # STOREHOST [fe80::1]:10911
    "00000000 0000000000000000"  # RECONSUMETIMES, PREPARED TRANSACTION OFFSET
    "00000000"  # BODY length 0
    "0001 54"  # TOPIC length (2 bytes, v2) + "T"
    "0000"  # PROPERTIES length 0
)


@DECODERS
def test_v2_magic_and_ipv6_store_host(decode: Decoder) -> None:
    assert encode_stored_message(V2_V6, magic=MAGIC_CODE_V2) == V2_V6_BYTES
    [msg] = decode(V2_V6_BYTES)
    assert msg == V2_V6
    assert msg.store_host == "[fe80::1]:10911"
    assert msg.offset_msg_id == "FE80000000000000000000000000000100002A9F0000000000000009"


def test_magic_follows_topic_byte_length() -> None:
    assert encode_stored_message(MessageExt("t" * 127))[4:8] == bytes.fromhex("daa320a7")
    assert encode_stored_message(MessageExt("t" * 128))[4:8] == bytes.fromhex("daa320ab")
    assert encode_stored_message(MessageExt("é" * 64))[4:8] == bytes.fromhex("daa320ab")  # 128 bytes


@DECODERS
def test_broker_name_is_empty_when_decoded_without_a_queue(decode: Decoder) -> None:
    # Raw bytes do not name their broker; the stored layout has no such field.
    [msg] = decode(SAMPLE_BYTES)
    assert msg.broker_name == ""
    assert encode_stored_message(MessageExt("T", broker_name="broker-a")) == encode_stored_message(
        MessageExt("T")
    )


@DECODERS
def test_broker_name_is_given_to_every_message(decode: Decoder) -> None:
    # The inlined common case, v2/IPv6 (the general path), a compressed body and an inner batch.
    compressed = MessageExt("T", b"z" * 300, sys_flag=SysFlag.COMPRESSED)
    entries = encode_batch([Message("T", b"e0"), Message("T", b"e1")])
    batch = MessageExt("T", entries, sys_flag=SysFlag.INNER_BATCH | SysFlag.NEED_UNWRAP, queue_offset=5)
    data = SAMPLE_BYTES + V2_V6_BYTES + encode_stored_message(compressed) + encode_stored_message(batch)
    plain = decode(data)
    named = decode(data, broker_name="broker-b")
    assert [m.body[:2] for m in named] == [b"a", b"", b"zz", b"e0", b"e1"]
    assert {m.broker_name for m in plain} == {""}
    assert {m.broker_name for m in named} == {"broker-b"}
    for m in plain:
        m.broker_name = "broker-b"
    assert named == plain  # nothing else differs


def test_default_decoder_is_the_fast_path() -> None:
    assert _stored._decode is decode_messages_fast
    assert decode_messages(SAMPLE_BYTES * 2) == [SAMPLE, SAMPLE]


@DECODERS
def test_accepts_bytearray_and_memoryview(decode: Decoder) -> None:
    assert decode(bytearray(SAMPLE_BYTES)) == [SAMPLE]
    assert decode(memoryview(b"xx" + SAMPLE_BYTES)[2:]) == [SAMPLE]
    assert decode(b"") == []


# --- strategies ----------------------------------------------------------------------------------

int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
ports = st.integers(0, 65535)
hosts = st.one_of(
    st.builds(lambda ip, port: f"{ip}:{port}", st.ip_addresses(v=4), ports),
    st.builds(lambda ip, port: f"[{ip}]:{port}", st.ip_addresses(v=6), ports),
)
topics = st.text(st.characters(codec="utf-8"), max_size=12) | st.text("abcXYZ_%-", min_size=120, max_size=140)
prop_keys = st.text(st.characters(codec="utf-8", exclude_characters="\x01\x02"), min_size=1, max_size=10)
prop_values = st.text(st.characters(codec="utf-8", exclude_characters="\x02"), min_size=1, max_size=16)
properties = st.dictionaries(prop_keys, prop_values, max_size=5)
_SPECIAL = SysFlag.COMPRESSED | SysFlag.BORNHOST_V6 | SysFlag.STOREHOST_V6 | SysFlag.NEED_UNWRAP
_SPECIAL |= SysFlag.INNER_BATCH | SysFlag.COMPRESSION_MASK
plain_sys_flags = st.integers(0, 2**31 - 1).map(lambda f: f & ~_SPECIAL) | st.sampled_from([0, 0x2, 0x4, 0x8])


@st.composite
def stored_messages(draw: st.DrawFn, compressed: bool | None = None) -> MessageExt:
    sys_flag = draw(plain_sys_flags)
    if compressed if compressed is not None else draw(st.booleans()):
        sys_flag |= draw(st.sampled_from([0x001, 0x301]))  # zlib, with type bits 0 (old clients) or 3
    return MessageExt(
        draw(topics),
        draw(st.binary(max_size=64)),
        flag=draw(int32),
        properties=draw(properties),
        queue_id=draw(int32),
        queue_offset=draw(int64),
        commit_log_offset=draw(int64),
        sys_flag=sys_flag,
        born_timestamp=draw(int64),
        born_host=draw(hosts),
        store_timestamp=draw(int64),
        store_host=draw(hosts),
        reconsume_times=draw(int32),
        prepared_transaction_offset=draw(int64),
    )


def _as_decoded(msg: MessageExt, stored_body: bytes) -> MessageExt:
    """What decoding the stored form of ``msg`` must give."""
    expected = MessageExt(
        msg.topic,
        msg.body,
        flag=msg.flag,
        properties=msg.properties,
        queue_id=msg.queue_id,
        queue_offset=msg.queue_offset,
        commit_log_offset=msg.commit_log_offset,
        sys_flag=msg.sys_flag & ~SysFlag.COMPRESSED,
        born_timestamp=msg.born_timestamp,
        born_host=msg.born_host,
        store_timestamp=msg.store_timestamp,
        store_host=msg.store_host,
        reconsume_times=msg.reconsume_times,
        prepared_transaction_offset=msg.prepared_transaction_offset,
        body_crc=zlib.crc32(stored_body) & CRC_MASK,
    )
    return expected


def _stored_body(msg: MessageExt) -> bytes:
    return zlib.compress(msg.body, 5) if msg.sys_flag & SysFlag.COMPRESSED else msg.body


# --- round trips ---------------------------------------------------------------------------------


@given(st.lists(stored_messages(), min_size=1, max_size=4), st.sampled_from([None, MAGIC_CODE_V2]))
@example([SAMPLE], None)
def test_round_trip_both_decoders(msgs: list[MessageExt], magic: int | None) -> None:
    data = b"".join(encode_stored_message(m, magic=magic) for m in msgs)
    expected = [_as_decoded(m, _stored_body(m)) for m in msgs]
    assert decode_messages_fast(data) == expected
    assert decode_messages_construct(data) == expected
    # check_crc passes on what the broker layout holds
    assert decode_messages_fast(data, check_crc=True) == expected
    assert decode_messages_construct(data, check_crc=True) == expected
    # a known broker changes that one attribute only
    for m in expected:
        m.broker_name = "broker-a"
    assert decode_messages_fast(data, broker_name="broker-a") == expected
    assert decode_messages_construct(data, broker_name="broker-a") == expected


@given(stored_messages(compressed=True))
def test_compressed_body_without_decompression(msg: MessageExt) -> None:
    data = encode_stored_message(msg)
    for decode in (decode_messages_fast, decode_messages_construct):
        [raw] = decode(data, decompress=False)
        assert raw.body == zlib.compress(msg.body, 5)
        assert raw.sys_flag & SysFlag.COMPRESSED


@given(stored_messages(compressed=False))
def test_encode_decode_encode_is_stable(msg: MessageExt) -> None:
    data = encode_stored_message(msg)
    [decoded] = decode_messages(data)
    assert encode_stored_message(decoded) == data


@DECODERS
def test_already_compressed_body_is_written_as_is(decode: Decoder) -> None:
    packed = zlib.compress(b"payload" * 100)
    msg = MessageExt("T", packed, sys_flag=0x301)
    data = encode_stored_message(msg, compress=False)
    [decoded] = decode(data)
    assert decoded.body == b"payload" * 100
    assert decoded.sys_flag == 0x300  # COMPRESSED cleared, the type bits stay (as in Java)


@DECODERS
def test_empty_compressed_body_is_left_alone_like_java(decode: Decoder) -> None:
    data = encode_stored_message(MessageExt("T", b"", sys_flag=0x301), compress=False)
    [decoded] = decode(data)
    assert (decoded.body, decoded.sys_flag) == (b"", 0x301)


def test_construct_declaration_builds_the_same_bytes() -> None:
    built = _stored_construct._COMPILED.build(
        {
            "total_size": 121,
            "magic": MAGIC_CODE_V1,
            "body_crc": 0x68B7BE43,
            "queue_id": 3,
            "flag": 16,
            "queue_offset": 42,
            "commit_log_offset": 123456,
            "sys_flag": 0,
            "born_timestamp": 1709640000123,
            "born_ip": bytes([192, 168, 1, 20]),
            "born_port": 53412,
            "store_timestamp": 1709640000127,
            "store_ip": bytes([192, 168, 1, 10]),
            "store_port": 10911,
            "reconsume_times": 1,
            "prepared_transaction_offset": 0,
            "body_length": 1,
            "body": b"a",
            "topic_length": 9,
            "topic": b"TopicTest",
            "properties_length": 20,
            "properties": b"TAGS\x01TagA\x02WAIT\x01true\x02",
        }
    )
    assert built == SAMPLE_BYTES


# --- text ------------------------------------------------------------------------------------------


@DECODERS
def test_non_ascii_topic_and_properties(decode: Decoder) -> None:
    msg = MessageExt("主題-주제-Ünïcödé", b"x", properties={"clé": "välue 日本", "emoji": "🚀"})
    [decoded] = decode(encode_stored_message(msg))
    assert decoded.topic == "主題-주제-Ünïcödé"
    assert decoded.properties == {"clé": "välue 日本", "emoji": "🚀"}


@DECODERS
def test_empty_property_values_are_dropped(decode: Decoder) -> None:
    msg = MessageExt("T", properties={"a": "", "b": "x"})
    assert decode(encode_stored_message(msg))[0].properties == {"b": "x"}
    # written by someone else: an empty value on the wire is dropped on decode too
    raw = _with_properties(b"a\x01\x02b\x01x\x02")
    assert decode(raw)[0].properties == {"b": "x"}


@DECODERS
def test_bad_utf8_becomes_replacement_characters_like_java(decode: Decoder) -> None:
    [msg] = decode(_with_properties(b"k\x01\xff\xfe\x02"))
    assert msg.properties == {"k": "\ufffd\ufffd"}


raw_text = st.binary(max_size=12).map(lambda b: b.replace(b"\x02", b"")) | st.sampled_from(
    [b"", b"\x01", b"\xff\xfe", b"\xe2\x82", "日本".encode()]
)
raw_properties = st.lists(
    st.tuples(st.sampled_from([b"UNIQ_KEY", b"WAIT", b"K", b""]) | raw_text, raw_text), max_size=4
).map(lambda items: b"".join(k + b"\x01" + v + b"\x02" for k, v in items))


@given(st.lists(st.tuples(raw_text, raw_properties), min_size=1, max_size=4), st.booleans(), st.booleans())
def test_uniq_key_first_properties_decode_alike(
    records: list[tuple[bytes, bytes]], shared_tail: bool, terminated: bool
) -> None:
    """Properties that start with a UNIQ_KEY (a producer's), the rest shared by neighbours or not,
    decode as the construct reference decodes them: text, bad UTF-8, empty values and keys, a
    second UNIQ_KEY, a last entry without its separator."""
    data = b""
    for key, tail in records:
        props = b"UNIQ_KEY\x01" + key + b"\x02" + (records[0][1] if shared_tail else tail)
        data += _with_properties(props if terminated else props.rstrip(b"\x02"))
    expected = decode_messages_construct(data)
    assert decode_messages_fast(data) == expected
    assert [m.properties for m in decode_messages_fast(data)] == [m.properties for m in expected]
    assert [list(m.properties) for m in decode_messages_fast(data)] == [list(m.properties) for m in expected]


def _with_properties(props: bytes) -> bytes:
    head = encode_stored_message(MessageExt("T"))[:-2]  # drop the empty properties length
    data = bytearray(head + len(props).to_bytes(2, "big") + props)
    data[0:4] = len(data).to_bytes(4, "big")
    return bytes(data)


def test_encode_rejects_what_the_layout_cannot_carry() -> None:
    with pytest.raises(LocalProtocolError, match="magic v2"):
        encode_stored_message(MessageExt("t" * 128), magic=MAGIC_CODE_V1)
    with pytest.raises(LocalProtocolError, match="32767"):
        encode_stored_message(MessageExt("t" * 32768))
    with pytest.raises(LocalProtocolError, match="magic"):
        encode_stored_message(MessageExt("t"), magic=BLANK_MAGIC_CODE)
    with pytest.raises(LocalProtocolError):
        encode_stored_message(MessageExt("t", properties={"k": "v" * 40000}))
    with pytest.raises(LocalProtocolError):
        encode_stored_message(MessageExt("t", queue_id=2**31))
    with pytest.raises(LocalProtocolError, match="UTF-8"):
        encode_stored_message(MessageExt("\ud800"))
    with pytest.raises(LocalProtocolError, match="compression type"):
        encode_stored_message(MessageExt("t", b"x", sys_flag=0x701))


# --- inner batches ---------------------------------------------------------------------------------

batch_entries = st.lists(
    st.builds(
        lambda body, flag, props: Message("Outer", body, flag=flag, properties=props),
        st.binary(max_size=32),
        int32,
        properties,
    ),
    max_size=4,
)


@given(stored_messages(), batch_entries, st.booleans())
def test_inner_batch_is_unwrapped(outer: MessageExt, entries: list[Message], compressed: bool) -> None:
    outer.body = encode_batch(entries)
    outer.sys_flag |= SysFlag.INNER_BATCH | SysFlag.NEED_UNWRAP
    outer.sys_flag &= ~SysFlag.COMPRESSION_MASK & ~SysFlag.COMPRESSED
    if compressed:
        outer.sys_flag |= 0x301
    data = encode_stored_message(outer)
    expected_flag = outer.sys_flag & ~SysFlag.COMPRESSED
    for decode in (decode_messages_fast, decode_messages_construct):
        got = decode(data + SAMPLE_BYTES)
        assert got[-1] == SAMPLE
        inner = got[:-1]
        assert len(inner) == len(entries)
        for index, (msg, entry) in enumerate(zip(inner, entries, strict=True)):
            assert (msg.topic, msg.body, msg.flag, msg.properties) == (
                outer.topic,
                entry.body,
                entry.flag,
                entry.properties,
            )
            assert msg.queue_offset == outer.queue_offset + index
            assert (msg.queue_id, msg.commit_log_offset, msg.sys_flag) == (
                outer.queue_id,
                outer.commit_log_offset,
                expected_flag,
            )
            assert (msg.born_timestamp, msg.born_host, msg.store_timestamp, msg.store_host) == (
                outer.born_timestamp,
                outer.born_host,
                outer.store_timestamp,
                outer.store_host,
            )
            assert (msg.reconsume_times, msg.prepared_transaction_offset, msg.body_crc) == (0, 0, 0)
        [wrapped] = decode(data, unwrap_inner_batch=False)
        assert wrapped.body == outer.body
        assert wrapped.sys_flag == expected_flag


@DECODERS
def test_only_both_bits_unwrap(decode: Decoder) -> None:
    body = encode_batch([Message("T", b"1"), Message("T", b"2")])
    for bits in (SysFlag.INNER_BATCH, SysFlag.NEED_UNWRAP):
        [msg] = decode(encode_stored_message(MessageExt("T", body, sys_flag=bits)))
        assert msg.body == body


@DECODERS
def test_compressed_inner_batch_is_not_unwrapped_without_decompression(decode: Decoder) -> None:
    body = encode_batch([Message("T", b"1"), Message("T", b"2")])
    data = encode_stored_message(MessageExt("T", body, sys_flag=0x3C1))
    [msg] = decode(data, decompress=False)
    assert msg.body == zlib.compress(body, 5)
    assert len(decode(data)) == 2


@DECODERS
def test_corrupt_inner_batch_is_malformed(decode: Decoder) -> None:
    data = encode_stored_message(MessageExt("T", b"not a batch body", sys_flag=0xC0))
    with pytest.raises(MalformedMessage):
        decode(data)


# --- compression errors ------------------------------------------------------------------------------


@pytest.fixture
def without_optional_codecs(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("lz4", "lz4.frame", "zstandard"):
        monkeypatch.setitem(sys.modules, name, None)


@DECODERS
@pytest.mark.usefixtures("without_optional_codecs")
@pytest.mark.parametrize(("flag", "extra"), [(0x101, "lz4"), (0x201, "zstd")])
def test_lz4_or_zstd_without_the_package(decode: Decoder, flag: int, extra: str) -> None:
    data = encode_stored_message(
        MessageExt("T", b"\x04\x22\x4d\x18 not really", sys_flag=flag), compress=False
    )
    with pytest.raises(CompressionUnavailable, match=extra):
        decode(data)
    [raw] = decode(data, decompress=False)
    assert raw.sys_flag == flag


@DECODERS
@pytest.mark.parametrize(
    ("body", "flag", "why"),
    [
        (b"x", 0x401, "compression type"),
        (b"\x00\x01\x02\x03", 0x301, "corrupt"),
        (zlib.compress(b"abc" * 100)[:-5], 0x301, "ends before"),
        (zlib.compress(b"\x00" * 100_000), 0x301, "beyond"),
    ],
)
def test_bad_compressed_bodies(decode: Decoder, body: bytes, flag: int, why: str) -> None:
    data = encode_stored_message(MessageExt("T", body, sys_flag=flag), compress=False)
    with pytest.raises(MalformedMessage, match=why):
        decode(data, max_decompressed_size=50_000)


@DECODERS
def test_crc_mismatch_only_with_check_crc(decode: Decoder) -> None:
    data = bytearray(SAMPLE_BYTES)
    data[8:12] = b"\x00\x00\x00\x01"
    assert decode(bytes(data))[0].body_crc == 1
    with pytest.raises(MalformedMessage, match="CRC"):
        decode(bytes(data), check_crc=True)


# --- malformed input ---------------------------------------------------------------------------


def _patched(offset: int, value: bytes, base: bytes = SAMPLE_BYTES) -> bytes:
    data = bytearray(base)
    data[offset : offset + len(value)] = value
    return bytes(data)


MALFORMED = {
    "total+1": _patched(0, (122).to_bytes(4, "big")) + b"\x00",
    "total-1": _patched(0, (120).to_bytes(4, "big")),
    "total past the end": _patched(0, (500).to_bytes(4, "big")),
    "total negative": _patched(0, b"\xff\xff\xff\xff"),
    "total zero": _patched(0, b"\x00\x00\x00\x00"),
    "blank magic": _patched(4, BLANK_MAGIC_CODE.to_bytes(4, "big", signed=True)),
    "unknown magic": _patched(4, b"\x00\x00\x00\x00"),
    "magic v2 with v1 topic length": _patched(4, MAGIC_CODE_V2.to_bytes(4, "big", signed=True)),
    "body length negative": _patched(84, b"\xff\xff\xff\xff"),
    "body length huge": _patched(84, b"\x7f\xff\xff\xff"),
    "body length +1": _patched(84, b"\x00\x00\x00\x02"),
    "topic length above 127": _patched(89, b"\x89"),
    "topic length too long": _patched(89, b"\x0a"),
    "properties length negative": _patched(99, b"\xff\xec"),
    "properties length short": _patched(99, b"\x00\x13"),
    "v6 bit without the bytes": _patched(36, b"\x00\x00\x00\x10"),
    "trailing byte": SAMPLE_BYTES + b"\x00",
    "trailing record start": SAMPLE_BYTES + SAMPLE_BYTES[:50],
    "three bytes": b"\x00\x00\x00",
}


@DECODERS
@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_records(decode: Decoder, name: str) -> None:
    with pytest.raises(MalformedMessage) as info:
        decode(MALFORMED[name])
    assert type(info.value) is MalformedMessage


@DECODERS
def test_every_truncation_is_malformed_or_a_record_boundary(decode: Decoder) -> None:
    data = SAMPLE_BYTES + V2_V6_BYTES + SAMPLE_BYTES
    boundaries = {0: 0, len(SAMPLE_BYTES): 1, len(SAMPLE_BYTES) + len(V2_V6_BYTES): 2, len(data): 3}
    for cut in range(len(data) + 1):
        if cut in boundaries:
            assert len(decode(data[:cut])) == boundaries[cut]
        else:
            with pytest.raises(MalformedMessage):
                decode(data[:cut])


def _outcome(decode: Decoder, data: bytes) -> tuple[str, object]:
    try:
        return "ok", decode(data)
    except MalformedMessage as exc:  # CompressionUnavailable included; anything else fails the test
        return "error", type(exc)


@st.composite
def mutated_records(draw: st.DrawFn) -> bytes:
    msgs = draw(st.lists(stored_messages(), min_size=1, max_size=3))
    if draw(st.booleans()):
        msgs[0].body = encode_batch(draw(batch_entries))
        msgs[0].sys_flag = (msgs[0].sys_flag & ~0x7F1) | SysFlag.INNER_BATCH | SysFlag.NEED_UNWRAP
    data = bytearray(b"".join(encode_stored_message(m) for m in msgs))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "int", "truncate", "extend"]))
        if kind == "truncate":
            del data[draw(st.integers(0, len(data))) :]
        elif kind == "extend":
            data += draw(st.binary(min_size=1, max_size=16))
        elif not data:
            continue
        elif kind == "flip":
            data[draw(st.integers(0, len(data) - 1))] ^= 1 << draw(st.integers(0, 7))
        else:
            at = draw(st.integers(0, len(data)))
            value = draw(st.sampled_from([0, 1, -1, 127, 128, 255, 2**15, 2**31 - 1, -(2**31), len(data)]))
            data[at : at + 4] = value.to_bytes(4, "big", signed=True)
    return bytes(data)


@given(mutated_records() | st.binary(max_size=300))
@example(SAMPLE_BYTES)
@example(b"")
def test_decoders_agree_on_anything(data: bytes) -> None:
    """Both paths raise MalformedMessage (same subclass) or give equal messages, never another error."""
    fast = _outcome(decode_messages_fast, data)
    slow = _outcome(decode_messages_construct, data)
    assert fast == slow
    options: dict[str, object]
    for options in (
        {"decompress": False},
        {"unwrap_inner_batch": False},
        {"check_crc": True},
        {"broker_name": "broker-b"},
    ):
        assert _outcome(lambda d, o=options: decode_messages_fast(d, **o), data) == _outcome(
            lambda d, o=options: decode_messages_construct(d, **o), data
        )
