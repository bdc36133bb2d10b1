"""The binary header (serialize type 1, "ROCKETMQ") of a remoting command: the ``struct`` codec in use.


    code int16 | language uint8 | version int16 | opaque int32 | flag int32
    | remark length int32 | remark UTF-8
    | extFields length int32 | ( key length int16 | key UTF-8 | value length int32 | value UTF-8 )*

A zero length means null, so an empty remark decodes as None and an entry whose key or value is
empty is dropped (as Java does); the encoder leaves such entries out. Bytes after the
``extFields`` section are ignored, as Java ignores them. The layout is declared once with
``construct`` (:data:`_C_HEADER`); a hand-written ``struct`` codec is the one in use because it
is several times faster (``benchmarks/header_codec.py``), and a property test keeps the two in
agreement.

The construct reference of the same layout is in ``_command_construct``.

Encoding raises :class:`LocalProtocolError` for what the header cannot carry (a code beyond
int16, a non-string ``extFields`` value...); decoding raises :class:`MalformedHeader`, never a
bare ``struct.error`` or ``UnicodeDecodeError``.
"""

from __future__ import annotations

import struct
from typing import Final

from ..errors import LocalProtocolError, MalformedHeader
from ._header_base import (
    _I16_MAX,
    _I16_MIN,
    _I32_MAX,
    _I32_MIN,
    _LANGUAGE_BY_VALUE,
    HeaderFields,
    _Fields,
    _int_in,
    _utf8,
)

__all__: list[str] = []

_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
#: code, language, version, opaque, flag, remark length.
_BIN_FIXED: Final = struct.Struct(">hBhiii")
_BIN_FIXED_SIZE: Final = 17
#: The fixed part plus the extFields length word.
_BIN_MIN_SIZE: Final = 21


def _binary_strings(cmd: HeaderFields) -> tuple[bytes, list[tuple[bytes, bytes]]]:
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


def _binary_ints(cmd: HeaderFields) -> tuple[int, int, int, int, int]:
    return (
        _int_in(cmd.code, _I16_MIN, _I16_MAX, "code (binary header: int16)"),
        _int_in(cmd.language, 0, 255, "language"),
        _int_in(cmd.version, _I16_MIN, _I16_MAX, "version (binary header: int16)"),
        _int_in(cmd.opaque, _I32_MIN, _I32_MAX, "opaque"),
        _int_in(cmd.flag, _I32_MIN, _I32_MAX, "flag"),
    )


def _encode_binary_header_struct(cmd: HeaderFields) -> bytes:
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


# The struct codec measured several times faster than compiled construct, both ways
# (benchmarks/header_codec.py); construct stays as the declarative reference.
_decode_binary_header = _decode_binary_header_struct
_encode_binary_header = _encode_binary_header_struct
