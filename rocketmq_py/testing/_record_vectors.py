"""The scripted golden-vector session: a real cluster, recording proxies, the Java client.

``python -m rocketmq_py.testing record-vectors --out protocol/vectors`` runs it::

    Java client (protocol/recorder/RecordVectors.java)
        │ -n 127.0.0.1:N                      │ broker address from the route: 127.0.0.2:P
        ▼                                     ▼
    proxy 127.0.0.1:N ──► NameServer     proxy 127.0.0.2:P ──► broker 127.0.0.1:P

The broker binds ``127.0.0.1:P`` (``bindAddress``) but advertises ``127.0.0.2:P`` (``brokerIP1``),
so clients reach it only through the proxy and no route needs rewriting. The session runs the
driver four times (phases ``produce``, ``consume``, ``orderly`` and ``single``, the last with
``-Drocketmq.serialize.type=ROCKETMQ``), keeps the frames ``_vector_selection`` picks (its
``WANTED`` table) and writes them with ``manifest.json``; then ``AclSignature.java`` writes
``acl_signature.json``.
"""

from __future__ import annotations

import re
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._distribution import DEFAULT_VERSION, find_java, resolve_client
from rocketmq_py.testing._local import LocalCluster, pick_port_block
from rocketmq_py.testing._recorder import ProxyRoute, Recorder, parse_address
from rocketmq_py.testing._recording import (
    FrameInfo,
    describe_frames,
    manifest_entry,
    vector_file_name,
    write_manifest,
    write_recording,
)
from rocketmq_py.testing._tools import run_java
from rocketmq_py.testing._vector_selection import TOPIC, pair_exchanges, select_vectors

__all__ = ["DRIVER_DIR", "record_vectors"]

#: Where RecordVectors.java and AclSignature.java live (a source checkout, not the wheel).
DRIVER_DIR: Final = Path(__file__).resolve().parents[2] / "protocol" / "recorder"
#: The broker's advertised host: a second loopback address the proxy listens on.
ADVERTISED_HOST: Final = "127.0.0.2"
_JVM_OPTS: Final = ["-Xms64m", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
_BINARY: Final = "-Drocketmq.serialize.type=ROCKETMQ"
#: (phase, driver mode, extra JVM options, what the client side is).
_PHASES: Final = (
    ("produce", "produce", (), "DefaultMQProducer"),
    ("consume", "consume", (), "DefaultMQPushConsumer (MessageListenerConcurrently)"),
    ("orderly", "orderly", (), "DefaultMQPushConsumer (MessageListenerOrderly)"),
    ("single", "single", (_BINARY,), f"DefaultMQProducer, {_BINARY}"),
)
_SENT: Final = re.compile(r"^SENT (.*)$", re.MULTILINE)


# --- the session ---------------------------------------------------------------------------------


def _parse_sent(output: str) -> list[dict[str, Any]]:
    messages = []
    for line in _SENT.findall(output):
        fields: dict[str, Any] = dict(item.split("=", 1) for item in line.split())
        for key in ("queue", "offset", "length"):
            fields[key] = int(fields[key])
        messages.append(fields)
    return messages


def _java_version() -> str:
    proc = subprocess.run([find_java(), "-version"], capture_output=True, text=True, check=False)
    first = (proc.stderr or proc.stdout).splitlines()
    return first[0] if first else "unknown"


def _check_unreachable(host: str, port: int) -> None:
    """Fail unless nothing answers on the advertised address (bindAddress was honoured)."""
    with socket.socket() as sock:
        sock.settimeout(2.0)
        try:
            sock.connect((host, port))
        except OSError:
            return
    raise ClusterError(
        f"the broker answers on {host}:{port} although bindAddress=127.0.0.1: the proxy cannot take "
        "its advertised address"
    )


def _driver(name: str) -> Path:
    path = DRIVER_DIR / name
    if not path.is_file():
        raise ClusterError(f"{path} is missing: record-vectors runs from a source checkout")
    return path


def record_vectors(
    out: Path,
    *,
    version: str = DEFAULT_VERSION,
    client_version: str | None = None,
    keep_all: Path | None = None,
    log: Callable[[str], None] = print,
) -> list[Path]:
    """Run the whole session and write the chosen vectors, their manifest and the ACL vector.

    Args:
        out: the vectors directory (``.bin`` files, ``manifest.json``, ``acl_signature.json``
            are replaced; other files such as ``README.md`` are left alone).
        version: the server release.
        client_version: the ``rocketmq-client`` release (default: ``version``).
        keep_all: also write the complete recording here (every frame, for inspection).
        log: progress messages.

    Returns:
        The files written.
    """
    client_version = client_version or version
    record_driver = _driver("RecordVectors.java")
    acl_driver = _driver("AclSignature.java")
    client = resolve_client(client_version)
    client_desc = f"rocketmq-client {client_version}"
    config = {"brokerIP1": ADVERTISED_HOST, "bindAddress": "127.0.0.1"}
    sent: list[dict[str, Any]] = []
    with LocalCluster(1, version=version, broker_config=config).start() as cluster:
        broker = cluster.brokers[0]
        host, port = parse_address(broker.address)
        _check_unreachable(host, port)
        log(f"cluster up: namesrv {cluster.namesrv_addr}, {broker.name} advertised as {broker.address}")
        proxy_port = pick_port_block([0], set())
        routes = [
            ProxyRoute(("127.0.0.1", proxy_port), parse_address(cluster.namesrv_addr), "namesrv"),
            ProxyRoute((host, port), ("127.0.0.1", port), "broker"),
        ]
        with Recorder(routes) as recorder:
            recorder.phase = "setup"
            cluster.create_topic(TOPIC, 2)  # mqadmin reaches the broker through the proxy too
            for phase, mode, opts, _ in _PHASES:
                recorder.phase = phase
                log(f"phase {phase}: RecordVectors {mode}")
                result = run_java(
                    client.classpath,
                    str(record_driver),
                    [mode, recorder.listen_addresses[0], TOPIC],
                    jvm_opts=[*_JVM_OPTS, *opts],
                    timeout=300.0,
                ).check()
                sent += [dict(m, phase=phase) for m in _parse_sent(result.output)]
            recorder.phase = "end"
            frames = recorder.frames()
            stats = recorder.statistics()
        if stats["unsplittable_streams"] or stats["errors"]:
            raise ClusterError(f"the recording is damaged: {stats}")
        log(f"recorded {stats['frames']} frames on {stats['connections']} connections")

    producers = {phase: f"{client_desc} {what}" for phase, _, _, what in _PHASES}

    def produced_by(info: FrameInfo) -> str:
        if info.frame.direction == "s2c":
            return f"{info.frame.peer} {version}"
        return producers.get(info.frame.phase, "mqadmin")

    if keep_all is not None:
        write_recording(keep_all, frames, label="record-vectors, every frame", produced_by=produced_by)

    infos = describe_frames(frames)
    chosen = select_vectors(infos)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.bin"):
        old.unlink()
    written: list[Path] = []
    entries = []
    files_by_seq = {}
    for index, (info, _, _) in enumerate(chosen, start=1):
        files_by_seq[info.frame.seq] = vector_file_name(index, info)
    pairs = {e.request.frame.seq: e.response for e in pair_exchanges(infos) if e.response is not None}
    partner: dict[int, int] = {}
    for req_seq, resp in pairs.items():
        if req_seq in files_by_seq and resp.frame.seq in files_by_seq:
            partner[req_seq] = resp.frame.seq
            partner[resp.frame.seq] = req_seq
    for info, key, description in chosen:
        name = files_by_seq[info.frame.seq]
        (out / name).write_bytes(info.frame.data)
        written.append(out / name)
        other = partner.get(info.frame.seq)
        entries.append(
            manifest_entry(
                name,
                info,
                key=key,
                pair=files_by_seq[other] if other is not None else None,
                produced_by=produced_by(info),
                description=description,
            )
        )
    manifest = {
        "format": 1,
        "regenerate": "python -m rocketmq_py.testing record-vectors --out protocol/vectors",
        "server": f"Apache RocketMQ {version} (NameServer + one broker, jars from Maven Central)",
        "client": client_desc,
        "java": _java_version(),
        "topic": TOPIC,
        "broker": {"name": broker.name, "address": broker.address},
        "sent": sent,
        "vectors": entries,
    }
    write_manifest(out / "manifest.json", manifest)
    written.append(out / "manifest.json")

    log("AclSignature: signatures from AclClientRPCHook")
    acl = out / "acl_signature.json"
    run_java(client.classpath, str(acl_driver), [str(acl)], jvm_opts=_JVM_OPTS, timeout=120.0).check()
    written.append(acl)
    return written
