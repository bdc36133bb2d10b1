"""The recording proxy without a JVM: a tiny threaded server, real loopback sockets."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketmq_py.errors import ClusterError, ProtocolError
from rocketmq_py.protocol._codes import RequestCode, SerializeType
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.protocol._frame import FrameBuffer
from rocketmq_py.testing._cli import main
from rocketmq_py.testing._local import pick_port_block
from rocketmq_py.testing._recorder import FrameSplitter, ProxyRoute, RecordedFrame, Recorder, parse_address
from rocketmq_py.testing._recording import describe_frames, vector_file_name, write_recording
from rocketmq_py.testing._vector_selection import Want, pair_exchanges, select_vectors

ROUTE = RemotingCommand(105, opaque=7, ext_fields={"topic": "T"}, language=0)
BINARY = RemotingCommand(34, opaque=8, body=b"{}", serialize_type=SerializeType.ROCKETMQ)


class Server:
    """Answers every request with SUCCESS echoing its body; sends NOTIFY (40) when asked (code 9)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = self.sock.getsockname()[:2]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        with self.sock:
            conn, _ = self.sock.accept()
        with conn, contextlib.suppress(ProtocolError):  # garbage: close, as a broker does
            buffer = FrameBuffer()
            while data := conn.recv(65536):
                for request in buffer.feed(data):
                    if request.code == 9:
                        notify = RemotingCommand(40, opaque=99, flag=2, ext_fields={"consumerGroup": "g"})
                        conn.sendall(notify.encode())
                    if not request.is_oneway:
                        conn.sendall(RemotingCommand.response(request, 0, body=request.body).encode())


def _read_commands(sock: socket.socket, count: int) -> list[RemotingCommand]:
    buffer = FrameBuffer()
    out: list[RemotingCommand] = []
    while len(out) < count:
        data = sock.recv(65536)
        assert data, "the proxy closed the connection"
        out += buffer.feed(data)
    return out


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    yield srv
    srv.thread.join(timeout=5)


def test_parse_address() -> None:
    assert parse_address("127.0.0.2:10911") == ("127.0.0.2", 10911)
    for bad in ("10911", "host:", ":1", "host:port"):
        with pytest.raises(ClusterError):
            parse_address(bad)


def test_frame_splitter_whole_byte_by_byte_and_trailing() -> None:
    stream = ROUTE.encode() + BINARY.encode()
    assert FrameSplitter().feed(stream) == [ROUTE.encode(), BINARY.encode()]
    splitter = FrameSplitter()
    frames = [frame for i in range(len(stream)) for frame in splitter.feed(stream[i : i + 1])]
    assert frames == [ROUTE.encode(), BINARY.encode()]
    splitter = FrameSplitter()
    assert splitter.feed(ROUTE.encode() + b"\x00\x00") == [ROUTE.encode()]
    assert splitter.pending == 2


@pytest.mark.parametrize("length", [0, 3, -1, 1 << 30])
def test_frame_splitter_refuses_impossible_lengths(length: int) -> None:
    with pytest.raises(ProtocolError):
        FrameSplitter().feed(length.to_bytes(4, "big", signed=True) + b"\x00" * 8)


def test_proxy_forwards_and_records_both_directions(server: Server, tmp_path: Path) -> None:
    route = ProxyRoute(("127.0.0.1", 0), server.address, "namesrv")
    with Recorder([route]) as recorder:
        recorder.phase = "one"
        host, port = parse_address(recorder.listen_addresses[0])
        with socket.create_connection((host, port), timeout=5) as client:
            client.sendall(ROUTE.encode())
            (reply,) = _read_commands(client, 1)
            assert (reply.code, reply.opaque, reply.is_response) == (0, 7, True)
            recorder.phase = "two"
            client.sendall(BINARY.encode()[:5])  # a frame cut in two sends
            client.sendall(BINARY.encode()[5:] + RemotingCommand(9, opaque=9).encode())
            replies = _read_commands(client, 3)
            assert sorted((c.code, c.opaque) for c in replies) == [(0, 8), (0, 9), (40, 99)]
        last = recorder.wait_for(lambda f: f.direction == "s2c" and f.data.endswith(b"{}"), timeout=5)
        assert last is not None
        frames = recorder.frames()
        stats = recorder.statistics()
    assert stats["connections"] == 1
    assert stats["unsplittable_streams"] == 0
    assert stats["errors"] == []
    assert stats["bytes_c2s"] == len(ROUTE.encode()) + len(BINARY.encode()) + len(RemotingCommand(9).encode())
    assert [f.seq for f in frames] == list(range(1, len(frames) + 1))
    assert frames[0] == RecordedFrame(1, 1, "namesrv", "c2s", "one", ROUTE.encode())
    assert {f.phase for f in frames[2:]} == {"two"}

    infos = describe_frames(frames)
    notify = next(i for i in infos if i.command.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED)
    assert (notify.frame.direction, notify.is_response, notify.request_code) == ("s2c", False, 40)
    binary_reply = next(i for i in infos if i.is_response and i.command.opaque == 8)
    assert binary_reply.request_code == RequestCode.HEART_BEAT
    assert vector_file_name(3, infos[0]) == "0003-c2s-namesrv-GET_ROUTEINFO_BY_TOPIC-json.bin"
    binary = next(i for i in infos if i.command.serialize_type == SerializeType.ROCKETMQ)
    assert vector_file_name(4, binary) == "0004-c2s-namesrv-HEART_BEAT-binary.bin"
    assert vector_file_name(2, binary_reply) == "0002-s2c-namesrv-HEART_BEAT-SUCCESS-json.bin"

    files = write_recording(tmp_path / "rec", frames, label="unit")
    manifest = json.loads((tmp_path / "rec" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["label"] == "unit"
    assert [e["file"] for e in manifest["vectors"]] == [f.name for f in files[:-1]]
    for entry, frame in zip(manifest["vectors"], frames, strict=True):
        assert (tmp_path / "rec" / entry["file"]).read_bytes() == frame.data
        assert entry["produced_by"] == ("client" if frame.direction == "c2s" else "namesrv")
    first = manifest["vectors"][0]
    assert (first["code"], first["opaque"], first["flag"], first["serialize_type"]) == (105, 7, 0, "JSON")


def test_proxy_forwards_garbage_it_cannot_split(server: Server) -> None:
    route = ProxyRoute(("127.0.0.1", 0), server.address)
    with (
        Recorder([route]) as recorder,
        socket.create_connection(parse_address(recorder.listen_addresses[0]), timeout=5) as client,
    ):
        client.sendall(b"\xff\xff\xff\xff")
        client.shutdown(socket.SHUT_WR)
        assert client.recv(10) == b""  # the server saw a bad frame and closed; so did the proxy
        stats = recorder.statistics()
    assert stats["unsplittable_streams"] == 1
    assert stats["bytes_c2s"] == 4


def test_stop_closes_the_listener_and_a_failed_target_is_counted() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[:2]
    recorder = Recorder([ProxyRoute(("127.0.0.1", 0), dead)]).start()
    address = parse_address(recorder.listen_addresses[0])
    with socket.create_connection(address, timeout=5) as client:
        assert client.recv(10) == b""
    recorder.stop()
    recorder.stop()
    assert recorder.statistics()["failed_connects"] == 1
    with pytest.raises(ClusterError, match="starts once"):
        recorder.start()
    with pytest.raises(ConnectionRefusedError), socket.create_connection(address, timeout=1):
        pass


def test_a_taken_listen_address_is_a_cluster_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        route = ProxyRoute(taken.getsockname()[:2], ("127.0.0.1", 9))
        with pytest.raises(ClusterError, match="cannot listen"):
            Recorder([route]).start()
    with pytest.raises(ClusterError):
        Recorder([])


def _frame(seq: int, conn: int, direction: str, phase: str, cmd: RemotingCommand) -> RecordedFrame:
    return RecordedFrame(seq, conn, "broker", direction, phase, cmd.encode())  # type: ignore[arg-type]


def test_select_vectors_pairs_by_connection_and_opaque() -> None:
    req = RemotingCommand(14, opaque=1, ext_fields={"topic": "T"})
    other_conn_reply = RemotingCommand.response(req, 22)
    reply = RemotingCommand.response(req, 0, ext_fields={"offset": "5"})
    oneway = RemotingCommand(15, opaque=2, flag=2)
    frames = [
        _frame(1, 1, "c2s", "p", req),
        _frame(2, 2, "s2c", "p", other_conn_reply),  # same opaque, another connection
        _frame(3, 1, "s2c", "p", reply),
        _frame(4, 1, "c2s", "p", oneway),
    ]
    infos = describe_frames(frames)
    exchanges = pair_exchanges(infos)
    assert [(e.request.frame.seq, e.response.frame.seq if e.response else None) for e in exchanges] == [
        (1, 3),
        (4, None),
    ]
    wanted = [
        Want("query", "p", 14, "a query"),
        Want("update", "p", 15, "a oneway update", with_response=False),
        Want("maybe", "p", 38, "not recorded", required=False),
    ]
    chosen = select_vectors(infos, wanted)
    assert [(info.frame.seq, key) for info, key, _ in chosen] == [
        (1, "query/request"),
        (3, "query/response"),
        (4, "update/request"),
    ]
    with pytest.raises(ClusterError, match="lacks the exchanges missing"):
        select_vectors(infos, [Want("missing", "p", 38, "absent")])


def test_record_command_writes_frames_and_manifest(server: Server, tmp_path: Path) -> None:
    port = pick_port_block([0], set())
    replies: list[RemotingCommand] = []

    def client() -> None:
        for _ in range(200):
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            except ConnectionRefusedError:
                threading.Event().wait(0.02)
                continue
            with sock:
                sock.sendall(ROUTE.encode())
                replies.extend(_read_commands(sock, 1))
            return

    thread = threading.Thread(target=client)
    thread.start()
    target = f"{server.address[0]}:{server.address[1]}"
    out = tmp_path / "rec"
    args = ["record", "--listen", f"127.0.0.1:{port}", "--target", target, "--out", str(out)]
    assert main([*args, "--label", "namesrv", "--seconds", "1.5"]) == 0
    thread.join(timeout=5)
    assert [r.opaque for r in replies] == [7]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert [e["file"] for e in manifest["vectors"]] == [
        "0001-c2s-namesrv-GET_ROUTEINFO_BY_TOPIC-json.bin",
        "0002-s2c-namesrv-GET_ROUTEINFO_BY_TOPIC-SUCCESS-json.bin",
    ]
    assert (out / "0001-c2s-namesrv-GET_ROUTEINFO_BY_TOPIC-json.bin").read_bytes() == ROUTE.encode()
