"""A single-node KRaft Kafka on 127.0.0.1 for benchmarks, from the Maven Central jars, and a Metadata probe.

:class:`KafkaNode` resolves ``org.apache.kafka:kafka_2.13`` with
:func:`rocketmq_py.testing._distribution.resolve_maven`, writes a ``server.properties`` for one
combined broker and controller (``process.roles=broker,controller``, a static quorum of itself)
in a temporary directory, formats the storage with ``kafka.tools.StorageTool format`` and runs
``kafka.Kafka`` (``-Xmx1g``), a JVM tied to this process (``JvmProcess``: it dies with it). Its two
ports are taken from 39000-39099. Readiness is polled with a Metadata request, never a sleep.

The probe speaks just enough of Kafka's protocol to ask for a topic's partitions: Metadata v4,
the oldest version Kafka 4.x still serves (KIP-896 removed v0-v3), non-flexible::

    request  = int32 size | int16 api_key=3 | int16 api_version=4 | int32 correlation_id
               | string client_id | array topics: [string name] | int8 allow_auto_topic_creation
    response = int32 size | int32 correlation_id | int32 throttle_time_ms
               | array brokers: [int32 node_id, string host, int32 port, nullable string rack]
               | nullable string cluster_id | int32 controller_id
               | array topics: [int16 error_code, string name, int8 is_internal,
                                array partitions: [int16 error_code, int32 partition, int32 leader,
                                                   array int32 replicas, array int32 isr]]

(strings: int16 length then UTF-8, -1 for null; arrays: int32 count, -1 for null). Asking with
``allow_auto_topic_creation`` creates the topic with the node's ``num.partitions``.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from rocketmq_py.testing._distribution import Classpath, find_java, resolve_maven
from rocketmq_py.testing._processes import JvmProcess
from rocketmq_py.testing._settings import _port_free, render_properties

KAFKA_VERSION = "4.1.1"
KAFKA_SERVER = [f"org.apache.kafka:kafka_2.13:{KAFKA_VERSION}"]
#: Kafka's ports are picked here (and only here).
PORTS = range(39000, 39100)
HEAP = "1g"
_METADATA_KEY, _METADATA_VERSION = 3, 4


def kafka_properties(port: int, controller_port: int, log_dir: Path, partitions: int) -> dict[str, str]:
    """``server.properties`` of a combined broker+controller on 127.0.0.1, node 1, a quorum of itself."""
    return {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(log_dir),
        # A topic made by the probe (auto-creation) gets these partitions.
        "num.partitions": str(partitions),
        "auto.create.topics.enable": "true",
        "default.replication.factor": "1",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # The benchmark freezes the JVM (SIGSTOP) while the other broker's reader runs: at Kafka's
        # 9 s the controller would fence its own broker on waking (leaderless partitions a moment).
        "broker.session.timeout.ms": "600000",
    }


def random_cluster_id() -> str:
    """A Kafka cluster id: a random UUID as 22 characters of URL-safe base64 (``kafka-storage random-uuid``)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def free_ports(count: int, candidates: Iterable[int] = PORTS) -> list[int]:
    """``count`` ports of ``candidates`` free on 127.0.0.1 now, lowest first."""
    found = []
    for port in candidates:
        if _port_free(port):
            found.append(port)
            if len(found) == count:
                return found
    raise SystemExit(f"fewer than {count} free ports in {candidates}")


# --- the Metadata probe ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    name: str
    error_code: int
    #: partition -> leader node id (-1: none), for partitions without an error
    leaders: Mapping[int, int]


def _string(value: str | None) -> bytes:
    if value is None:
        return struct.pack(">h", -1)
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def metadata_request(correlation_id: int, topics: list[str] | None, auto_create: bool) -> bytes:
    """A whole Metadata v4 request frame (size prefix included); ``topics`` None asks for all."""
    body = struct.pack(">hhi", _METADATA_KEY, _METADATA_VERSION, correlation_id) + _string("bench-probe")
    if topics is None:
        body += struct.pack(">i", -1)
    else:
        body += struct.pack(">i", len(topics)) + b"".join(_string(t) for t in topics)
    body += struct.pack(">b", 1 if auto_create else 0)
    return struct.pack(">i", len(body)) + body


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return int(value)

    def string(self) -> str | None:
        size = self.take(">h")
        if size < 0:
            return None
        value = self.data[self.at : self.at + size].decode()
        self.at += size
        return value


def parse_metadata(frame: bytes) -> tuple[int, int, list[TopicMetadata]]:
    """(correlation id, broker count, topics) of a Metadata v4 response without its size prefix."""
    r = _Reader(frame)
    correlation_id = r.take(">i")
    r.take(">i")  # throttle_time_ms
    brokers = r.take(">i")
    for _ in range(max(brokers, 0)):
        r.take(">i"), r.string(), r.take(">i"), r.string()  # node, host, port, rack
    r.string()  # cluster id
    r.take(">i")  # controller id
    topics = []
    for _ in range(max(r.take(">i"), 0)):
        error_code, name = r.take(">h"), r.string() or ""
        r.take(">b")  # is_internal
        leaders = {}
        for _ in range(max(r.take(">i"), 0)):
            partition_error, partition, leader = r.take(">h"), r.take(">i"), r.take(">i")
            for _ in range(2):  # replicas, isr
                for _ in range(max(r.take(">i"), 0)):
                    r.take(">i")
            if partition_error == 0:
                leaders[partition] = leader
        topics.append(TopicMetadata(name, error_code, leaders))
    if r.at != len(frame):
        raise ValueError(f"Metadata v4 response: {len(frame) - r.at} bytes left over")
    return correlation_id, brokers, topics


def probe_metadata(
    port: int, topics: list[str] | None, auto_create: bool, timeout: float = 5.0
) -> tuple[int, list[TopicMetadata]]:
    """(broker count, topics) from the Kafka node on 127.0.0.1:``port``; OSError when it does not answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(metadata_request(1, topics, auto_create))
        size = struct.unpack(">i", _recv_exactly(sock, 4))[0]
        _, brokers, found = parse_metadata(_recv_exactly(sock, size))
    return brokers, found


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("Kafka closed the connection")
        data += chunk
    return data


def partitions_ready(topics: list[TopicMetadata], topic: str, partitions: int) -> bool:
    """Whether ``topic`` is known with ``partitions`` partitions, each with a leader."""
    for t in topics:
        if t.name == topic and t.error_code == 0:
            return len(t.leaders) == partitions and all(leader >= 0 for leader in t.leaders.values())
    return False


# --- the node -------------------------------------------------------------------------------------


class KafkaNode:
    """One KRaft Kafka (broker and controller in one JVM) on 127.0.0.1; a context manager."""

    def __init__(self, partitions: int, boot_timeout: float = 90.0) -> None:
        self.partitions = partitions
        self.boot_timeout = boot_timeout
        self.classpath: Classpath = resolve_maven("kafka", KAFKA_SERVER)
        self.port, self.controller_port = free_ports(2)
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.workdir = Path(tempfile.mkdtemp(prefix="bench-kafka-"))
        self.proc: JvmProcess | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def __enter__(self) -> KafkaNode:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        conf = self.workdir / "server.properties"
        conf.write_text(
            render_properties(
                kafka_properties(self.port, self.controller_port, self.workdir / "logs", self.partitions)
            )
        )
        java = [find_java(), f"-Xmx{HEAP}", f"-Xms{HEAP}", "-cp", self.classpath.classpath]
        # The kit's marker style, so that a leftover JVM can be told apart by its command line.
        java.append(f"-Drocketmq_py.bench=kafka-{os.getpid()}")
        formatted = subprocess.run(
            [*java, "kafka.tools.StorageTool", "format", "-t", random_cluster_id(), "-c", str(conf)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if formatted.returncode:
            raise SystemExit(
                f"kafka StorageTool format failed:\n{(formatted.stdout + formatted.stderr)[-3000:]}"
            )
        self.proc = JvmProcess(
            "kafka",
            [*java, "kafka.Kafka", str(conf)],
            log_path=self.workdir / "stdout.log",
            env=dict(os.environ),
            cwd=self.workdir,
            die_with_parent=True,
        )
        self.proc.start()
        self.wait_ready(None)

    def wait_ready(self, topic: str | None, auto_create: bool = False) -> None:
        """Poll Metadata until the node answers (and, with ``topic``, until all its partitions have a leader)."""
        assert self.proc is not None
        deadline = time.monotonic() + self.boot_timeout
        last: object = None
        while True:
            if not self.proc.running():
                raise SystemExit(f"Kafka exited ({self.proc.returncode()}):\n{self.proc.tail()}")
            try:
                brokers, topics = probe_metadata(self.port, [topic] if topic else [], auto_create)
                if brokers > 0 and (topic is None or partitions_ready(topics, topic, self.partitions)):
                    return
                last = topics
            except (OSError, ValueError, struct.error) as exc:
                last = exc
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"Kafka not ready within {self.boot_timeout:g} s (last: {last}):\n{self.proc.tail()}"
                )
            time.sleep(0.1)

    def create_topic(self, topic: str) -> None:
        """Create ``topic`` with :attr:`partitions` partitions (Metadata with auto-creation) and wait for its leaders."""
        self.wait_ready(topic, auto_create=True)

    def stop(self) -> None:
        """Kill the JVM (it may be frozen: SIGKILL works on a stopped process) and remove the work directory."""
        if self.proc is not None:
            self.proc.kill()
        with contextlib.suppress(OSError):
            shutil.rmtree(self.workdir)
