"""Fuzz the sans-IO codec: random and mutated frames into FrameBuffer and decode_messages.

Seeds are the golden vectors recorded from the Java client and the broker (``protocol/vectors``)
plus frames and stored-message bodies built with our own encoders (JSON and binary headers,
compressed, IPv6, long-topic and inner-batch messages). Each case mutates a seed (bit flips, byte
writes, truncation, insertion, splicing, a lying length field) or is plain garbage, and is fed
whole or in random pieces. The only exception allowed out of the codec is ``ProtocolError``; any
other exception is a bug and ends the run with exit status 1. Memory must stay bounded: the run
fails if the peak resident size grows by more than ``--max-rss-growth-mb``.

    python benchmarks/fuzz_codec.py [--cases 1000000] [--seed N]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import struct
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from rocketmq_py.errors import ProtocolError
from rocketmq_py.protocol._codes import SerializeType
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.protocol._frame import FrameBuffer
from rocketmq_py.protocol._message import MessageExt
from rocketmq_py.protocol._stored import decode_messages, encode_stored_message

VECTORS = Path(__file__).resolve().parent.parent / "protocol" / "vectors"


def _stored(topic: str, body: bytes, props: dict[str, str], *, v6: bool = False, offset: int = 0) -> bytes:
    host = "[::1]:10911" if v6 else "127.0.0.1:10911"
    msg = MessageExt(
        topic=topic,
        body=body,
        properties=props,
        queue_id=offset % 8,
        queue_offset=offset,
        commit_log_offset=1000 + offset * 300,
        sys_flag=0x10 | 0x20 if v6 else 0,
        born_timestamp=1_700_000_000_000 + offset,
        born_host=host,
        store_timestamp=1_700_000_000_500 + offset,
        store_host=host,
    )
    return encode_stored_message(msg)


def synthesized_seeds() -> tuple[list[bytes], list[bytes]]:
    """(frames, stored-message bodies) built with our encoders."""
    rng = random.Random(7)
    bodies = [
        _stored("T", b"hello", {"UNIQ_KEY": "AC11000100002A9F0000000000000000", "TAGS": "a"}),
        _stored("T" * 200, bytes(rng.randrange(256) for _ in range(64)), {"KEYS": "k1 k2"}),
        _stored("TopicZ", b"z" * 5000, {"名前": "値 ü"}),  # compressed on encode
        _stored("T6", b"six", {"TAGS": "v6"}, v6=True),
    ]
    bodies.append(b"".join(bodies))
    frames = []
    for st in (SerializeType.JSON, SerializeType.ROCKETMQ):
        frames.append(
            RemotingCommand.request(105, {"topic": "TopicTest"}, serialize_type=st).with_opaque(7).encode()
        )
        frames.append(
            RemotingCommand.request(
                310,
                {
                    "a": "g",
                    "b": "T",
                    "c": "TBW102",
                    "d": "4",
                    "e": "1",
                    "f": "0",
                    "g": "1700000000000",
                    "h": "0",
                },
                b"body",
                serialize_type=st,
            ).encode()
        )
        request = RemotingCommand.request(11, {"topic": "T"}).with_opaque(9)
        frames.append(
            RemotingCommand.response(
                request,
                0,
                ext_fields={
                    "nextBeginOffset": "4",
                    "minOffset": "0",
                    "maxOffset": "4",
                    "suggestWhichBrokerId": "0",
                },
                body=bodies[-1],
                serialize_type=st,
            ).encode()
        )
    return frames, bodies


def vector_seeds() -> tuple[list[bytes], list[bytes]]:
    """(frames, stored-message bodies of FOUND pull replies) from the golden vectors, if present."""
    frames: list[bytes] = []
    bodies: list[bytes] = []
    manifest = VECTORS / "manifest.json"
    if not manifest.exists():
        return frames, bodies
    entries = json.loads(manifest.read_text())
    if isinstance(entries, dict):
        entries = entries.get("frames", entries.get("vectors", []))
    for entry in entries:
        path = VECTORS / entry["file"]
        if not path.exists():
            continue
        raw = path.read_bytes()
        frames.append(raw)
        if entry.get("request_code") == 11 and entry.get("code") == 0:
            for cmd in FrameBuffer().feed(raw):
                bodies.append(bytes(cmd.body))
    return frames, bodies


def mutate(rng: random.Random, data: bytes, seeds: list[bytes]) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3, 8))):
        op = rng.randrange(8)
        if op == 0 and buf:  # flip a bit
            i = rng.randrange(len(buf))
            buf[i] ^= 1 << rng.randrange(8)
        elif op == 1 and buf:  # write a byte
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        elif op == 2 and buf:  # truncate
            del buf[rng.randrange(len(buf)) :]
        elif op == 3:  # insert random bytes
            i = rng.randrange(len(buf) + 1)
            buf[i:i] = rng.randbytes(rng.randrange(1, 16))
        elif op == 4 and len(buf) >= 4:  # a lying int32 somewhere (lengths live at many offsets)
            i = rng.randrange(len(buf) - 3)
            value = rng.choice((0, -1, 1, 0x7FFFFFFF, -(2**31), 0xFFFFFF, rng.randrange(-(2**31), 2**31)))
            buf[i : i + 4] = struct.pack(">i", value)
        elif op == 5 and len(buf) >= 2:  # a lying int16
            i = rng.randrange(len(buf) - 1)
            buf[i : i + 2] = struct.pack(">h", rng.randrange(-(2**15), 2**15))
        elif op == 6:  # splice with another seed
            other = rng.choice(seeds)
            cut = rng.randrange(len(buf) + 1)
            buf = buf[:cut] + other[rng.randrange(len(other) + 1) :]
        elif op == 7 and len(buf) >= 8:  # overwrite the frame's header-length word (type byte + 24 bits)
            buf[4:8] = struct.pack(">I", rng.randrange(2**32))
    return bytes(buf)


def feed_frames(rng: random.Random, data: bytes) -> None:
    fb = FrameBuffer(max_frame_size=rng.choice((1 << 24, 4096)))
    if rng.random() < 0.5:
        fb.feed(data)
    else:
        i = 0
        while i < len(data):
            step = rng.randrange(1, 64)
            fb.feed(data[i : i + step])
            i += step
    fb.eof()


def run(cases: int, seed: int, max_rss_growth_mb: float) -> int:
    rng = random.Random(seed)
    vf, vb = vector_seeds()
    sf, sb = synthesized_seeds()
    frames, bodies = vf + sf, vb + sb
    print(f"seeds: {len(vf)} vector frames, {len(vb)} vector pull bodies, {len(sf)} + {len(sb)} synthesized")
    targets: list[tuple[str, Callable[[bytes], object], list[bytes]]] = [
        ("FrameBuffer", lambda d: feed_frames(rng, d), frames),
        ("decode_messages", decode_messages, bodies),
    ]
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    counts = {"ok": 0, "ProtocolError": 0}
    started = time.perf_counter()
    for n in range(cases):
        name, target, pool = targets[n % 2]
        r = rng.random()
        if r < 0.05:
            data = rng.randbytes(rng.randrange(0, 200))
        elif r < 0.10:
            data = rng.choice(pool)  # unmodified seeds must decode
        else:
            data = mutate(rng, rng.choice(pool), pool)
        try:
            target(data)
            counts["ok"] += 1
        except ProtocolError:
            counts["ProtocolError"] += 1
        except Exception:
            print(f"case {n} ({name}): unexpected exception for input {data.hex()}", file=sys.stderr)
            traceback.print_exc()
            return 1
        if n and n % 200_000 == 0:
            print(f"  {n:>9} cases, {n / (time.perf_counter() - started):,.0f}/s", flush=True)
    elapsed = time.perf_counter() - started
    growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - rss_before
    print(
        f"{cases:,} cases in {elapsed:.1f} s ({cases / elapsed:,.0f}/s): {counts['ok']:,} decoded, "
        f"{counts['ProtocolError']:,} ProtocolError, nothing else; peak RSS grew {growth:.1f} MiB"
    )
    if growth > max_rss_growth_mb:
        print(f"memory grew by {growth:.1f} MiB, over the {max_rss_growth_mb} MiB bound", file=sys.stderr)
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--max-rss-growth-mb", type=float, default=200.0)
    args = parser.parse_args()
    print(f"seed {args.seed}")
    return run(args.cases, args.seed, args.max_rss_growth_mb)


if __name__ == "__main__":
    sys.exit(main())
