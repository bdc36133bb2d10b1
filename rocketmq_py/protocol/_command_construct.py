"""The binary header's layout declared with ``construct``: the reference of the wire format.

The same layout as ``_binary_header`` (serialize type 1, "ROCKETMQ")::

    code int16 | language uint8 | version int16 | opaque int32 | flag int32
    | remark length int32 | remark UTF-8
    | extFields length int32 | ( key length int16 | key UTF-8 | value length int32 | value UTF-8 )*

declared once (:data:`_C_HEADER`, :data:`_C_EXT`). The client uses the hand-written ``struct``
codec of ``_binary_header``, several times faster (``benchmarks/header_codec.py``); a property
test (``tests/protocol/test_command.py``) keeps the two in agreement. Nothing in the client
imports this module (the tests and the benchmark do).
"""

from __future__ import annotations

import struct
from typing import Final

import construct as cs

from ..errors import LocalProtocolError, MalformedHeader
from ._binary_header import _binary_ints, _binary_strings
from ._header_base import _LANGUAGE_BY_VALUE, HeaderFields, _Fields

__all__: list[str] = []

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


def _encode_binary_header_construct(cmd: HeaderFields) -> bytes:
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
