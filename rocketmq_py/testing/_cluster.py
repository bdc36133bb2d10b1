"""What every test cluster offers, whatever runs it (local JVMs, Docker, or an external cluster)."""

from __future__ import annotations

import abc
import contextlib
import socket
import ssl
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from rocketmq_py.errors import ClusterError, RocketMQError

if TYPE_CHECKING:
    from rocketmq_py.protocol._admin_headers import UpdateAndCreateTopicRequestHeader
    from rocketmq_py.protocol._bodies import TopicRouteData
    from rocketmq_py.protocol._command import RemotingCommand
    from rocketmq_py.testing._acl import Credentials
from rocketmq_py.testing._distribution import DEFAULT_VERSION
from rocketmq_py.testing._tools import ToolResult, run_java_bench, run_mqadmin

__all__ = [
    "CLUSTER_NAME",
    "BrokerInfo",
    "Cluster",
    "broker_names",
    "cluster_info",
    "cluster_members",
    "topic_route",
]

#: ``brokerClusterName`` of the brokers we start.
CLUSTER_NAME = "DefaultCluster"


def broker_names(count: int) -> list[str]:
    """``broker-a``, ``broker-b``, ... for ``count`` brokers."""
    if not 1 <= count <= 26:
        raise ClusterError(f"brokers must be between 1 and 26, not {count}")
    return [f"broker-{chr(ord('a') + i)}" for i in range(count)]


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """One broker: its name, the address clients connect to, and its id (0 = master, 1 = slave)."""

    name: str
    address: str
    broker_id: int = 0


class Cluster(abc.ABC):
    """A NameServer and its brokers, usable as a context manager that stops what it started."""

    backend: str = "?"

    def __init__(self, version: str = DEFAULT_VERSION) -> None:
        self.version = version
        self.cluster_name = CLUSTER_NAME
        #: The ACL account clients sign with, when the cluster has ACL on.
        self.credentials: Credentials | None = None
        #: A client TLS context that trusts the cluster, when it enforces TLS.
        self.ssl_context: ssl.SSLContext | None = None

    # --- addresses -------------------------------------------------------------------------------

    @property
    @abc.abstractmethod
    def namesrv_addr(self) -> str:
        """``host:port`` of the NameServer."""

    @property
    @abc.abstractmethod
    def brokers(self) -> Sequence[BrokerInfo]:
        """The master brokers, in name order."""

    @property
    def slaves(self) -> Sequence[BrokerInfo]:
        """The slave brokers (``broker_id`` 1), in name order; none unless the cluster has them."""
        return []

    @property
    def admin_namesrv_addr(self) -> str:
        """``host:port`` of the NameServer the kit's admin calls and tools use: :attr:`namesrv_addr`,
        unless that is a Proxy the clients go through (``LocalCluster(clients_via_proxy=True)``)."""
        return self.namesrv_addr

    @property
    def proxy_addr(self) -> str | None:
        """``host:port`` of a Proxy's remoting port in front of the cluster, if it has one."""
        return None

    def client_options(self, *, proxy: bool = False) -> dict[str, Any]:
        """Keyword arguments that connect a client to this cluster, ACL and TLS included.

        ``Producer(group, **cluster.client_options())`` (also ``PushConsumer``, ``LitePullConsumer``,
        ``ClientConfig``): ``namesrv``, plus ``access_key`` / ``secret_key`` and ``ssl_context`` when the
        cluster has ACL or TLS on. ``proxy=True``: through the cluster's Proxy (its remoting port is
        the client's NameServer).

        Raises:
            ClusterError: ``proxy=True`` and the cluster has no Proxy.
        """
        namesrv = self.namesrv_addr
        if proxy:
            if self.proxy_addr is None:
                raise ClusterError(f"this {self.backend} cluster has no Proxy in front of it")
            namesrv = self.proxy_addr
        options: dict[str, Any] = {"namesrv": namesrv}
        if self.credentials is not None:
            options["access_key"] = self.credentials.access_key
            options["secret_key"] = self.credentials.secret_key
        if self.ssl_context is not None:
            options["ssl_context"] = self.ssl_context
        return options

    def broker_address(self, name: str) -> str:
        """``host:port`` of the master broker ``name``.

        Raises:
            ClusterError: no broker of that name.
        """
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
        """Run mqadmin against this cluster's NameServer (with its ACL account and TLS settings)."""
        jvm_opts, home = self._tool_settings()
        return run_mqadmin(
            args,
            namesrv=self.admin_namesrv_addr,
            version=self.version,
            timeout=timeout,
            jvm_opts=jvm_opts,
            home=home,
        )

    def read_tool_file(self, path: str) -> bytes:
        """A file an official tool run by :meth:`mqadmin` wrote (e.g. ``queryMsgById``'s body file)."""
        return Path(path).read_bytes()

    def _tool_settings(self) -> tuple[list[str], Path | None]:
        """JVM flags and home directory for the Java tools (defaults: none, the shared tools home)."""
        return [], None

    def java_bench(self, tool: str, *args: str, timeout: float | None = 600.0) -> ToolResult:
        """Run an official benchmark tool (``producer``, ``consumer``, ...) against this cluster."""
        return run_java_bench(
            tool, args, namesrv=self.admin_namesrv_addr, version=self.version, timeout=timeout
        )

    def create_topic(
        self, topic: str, queues: int = 8, *, order: bool = False, message_type: str | None = None
    ) -> None:
        """Create (or update) ``topic`` with ``queues`` read and write queues on every master broker.

        ``message_type`` (5.x: ``NORMAL``, ``FIFO``, ``DELAY``, ``TRANSACTION``) is the topic's
        ``message.type`` attribute (``mqadmin updateTopic -a +message.type=DELAY``): a 5.x Proxy
        refuses a delay or transactional message for a topic of another type; brokers do not check
        it. 4.x brokers have no topic attributes, so it is not sent to them.

        What ``mqadmin updateTopic -c <cluster>`` does, without starting a JVM: UPDATE_AND_CREATE_TOPIC
        (code 17) to each master the NameServer lists, and for an order topic its ``broker:queues;...``
        order conf on the NameServer (PUT_KV_CONFIG); signed with the cluster's ACL account, over TLS
        when the cluster enforces it. Then waits until the NameServer's route shows the queues; a
        broker that still shows other counts after a few seconds is made to register the topic again
        (see :func:`rocketmq_py.admin._calls.reregistering_headers`).

        Raises:
            ClusterError: the NameServer lists no master, or a broker or the NameServer refused.
        """
        from rocketmq_py._client._route import PERM_READ, PERM_WRITE
        from rocketmq_py.admin._calls import ORDER_TOPIC_CONFIG, order_conf, topic_header
        from rocketmq_py.protocol._codes import RequestCode

        masters = cluster_info(self.admin_namesrv_addr, ssl_context=self.ssl_context)
        if not masters:
            raise ClusterError(f"the NameServer {self.admin_namesrv_addr} lists no master broker")
        header = topic_header(topic, queues, perm=PERM_READ | PERM_WRITE, order=order)
        if message_type is not None and not self.version.startswith("4."):
            header = replace(header, attributes=f"+message.type={message_type}")
        for name in sorted(masters):
            self._update_topic(masters[name], header)
        if order:
            conf = order_conf({name: queues for name in masters})
            kv = {"namespace": ORDER_TOPIC_CONFIG, "key": topic, "value": conf}
            self._ask(self.admin_namesrv_addr, RequestCode.PUT_KV_CONFIG, kv, f"creating topic {topic!r}")
        self._wait_for_topic(topic, {name: queues for name in masters}, masters, header)

    def _update_topic(self, address: str, header: UpdateAndCreateTopicRequestHeader) -> None:
        from rocketmq_py.protocol._codes import RequestCode
        from rocketmq_py.protocol._ext_fields import to_ext_fields

        fields = to_ext_fields(header)
        self._ask(address, RequestCode.UPDATE_AND_CREATE_TOPIC, fields, f"creating topic {header.topic!r}")

    def _ask(self, address: str, code: int, fields: dict[str, str], doing: str) -> None:
        reply = _request(address, code, fields, 10.0, b"", self.ssl_context, self.credentials)
        if reply.code != 0:
            raise ClusterError(f"{doing}: {address} answered code {reply.code}: {reply.remark or ''}")

    def _wait_for_topic(
        self,
        topic: str,
        wanted: dict[str, int],
        masters: dict[str, str],
        header: UpdateAndCreateTopicRequestHeader,
        timeout: float = 30.0,
    ) -> None:
        """Wait until the route shows ``wanted`` queues per broker, re-registering a stale broker.

        A broker can leave the NameServer with the topic's old queue count for good (see
        :func:`rocketmq_py.admin._calls.reregistering_headers`); one still stale after
        ``ROUTE_REREGISTER_AFTER`` seconds gets the two updates that make it register the topic again.
        """
        from rocketmq_py.admin._calls import ROUTE_REREGISTER_AFTER, reregistering_headers, stale_brokers

        deadline = time.monotonic() + timeout
        reregister_at = time.monotonic() + ROUTE_REREGISTER_AFTER
        while True:
            stale = stale_brokers(
                topic_route(self.admin_namesrv_addr, topic, ssl_context=self.ssl_context), wanted
            )
            if not stale:
                return
            now = time.monotonic()
            if now >= deadline:
                seen = _route_queue_count(self.admin_namesrv_addr, topic, self.ssl_context)
                raise ClusterError(
                    f"the route of {topic} shows {seen} queues after {timeout:.0f} s, not "
                    f"{sum(wanted.values())} (stale: {', '.join(stale)})"
                )
            if now >= reregister_at:
                for name in stale:
                    for update in reregistering_headers(header):
                        self._update_topic(masters[name], update)
                reregister_at = now + ROUTE_REREGISTER_AFTER
            time.sleep(0.2)

    def wait_for_route(self, topic: str, queues: int, timeout: float = 30.0) -> None:
        """Wait until the NameServer's route for ``topic`` shows ``queues`` readable queues in all."""
        deadline = time.monotonic() + timeout
        seen = -1
        while time.monotonic() < deadline:
            seen = _route_queue_count(self.admin_namesrv_addr, topic, self.ssl_context)
            if seen >= queues:
                return
            time.sleep(0.2)
        raise ClusterError(f"the route of {topic} shows {seen} queues after {timeout:.0f} s, not {queues}")

    def expected_members(self) -> list[BrokerInfo]:
        """The brokers the NameServer should list: every master and slave (a launcher: those running)."""
        return [*self.brokers, *self.slaves]

    def missing_members(self) -> list[BrokerInfo]:
        """The :meth:`expected_members` the NameServer does not list now (all of them if it does not answer)."""
        expected = self.expected_members()
        try:
            members = cluster_members(self.admin_namesrv_addr, ssl_context=self.ssl_context)
        except (OSError, RocketMQError):
            return expected
        return [b for b in expected if members.get(b.name, {}).get(b.broker_id) != b.address]

    def wait_until_registered(self, timeout: float = 60.0) -> None:
        """Wait until the NameServer lists every broker of this cluster (masters and slaves)."""
        deadline = time.monotonic() + timeout
        missing = self.missing_members()
        while missing and time.monotonic() < deadline:
            time.sleep(0.2)
            missing = self.missing_members()
        if missing:
            names = ", ".join(f"{b.name}/{b.broker_id} ({b.address})" for b in missing)
            raise ClusterError(
                f"brokers {names} did not register with {self.admin_namesrv_addr} in {timeout:.0f} s"
            )


@contextlib.contextmanager
def _connect(address: str, timeout: float, ssl_context: ssl.SSLContext | None) -> Iterator[socket.socket]:
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        if ssl_context is None:
            yield sock
            return
        with ssl_context.wrap_socket(sock, server_hostname=host) as tls:
            yield tls


def _call(
    address: str,
    code: int,
    ext_fields: dict[str, str] | None = None,
    timeout: float = 3.0,
    *,
    body: bytes = b"",
    ssl_context: ssl.SSLContext | None = None,
    credentials: Credentials | None = None,
) -> tuple[int, bytes]:
    """One blocking request/reply on a fresh socket (for readiness checks; not the client's transport).

    With ``credentials`` the request is signed as the client signs it (for ACL brokers).
    """
    reply = _request(address, code, ext_fields, timeout, body, ssl_context, credentials)
    return reply.code, bytes(reply.body)


def _request(
    address: str,
    code: int,
    ext_fields: dict[str, str] | None,
    timeout: float,
    body: bytes,
    ssl_context: ssl.SSLContext | None,
    credentials: Credentials | None,
) -> RemotingCommand:
    from rocketmq_py._transport._hooks import AclRPCHook
    from rocketmq_py.protocol._command import RemotingCommand
    from rocketmq_py.protocol._frame import FrameBuffer

    request = RemotingCommand.request(code, ext_fields or {}, body)
    if credentials is not None:
        request = AclRPCHook(credentials.access_key, credentials.secret_key).before_request(request)
    with _connect(address, timeout, ssl_context) as sock:
        sock.sendall(request.encode())
        buf = FrameBuffer()
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                raise ClusterError(f"{address} closed the connection before answering code {code}")
            for reply in buf.feed(chunk):
                if reply.is_response:
                    return reply


def cluster_members(namesrv: str, *, ssl_context: ssl.SSLContext | None = None) -> dict[str, dict[int, str]]:
    """Broker name -> {broker id: address}, from the NameServer's GET_BROKER_CLUSTER_INFO (code 106)."""
    from rocketmq_py.protocol._codes import RequestCode
    from rocketmq_py.protocol._fastjson import parse_fastjson

    code, body = _call(namesrv, RequestCode.GET_BROKER_CLUSTER_INFO, ssl_context=ssl_context)
    if code != 0:
        return {}
    data = parse_fastjson(body)
    table = data.get("brokerAddrTable", {}) if isinstance(data, dict) else {}
    out: dict[str, dict[int, str]] = {}
    for name, broker in table.items():
        addrs = broker.get("brokerAddrs", {}) if isinstance(broker, dict) else {}
        out[str(name)] = {int(k): v for k, v in addrs.items() if isinstance(v, str)}
    return out


def cluster_info(namesrv: str, *, ssl_context: ssl.SSLContext | None = None) -> dict[str, str]:
    """Broker name -> master address, from the NameServer's GET_BROKER_CLUSTER_INFO (code 106)."""
    members = cluster_members(namesrv, ssl_context=ssl_context)
    return {name: addrs[0] for name, addrs in members.items() if 0 in addrs}


def topic_route(
    namesrv: str, topic: str, *, ssl_context: ssl.SSLContext | None = None
) -> TopicRouteData | None:
    """The NameServer's route for ``topic`` (GET_ROUTEINFO_BY_TOPIC, code 105); None when it has none."""
    from rocketmq_py.protocol._bodies import TopicRouteData
    from rocketmq_py.protocol._codes import RequestCode
    from rocketmq_py.protocol._json_body import decode_body

    code, body = _call(
        namesrv,
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        {"topic": topic, "acceptStandardJsonOnly": "true"},
        ssl_context=ssl_context,
    )
    if code != 0:
        return None
    return decode_body(TopicRouteData, body)


def _route_queue_count(namesrv: str, topic: str, ssl_context: ssl.SSLContext | None) -> int:
    route = topic_route(namesrv, topic, ssl_context=ssl_context)
    return 0 if route is None else sum(q.read_queue_nums for q in route.queue_datas)
