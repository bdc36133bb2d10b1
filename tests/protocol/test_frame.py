"""FrameBuffer: splitting a stream whole, byte by byte, with trailing bytes; refusing lying peers."""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py.errors import (
    FrameTooLarge,
    LocalProtocolError,
    MalformedFrame,
    MalformedHeader,
    ProtocolError,
    UnknownSerializeType,
)
from rocketmq_py.protocol._codes import SerializeType
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.protocol._frame import DEFAULT_MAX_FRAME_SIZE, FrameBuffer

ROUTE_REQUEST = RemotingCommand(105, opaque=3, ext_fields={"topic": "T"})
BINARY_RESPONSE = RemotingCommand(
    0, opaque=3, flag=1, remark="ok", body=b"{}", serialize_type=SerializeType.ROCKETMQ
)
COMMANDS = [ROUTE_REQUEST, BINARY_RESPONSE, RemotingCommand(11, opaque=4, body=b"\x00" * 300)]
STREAM = b"".join(command.encode() for command in COMMANDS)


def raw_frame(word: int, header: bytes, body: bytes = b"") -> bytes:
    """A frame from its parts, with an honest total length and any header-length word."""
    return struct.pack(">iI", 4 + len(header) + len(body), word) + header + body


def test_default_max_frame_size() -> None:
    assert DEFAULT_MAX_FRAME_SIZE == 16 * 1024 * 1024
    assert FrameBuffer().max_frame_size == DEFAULT_MAX_FRAME_SIZE


def test_whole_stream_at_once() -> None:
    buffer = FrameBuffer()
    assert buffer.feed(STREAM) == COMMANDS
    assert buffer.pending_bytes == 0
    buffer.eof()


def test_one_byte_at_a_time() -> None:
    buffer = FrameBuffer()
    received: list[RemotingCommand] = []
    boundaries = []
    for i in range(len(STREAM)):
        got = buffer.feed(STREAM[i : i + 1])
        if got:
            boundaries.append(i + 1)
        received += got
        assert buffer.pending_bytes == (i + 1) - (boundaries[-1] if boundaries else 0)
    assert received == COMMANDS
    ends = [len(b"".join(c.encode() for c in COMMANDS[: n + 1])) for n in range(len(COMMANDS))]
    assert boundaries == ends


def test_trailing_partial_frame_is_kept() -> None:
    buffer = FrameBuffer()
    first = ROUTE_REQUEST.encode()
    second = BINARY_RESPONSE.encode()
    assert buffer.feed(first + second[:7]) == [ROUTE_REQUEST]
    assert buffer.pending_bytes == 7
    assert buffer.feed(b"") == []
    assert buffer.feed(second[7:]) == [BINARY_RESPONSE]
    assert buffer.pending_bytes == 0


def test_many_frames_in_one_chunk() -> None:
    commands = [ROUTE_REQUEST.with_opaque(n) for n in range(2000)]
    buffer = FrameBuffer()
    assert buffer.feed(b"".join(c.encode() for c in commands) + b"\x00\x00") == commands
    assert buffer.pending_bytes == 2


def test_accepts_bytearray_and_memoryview() -> None:
    buffer = FrameBuffer()
    assert buffer.feed(bytearray(STREAM[:50])) == []
    assert buffer.feed(memoryview(STREAM)[50:]) == COMMANDS


def test_large_frame_byte_by_byte_stays_linear() -> None:
    # Quadratic copying would make this take minutes; linear takes well under a second.
    command = RemotingCommand(10, body=bytes(range(256)) * 400)
    data = command.encode()
    buffer = FrameBuffer()
    received: list[RemotingCommand] = []
    for i in range(len(data)):
        received += buffer.feed(data[i : i + 1])
    assert received == [command]


@given(
    st.lists(st.sampled_from(COMMANDS), max_size=6),
    st.lists(st.integers(0, 400), max_size=10),
)
def test_any_chunking_gives_the_same_commands(commands: list[RemotingCommand], cuts: list[int]) -> None:
    data = b"".join(c.encode() for c in commands)
    points = sorted({min(cut, len(data)) for cut in cuts} | {0, len(data)})
    buffer = FrameBuffer()
    received: list[RemotingCommand] = []
    for start, end in itertools.pairwise(points):
        received += buffer.feed(data[start:end])
    assert received == commands
    assert buffer.pending_bytes == 0


# --- lying peers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("length", [-1, -(2**31), 0, 3])
def test_length_below_four_is_malformed(length: int) -> None:
    with pytest.raises(MalformedFrame):
        FrameBuffer().feed(struct.pack(">i", length))


def test_too_large_is_refused_before_the_body_arrives() -> None:
    buffer = FrameBuffer(max_frame_size=100)
    assert buffer.feed(struct.pack(">i", 96)) == []  # 4 + 96 = 100: allowed
    assert buffer.pending_bytes == 4
    with pytest.raises(FrameTooLarge):
        FrameBuffer(max_frame_size=100).feed(struct.pack(">i", 97))


@pytest.mark.parametrize("length", [DEFAULT_MAX_FRAME_SIZE - 3, 2**31 - 1])
def test_default_cap_refuses_lying_lengths_at_once(length: int) -> None:
    buffer = FrameBuffer()
    assert buffer.feed(struct.pack(">i", DEFAULT_MAX_FRAME_SIZE - 4)) == []
    with pytest.raises(FrameTooLarge):
        FrameBuffer().feed(struct.pack(">i", length))


def test_header_length_beyond_the_frame_is_malformed() -> None:
    data = raw_frame(0x00_000010, b'{"code":1}', b"xx")  # claims 16 header bytes, 12 left
    with pytest.raises(MalformedFrame):
        FrameBuffer().feed(data)


def test_frame_without_room_for_its_header() -> None:
    data = struct.pack(">iI", 4, 0x00_000001)
    with pytest.raises(MalformedFrame):
        FrameBuffer().feed(data)


@pytest.mark.parametrize("type_byte", [2, 0x7F, 0xFF])
def test_unknown_serialize_type(type_byte: int) -> None:
    with pytest.raises(UnknownSerializeType):
        FrameBuffer().feed(raw_frame(type_byte << 24 | 2, b"{}"))


@pytest.mark.parametrize(
    "data",
    [
        raw_frame(10, b'{"code":\xff}'),  # invalid UTF-8 in a JSON header
        raw_frame(2, b"{}"),  # JSON without a code
        raw_frame(0, b""),  # empty JSON header
        raw_frame(1 << 24 | 20, b"\x00" * 20),  # binary header shorter than its fixed part
        raw_frame(1 << 24 | 23, b"\x00" * 13 + b"\x00\x00\x00\x02\xff\xfe" + b"\x00" * 4),  # bad UTF-8
        raw_frame(1 << 24 | 21, b"\x00" * 13 + b"\x00\x00\x00\x09" + b"\x00" * 4),  # remark lies
    ],
)
def test_bad_header_inside_a_frame(data: bytes) -> None:
    with pytest.raises(MalformedHeader):
        FrameBuffer().feed(data)


def test_unusable_after_an_error() -> None:
    buffer = FrameBuffer(max_frame_size=64)
    with pytest.raises(FrameTooLarge):
        buffer.feed(ROUTE_REQUEST.encode() + struct.pack(">i", 1000))
    for _ in range(2):
        with pytest.raises(FrameTooLarge, match="unusable"):
            buffer.feed(ROUTE_REQUEST.encode())
    with pytest.raises(FrameTooLarge):
        buffer.eof()


def test_eof_inside_a_frame() -> None:
    buffer = FrameBuffer()
    buffer.feed(ROUTE_REQUEST.encode()[:-1])
    with pytest.raises(MalformedFrame, match="ended inside a frame"):
        buffer.eof()
    with pytest.raises(MalformedFrame):
        buffer.feed(b"x")


def test_feed_after_eof_is_a_local_error() -> None:
    buffer = FrameBuffer()
    buffer.eof()
    with pytest.raises(LocalProtocolError):
        buffer.feed(ROUTE_REQUEST.encode())
    with pytest.raises(LocalProtocolError):
        buffer.eof()


@pytest.mark.parametrize("size", [0, 7, -1])
def test_max_frame_size_must_fit_a_header_word(size: int) -> None:
    with pytest.raises(ValueError, match="max_frame_size"):
        FrameBuffer(max_frame_size=size)


# --- fuzzing -----------------------------------------------------------------------------------


@st.composite
def corrupted_streams(draw: st.DrawFn) -> bytes:
    data = bytearray(STREAM)
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(data) - 1))
        data[position] = draw(st.integers(0, 255))
    return bytes(data[: draw(st.integers(0, len(data)))])


@given(
    st.binary(max_size=300) | corrupted_streams(),
    st.lists(st.integers(1, 64), min_size=1, max_size=8),
    st.sampled_from([8, 64, 1024, DEFAULT_MAX_FRAME_SIZE]),
)
def test_garbage_only_raises_protocol_errors(data: bytes, chunks: list[int], max_size: int) -> None:
    buffer = FrameBuffer(max_frame_size=max_size)
    pos = 0
    try:
        while pos < len(data):
            step = chunks[pos % len(chunks)]
            for command in buffer.feed(data[pos : pos + step]):
                assert isinstance(command, RemotingCommand)
            pos += step
        buffer.eof()
    except ProtocolError:
        pass
