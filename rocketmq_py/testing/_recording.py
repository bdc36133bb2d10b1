"""What a recording holds: each frame decoded, responses paired with requests, files on disk.

A recording (:class:`~rocketmq_py.testing._recorder.RecordedFrame` list) is written as one
``.bin`` file per frame, the frame's exact bytes with the length prefix, named::

    NNNN-<c2s|s2c>-<peer>-<REQUEST CODE NAME>[-<RESPONSE CODE NAME>]-<json|binary>.bin

plus ``manifest.json``, one entry per file (direction, peer, code, the request code a response
answers, opaque, flag, serialize type, sizes, what produced it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocketmq_py.protocol._codes import FLAG_RESPONSE, RequestCode, ResponseCode, SerializeType
from rocketmq_py.protocol._command import RemotingCommand, decode_command
from rocketmq_py.testing._recorder import RecordedFrame

__all__ = [
    "FrameInfo",
    "code_name",
    "describe_frames",
    "manifest_entry",
    "vector_file_name",
    "write_manifest",
    "write_recording",
]


@dataclass(frozen=True, slots=True)
class FrameInfo:
    """A recorded frame, decoded, with its request code found for responses."""

    frame: RecordedFrame
    command: RemotingCommand
    #: For a response: the code of the request with the same opaque on the same connection, in
    #: the other direction (None if that request was not recorded). For a request: its own code.
    request_code: int | None

    @property
    def is_response(self) -> bool:
        return bool(self.command.flag & FLAG_RESPONSE)


def describe_frames(frames: Iterable[RecordedFrame]) -> list[FrameInfo]:
    """Decode every frame and pair responses with their requests (by connection and opaque).

    Raises:
        ProtocolError: a frame does not decode.
    """
    requests: dict[tuple[int, str, int], int] = {}
    out = []
    for frame in frames:
        cmd = decode_command(frame.data[4:])
        if cmd.flag & FLAG_RESPONSE:
            asked_by = "s2c" if frame.direction == "c2s" else "c2s"
            request_code = requests.get((frame.connection, asked_by, cmd.opaque))
        else:
            request_code = cmd.code
            requests[(frame.connection, frame.direction, cmd.opaque)] = cmd.code
        out.append(FrameInfo(frame, cmd, request_code))
    return out


def code_name(code: int | None, *, response: bool) -> str:
    """The enum name of a request or response code, or the number."""
    if code is None:
        return "UNKNOWN"
    enum: Any = ResponseCode if response else RequestCode
    try:
        return str(enum(code).name)
    except ValueError:
        return str(code)


def vector_file_name(index: int, info: FrameInfo) -> str:
    """``0007-c2s-broker-SEND_MESSAGE_V2-json.bin``; responses add the response code name."""
    frame, cmd = info.frame, info.command
    name = code_name(info.request_code, response=False)
    if info.is_response:
        name += "-" + code_name(cmd.code, response=True)
    kind = "json" if cmd.serialize_type == SerializeType.JSON else "binary"
    return f"{index:04d}-{frame.direction}-{frame.peer}-{name}-{kind}.bin"


def manifest_entry(file: str, info: FrameInfo, **extra: Any) -> dict[str, Any]:
    """The manifest record of one vector file (``extra`` keys are added as given)."""
    frame, cmd = info.frame, info.command
    entry: dict[str, Any] = {
        "file": file,
        "direction": frame.direction,
        "peer": frame.peer,
        "kind": "response" if info.is_response else "request",
        "code": cmd.code,
        "code_name": code_name(cmd.code, response=info.is_response),
        "request_code": info.request_code,
        "request_code_name": code_name(info.request_code, response=False),
        "opaque": cmd.opaque,
        "flag": cmd.flag,
        "serialize_type": SerializeType(cmd.serialize_type).name,
        "language": cmd.language,
        "version": cmd.version,
        "length": len(frame.data),
        "body_length": len(cmd.body),
        "phase": frame.phase,
        "connection": frame.connection,
    }
    entry.update(extra)
    return entry


def write_recording(
    out: Path,
    frames: Iterable[RecordedFrame],
    *,
    label: str = "",
    produced_by: Callable[[FrameInfo], str] | None = None,
) -> list[Path]:
    """Write every frame to ``out`` (one ``.bin`` file each) plus ``manifest.json``.

    Args:
        out: the directory (created; existing ``.bin`` files and the manifest are replaced).
        frames: the recording.
        label: free text stored in the manifest.
        produced_by: what produced a frame (default: ``client`` / the peer name).

    Returns:
        The files written, manifest last.
    """
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.bin"):
        old.unlink()
    written = []
    entries = []
    for index, info in enumerate(describe_frames(frames), start=1):
        name = vector_file_name(index, info)
        (out / name).write_bytes(info.frame.data)
        written.append(out / name)
        who = (
            produced_by(info)
            if produced_by
            else ("client" if info.frame.direction == "c2s" else info.frame.peer)
        )
        entries.append(manifest_entry(name, info, produced_by=who))
    manifest = out / "manifest.json"
    write_manifest(manifest, {"label": label, "vectors": entries})
    written.append(manifest)
    return written


def write_manifest(path: Path, manifest: dict[str, Any]) -> None:
    """Write ``manifest`` as indented UTF-8 JSON (non-ASCII kept readable)."""
    path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
