"""What every test cluster offers, whatever runs it (local JVMs, Docker, or an external cluster)."""

from __future__ import annotations

import abc
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

from rocketmq_py.errors import ClusterError, RocketMQError

if TYPE_CHECKING:
    from rocketmq_py.protocol._bodies import TopicRouteData
from rocketmq_py.testing._distribution import DEFAULT_VERSION
from rocketmq_py.testing._tools import ToolResult, run_java_bench, run_mqadmin

__all__ = ["CLUSTER_NAME", "BrokerInfo", "Cluster", "broker_names", "cluster_info", "topic_route"]

#: ``brokerClusterName`` of the brokers we start.
CLUSTER_NAME = "DefaultCluster"


def broker_names(count: int) -> list[str]:
    """``broker-a``, ``broker-b``, ... for ``count`` brokers."""
    if not 1 <= count <= 26:
        raise ClusterError(f"brokers must be between 1 and 26, not {count}")
    return [f"broker-{chr(ord('a') + i)}" for i in range(count)]


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """One master broker: its name and the address clients connect to."""

    name: str
    address: str


class Cluster(abc.ABC):
    """A NameServer and its brokers, usable as a context manager that stops what it started."""

    backend: str = "?"

    def __init__(self, version: str = DEFAULT_VERSION) -> None:
        self.version = version
        self.cluster_name = CLUSTER_NAME

    # --- addresses -------------------------------------------------------------------------------

    @property
    @abc.abstractmethod
    def namesrv_addr(self) -> str:
        """``host:port`` of the NameServer."""

    @property
    @abc.abstractmethod
    def brokers(self) -> Sequence[BrokerInfo]:
        """The master brokers, in name order."""

    def broker_address(self, name: str) -> str:
        for broker in self.brokers:
            if broker.name == name:
                return broker.address
        raise ClusterError(
            f"no broker named {name!r} in this cluster ({', '.join(b.name for b in self.brokers)})"
        )

    # --- lifecycle and faults ----------------------------------------------------------------------

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop everything this object started (idempotent)."""

    def pause_broker(self, name: str) -> None:
        """Freeze a broker (SIGSTOP): connections stay open, nothing answers."""
        raise ClusterError(f"pausing brokers is not supported by the {self.backend} backend")

    def resume_broker(self, name: str) -> None:
        """Undo :meth:`pause_broker`."""
        raise ClusterError(f"resuming brokers is not supported by the {self.backend} backend")

    def block_broker(self, name: str) -> None:
        """Make a broker unreachable to clients (its ports black-holed); it stays registered."""
        raise ClusterError(f"blocking brokers is not supported by the {self.backend} backend")

    def unblock_broker(self, name: str) -> None:
        """Undo :meth:`block_broker`."""
        raise ClusterError(f"unblocking brokers is not supported by the {self.backend} backend")

    def kill_broker(self, name: str) -> None:
        """Kill a broker abruptly (SIGKILL); its store is kept for :meth:`restart_broker`."""
        raise ClusterError(f"killing brokers is not supported by the {self.backend} backend")

    def restart_broker(self, name: str) -> None:
        """Start a broker again on the same ports and store (killing it first if it runs)."""
        raise ClusterError(f"restarting brokers is not supported by the {self.backend} backend")

    def stop_namesrv(self) -> None:
        """Stop the NameServer (brokers keep running)."""
        raise ClusterError(f"stopping the NameServer is not supported by the {self.backend} backend")

    def start_namesrv(self) -> None:
        """Start the NameServer again on the same port."""
        raise ClusterError(f"starting the NameServer is not supported by the {self.backend} backend")

    def __enter__(self) -> Cluster:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- official tools against this cluster ---------------------------------------------------------

    def mqadmin(self, *args: str, timeout: float | None = 120.0) -> ToolResult:
        """Run mqadmin against this cluster's NameServer."""
        return run_mqadmin(args, namesrv=self.namesrv_addr, version=self.version, timeout=timeout)

    def java_bench(self, tool: str, *args: str, timeout: float | None = 600.0) -> ToolResult:
        """Run an official benchmark tool (``producer``, ``consumer``, ...) against this cluster."""
        return run_java_bench(tool, args, namesrv=self.namesrv_addr, version=self.version, timeout=timeout)

    def create_topic(self, topic: str, queues: int = 8, *, order: bool = False) -> None:
        """Create (or update) ``topic`` with ``queues`` read and write queues on every broker."""
        args = ["updateTopic", "-c", self.cluster_name, "-t", topic, "-r", str(queues), "-w", str(queues)]
        if order:
            args += ["-o", "true"]
        self.mqadmin(*args).check()
        self.wait_for_route(topic, queues * len(self.brokers))

    def wait_for_route(self, topic: str, queues: int, timeout: float = 30.0) -> None:
        """Wait until the NameServer's route for ``topic`` shows ``queues`` readable queues in all."""
        deadline = time.monotonic() + timeout
        seen = -1
        while time.monotonic() < deadline:
            seen = _route_queue_count(self.namesrv_addr, topic)
            if seen >= queues:
                return
            time.sleep(0.2)
        raise ClusterError(f"the route of {topic} shows {seen} queues after {timeout:.0f} s, not {queues}")

    def wait_until_registered(self, timeout: float = 60.0) -> None:
        """Wait until the NameServer lists every broker of this cluster."""
        deadline = time.monotonic() + timeout
        missing: list[str] = [b.name for b in self.brokers]
        while time.monotonic() < deadline:
            try:
                info = cluster_info(self.namesrv_addr)
            except (OSError, RocketMQError):
                info = {}
            missing = [b.name for b in self.brokers if info.get(b.name) != b.address]
            if not missing:
                return
            time.sleep(0.2)
        raise ClusterError(
            f"brokers {', '.join(missing)} did not register with {self.namesrv_addr} in {timeout:.0f} s"
        )


def _call(
    address: str, code: int, ext_fields: dict[str, str] | None = None, timeout: float = 3.0
) -> tuple[int, bytes]:
    """One blocking request/reply on a fresh socket (for readiness checks; not the client's transport)."""
    from rocketmq_py.protocol._command import RemotingCommand
    from rocketmq_py.protocol._frame import FrameBuffer

    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(RemotingCommand.request(code, ext_fields or {}).encode())
        buf = FrameBuffer()
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                raise ClusterError(f"{address} closed the connection before answering code {code}")
            for reply in buf.feed(chunk):
                if reply.is_response:
                    return reply.code, bytes(reply.body)


def cluster_info(namesrv: str) -> dict[str, str]:
    """Broker name -> master address, from the NameServer's GET_BROKER_CLUSTER_INFO (code 106)."""
    from rocketmq_py.protocol._fastjson import parse_fastjson

    code, body = _call(namesrv, 106)
    if code != 0:
        return {}
    data = parse_fastjson(body)
    table = data.get("brokerAddrTable", {}) if isinstance(data, dict) else {}
    out: dict[str, str] = {}
    for name, broker in table.items():
        addrs = broker.get("brokerAddrs", {}) if isinstance(broker, dict) else {}
        master = addrs.get(0, addrs.get("0"))
        if isinstance(master, str):
            out[str(name)] = master
    return out


def topic_route(namesrv: str, topic: str) -> TopicRouteData | None:
    """The NameServer's route for ``topic`` (GET_ROUTEINFO_BY_TOPIC, code 105); None when it has none."""
    from rocketmq_py.protocol._bodies import TopicRouteData, decode_body

    code, body = _call(namesrv, 105, {"topic": topic, "acceptStandardJsonOnly": "true"})
    if code != 0:
        return None
    return decode_body(TopicRouteData, body)


def _route_queue_count(namesrv: str, topic: str) -> int:
    route = topic_route(namesrv, topic)
    return 0 if route is None else sum(q.read_queue_nums for q in route.queue_datas)
