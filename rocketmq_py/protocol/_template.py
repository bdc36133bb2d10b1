"""Request frames in the binary (ROCKETMQ) header encoding, built from a precomputed template.

A producer sends SEND_MESSAGE_V2 thousands of times a second with the same code, language,
version and most of the same ``extFields`` (group, default topic, queue count, ...). A
:class:`RequestTemplate` validates and encodes those once; a frame then costs one ``struct`` pack
for the fixed header fields and the UTF-8 entries of the values that change, the ones that recur
(topic, broker, queue id, flags) taken from a small cache. The bytes are exactly what
:meth:`RemotingCommand.encode` writes for the same command with ``SerializeType.ROCKETMQ`` and
the ``extFields`` in the order constant entries first, then the varying ones
(``tests/protocol/test_template.py``).

Binary header layout: see :mod:`._command` (21 fixed bytes, then ``key int16 + UTF-8, value
int32 + UTF-8`` per entry). An empty value is left out, as Java reads it back as null.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Final

from ..errors import LocalProtocolError
from ._codes import DEFAULT_VERSION, FLAG_ONEWAY, LanguageCode, SerializeType
from ._command import RemotingCommand

__all__ = ["RequestTemplate", "encode_entry"]

_FIXED: Final = struct.Struct(">hBhiiii")  # code, language, version, opaque, flag, remark len, ext len
#: Total length and header-length word, then the fixed header fields: everything before extFields.
_HEAD: Final = struct.Struct(">iI" + _FIXED.format[1:])
_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_TYPE_BITS: Final = SerializeType.ROCKETMQ << 24
_I16_MAX: Final = (1 << 15) - 1
_I32_MAX: Final = (1 << 31) - 1
_MAX_HEADER_LENGTH: Final = 0xFFFFFF
#: Recurring entries kept per template; past this the cache starts over (values that never repeat).
CACHE_LIMIT: Final = 4096


def encode_entry(key: str, value: str) -> bytes:
    """One ``extFields`` entry as the binary header carries it (empty bytes for an empty key or value).

    Raises:
        LocalProtocolError: not ``str -> str``, not encodable as UTF-8, or a key over int16.
    """
    if type(key) is not str or type(value) is not str:
        raise LocalProtocolError(f"extFields entry {key!r}: {value!r} is not str -> str")
    try:
        key_bytes = key.encode("utf-8")
        value_bytes = value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise LocalProtocolError(f"extFields entry {key!r} is not encodable as UTF-8: {exc}") from None
    if not key_bytes or not value_bytes:  # null on the wire: Java drops it
        return b""
    if len(key_bytes) > _I16_MAX:
        raise LocalProtocolError(f"extFields key of {len(key_bytes)} bytes does not fit int16")
    return b"".join((_I16.pack(len(key_bytes)), key_bytes, _I32.pack(len(value_bytes)), value_bytes))


class RequestTemplate:
    """Frames of one request code whose ``extFields`` are partly constant.

    Args:
        code: the request code (int16 in this encoding).
        constant: the ``extFields`` entries every frame carries.
        language: the sender's :class:`LanguageCode`.
        version: the sender's ``MQVersion`` ordinal (int16 in this encoding).

    Raises:
        LocalProtocolError: a code, version or entry this encoding cannot carry.
    """

    __slots__ = ("_cache", "_code", "_constant", "_fixed", "_language", "_version", "constant")

    def __init__(
        self,
        code: int,
        constant: Mapping[str, str],
        *,
        language: int = LanguageCode.PYTHON,
        version: int = DEFAULT_VERSION,
    ) -> None:
        if not -(1 << 15) <= code <= _I16_MAX or not -(1 << 15) <= version <= _I16_MAX:
            raise LocalProtocolError(f"code {code} and version {version} must fit int16 in a binary header")
        if not 0 <= language <= 255:
            raise LocalProtocolError(f"language {language} does not fit a byte")
        self._code = code
        self._language = language
        self._version = version
        #: The constant entries, as given.
        self.constant: Mapping[str, str] = dict(constant)
        self._constant = b"".join(encode_entry(key, value) for key, value in self.constant.items())
        self._cache: dict[tuple[str, str], bytes] = {}

    def _varying(self, entries: Iterable[tuple[str, str]]) -> list[bytes]:
        cache = self._cache
        parts = [self._constant]
        for item in entries:
            encoded = cache.get(item)
            if encoded is None:
                encoded = encode_entry(*item)
                if len(cache) >= CACHE_LIMIT:
                    cache.clear()
                cache[item] = encoded
            parts.append(encoded)
        return parts

    def frame(
        self,
        opaque: int,
        recurring: Iterable[tuple[str, str]],
        fresh: Iterable[tuple[str, str]],
        body: bytes,
        *,
        oneway: bool = False,
    ) -> bytes:
        """The whole frame (total-length word included) of one request.

        Args:
            opaque: the request id (int32).
            recurring: varying entries whose values come back often (cached once encoded).
            fresh: varying entries whose values are new every time (a timestamp, properties).
            body: the request body.
            oneway: set the ONEWAY flag.

        Raises:
            LocalProtocolError: an entry, the header or the frame this encoding cannot carry.
        """
        parts = self._varying(recurring)
        parts.extend(encode_entry(key, value) for key, value in fresh)
        return self.frame_from(opaque, b"".join(parts), body, oneway=oneway)

    def encode_entries(self, entries: Iterable[tuple[str, str]]) -> bytes:
        """The constant entries followed by ``entries``: an ``extFields`` section for :meth:`frame_from`."""
        return b"".join([self._constant, *(encode_entry(key, value) for key, value in entries)])

    def frame_from(self, opaque: int, ext: bytes, body: bytes, *, oneway: bool = False) -> bytes:
        """The whole frame of one request whose ``extFields`` section is ``ext``, already encoded.

        ``ext`` is the constant entries (:meth:`encode_entries`) followed by the varying ones, each
        encoded by :func:`encode_entry`.

        Raises:
            LocalProtocolError: the header or the frame this encoding cannot carry.
        """
        header_length = _FIXED.size + len(ext)
        if header_length > _MAX_HEADER_LENGTH:
            raise LocalProtocolError(f"header of {header_length} bytes does not fit 24 bits")
        total = 4 + header_length + len(body)
        if total > _I32_MAX:
            raise LocalProtocolError(f"frame of {total} bytes does not fit an int32 length")
        head = _HEAD.pack(
            total,
            _TYPE_BITS | header_length,
            self._code,
            self._language,
            self._version,
            opaque,
            FLAG_ONEWAY if oneway else 0,
            0,
            len(ext),
        )
        return b"".join((head, ext, body))

    def command(
        self, recurring: Iterable[tuple[str, str]], fresh: Iterable[tuple[str, str]], body: bytes
    ) -> RemotingCommand:
        """The same request as a :class:`RemotingCommand` (for connections with RPC hooks)."""
        ext_fields = {**self.constant, **dict(recurring), **dict(fresh)}
        return RemotingCommand.request(
            self._code,
            ext_fields,
            body,
            language=self._language,
            version=self._version,
            serialize_type=SerializeType.ROCKETMQ,
        )
