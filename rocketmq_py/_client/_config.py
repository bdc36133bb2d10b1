"""Client settings shared by producers and consumers, with Java's defaults."""

from __future__ import annotations

import itertools
import os
import socket
import ssl
import time
from dataclasses import dataclass, field

from rocketmq_py._client._endpoint import namespace_of_endpoint, strip_endpoint_scheme
from rocketmq_py._transport import DEFAULT_CLOSE_ON_TIMEOUT
from rocketmq_py.errors import InvalidOption
from rocketmq_py.protocol import SerializeType, validate_namespace

__all__ = [
    "DEFAULT_HEARTBEAT_INTERVAL",
    "DEFAULT_POLL_NAMESRV_INTERVAL",
    "DEFAULT_REQUEST_TIMEOUT",
    "ClientConfig",
    "local_ip",
    "parse_namesrv_addrs",
    "unique_instance_name",
]

#: Java ``ClientConfig.mqClientApiTimeout``: NameServer and admin calls.
DEFAULT_REQUEST_TIMEOUT = 3.0
#: Java ``ClientConfig.pollNameServerInterval``: refresh routes of topics in use.
DEFAULT_POLL_NAMESRV_INTERVAL = 30.0
#: Java ``ClientConfig.heartbeatBrokerInterval``.
DEFAULT_HEARTBEAT_INTERVAL = 30.0

_instance_counter = itertools.count(1)


def unique_instance_name() -> str:
    """``<pid>#<n>#<ns>``: unique per process *and* per client (two clients never share one).

    Java uses ``<pid>#<nanoTime>`` once per process; a per-client counter keeps two consumers of one
    group in one process apart, so rebalancing sees two members.
    """
    return f"{os.getpid()}#{next(_instance_counter)}#{time.monotonic_ns()}"


def parse_namesrv_addrs(value: str | list[str] | tuple[str, ...]) -> list[str]:
    """``"host:port;host:port"`` (or a list) -> ``["host:port", ...]``.

    An entry may start with ``http://``, as a hosted instance's endpoint does (it is dropped: the
    remoting protocol is spoken there, as Java's ``ClientConfig.getNamesrvAddr`` does).

    Raises:
        InvalidOption: empty, or an entry is not ``host:port``.
    """
    items = value.split(";") if isinstance(value, str) else list(value)
    addrs = [strip_endpoint_scheme(a.strip()) for a in items if a.strip()]
    if not addrs:
        raise InvalidOption("no NameServer address given (namesrv='host:port;host:port' or ROCKETMQ_NAMESRV)")
    for addr in addrs:
        host, sep, port = addr.rpartition(":")
        if not sep or not host or not port.isdigit() or "/" in host:
            hint = " (an endpoint may start with http://, and nothing else)" if "/" in addr else ""
            raise InvalidOption(f"NameServer address {addr!r} is not host:port{hint}")
    return addrs


def local_ip(towards: str | None = None) -> str:
    """The local IP address used to reach ``towards`` (``host:port``), for the client id.

    No packet is sent: connecting a UDP socket only picks the route. Falls back to 127.0.0.1.
    """
    host, port = "8.8.8.8", 53
    if towards:
        h, _, p = towards.rpartition(":")
        host, port = h.strip("[]"), int(p)
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect((host, port))
            ip = s.getsockname()[0]
            return str(ip)
    except OSError:
        return "127.0.0.1"


@dataclass(slots=True, kw_only=True)
class ClientConfig:
    """Settings of one client (producer or consumer).

    Args:
        namesrv: ``"host:port;host:port"``; default ``ROCKETMQ_NAMESRV``.
        namespace: the client's namespace (Java ``ClientConfig.namespace``): topics and groups
            are ``<namespace>%<name>`` on the wire (``%RETRY%<namespace>%<group>`` for a retry
            topic) and plain in everything the client hands back. ``None``: the instance id of a
            hosted endpoint (``namesrv="http://MQ_INST_<id>_<x>.<region>...:8080"``), as Java
            does, else no namespace; ``""``: no namespace.
        instance_name: the part after ``@`` in the client id; default unique per client.
        client_ip: the part before ``@``; default the local address towards the NameServer.
        request_timeout: seconds for NameServer and admin calls.
        poll_namesrv_interval: seconds between route refreshes of topics in use.
        heartbeat_interval: seconds between heartbeats to every broker.
        serialize_type: header encoding of our requests (JSON, like Java's default).
        access_key: ACL access key (requests are signed when it and ``secret_key`` are set).
        secret_key: ACL secret key (kept out of reprs, logs and errors).
        security_token: an ACL STS token, sent as ``SecurityToken`` with each signed request.
        ssl_context: TLS for every connection.
        close_connection_on_timeout: a call that times out while nothing at all arrives on its
            connection closes that connection (its other calls fail with ConnectionFailed, the
            next call reconnects) instead of reusing a dead one; Java's
            ``clientCloseSocketIfTimeout`` (on by default; Java closes on every timeout).
    """

    namesrv: str | None = None
    namespace: str | None = None
    instance_name: str | None = None
    client_ip: str | None = None
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    poll_namesrv_interval: float = DEFAULT_POLL_NAMESRV_INTERVAL
    heartbeat_interval: float = DEFAULT_HEARTBEAT_INTERVAL
    serialize_type: SerializeType = SerializeType.JSON
    access_key: str | None = None
    # Secrets stay out of reprs (and so out of logs and tracebacks that show the config).
    secret_key: str | None = field(default=None, repr=False)
    security_token: str | None = field(default=None, repr=False)
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False)
    close_connection_on_timeout: bool = DEFAULT_CLOSE_ON_TIMEOUT

    def namesrv_addrs(self) -> list[str]:
        """The NameServer addresses: ``namesrv``, else ``$ROCKETMQ_NAMESRV``, split on ``;``.

        Raises:
            InvalidOption: none given, or an entry is not ``host:port``.
        """
        return parse_namesrv_addrs(self.namesrv or os.environ.get("ROCKETMQ_NAMESRV", ""))

    def checked_namespace(self) -> str | None:
        """``namespace`` checked (``""`` counts as none); when not given, the instance id of a
        hosted endpoint in ``namesrv`` (or ``$ROCKETMQ_NAMESRV``).

        Raises:
            InvalidOption: the namespace holds a character other than letters, digits, ``_``, ``-``.
        """
        namespace = self.namespace
        if namespace is None:
            namespace = namespace_of_endpoint(self.namesrv or os.environ.get("ROCKETMQ_NAMESRV"))
        try:
            return validate_namespace(namespace)
        except ValueError as exc:
            raise InvalidOption(str(exc)) from None

    def resolve_client_id(self) -> str:
        """``ip@instanceName``, fixing the defaults the first time."""
        if self.instance_name is None:
            self.instance_name = unique_instance_name()
        if self.client_ip is None:
            self.client_ip = local_ip(self.namesrv_addrs()[0])
        return f"{self.client_ip}@{self.instance_name}"
