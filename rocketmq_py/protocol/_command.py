"""The RemotingCommand value type, and the frame around its header and body.

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

The header is in one of two encodings, each in its own module: JSON (type 0, ``_json_header``)
and binary (type 1, "ROCKETMQ", ``_binary_header``; its ``construct`` reference in
``_command_construct``).

Encoding raises :class:`LocalProtocolError` for what a header cannot carry (a non-string
``extFields`` value, a code beyond int16 in a binary header...). Decoding raises
:class:`MalformedFrame`, :class:`UnknownSerializeType` or :class:`MalformedHeader`, never a
bare ``struct.error``/``UnicodeDecodeError``.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from types import MappingProxyType
from typing import Final

from ..errors import LocalProtocolError, MalformedFrame, UnknownSerializeType
from ._binary_header import _decode_binary_header, _encode_binary_header
from ._codes import DEFAULT_VERSION, FLAG_ONEWAY, FLAG_RESPONSE, LanguageCode, SerializeType
from ._frozen import slot_builder
from ._header_base import _I32_MAX
from ._json_header import _decode_json_header, _encode_json_header

__all__ = ["RemotingCommand", "decode_command"]

#: The header length has 24 bits in the header-length word.
_MAX_HEADER_LENGTH: Final = 0xFFFFFF

_EMPTY_FIELDS: Final[Mapping[str, str]] = MappingProxyType({})
_SERIALIZE_TYPES: Final = {member.value: member for member in SerializeType}

_PREFIX: Final = struct.Struct(">iI")  # total length, header-length word
_WORD: Final = struct.Struct(">I")


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
