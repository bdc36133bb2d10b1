"""RemotingCommand: exact wire bytes, round trips in both header types, tolerant and strict decoding."""

from __future__ import annotations

import dataclasses
import struct

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rocketmq_py.errors import (
    LocalProtocolError,
    MalformedFrame,
    MalformedHeader,
    ProtocolError,
    UnknownSerializeType,
)
from rocketmq_py.protocol._binary_header import _decode_binary_header_struct, _encode_binary_header_struct
from rocketmq_py.protocol._codes import (
    DEFAULT_VERSION,
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    LanguageCode,
    RequestCode,
    ResponseCode,
    SerializeType,
)
from rocketmq_py.protocol._command import RemotingCommand, decode_command
from rocketmq_py.protocol._command_construct import (
    _decode_binary_header_construct,
    _encode_binary_header_construct,
)

BINARY = SerializeType.ROCKETMQ

ROUTE_REQUEST_HEADER = (
    b'{"code":105,"extFields":{"topic":"T"},"flag":0,"language":"PYTHON","opaque":3,'
    b'"serializeTypeCurrentRPC":"JSON","version":479}'
)
# total length 0x81 = 4 + 125; header-length word: type 0, length 0x7d = 125.
ROUTE_REQUEST_FRAME = b"\x00\x00\x00\x81" + b"\x00\x00\x00\x7d" + ROUTE_REQUEST_HEADER

BINARY_FRAME = bytes.fromhex(
    "0000002a"  # total length 42 = 4 + 35 + 3
    "01000023"  # type 1 (ROCKETMQ), header length 35
    "0069"  # code 105
    "03"  # language PYTHON
    "01df"  # version 479
    "00000003"  # opaque 3
    "00000000"  # flag 0
    "00000002"
    "6869"  # remark "hi"
    "0000000c"  # extFields: 12 bytes
    "0005"
    "746f706963"
    "00000001"
    "54"  # "topic" -> "T"
    "78797a"  # body "xyz"
)


def frame(header: bytes, body: bytes = b"", serialize_type: int = 0) -> bytes:
    """A frame without its total-length word, as decode_command takes it."""
    return struct.pack(">I", serialize_type << 24 | len(header)) + header + body


def binary_header(
    *,
    code: int = 105,
    remark: bytes = b"",
    remark_length: int | None = None,
    ext: bytes = b"",
    ext_length: int | None = None,
) -> bytes:
    """A hand-built binary header whose lengths may lie."""
    return (
        struct.pack(">hBhii", code, 3, 479, 7, 0)
        + struct.pack(">i", len(remark) if remark_length is None else remark_length)
        + remark
        + struct.pack(">i", len(ext) if ext_length is None else ext_length)
        + ext
    )


def entry(key: bytes, value: bytes) -> bytes:
    return struct.pack(">h", len(key)) + key + struct.pack(">i", len(value)) + value


# --- exact bytes -------------------------------------------------------------------------------


def test_json_request_exact_bytes() -> None:
    command = RemotingCommand(RequestCode.GET_ROUTEINFO_BY_TOPIC, opaque=3, ext_fields={"topic": "T"})
    assert len(ROUTE_REQUEST_HEADER) == 125
    assert command.encode() == ROUTE_REQUEST_FRAME
    assert decode_command(ROUTE_REQUEST_FRAME[4:]) == command


def test_json_header_matches_java_example() -> None:
    # The request a Java 5.3.3 client sends for the same route query (protocol.md 1.2).
    java = b'{"code":105,"extFields":{"topic":"T"},"flag":0,"language":"JAVA","opaque":3,"serializeTypeCurrentRPC":"JSON","version":479}'
    command = RemotingCommand(105, opaque=3, ext_fields={"topic": "T"}, language=LanguageCode.JAVA)
    assert command.encode()[8:] == java
    decoded = decode_command(frame(java))
    assert decoded == command
    assert decoded.language is LanguageCode.JAVA


def test_json_response_exact_bytes() -> None:
    request = RemotingCommand(105, opaque=9)
    response = RemotingCommand.response(request, ResponseCode.TOPIC_NOT_EXIST, remark="No topic route info")
    header = (
        b'{"code":17,"flag":1,"language":"PYTHON","opaque":9,"remark":"No topic route info",'
        b'"serializeTypeCurrentRPC":"JSON","version":479}'
    )
    assert response.encode() == struct.pack(">iI", 4 + len(header), len(header)) + header


def test_binary_exact_bytes() -> None:
    command = RemotingCommand(
        105, opaque=3, ext_fields={"topic": "T"}, remark="hi", body=b"xyz", serialize_type=BINARY
    )
    assert command.encode() == BINARY_FRAME
    assert decode_command(BINARY_FRAME[4:]) == command


def test_json_keys_sorted_whatever_the_insertion_order() -> None:
    a = RemotingCommand(1, ext_fields={"b": "1", "a": "2"}).encode()
    b = RemotingCommand(1, ext_fields={"a": "2", "b": "1"}).encode()
    assert a == b
    assert b'"extFields":{"a":"2","b":"1"}' in a


def test_json_writes_utf8_not_escapes() -> None:
    encoded = RemotingCommand(1, remark="é→😀", ext_fields={"k": "ü"}).encode()
    assert "é→😀".encode() in encoded
    assert '"k":"ü"'.encode() in encoded
    assert decode_command(encoded[4:]).remark == "é→😀"


def test_body_follows_the_header_verbatim() -> None:
    body = bytes(range(256))
    encoded = RemotingCommand(10, body=body).encode()
    assert encoded.endswith(body)
    assert struct.unpack(">i", encoded[:4])[0] == len(encoded) - 4


# --- the value type --------------------------------------------------------------------------


def test_request_helper() -> None:
    fields = {"topic": "T"}
    command = RemotingCommand.request(RequestCode.PULL_MESSAGE, fields, b"b")
    fields["topic"] = "changed"
    assert command.ext_fields == {"topic": "T"}
    assert (command.code, command.opaque, command.flag, command.body) == (11, 0, 0, b"b")
    assert (command.language, command.version) == (LanguageCode.PYTHON, DEFAULT_VERSION)
    assert command.serialize_type is SerializeType.JSON
    assert not command.is_response
    assert not command.is_oneway
    oneway = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, oneway=True)
    assert oneway.flag == FLAG_ONEWAY
    assert oneway.is_oneway
    assert not oneway.is_response
    assert oneway.ext_fields == {}


def test_response_helper() -> None:
    request = RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO).with_opaque(42)
    response = RemotingCommand.response(request, ResponseCode.SUCCESS, body=b"{}", ext_fields={"a": "b"})
    assert (response.code, response.opaque, response.flag) == (0, 42, FLAG_RESPONSE)
    assert response.is_response
    assert not response.is_oneway
    assert response.ext_fields == {"a": "b"}
    assert response.body == b"{}"
    assert response.remark is None


@pytest.mark.parametrize("flag", [FLAG_RESPONSE, FLAG_ONEWAY])
def test_response_refuses_responses_and_oneway_requests(flag: int) -> None:
    with pytest.raises(LocalProtocolError):
        RemotingCommand.response(RemotingCommand(40, flag=flag), ResponseCode.SUCCESS)


def test_with_opaque_copies_everything_else() -> None:
    command = RemotingCommand(
        10,
        opaque=1,
        flag=FLAG_ONEWAY,
        ext_fields={"a": "b"},
        remark="r",
        body=b"x",
        language=LanguageCode.GO,
        version=317,
        serialize_type=BINARY,
    )
    copy = command.with_opaque(77)
    assert copy.opaque == 77
    assert command.opaque == 1
    assert dataclasses.replace(copy, opaque=1) == command


def test_command_is_frozen_and_hashable() -> None:
    fields = {"a": "b"}
    command = RemotingCommand(10, ext_fields=fields, body=bytearray(b"x"))  # type: ignore[arg-type]
    fields["a"] = "changed"
    assert command.ext_fields == {"a": "b"}
    assert type(command.body) is bytes
    with pytest.raises(dataclasses.FrozenInstanceError):
        command.code = 11  # type: ignore[misc]
    with pytest.raises(TypeError):
        command.ext_fields["a"] = "c"  # type: ignore[index]
    assert hash(command) == hash(RemotingCommand(10, ext_fields={"a": "b"}, body=b"x"))
    assert "body=<1 bytes>" in repr(command)


def test_only_code_is_positional() -> None:
    with pytest.raises(TypeError):
        RemotingCommand(10, 1)  # type: ignore[call-arg]


# --- round trips -------------------------------------------------------------------------------

INT32 = st.integers(-(2**31), 2**31 - 1)
INT16 = st.integers(-(2**15), 2**15 - 1)
TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
NON_EMPTY_TEXT = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)


@st.composite
def json_commands(draw: st.DrawFn) -> RemotingCommand:
    return RemotingCommand(
        draw(INT32),
        opaque=draw(INT32),
        flag=draw(INT32),
        ext_fields=draw(st.dictionaries(TEXT, TEXT, max_size=5)),
        remark=draw(st.none() | TEXT),
        body=draw(st.binary(max_size=40)),
        language=draw(st.sampled_from(LanguageCode)),
        version=draw(INT32),
    )


@st.composite
def binary_commands(draw: st.DrawFn) -> RemotingCommand:
    # Only non-empty strings survive a binary header: an empty one is null on the wire.
    return RemotingCommand(
        draw(INT16),
        opaque=draw(INT32),
        flag=draw(INT32),
        ext_fields=draw(st.dictionaries(NON_EMPTY_TEXT, NON_EMPTY_TEXT, max_size=5)),
        remark=draw(st.none() | NON_EMPTY_TEXT),
        body=draw(st.binary(max_size=40)),
        language=draw(st.integers(0, 255)),
        version=draw(INT16),
        serialize_type=BINARY,
    )


@given(json_commands() | binary_commands())
def test_round_trip(command: RemotingCommand) -> None:
    encoded = command.encode()
    assert struct.unpack(">i", encoded[:4])[0] == len(encoded) - 4
    decoded = decode_command(encoded[4:])
    assert decoded == command
    assert decoded.serialize_type is command.serialize_type
    assert decoded.encode() == encoded
    assert decode_command(memoryview(encoded)[4:]) == command
    assert decode_command(bytearray(encoded[4:])) == command


def test_binary_header_drops_empty_strings() -> None:
    command = RemotingCommand(10, remark="", ext_fields={"a": "", "": "b", "c": "d"}, serialize_type=BINARY)
    decoded = decode_command(command.encode()[4:])
    assert decoded.remark is None
    assert decoded.ext_fields == {"c": "d"}


def test_binary_header_drops_empty_values_sent_by_a_peer() -> None:
    header = binary_header(ext=entry(b"a", b"") + entry(b"", b"x") + entry(b"k", b"v"))
    assert decode_command(frame(header, serialize_type=1)).ext_fields == {"k": "v"}


def test_json_header_keeps_empty_strings() -> None:
    command = RemotingCommand(10, remark="", ext_fields={"a": ""})
    assert decode_command(command.encode()[4:]) == command


@pytest.mark.parametrize("serialize_type", list(SerializeType))
def test_unknown_codes_decode_as_plain_ints(serialize_type: SerializeType) -> None:
    command = RemotingCommand(
        12345, language=200 if serialize_type is BINARY else 3, serialize_type=serialize_type
    )
    decoded = decode_command(command.encode()[4:])
    assert type(decoded.code) is int
    assert decoded.code == 12345
    if serialize_type is BINARY:
        assert type(decoded.language) is int
        assert decoded.language == 200


def test_known_language_decodes_to_its_member() -> None:
    command = RemotingCommand(10, language=9, serialize_type=BINARY)
    assert decode_command(command.encode()[4:]).language is LanguageCode.GO


# --- encode refusals ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        RemotingCommand(2**31),
        RemotingCommand(10, opaque=-(2**31) - 1),
        RemotingCommand(10, flag=2**40),
        RemotingCommand(10, version=2**31),
        RemotingCommand(True),
        RemotingCommand(1.5),  # type: ignore[arg-type]
        RemotingCommand("10"),  # type: ignore[arg-type]
        RemotingCommand(10, language=99),
        RemotingCommand(10, language=-1),
        RemotingCommand(10, ext_fields={"a": 5}),  # type: ignore[dict-item]
        RemotingCommand(10, ext_fields={5: "a"}),  # type: ignore[dict-item]
        RemotingCommand(10, remark=5),  # type: ignore[arg-type]
        RemotingCommand(10, remark="\ud800"),
        RemotingCommand(10, ext_fields={"a": "\udfff"}),
        RemotingCommand(10, serialize_type=7),  # type: ignore[arg-type]
        RemotingCommand(RequestCode.POP_MESSAGE, serialize_type=BINARY),
        RemotingCommand(-(2**15) - 1, serialize_type=BINARY),
        RemotingCommand(10, version=2**15, serialize_type=BINARY),
        RemotingCommand(10, language=256, serialize_type=BINARY),
        RemotingCommand(10, opaque=2**31, serialize_type=BINARY),
        RemotingCommand(10, flag=False, serialize_type=BINARY),
        RemotingCommand(10, remark="\ud800", serialize_type=BINARY),
        RemotingCommand(10, remark=b"x", serialize_type=BINARY),  # type: ignore[arg-type]
        RemotingCommand(10, ext_fields={"a": 1}, serialize_type=BINARY),  # type: ignore[dict-item]
        RemotingCommand(10, ext_fields={"k" * 40000: "v"}, serialize_type=BINARY),
        RemotingCommand(10, remark="x" * 0x1000000),
    ],
    ids=lambda command: f"code={str(command.code)[:12]}-{command.serialize_type!s}",
)
def test_encode_refuses_what_a_header_cannot_carry(command: RemotingCommand) -> None:
    with pytest.raises(LocalProtocolError):
        command.encode()


def test_binary_encoders_refuse_alike() -> None:
    command = RemotingCommand(RequestCode.POP_MESSAGE, serialize_type=BINARY)
    for encoder in (_encode_binary_header_struct, _encode_binary_header_construct):
        with pytest.raises(LocalProtocolError):
            encoder(command)


# --- JSON decoding: tolerant where Java is, strict about garbage --------------------------------


def decode_json(text: str | bytes) -> RemotingCommand:
    return decode_command(frame(text.encode() if isinstance(text, str) else text))


def test_json_decode_ignores_unknown_keys_and_type_name() -> None:
    command = decode_json(
        '{"code":0,"flag":1,"opaque":5,"language":"JAVA","version":479,"newField":[1,{"x":null}],'
        '"serializeTypeCurrentRPC":"ROCKETMQ"}'
    )
    assert (command.code, command.flag, command.opaque) == (0, 1, 5)
    assert command.serialize_type is SerializeType.JSON  # the type byte decides, not the key


def test_json_decode_defaults_missing_fields() -> None:
    command = decode_json('{"code":17}')
    assert (command.opaque, command.flag, command.version) == (0, 0, 0)
    assert command.language is LanguageCode.OTHER
    assert command.remark is None
    assert command.ext_fields == {}


@pytest.mark.parametrize(
    ("language", "expected"),
    [('"RUST"', LanguageCode.RUST), ('"COBOL"', LanguageCode.OTHER), ("null", LanguageCode.OTHER), ("9", 9)],
)
def test_json_decode_language(language: str, expected: int) -> None:
    assert decode_json(f'{{"code":1,"language":{language}}}').language == expected


def test_json_decode_stringifies_scalar_ext_values() -> None:
    command = decode_json(
        '{"code":1,"extFields":{"s":"x","i":-12,"big":9007199254740993,"t":true,"f":false,'
        '"d":1.5,"n":null},"remark":null}'
    )
    assert command.ext_fields == {
        "s": "x",
        "i": "-12",
        "big": "9007199254740993",
        "t": "true",
        "f": "false",
        "d": "1.5",
    }
    assert command.remark is None


def test_json_decode_null_ext_fields() -> None:
    assert decode_json('{"code":1,"extFields":null}').ext_fields == {}


@pytest.mark.parametrize(
    "header",
    [
        b"",
        b"\xff",
        b'{"code":1,"remark":"\xc3"}',  # invalid UTF-8 inside a string
        b"\xef\xbb\xbf" + b'{"code":1}',  # a BOM is not JSON
        b"{",
        b'{"code":1}}',
        b"[]",
        b'"code"',
        b"null",
        b"{}",
        b'{"code":null}',
        b'{"code":"105"}',
        b'{"code":true}',
        b'{"code":1.0}',
        b'{"code":2147483648}',
        b'{"code":1,"opaque":"3"}',
        b'{"code":1,"flag":[]}',
        b'{"code":1,"version":-2147483649}',
        b'{"code":1,"remark":5}',
        b'{"code":1,"language":{}}',
        b'{"code":1,"language":1000}',
        b'{"code":1,"extFields":[]}',
        b'{"code":1,"extFields":"a=b"}',
        b'{"code":1,"extFields":{"a":{}}}',
        b'{"code":1,"extFields":{"a":["b"]}}',
        b'{"code":1,"extFields":{"a":"b","c":[]}}',
        b"[" * 100_000,
        b'{"code":' + b"9" * 5000 + b"}",
    ],
)
def test_json_decode_refuses_garbage(header: bytes) -> None:
    with pytest.raises(MalformedHeader):
        decode_json(header)


# --- binary decoding -----------------------------------------------------------------------------


def decode_binary(header: bytes) -> RemotingCommand:
    return decode_command(frame(header, b"body", serialize_type=1))


def test_binary_decode_ignores_bytes_after_ext_fields() -> None:
    command = decode_binary(binary_header(ext=entry(b"k", b"v")) + b"future fields")
    assert command.ext_fields == {"k": "v"}
    assert command.body == b"body"


@pytest.mark.parametrize(
    "header",
    [
        b"",
        binary_header()[:20],  # shorter than the fixed part
        binary_header(remark=b"hi", remark_length=3),  # remark longer than the header
        binary_header(remark=b"hi", remark_length=2**31 - 1),
        binary_header(remark=b"hi", remark_length=-1),
        binary_header(remark=b"\xff\xfe"),  # remark not UTF-8
        binary_header(ext=entry(b"k", b"v"), ext_length=12),  # extFields longer than the header
        binary_header(ext=entry(b"k", b"v"), ext_length=-1),
        binary_header(ext=entry(b"k", b"v"), ext_length=5),  # entry cut by the section end
        binary_header(ext=entry(b"k", b"v")[:-1]),  # value truncated
        binary_header(ext=b"\x00\x01k"),  # no room for the value length
        binary_header(ext=b"\x00\x05k\x00\x00\x00\x00"),  # key longer than the section
        binary_header(ext=b"\xff\xffk\x00\x00\x00\x01v"),  # negative key length
        binary_header(ext=b"\x00\x01k\xff\xff\xff\xffv"),  # negative value length
        binary_header(ext=b"\x00\x01k\x00\x00\x00\x09v"),  # value longer than the section
        binary_header(ext=entry(b"\xc3", b"v")),  # key not UTF-8
        binary_header(ext=entry(b"k", b"\xed\xa0\x80")),  # value: an encoded surrogate
        binary_header(ext=entry(b"\xff", b"")),  # not UTF-8 even though the entry is dropped
    ],
)
def test_binary_decode_refuses_lying_headers(header: bytes) -> None:
    with pytest.raises(MalformedHeader):
        decode_binary(header)
    for decoder in (_decode_binary_header_struct, _decode_binary_header_construct):
        with pytest.raises(MalformedHeader):
            decoder(header)


# --- frame-level errors in decode_command ------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"", MalformedFrame),
        (b"\x00\x00\x00", MalformedFrame),
        (b"\x00\x00\x00\x03{}", MalformedFrame),  # header length beyond the frame
        (b"\x00\xff\xff\xff", MalformedFrame),
        (b"\x02\x00\x00\x02{}", UnknownSerializeType),
        (b"\xff\x00\x00\x00", UnknownSerializeType),
    ],
)
def test_decode_command_frame_errors(data: bytes, error: type[ProtocolError]) -> None:
    with pytest.raises(error):
        decode_command(data)


# --- construct reference vs struct codec ---------------------------------------------------------


@given(binary_commands() | json_commands().map(lambda c: dataclasses.replace(c, serialize_type=BINARY)))
def test_struct_and_construct_agree_on_valid_headers(command: RemotingCommand) -> None:
    try:
        built = _encode_binary_header_struct(command)
    except LocalProtocolError:
        with pytest.raises(LocalProtocolError):
            _encode_binary_header_construct(command)
        return
    assert _encode_binary_header_construct(command) == built
    assert _decode_binary_header_struct(built) == _decode_binary_header_construct(built)


def _outcome(decoder: object, data: bytes) -> object:
    assert callable(decoder)
    try:
        return decoder(data)
    except MalformedHeader:
        return MalformedHeader


@st.composite
def mutated_headers(draw: st.DrawFn) -> bytes:
    header = _encode_binary_header_struct(draw(binary_commands()))
    position = draw(st.integers(0, max(0, len(header) - 1)))
    patch = draw(st.binary(min_size=1, max_size=4))
    cut = draw(st.integers(0, len(header) + 4))
    return (header[:position] + patch + header[position + len(patch) :])[:cut]


@given(st.binary(max_size=80) | mutated_headers())
@example(binary_header(ext=entry(b"k", b"v"), ext_length=-1))
@example(binary_header(remark=b"hi", remark_length=3))
def test_struct_and_construct_agree_on_any_bytes(data: bytes) -> None:
    expected = _outcome(_decode_binary_header_construct, data)
    assert _outcome(_decode_binary_header_struct, data) == expected
