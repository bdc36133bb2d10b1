"""Header codec timings: binary header via compiled construct vs struct, and the JSON header.

Run with ``python benchmarks/header_codec.py``; prints operations per second. The struct codec is
the one in use only because it is much faster than the construct reference (see ``_binary_header``
and ``_command_construct``).
"""

from __future__ import annotations

import timeit
from collections.abc import Callable

from rocketmq_py.protocol._binary_header import _decode_binary_header_struct, _encode_binary_header_struct
from rocketmq_py.protocol._codes import RequestCode, SerializeType
from rocketmq_py.protocol._command import RemotingCommand, decode_command
from rocketmq_py.protocol._command_construct import (
    _decode_binary_header_construct,
    _encode_binary_header_construct,
)
from rocketmq_py.protocol._frame import FrameBuffer
from rocketmq_py.protocol._json_header import _decode_json_header, _encode_json_header

# A pull request's worth of header: ten short extFields entries.
_FIELDS = {f"field{i}": f"value-{i * 7919}" for i in range(10)}


def _rate(func: Callable[[], object], seconds: float = 0.5) -> float:
    """Operations per second, from the best of three runs of about ``seconds`` each."""
    timer = timeit.Timer(func)
    number, elapsed = timer.autorange()
    number = max(1, int(number * seconds / max(elapsed, 1e-9)))
    best = min(timer.repeat(repeat=3, number=number))
    return number / best


def main() -> None:
    binary = RemotingCommand(
        RequestCode.PULL_MESSAGE, opaque=4711, ext_fields=_FIELDS, serialize_type=SerializeType.ROCKETMQ
    )
    json_cmd = RemotingCommand(RequestCode.PULL_MESSAGE, opaque=4711, ext_fields=_FIELDS)
    binary_header = _encode_binary_header_struct(binary)
    json_header = _encode_json_header(json_cmd)
    frames = json_cmd.encode() * 100

    def feed_frames() -> None:
        FrameBuffer().feed(frames)

    rows: list[tuple[str, Callable[[], object], int]] = [
        (
            "binary header decode, construct (compiled)",
            lambda: _decode_binary_header_construct(binary_header),
            1,
        ),
        ("binary header decode, struct", lambda: _decode_binary_header_struct(binary_header), 1),
        ("binary header encode, construct (compiled)", lambda: _encode_binary_header_construct(binary), 1),
        ("binary header encode, struct", lambda: _encode_binary_header_struct(binary), 1),
        ("JSON header decode", lambda: _decode_json_header(json_header), 1),
        ("JSON header encode", lambda: _encode_json_header(json_cmd), 1),
        ("whole frame encode (JSON)", json_cmd.encode, 1),
        ("whole frame decode (JSON)", lambda: decode_command(json_cmd.encode()[4:]), 1),
        ("FrameBuffer.feed, 100 JSON frames per chunk", feed_frames, 100),
    ]
    print(f"binary header {len(binary_header)} bytes, JSON header {len(json_header)} bytes")
    rates: dict[str, float] = {}
    for name, func, per_call in rows:
        rates[name] = _rate(func) * per_call
        print(f"{name:48} {rates[name]:>12,.0f} ops/s")
    for what in ("decode", "encode"):
        ratio = rates[f"binary header {what}, struct"] / rates[f"binary header {what}, construct (compiled)"]
        print(f"struct / construct, binary {what}: {ratio:.1f}x")


if __name__ == "__main__":
    main()
