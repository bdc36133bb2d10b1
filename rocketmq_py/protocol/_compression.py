"""Message-body compression: which codec a ``sys_flag`` names, and bounded (de)compression.

The stored/sent ``sys_flag`` says whether a body is compressed and with what (protocol.md §4.4, §5.3)::

    bit 0x001      COMPRESSED
    bits 0x700     type: 0 or 3 = ZLIB (0 from old clients), 1 = LZ4, 2 = ZSTD, others unknown

Streams are the standard containers the Java client writes: the zlib wrapper of
``java.util.zip.Deflater`` (stdlib :mod:`zlib`), the LZ4 *frame* format of lz4-java's
``LZ4FrameOutputStream`` (:mod:`lz4.frame`, optional extra ``lz4``) and zstd frames of zstd-jni's
``ZstdOutputStream`` (:mod:`zstandard`, optional extra ``zstd``). The Java producer compresses
single (non-batch) bodies of at least :data:`COMPRESS_OVER_BYTES` with zlib at level 5.

Decompression is bounded: a body that would inflate past ``max_size`` bytes is refused, so a few
lying kilobytes cannot allocate gigabytes. Truncated streams are refused; bytes after the end of
the stream are ignored, as Java's ``InflaterInputStream`` ignores them.
"""

from __future__ import annotations

import enum
import importlib
import zlib
from types import ModuleType
from typing import Any, Final

from rocketmq_py.errors import CompressionUnavailable, MalformedMessage

__all__ = [
    "COMPRESS_OVER_BYTES",
    "DEFAULT_COMPRESS_LEVEL",
    "MAX_DECOMPRESSED_BYTES",
    "CompressionType",
    "compress_body",
    "compression_type_of",
    "decompress_body",
    "maybe_compress",
]

#: Java ``DefaultMQProducer.compressMsgBodyOverHowmuch``.
COMPRESS_OVER_BYTES: Final = 4096
#: Java ``rocketmq.message.compressLevel`` default (used for zlib and zstd; lz4 ignores it).
DEFAULT_COMPRESS_LEVEL: Final = 5
#: Cap on one decompressed body. Java has none; ours stops decompression bombs. Bodies are at most
#: 4 MiB compressed by default (Java ``maxMessageSize``), so 256 MiB leaves a 64:1 ratio.
MAX_DECOMPRESSED_BYTES: Final = 256 * 1024 * 1024

_COMPRESSED: Final = 0x1
_TYPE_SHIFT: Final = 8
_TYPE_MASK: Final = 0x7
# zstd can emit ~32 KiB per input byte (RLE blocks): feed input in slices so one step stays bounded.
_ZSTD_FEED: Final = 1024


class CompressionType(enum.IntEnum):
    """Java ``CompressionType``: the value stored in ``sys_flag`` bits 8..10."""

    LZ4 = 1
    ZSTD = 2
    ZLIB = 3

    @property
    def sys_flag(self) -> int:
        """The ``sys_flag`` bits of a body compressed with this type (COMPRESSED bit included)."""
        return (int(self) << _TYPE_SHIFT) | _COMPRESSED


def compression_type_of(sys_flag: int) -> CompressionType:
    """The codec ``sys_flag`` names (type 0 means ZLIB, for old clients).

    Raises:
        MalformedMessage: the type bits hold a value no RocketMQ version defines (4..7).
    """
    value = (sys_flag >> _TYPE_SHIFT) & _TYPE_MASK
    if value == 0:
        return CompressionType.ZLIB
    try:
        return CompressionType(value)
    except ValueError:
        raise MalformedMessage(f"unknown compression type {value} in sys_flag {sys_flag:#x}") from None


def _optional(module: str, extra: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise CompressionUnavailable(
            f"message body is {extra}-compressed but {module!r} is not installed; "
            f"install rocketmq-py[{extra}]"
        ) from None


def compress_body(body: bytes, kind: CompressionType, level: int = DEFAULT_COMPRESS_LEVEL) -> bytes:
    """Compress a body the way the Java producer does.

    Raises:
        CompressionUnavailable: LZ4/ZSTD without the optional package.
    """
    if kind is CompressionType.ZLIB:
        return zlib.compress(body, level)
    if kind is CompressionType.LZ4:
        frame: Any = _optional("lz4.frame", "lz4")
        return bytes(frame.compress(body))
    zstd: Any = _optional("zstandard", "zstd")
    return bytes(zstd.ZstdCompressor(level=level).compress(body))


def maybe_compress(
    body: bytes,
    *,
    threshold: int = COMPRESS_OVER_BYTES,
    kind: CompressionType = CompressionType.ZLIB,
    level: int = DEFAULT_COMPRESS_LEVEL,
) -> tuple[bytes, int]:
    """The Java producer's rule for a single (non-batch) send: compress bodies of ``threshold`` bytes or more.

    Returns:
        ``(body to send, sys_flag bits to OR into the send header)``; ``(body, 0)`` when small.

    Raises:
        CompressionUnavailable: LZ4/ZSTD without the optional package.
    """
    if len(body) < threshold:
        return body, 0
    return compress_body(body, kind, level), kind.sys_flag


def _too_large(kind: CompressionType, max_size: int) -> MalformedMessage:
    return MalformedMessage(f"{kind.name} body inflates beyond {max_size} bytes")


def _truncated(kind: CompressionType) -> MalformedMessage:
    return MalformedMessage(f"{kind.name} body ends before its compressed stream does")


def decompress_body(body: bytes, sys_flag: int, *, max_size: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """Inflate a body stored with the COMPRESSED bit, by the type in ``sys_flag``.

    Raises:
        MalformedMessage: unknown type, corrupt or truncated stream, or more than ``max_size`` bytes.
        CompressionUnavailable: LZ4/ZSTD without the optional package.
    """
    kind = compression_type_of(sys_flag)
    if kind is CompressionType.ZLIB:
        inflater = zlib.decompressobj()
        try:
            out = inflater.decompress(body, max_size + 1)
        except zlib.error as exc:
            raise MalformedMessage(f"corrupt ZLIB body: {exc}") from None
        if len(out) > max_size:
            raise _too_large(kind, max_size)
        if not inflater.eof:
            raise _truncated(kind)
        return out
    if kind is CompressionType.LZ4:
        frame: Any = _optional("lz4.frame", "lz4")
        decompressor = frame.LZ4FrameDecompressor()
        try:
            out = decompressor.decompress(body, max_length=max_size + 1)
        except RuntimeError as exc:
            raise MalformedMessage(f"corrupt LZ4 body: {exc}") from None
        if len(out) > max_size:
            raise _too_large(kind, max_size)
        if not decompressor.eof:
            raise _truncated(kind)
        return bytes(out)
    zstd: Any = _optional("zstandard", "zstd")
    stream = zstd.ZstdDecompressor().decompressobj()
    parts: list[bytes] = []
    total = 0
    view = memoryview(body)
    try:
        for start in range(0, len(body), _ZSTD_FEED):
            if stream.eof:
                break
            part = stream.decompress(view[start : start + _ZSTD_FEED])
            total += len(part)
            if total > max_size:
                raise _too_large(kind, max_size)
            parts.append(part)
    except zstd.ZstdError as exc:
        raise MalformedMessage(f"corrupt ZSTD body: {exc}") from None
    if not stream.eof:
        raise _truncated(kind)
    return b"".join(parts)
