"""Body compression: type bits, bounded zlib, optional lz4/zstd."""

from __future__ import annotations

import importlib.util
import sys
import zlib

import pytest

from rocketmq_py.errors import CompressionUnavailable, MalformedMessage
from rocketmq_py.protocol._compression import (
    CompressionType,
    compress_body,
    compression_type_of,
    decompress_body,
    maybe_compress,
)

ZLIB = CompressionType.ZLIB.sys_flag
LZ4 = CompressionType.LZ4.sys_flag
ZSTD = CompressionType.ZSTD.sys_flag
BODY = b"RocketMQ " * 1000


def test_type_bits() -> None:
    assert (ZLIB, LZ4, ZSTD) == (0x301, 0x101, 0x201)
    assert compression_type_of(0x1) is CompressionType.ZLIB  # type 0: old clients meant zlib
    assert compression_type_of(0x301) is CompressionType.ZLIB
    assert compression_type_of(0x101) is CompressionType.LZ4
    assert compression_type_of(0x201) is CompressionType.ZSTD
    for unknown in (0x401, 0x501, 0x601, 0x701):
        with pytest.raises(MalformedMessage, match="compression type"):
            compression_type_of(unknown)


def test_zlib_is_the_standard_wrapper_at_level_5() -> None:
    packed = compress_body(BODY, CompressionType.ZLIB)
    assert packed == zlib.compress(BODY, 5)
    assert decompress_body(packed, ZLIB) == BODY
    assert decompress_body(packed, 0x1) == BODY


def test_zlib_trailing_bytes_are_ignored_like_java() -> None:
    assert decompress_body(zlib.compress(BODY) + b"junk", ZLIB) == BODY


def test_zlib_truncated_or_corrupt_is_malformed() -> None:
    packed = zlib.compress(BODY)
    with pytest.raises(MalformedMessage, match="ends before"):
        decompress_body(packed[:-6], ZLIB)
    with pytest.raises(MalformedMessage, match="corrupt"):
        decompress_body(b"\x00" * 16, ZLIB)


def test_decompression_is_bounded() -> None:
    bomb = zlib.compress(b"\x00" * 10_000_000, 9)
    assert len(bomb) < 20_000
    with pytest.raises(MalformedMessage, match="beyond 1000000"):
        decompress_body(bomb, ZLIB, max_size=1_000_000)
    assert len(decompress_body(bomb, ZLIB, max_size=10_000_000)) == 10_000_000


@pytest.fixture
def without_optional_codecs(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes the import fail even where the package is installed.
    for name in ("lz4", "lz4.frame", "zstandard"):
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.usefixtures("without_optional_codecs")
@pytest.mark.parametrize(
    ("flag", "kind", "extra"), [(LZ4, CompressionType.LZ4, "lz4"), (ZSTD, CompressionType.ZSTD, "zstd")]
)
def test_missing_optional_codec_names_the_extra(flag: int, kind: CompressionType, extra: str) -> None:
    with pytest.raises(CompressionUnavailable, match=rf"rocketmq-py\[{extra}\]"):
        decompress_body(b"anything", flag)
    with pytest.raises(CompressionUnavailable, match=rf"rocketmq-py\[{extra}\]"):
        compress_body(BODY, kind)


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@pytest.mark.skipif(not _installed("lz4"), reason="optional package lz4 is not installed")
def test_lz4_frame_round_trip_and_errors() -> None:
    import lz4.frame  # type: ignore[import-not-found]

    packed = compress_body(BODY, CompressionType.LZ4)
    assert packed[:4] == b"\x04\x22\x4d\x18"  # the LZ4 frame magic lz4-java writes too
    assert decompress_body(packed, LZ4) == BODY
    assert decompress_body(lz4.frame.compress(BODY), LZ4) == BODY
    with pytest.raises(MalformedMessage, match="ends before"):
        decompress_body(packed[:-7], LZ4)
    with pytest.raises(MalformedMessage, match="corrupt"):
        decompress_body(b"garbage-garbage", LZ4)
    with pytest.raises(MalformedMessage, match="beyond"):
        decompress_body(packed, LZ4, max_size=100)


@pytest.mark.skipif(not _installed("zstandard"), reason="optional package zstandard is not installed")
def test_zstd_round_trip_and_errors() -> None:
    import zstandard  # type: ignore[import-not-found]

    packed = compress_body(BODY, CompressionType.ZSTD)
    assert decompress_body(packed, ZSTD) == BODY
    # zstd-jni's ZstdOutputStream writes frames without a content size: decode those too.
    streamed = zstandard.ZstdCompressor(level=5, write_content_size=False).compress(BODY)
    assert decompress_body(streamed, ZSTD) == BODY
    assert decompress_body(streamed + b"junk", ZSTD) == BODY
    with pytest.raises(MalformedMessage, match="ends before"):
        decompress_body(streamed[:-5], ZSTD)
    with pytest.raises(MalformedMessage, match="corrupt"):
        decompress_body(b"garbage-garbage", ZSTD)
    with pytest.raises(MalformedMessage, match="beyond"):
        decompress_body(packed, ZSTD, max_size=100)


def test_maybe_compress_follows_the_java_threshold() -> None:
    small = b"x" * 4095
    assert maybe_compress(small) == (small, 0)
    big = b"x" * 4096
    packed, flag = maybe_compress(big)
    assert flag == 0x301
    assert decompress_body(packed, flag) == big
    assert maybe_compress(big, threshold=10_000) == (big, 0)
