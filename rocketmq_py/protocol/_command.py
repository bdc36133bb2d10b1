"""The RemotingCommand value type and its two header encodings.

A frame on the wire (all integers big-endian)::

    +--------------+--------+--------------+---------------+-----------------+
    | total length |  type  | header len   | header        | body            |
    | int32        | 1 byte | 3 bytes      | hlen bytes    | the rest        |
    +--------------+--------+--------------+---------------+-----------------+
                   \\___ header-length word _/
    total length = 4 + hlen + len(body)   (it does not count itself)

:meth:`RemotingCommand.encode` writes the whole frame. :func:`decode_command` reads one frame
*without* the total-length word (the splitter in ``_frame`` has already consumed it), so it
starts at the header-length word. Every frame is decoded by the type it declares: a server
answers in its own configured type, whatever type the request used.

JSON header (type 0): one compact UTF-8 JSON object with the keys in alphabetical order, as
Java's fastjson writes them; ``extFields`` is left out when empty and ``remark`` when None::

    {"code":105,"extFields":{"topic":"T"},"flag":0,"language":"PYTHON","opaque":3,
     "serializeTypeCurrentRPC":"JSON","version":479}

``language`` is the :class:`LanguageCode` member *name*. On decode unknown keys are ignored,
an unknown language name becomes ``OTHER``, and numbers/booleans among the ``extFields``
values are turned into the strings Java would send (``true`` -> ``"true"``).

Binary header (type 1, "ROCKETMQ"), 21 fixed bytes then the strings::

    code int16 | language uint8 | version int16 | opaque int32 | flag int32
    | remark length int32 | remark UTF-8
    | extFields length int32 | ( key length int16 | key UTF-8 | value length int32 | value UTF-8 )*

A zero length means null, so an empty remark decodes as None and an entry whose key or value is
empty is dropped (as Java does); the encoder leaves such entries out. Bytes after the
``extFields`` section are ignored, as Java ignores them. The layout is declared once with
``construct`` (:data:`_C_HEADER`); a hand-written ``struct`` codec is the one in use because it
is several times faster (``benchmarks/header_codec.py``), and a property test keeps the two in
agreement.

Encoding raises :class:`LocalProtocolError` for what a header cannot carry (a non-string
``extFields`` value, a code beyond int16 in a binary header...). Decoding raises
:class:`MalformedFrame`, :class:`UnknownSerializeType` or :class:`MalformedHeader`, never a
bare ``struct.error``/``UnicodeDecodeError``.
"""

from __future__ import annotations

import dataclasses
import json
import json.scanner
import struct
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from types import MappingProxyType, ModuleType
from typing import Any, Final, TypeAlias, cast

import construct as cs

from ..errors import LocalProtocolError, MalformedFrame, MalformedHeader, UnknownSerializeType
from ._codes import DEFAULT_VERSION, FLAG_ONEWAY, FLAG_RESPONSE, LanguageCode, SerializeType
from ._frozen import slot_builder

__all__ = ["RemotingCommand", "decode_command"]

_I16_MIN: Final = -(1 << 15)
_I16_MAX: Final = (1 << 15) - 1
_I32_MIN: Final = -(1 << 31)
_I32_MAX: Final = (1 << 31) - 1
#: The header length has 24 bits in the header-length word.
_MAX_HEADER_LENGTH: Final = 0xFFFFFF

_EMPTY_FIELDS: Final[Mapping[str, str]] = MappingProxyType({})
_LANGUAGE_NAMES: Final = {member.value: member.name for member in LanguageCode}
_LANGUAGE_BY_NAME: Final = {member.name: member for member in LanguageCode}
_LANGUAGE_BY_VALUE: Final = {member.value: member for member in LanguageCode}
_SERIALIZE_TYPES: Final = {member.value: member for member in SerializeType}

_PREFIX: Final = struct.Struct(">iI")  # total length, header-length word
_WORD: Final = struct.Struct(">I")
_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
#: code, language, version, opaque, flag, remark length.
_BIN_FIXED: Final = struct.Struct(">hBhiii")
_BIN_FIXED_SIZE: Final = 17
#: The fixed part plus the extFields length word.
_BIN_MIN_SIZE: Final = 21

_JSON_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))
_JSON_DECODER: Final = json.JSONDecoder()
# The optional "orjson" extra: a faster reader of JSON headers (see _json_object).
_orjson: ModuleType | None
try:
    import orjson

    _orjson = orjson
except ImportError:  # pragma: no cover - the pure path is the default install
    _orjson = None
# The C scanner behind JSONDecoder.decode (typeshed types its argument as a scanner, not a decoder).
_JSON_SCAN: Final[Callable[[str, int], tuple[object, int]]] = json.scanner.make_scanner(
    cast(Any, _JSON_DECODER)
)
_JSON_WHITESPACE: Final = " \t\n\r"

#: A decoded header: code, language, version, opaque, flag, remark, extFields.
_Fields: TypeAlias = tuple[int, int, int, int, int, str | None, dict[str, str]]


def _empty_fields() -> Mapping[str, str]:
    return _EMPTY_FIELDS


@dataclass(frozen=True, slots=True, repr=False)
class RemotingCommand:
    """One request or response of the remoting protocol.

    Only ``code`` may be positional. ``ext_fields`` is copied into a read-only mapping and
    ``body`` into ``bytes`` when needed, so a command never changes after construction. Field
    values are checked when the command is encoded, not when it is built.

    Attributes:
        code: a request code, or a response code on responses (any int; see ``_codes``).
        opaque: the request id; a response carries its request's. The transport assigns it
            (:meth:`with_opaque`).
        flag: bit set of ``FLAG_RESPONSE`` and ``FLAG_ONEWAY``.
        ext_fields: the custom header, string to string.
        remark: free text, usually the error explanation on responses.
        body: the payload.
        language: the sender's :class:`LanguageCode`.
        version: the sender's version ordinal.
        serialize_type: how the header is (to be) encoded.
    """

    code: int
    _: KW_ONLY
    opaque: int = 0
    flag: int = 0
    ext_fields: Mapping[str, str] = field(default_factory=_empty_fields, hash=False)
    remark: str | None = None
    body: bytes = b""
    language: int = LanguageCode.PYTHON
    version: int = DEFAULT_VERSION
    serialize_type: SerializeType = SerializeType.JSON

    def __post_init__(self) -> None:
        if type(self.ext_fields) is not MappingProxyType:
            object.__setattr__(self, "ext_fields", MappingProxyType(dict(self.ext_fields)))
        if type(self.body) is not bytes:
            object.__setattr__(self, "body", bytes(self.body))

    def __repr__(self) -> str:
        return (
            f"RemotingCommand(code={self.code!r}, opaque={self.opaque!r}, flag={self.flag!r}, "
            f"ext_fields={dict(self.ext_fields)!r}, remark={self.remark!r}, "
            f"body=<{len(self.body)} bytes>, language={self.language!r}, version={self.version!r}, "
            f"serialize_type={self.serialize_type!r})"
        )

    @property
    def is_response(self) -> bool:
        """Whether the RESPONSE flag bit is set."""
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        """Whether the ONEWAY flag bit is set (the request expects no response)."""
        return bool(self.flag & FLAG_ONEWAY)

    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: Mapping[str, str] | None = None,
        body: bytes = b"",
        *,
        oneway: bool = False,
        remark: str | None = None,
        language: int = LanguageCode.PYTHON,
        version: int = DEFAULT_VERSION,
        serialize_type: SerializeType = SerializeType.JSON,
    ) -> RemotingCommand:
        """Build a request with opaque 0 (the transport assigns the real one).

        Args:
            code: the request code.
            ext_fields: the custom header (copied).
            body: the payload.
            oneway: set the ONEWAY flag: the server will not answer.
            remark: as the attribute.
            language: as the attribute.
            version: as the attribute.
            serialize_type: as the attribute.
        """
        return cls(
            code,
            flag=FLAG_ONEWAY if oneway else 0,
            ext_fields=_EMPTY_FIELDS if ext_fields is None else ext_fields,
            remark=remark,
            body=body,
            language=language,
            version=version,
            serialize_type=serialize_type,
        )

    @classmethod
    def response(
        cls,
        to: RemotingCommand,
        code: int,
        remark: str | None = None,
        ext_fields: Mapping[str, str] | None = None,
        body: bytes = b"",
        *,
        serialize_type: SerializeType = SerializeType.JSON,
    ) -> RemotingCommand:
        """Build the response to ``to``: same opaque, the RESPONSE flag set.

        Args:
            to: the request being answered.
            code: the response code.
            remark: as the attribute.
            ext_fields: as the attribute.
            body: as the attribute.
            serialize_type: as the attribute.

        Raises:
            LocalProtocolError: ``to`` is a response, or a oneway request (which must not be
                answered).
        """
        if to.flag & FLAG_RESPONSE:
            raise LocalProtocolError(f"cannot answer a response (opaque {to.opaque})")
        if to.flag & FLAG_ONEWAY:
            raise LocalProtocolError(f"a oneway request (code {to.code}, opaque {to.opaque}) gets no answer")
        return cls(
            code,
            opaque=to.opaque,
            flag=FLAG_RESPONSE,
            ext_fields=_EMPTY_FIELDS if ext_fields is None else ext_fields,
            remark=remark,
            body=body,
            serialize_type=serialize_type,
        )

    def with_opaque(self, opaque: int) -> RemotingCommand:
        """A copy of this command with another ``opaque``."""
        if type(self) is not RemotingCommand:
            return dataclasses.replace(self, opaque=opaque)
        return _built(
            self.code,
            opaque,
            self.flag,
            self.ext_fields,  # read-only since __post_init__
            self.remark,
            self.body,
            self.language,
            self.version,
            self.serialize_type,
        )

    def encode(self) -> bytes:
        """The whole wire frame, total-length word included.

        Raises:
            LocalProtocolError: a field the chosen header type cannot carry (wrong type, integer
                out of range, lone surrogate, unnamed language in JSON, over-long header or frame).
        """
        if self.serialize_type == SerializeType.JSON:
            header = _encode_json_header(self)
        elif self.serialize_type == SerializeType.ROCKETMQ:
            header = _encode_binary_header(self)
        else:
            raise LocalProtocolError(f"unknown serialize type {self.serialize_type!r}")
        header_length = len(header)
        if header_length > _MAX_HEADER_LENGTH:
            raise LocalProtocolError(f"header of {header_length} bytes does not fit 24 bits")
        total = 4 + header_length + len(self.body)
        if total > _I32_MAX:
            raise LocalProtocolError(f"frame of {total} bytes does not fit an int32 length")
        prefix = _PREFIX.pack(total, (self.serialize_type << 24) | header_length)
        return b"".join((prefix, header, self.body))


def decode_command(frame: bytes | bytearray | memoryview) -> RemotingCommand:
    """Decode one frame that starts at the header-length word (no total-length prefix).

    Raises:
        MalformedFrame: shorter than the header-length word, or a header length beyond the frame.
        UnknownSerializeType: a type byte other than 0 (JSON) or 1 (ROCKETMQ).
        MalformedHeader: a header that does not parse.
    """
    return _decode_frame(frame, 0, len(frame))


def _decode_frame(buf: bytes | bytearray | memoryview, start: int, end: int) -> RemotingCommand:
    """Decode the frame in ``buf[start:end]`` without copying anything but header and body."""
    if end - start < 4:
        raise MalformedFrame(f"frame of {end - start} bytes has no header-length word")
    (word,) = _WORD.unpack_from(buf, start)
    serialize_type = _SERIALIZE_TYPES.get(word >> 24)
    if serialize_type is None:
        raise UnknownSerializeType(f"serialize type {word >> 24} is neither JSON (0) nor ROCKETMQ (1)")
    header_end = start + 4 + (word & 0xFFFFFF)
    if header_end > end:
        raise MalformedFrame(
            f"header length {word & 0xFFFFFF} exceeds the {end - start - 4} bytes left in the frame"
        )
    header = bytes(buf[start + 4 : header_end])
    if serialize_type is SerializeType.JSON:
        code, language, version, opaque, flag, remark, ext = _decode_json_header(header)
    else:
        code, language, version, opaque, flag, remark, ext = _decode_binary_header(header)
    return _built(
        code,
        opaque,
        flag,
        MappingProxyType(ext),
        remark,
        bytes(buf[header_end:end]),
        language,
        version,
        serialize_type,
    )


#: A command from values already in their final form (a read-only mapping, ``bytes``), positional
#: in field order: what the codec builds, one per frame received and per request sent.
_built: Final = slot_builder(RemotingCommand)


# --- shared checks -------------------------------------------------------------------------------


def _int_in(value: object, low: int, high: int, what: str) -> int:
    """``value`` as a plain int in ``[low, high]`` (bools refused), else LocalProtocolError."""
    if type(value) is not int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise LocalProtocolError(f"{what} must be an int, not {type(value).__name__}")
        value = int(value)
    if not low <= value <= high:
        raise LocalProtocolError(f"{what} {value} is outside [{low}, {high}]")
    return value


def _utf8(value: object, what: str) -> bytes:
    if not isinstance(value, str):
        raise LocalProtocolError(f"{what} must be a str, not {type(value).__name__}")
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise LocalProtocolError(f"{what} is not encodable as UTF-8: {exc}") from exc


# --- JSON header ---------------------------------------------------------------------------------


def _encode_json_header(cmd: RemotingCommand) -> bytes:
    """Keys in alphabetical order, as fastjson writes them; compact; UTF-8.

    Built from pieces (the fixed fields formatted, ``extFields`` and ``remark`` through the JSON
    encoder): the same bytes as encoding the whole object with ``sort_keys``, at half the cost.
    """
    language = _int_in(cmd.language, 0, 255, "language")
    name = _LANGUAGE_NAMES.get(language)
    if name is None:
        raise LocalProtocolError(f"language {language} has no LanguageCode name for a JSON header")
    code = _int_in(cmd.code, _I32_MIN, _I32_MAX, "code")
    flag = _int_in(cmd.flag, _I32_MIN, _I32_MAX, "flag")
    opaque = _int_in(cmd.opaque, _I32_MIN, _I32_MAX, "opaque")
    version = _int_in(cmd.version, _I32_MIN, _I32_MAX, "version")
    ext_part = ""
    if cmd.ext_fields:
        ext = cmd.ext_fields
        for key, value in ext.items():
            if type(key) is not str or type(value) is not str:
                raise LocalProtocolError(f"extFields entry {key!r}: {value!r} is not str -> str")
        ext_part = f'"extFields":{_JSON_ENCODER.encode(dict(ext))},'
    remark_part = ""
    if cmd.remark is not None:
        if not isinstance(cmd.remark, str):
            raise LocalProtocolError(f"remark must be a str, not {type(cmd.remark).__name__}")
        remark_part = f',"remark":{_JSON_ENCODER.encode(cmd.remark)}'
    text = (
        f'{{"code":{code},{ext_part}"flag":{flag},"language":"{name}","opaque":{opaque}'
        f'{remark_part},"serializeTypeCurrentRPC":"JSON","version":{version}}}'
    )
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise LocalProtocolError(f"header text is not encodable as UTF-8: {exc}") from exc


def _json_int(obj: dict[str, object], key: str, required: bool) -> int:
    value = obj.get(key)
    if value is None:
        if required:
            raise MalformedHeader(f"JSON header has no {key!r}")
        return 0  # what Java's int fields keep when the key is absent
    if type(value) is not int or not _I32_MIN <= value <= _I32_MAX:
        raise MalformedHeader(f"JSON header {key!r} is {value!r}, not an int32")
    return value


def _java_string(key: str, value: object) -> str:
    """An extFields value as the string Java would have sent."""
    if type(value) is str:
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int or type(value) is float:
        return str(value)
    raise MalformedHeader(f"JSON header extFields[{key!r}] is {type(value).__name__}, not a string")


def _json_object(header: bytes, *, pure: bool = False) -> object:
    """The JSON value of ``header``, as ``json.loads`` reads it (errors as :class:`MalformedHeader`).

    With the ``orjson`` extra installed, orjson reads it (about twice as fast on reply headers);
    what orjson refuses (NaN, lone surrogates, very deep nesting) goes the standard library's way,
    so the decoded header or the error is the same either way
    (``tests/protocol/test_json_header_paths.py``). Without it, a header that starts with ``{`` goes
    straight to the C scanner: ``JSONDecoder.decode`` would only add a whitespace match on each
    side, at a third of the cost of a reply header. ``pure``: the standard library's reading only.

    orjson reads integers past 64 bits as floats; that matters only where a number becomes text
    (``extFields`` values), and :func:`_decode_json_header` reads those the standard way.
    """
    if _orjson is not None and not pure:
        try:
            return _orjson.loads(header)
        except _orjson.JSONDecodeError:
            pass  # the standard library's reading, or its error
    try:
        text = header.decode("utf-8")
        if text[:1] == "{":
            obj, end = _JSON_SCAN(text, 0)
            if end == len(text) or not text[end:].strip(_JSON_WHITESPACE):
                return obj
        return _JSON_DECODER.decode(text)  # the decoder's own error for what is left
    except StopIteration as exc:  # the scanner's "no value here"
        raise MalformedHeader(f"JSON header does not parse at {exc.value}") from None
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError included
        raise MalformedHeader(f"JSON header does not parse: {exc}") from exc


def _decode_json_header(header: bytes) -> _Fields:
    obj = _json_object(header)
    if type(obj) is not dict:
        raise MalformedHeader(f"JSON header is a {type(obj).__name__}, not an object")
    # The common case inline (int32 values present); anything else goes through _json_int.
    get = obj.get
    code = get("code")
    if type(code) is not int or not _I32_MIN <= code <= _I32_MAX:
        code = _json_int(obj, "code", True)
    opaque = get("opaque", 0)
    if type(opaque) is not int or not _I32_MIN <= opaque <= _I32_MAX:
        opaque = _json_int(obj, "opaque", False)
    flag = get("flag", 0)
    if type(flag) is not int or not _I32_MIN <= flag <= _I32_MAX:
        flag = _json_int(obj, "flag", False)
    version = get("version", 0)
    if type(version) is not int or not _I32_MIN <= version <= _I32_MAX:
        version = _json_int(obj, "version", False)

    language_value = obj.get("language")
    language: int
    if type(language_value) is str:
        language = _LANGUAGE_BY_NAME.get(language_value, LanguageCode.OTHER)
    elif language_value is None:
        language = LanguageCode.OTHER
    elif type(language_value) is int and 0 <= language_value <= 255:
        language = _LANGUAGE_BY_VALUE.get(language_value, language_value)
    else:
        raise MalformedHeader(f"JSON header language is {language_value!r}")

    remark = obj.get("remark")
    if remark is not None and type(remark) is not str:
        raise MalformedHeader(f"JSON header remark is a {type(remark).__name__}, not a string")

    raw_ext = obj.get("extFields")
    ext: dict[str, str]
    if raw_ext is None:
        ext = {}
    elif type(raw_ext) is dict:
        ext = raw_ext
        for value in raw_ext.values():
            if type(value) is not str:
                if _orjson is not None:  # orjson reads integers past 64 bits as floats: not Java's text
                    pure = _json_object(header, pure=True)  # the same document, read the standard way
                    raw_ext = pure.get("extFields") if type(pure) is dict else None
                    if type(raw_ext) is not dict:
                        raise MalformedHeader("JSON header reads differently with orjson")
                ext = {k: _java_string(k, v) for k, v in raw_ext.items() if v is not None}
                break
    else:
        raise MalformedHeader(f"JSON header extFields is a {type(raw_ext).__name__}, not an object")
    return code, language, version, opaque, flag, remark, ext


# --- binary header: struct codec (in use) --------------------------------------------------------


def _binary_strings(cmd: RemotingCommand) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """The remark and the non-empty extFields entries, UTF-8 encoded."""
    remark = b"" if cmd.remark is None else _utf8(cmd.remark, "remark")
    entries = []
    for key, value in cmd.ext_fields.items():
        key_bytes = _utf8(key, "extFields key")
        value_bytes = _utf8(value, f"extFields[{key!r}]")
        if key_bytes and value_bytes:  # an empty string is null on the wire: Java drops it
            if len(key_bytes) > _I16_MAX:
                raise LocalProtocolError(f"extFields key of {len(key_bytes)} bytes does not fit int16")
            entries.append((key_bytes, value_bytes))
    return remark, entries


def _binary_ints(cmd: RemotingCommand) -> tuple[int, int, int, int, int]:
    return (
        _int_in(cmd.code, _I16_MIN, _I16_MAX, "code (binary header: int16)"),
        _int_in(cmd.language, 0, 255, "language"),
        _int_in(cmd.version, _I16_MIN, _I16_MAX, "version (binary header: int16)"),
        _int_in(cmd.opaque, _I32_MIN, _I32_MAX, "opaque"),
        _int_in(cmd.flag, _I32_MIN, _I32_MAX, "flag"),
    )


def _encode_binary_header_struct(cmd: RemotingCommand) -> bytes:
    code, language, version, opaque, flag = _binary_ints(cmd)
    remark, entries = _binary_strings(cmd)
    parts = [_BIN_FIXED.pack(code, language, version, opaque, flag, len(remark)), remark, b""]
    ext_length = 0
    for key, value in entries:
        parts += (_I16.pack(len(key)), key, _I32.pack(len(value)), value)
        ext_length += 6 + len(key) + len(value)
    parts[2] = _I32.pack(ext_length)  # cannot overflow: the header is capped at 24 bits later
    return b"".join(parts)


def _decode_binary_header_struct(header: bytes) -> _Fields:
    size = len(header)
    if size < _BIN_MIN_SIZE:
        raise MalformedHeader(f"binary header of {size} bytes is shorter than its {_BIN_MIN_SIZE} fixed")
    code, language, version, opaque, flag, remark_length = _BIN_FIXED.unpack_from(header)
    if not 0 <= remark_length <= size - _BIN_MIN_SIZE:
        raise MalformedHeader(f"binary header remark length {remark_length} does not fit")
    pos = _BIN_FIXED_SIZE + remark_length
    try:
        remark = header[_BIN_FIXED_SIZE:pos].decode("utf-8") or None
        (ext_length,) = _I32.unpack_from(header, pos)
        pos += 4
        end = pos + ext_length
        if not 0 <= ext_length <= size - pos:
            raise MalformedHeader(f"binary header extFields length {ext_length} does not fit")
        ext: dict[str, str] = {}
        while pos < end:
            if end - pos < 6:
                raise MalformedHeader("binary header extFields entry is truncated")
            (key_length,) = _I16.unpack_from(header, pos)
            pos += 2
            if not 0 <= key_length <= end - pos - 4:
                raise MalformedHeader(f"binary header extFields key length {key_length} does not fit")
            key = header[pos : pos + key_length].decode("utf-8")
            pos += key_length
            (value_length,) = _I32.unpack_from(header, pos)
            pos += 4
            if not 0 <= value_length <= end - pos:
                raise MalformedHeader(f"binary header extFields value length {value_length} does not fit")
            value = header[pos : pos + value_length].decode("utf-8")
            pos += value_length
            if key and value:
                ext[key] = value
    except UnicodeDecodeError as exc:
        raise MalformedHeader(f"binary header string is not UTF-8: {exc}") from exc
    return code, _LANGUAGE_BY_VALUE.get(language, language), version, opaque, flag, remark, ext


# --- binary header: the same layout in construct (reference, kept in step by a property test) ---

_C_ENTRY: Final = cs.Struct(
    "key_length" / cs.Int16sb,
    cs.Check(cs.this.key_length >= 0),
    "key" / cs.Bytes(cs.this.key_length),
    "value_length" / cs.Int32sb,
    cs.Check(cs.this.value_length >= 0),
    "value" / cs.Bytes(cs.this.value_length),
)
# Compiled construct reads short instead of failing, so every length is checked explicitly.
_C_HEADER: Final = cs.Struct(
    "code" / cs.Int16sb,
    "language" / cs.Int8ub,
    "version" / cs.Int16sb,
    "opaque" / cs.Int32sb,
    "flag" / cs.Int32sb,
    "remark_length" / cs.Int32sb,
    cs.Check(cs.this.remark_length >= 0),
    "remark" / cs.Bytes(cs.this.remark_length),
    cs.Check(cs.len_(cs.this.remark) == cs.this.remark_length),
    "ext_length" / cs.Int32sb,
    cs.Check(cs.this.ext_length >= 0),
    "ext" / cs.Bytes(cs.this.ext_length),
    cs.Check(cs.len_(cs.this.ext) == cs.this.ext_length),
).compile()
_C_EXT: Final = cs.Struct("entries" / cs.GreedyRange(_C_ENTRY), cs.Terminated).compile()


def _encode_binary_header_construct(cmd: RemotingCommand) -> bytes:
    code, language, version, opaque, flag = _binary_ints(cmd)
    remark, entries = _binary_strings(cmd)
    try:
        ext = _C_EXT.build(
            {
                "entries": [
                    {"key_length": len(k), "key": k, "value_length": len(v), "value": v} for k, v in entries
                ]
            }
        )
        built = _C_HEADER.build(
            {
                "code": code,
                "language": language,
                "version": version,
                "opaque": opaque,
                "flag": flag,
                "remark_length": len(remark),
                "remark": remark,
                "ext_length": len(ext),
                "ext": ext,
            }
        )
    except (cs.ConstructError, struct.error) as exc:
        raise LocalProtocolError(f"binary header cannot be built: {exc}") from exc
    return bytes(built)


def _decode_binary_header_construct(header: bytes) -> _Fields:
    try:
        parsed = _C_HEADER.parse(header)
        entries = _C_EXT.parse(parsed.ext).entries
        remark = parsed.remark.decode("utf-8") or None
        ext: dict[str, str] = {}
        for entry in entries:
            key = entry.key.decode("utf-8")
            value = entry.value.decode("utf-8")
            if key and value:
                ext[key] = value
    except (cs.ConstructError, struct.error, UnicodeDecodeError) as exc:
        raise MalformedHeader(f"binary header does not parse: {exc}") from exc
    language = int(parsed.language)
    return (
        int(parsed.code),
        _LANGUAGE_BY_VALUE.get(language, language),
        int(parsed.version),
        int(parsed.opaque),
        int(parsed.flag),
        remark,
        ext,
    )


# The struct codec measured several times faster than compiled construct, both ways
# (benchmarks/header_codec.py); construct stays as the declarative reference.
_decode_binary_header = _decode_binary_header_struct
_encode_binary_header = _encode_binary_header_struct
