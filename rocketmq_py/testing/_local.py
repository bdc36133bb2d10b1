"""A real NameServer and brokers as local JVM processes, from the Maven Central jars.

Everything lives in one temporary work directory::

    <workdir>/namesrv/{namesrv.properties, stdout.log, home/logs/...}
    <workdir>/broker-a/{broker.conf, stdout.log, store/..., home/logs/...}
    <workdir>/broker-b-slave/...        a slave of broker-b (``slaves=["broker-b"]``)
    <workdir>/proxy/{rmq-proxy.json, stdout.log, home/logs/...}   a Proxy (``proxy=True``)
    <workdir>/conf/plain_acl.yml        ACL on a 4.x cluster (``acl=True``)
    <workdir>/tools-home/conf/tools.yml the ACL account mqadmin signs with
    <workdir>/tls/{ca,server}.{pem,key} TLS (``tls=True``)

How a node is launched (its config file, JVM command line, ``-Duser.home`` inside its directory) is
in :mod:`rocketmq_py.testing._jvm_nodes`; this module runs the processes. Ports are
free loopback ports chosen at start; a broker uses three (``listenPort - 2`` for the VIP channel,
``listenPort``, ``listenPort + 1`` for HA), so they are picked as a block.

With ``relay=True`` (5.x brokers), clients reach each broker through a relay in this process that
:meth:`LocalCluster.block_broker` can cut (:mod:`rocketmq_py.testing._broker_relay`; no root needed).

Brokers register with the NameServer every :data:`REGISTER_PERIOD_MS` (Java: 30 s), the shortest
period a broker accepts, so a restarted NameServer lists them all again within seconds.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._acl import (
    Credentials,
    acl_broker_config,
    write_plain_acl,
    write_tools_credentials,
)
from rocketmq_py.testing._broker_relay import RELAYED_BROKER_HOST, relay_problem, start_broker_relay
from rocketmq_py.testing._cluster import BrokerInfo, Cluster, broker_names
from rocketmq_py.testing._distribution import (
    DEFAULT_VERSION,
    resolve_proxy,
    resolve_server,
    write_home_conf,
)
from rocketmq_py.testing._jvm_nodes import PROXY_BOOT, NodeLauncher, no_tls_file, node_log, proxy_config
from rocketmq_py.testing._processes import (
    JvmProcess,
    Registry,
    cleanup_stale,
    on_exit,
    process_start_time,
    wait_for_line,
)
from rocketmq_py.testing._registration import NAMESRV_REREGISTER_TIMEOUT, ask_to_register, await_registration
from rocketmq_py.testing._relay import TcpRelay
from rocketmq_py.testing._settings import (
    REGISTER_PERIOD_MS,
    broker_config,
    pick_port_block,
    render_properties,
)
from rocketmq_py.testing._tls import TlsFiles, make_tls_files

__all__ = [
    "NAMESRV_REREGISTER_TIMEOUT",
    "REGISTER_PERIOD_MS",
    "SLAVE_SUFFIX",
    "LocalCluster",
    "broker_config",
    "pick_port_block",
    "render_properties",
]

#: A slave's node name is its broker name plus this (``broker-b-slave``): the name its faults take.
SLAVE_SUFFIX = "-slave"
#: Seconds after boot before a broker that has not registered is asked to (see ``start``).
BOOT_REGISTER_GRACE = 2.0

log = logging.getLogger(__name__)

_NAMESRV_BOOT = "The Name Server boot success"
_BROKER_BOOT = "boot success"


def _nothing() -> None:
    pass


class LocalCluster(Cluster):
    """A NameServer and ``brokers`` master brokers (and slaves) as JVM processes on 127.0.0.1.

    Args:
        brokers: how many brokers (``broker-a``, ``broker-b``, ...), all in cluster ``DefaultCluster``.
        version: the Apache RocketMQ release (jars from Maven Central).
        detached: keep the JVMs running when this Python process exits (the ``up`` command).
        broker_config: extra broker.conf entries, applied to every broker.
        boot_timeout: seconds to wait for each boot-success line.
        acl: ACL on every broker (4.x: ``plain_acl.yml``; 5.x: ACL 2.0 with a SUPER user), with
            these credentials, or fresh random ones for ``True``; see :attr:`credentials`.
        tls: NameServer and brokers enforce TLS with a certificate from a CA made for this cluster;
            :attr:`ssl_context` trusts it. Needs the ``openssl`` tool.
        slaves: broker names that get one slave each (``brokerId`` 1, node ``<name>-slave``); the
            brokers of such a cluster serve pulls from slaves (``slaveReadEnable=true``: 5.x slaves
            refuse every pull without it).
        relay: clients reach each broker through a TCP relay in this process, so that
            :meth:`block_broker` can black-hole it without root or iptables (5.x brokers: a 4.x
            broker listens on every address and cannot have a relay in front of it; not with
            ``detached``, whose brokers outlive this process, nor with a ``brokerIP1`` of your own).
        proxy: (5.x) a Proxy in cluster mode in front of the cluster (``rocketmq-proxy`` jars of the
            same release): :attr:`proxy_addr` is its remoting port, which clients take as their
            NameServer (``client_options(proxy=True)``); its gRPC port is :attr:`proxy_grpc_addr`.
        clients_via_proxy: (with ``proxy``) :attr:`namesrv_addr` and :meth:`client_options` give
            the Proxy, so that code written for a plain cluster runs through it; the kit's own
            admin calls and tools keep the NameServer (:attr:`admin_namesrv_addr`).

    :meth:`client_options` gives the keyword arguments that connect a client to any of these shapes.
    The fault methods take node names: ``broker-b`` (the master) or ``broker-b-slave``.
    """

    backend = "jar"

    def __init__(
        self,
        brokers: int = 1,
        *,
        version: str = DEFAULT_VERSION,
        detached: bool = False,
        broker_config: Mapping[str, str] | None = None,
        boot_timeout: float = 90.0,
        workdir: Path | None = None,
        acl: bool | Credentials = False,
        tls: bool = False,
        slaves: Sequence[str] = (),
        relay: bool = False,
        proxy: bool = False,
        clients_via_proxy: bool = False,
    ) -> None:
        super().__init__(version)
        if clients_via_proxy and not proxy:
            raise ClusterError("clients_via_proxy needs proxy=True")
        self._clients_via_proxy = clients_via_proxy
        if proxy and version.startswith("4."):
            raise ClusterError(f"RocketMQ {version} has no Proxy: it came with 5.0")
        if proxy and (acl or tls):
            raise ClusterError("a Proxy in front of an ACL or TLS cluster is not set up by the launcher yet")
        self._with_proxy = proxy
        self._proxy: JvmProcess | None = None
        self._proxy_ports = (0, 0)
        self._names = broker_names(brokers)
        problem = relay_problem(version, detached=detached, broker_config=broker_config or {})
        if relay and problem:
            raise ClusterError(problem)
        self._relayed = relay
        self._relay: TcpRelay | None = None
        unknown = [s for s in slaves if s not in self._names]
        if unknown:
            raise ClusterError(f"slaves for unknown brokers {unknown} (have {', '.join(self._names)})")
        self._slave_of = {f"{name}{SLAVE_SUFFIX}": name for name in dict.fromkeys(slaves)}
        self._nodes = [*self._names, *self._slave_of]
        self.credentials = Credentials.generate() if acl is True else (acl or None)
        self._tls = tls
        self._tls_files: TlsFiles | None = None
        self._detached = detached
        self._extra = dict(broker_config or {})
        self._boot_timeout = boot_timeout
        self._workdir_arg = workdir
        self.cluster_id = f"{'up' if detached else 'py'}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.workdir = Path()
        self._namesrv_port = 0
        self._broker_ports: dict[str, int] = {}
        self._namesrv: JvmProcess | None = None
        self._brokers: dict[str, JvmProcess] = {}
        self._registry: Registry | None = None
        self._cancel_atexit: Callable[[], None] = _nothing
        self._stopped = False
        #: Seconds each phase took on the last start (``resolve``, ``namesrv``, ``brokers``, ``registered``).
        self.timings: dict[str, float] = {}

    # --- addresses -------------------------------------------------------------------------------

    @property
    def namesrv_addr(self) -> str:
        """``127.0.0.1:port`` of the NameServer clients are given: the Proxy's remoting port with
        ``clients_via_proxy``, else the NameServer's."""
        if self._clients_via_proxy:
            return f"127.0.0.1:{self._proxy_ports[0]}"
        return self.admin_namesrv_addr

    @property
    def admin_namesrv_addr(self) -> str:
        """``127.0.0.1:port`` of the NameServer itself (admin calls, tools, the brokers' registration)."""
        return f"127.0.0.1:{self._namesrv_port}"

    @property
    def brokers(self) -> list[BrokerInfo]:
        """The master brokers, in name order (address as advertised: ``brokerIP1``, else 127.0.0.1)."""
        return [self._info(n) for n in self._names]

    @property
    def slaves(self) -> list[BrokerInfo]:
        """The slaves (``broker_id`` 1), named after their masters, in the order ``slaves=`` gave them."""
        return [self._info(n) for n in self._slave_of]

    @property
    def proxy_addr(self) -> str | None:
        """``127.0.0.1:port`` of the Proxy's remoting port (``proxy=True``), else ``None``."""
        return f"127.0.0.1:{self._proxy_ports[0]}" if self._with_proxy else None

    @property
    def proxy_grpc_addr(self) -> str | None:
        """``127.0.0.1:port`` of the Proxy's gRPC port (``proxy=True``), else ``None``."""
        return f"127.0.0.1:{self._proxy_ports[1]}" if self._with_proxy else None

    def _info(self, node: str) -> BrokerInfo:
        host = self._extra.get("brokerIP1", "127.0.0.1")  # the address the broker advertises
        name = self._slave_of.get(node, node)
        return BrokerInfo(name, f"{host}:{self._broker_ports[node]}", 1 if node in self._slave_of else 0)

    def expected_members(self) -> list[BrokerInfo]:
        """The running brokers (a killed one is not expected to register)."""
        return [self._info(n) for n in self._nodes if n in self._brokers and self._brokers[n].running()]

    def log_path(self, node: str) -> Path:
        """The stdout/stderr log of ``node`` (``namesrv`` or a broker name)."""
        return node_log(self.workdir, node)

    # --- start -----------------------------------------------------------------------------------

    def start(self) -> LocalCluster:
        """Resolve the jars, start the NameServer and the brokers, wait until all are registered."""
        cleanup_stale()
        t0 = time.monotonic()
        classpath = resolve_server(self.version)
        t1 = time.monotonic()
        self.timings["resolve"] = t1 - t0
        self.workdir = self._workdir_arg or Path(tempfile.mkdtemp(prefix="rocketmq-py-"))
        write_home_conf(self.workdir)
        self._prepare_shape()
        taken: set[int] = set()
        self._namesrv_port = pick_port_block([0], taken)
        for name in self._nodes:
            self._broker_ports[name] = pick_port_block([-2, 0, 1], taken)
        if self._with_proxy:
            remoting = pick_port_block([0], taken)
            self._proxy_ports = (remoting, pick_port_block([0], taken))
        if self._relayed:
            self._relay = start_broker_relay(f"relay-{self.cluster_id}", self._broker_ports)
        self._registry = Registry(
            cluster_id=self.cluster_id,
            owner_pid=os.getpid(),
            owner_start=process_start_time(os.getpid()),
            detached=self._detached,
            workdir=str(self.workdir),
            namesrv=self.admin_namesrv_addr,
            brokers={n: self._info(n).address for n in self._nodes},
            version=self.version,
            shape={"acl": self.credentials is not None, "tls": self._tls, "proxy": self._with_proxy},
        )
        self._registry.save()
        if not self._detached:
            self._cancel_atexit = on_exit(self.stop)
        launcher = NodeLauncher(
            self.workdir, classpath, self.cluster_id, self.version, self._tls_files, self._detached
        )
        try:
            self._namesrv = launcher.namesrv(self._namesrv_port)
            self._start_node("namesrv", self._namesrv, _NAMESRV_BOOT)
            t2 = time.monotonic()
            self.timings["namesrv"] = t2 - t1
            for name in self._nodes:
                self._brokers[name] = launcher.broker(name, self.broker_conf(name))
                self._brokers[name].start()
                self._record_pid(name, self._brokers[name])
            for name in self._nodes:  # brokers boot in parallel; wait for each
                wait_for_line(self._brokers[name], _BROKER_BOOT, self._boot_timeout, f"broker {name}")
            t3 = time.monotonic()
            self.timings["brokers"] = t3 - t2
            # A broker skips its registration at boot when its client has not yet found the
            # NameServer reachable (seen with TLS: the first registration came 10 s later, on the
            # timer); ask it after a moment instead of waiting for the timer.
            self._await_registration(ask_after=BOOT_REGISTER_GRACE)
            self.timings["registered"] = time.monotonic() - t3
            if self._with_proxy:
                t4 = time.monotonic()
                conf = proxy_config(self.cluster_name, self.admin_namesrv_addr, *self._proxy_ports)
                self._proxy = launcher.proxy(resolve_proxy(self.version), conf)
                self._start_node("proxy", self._proxy, PROXY_BOOT)
                self.timings["proxy"] = time.monotonic() - t4
        except BaseException:
            self.stop()
            raise
        return self

    def _prepare_shape(self) -> None:
        """Certificates, ACL files and the tools' home, before any JVM starts."""
        if self._tls:
            self._tls_files = make_tls_files(self.workdir / "tls")
            self.ssl_context = self._tls_files.client_context()
        tools_home = self.workdir / "tools-home"
        write_home_conf(tools_home)
        if self.credentials is not None:
            write_plain_acl(self.workdir, self.version, self.credentials)
            write_tools_credentials(tools_home, self.credentials)

    def _tool_settings(self) -> tuple[list[str], Path | None]:
        if self.credentials is None and self._tls_files is None:
            return [], None  # a plain cluster shares the cached tools home
        flags = [] if self._tls_files is None else self._tls_files.tool_properties(no_tls_file(self.workdir))
        return flags, self.workdir / "tools-home"

    def broker_conf(self, node: str) -> dict[str, str]:
        """The broker.conf entries of ``node`` (a broker name, or ``<name>-slave``)."""
        # 5.x slaves refuse every pull (SYSTEM_BUSY) unless slaveReadEnable is on (4.x serve them):
        # a cluster with slaves turns it on so that a slave can stand in for a dead master.
        extra = {"slaveReadEnable": "true"} if self._slave_of else {}
        extra.update(self._extra)
        if self.credentials is not None:
            extra.update(acl_broker_config(self.version, self.credentials))
        if self._relayed:
            extra["bindAddress"] = RELAYED_BROKER_HOST  # the relay has 127.0.0.1 and these ports
        info = self._info(node)
        return broker_config(
            info.name,
            namesrv=self.admin_namesrv_addr,
            port=self._broker_ports[node],
            store=self.workdir / node / "store",
            extra=extra,
            broker_id=info.broker_id,
        )

    def _record_pid(self, name: str, proc: JvmProcess) -> None:
        if self._registry is not None:
            self._registry.pids[name] = proc.pid
            self._registry.save()

    def _start_node(self, name: str, proc: JvmProcess, needle: str) -> None:
        proc.start()
        self._record_pid(name, proc)
        wait_for_line(proc, needle, self._boot_timeout, name)

    # --- faults ----------------------------------------------------------------------------------

    def _broker(self, name: str) -> JvmProcess:
        try:
            return self._brokers[name]
        except KeyError:
            raise ClusterError(f"no broker named {name!r} (have {', '.join(self._brokers)})") from None

    def pause_broker(self, name: str) -> None:
        """Freeze the node's JVM (SIGSTOP to its process group): connections stay open, nothing answers."""
        self._broker(name).signal_group(signal.SIGSTOP)

    def resume_broker(self, name: str) -> None:
        """Undo :meth:`pause_broker` (SIGCONT)."""
        self._broker(name).signal_group(signal.SIGCONT)

    def block_broker(self, name: str) -> None:
        """Black-hole the node for clients: its relay stops forwarding (open connections go silent
        both ways) and stops accepting (connects hang). The broker keeps running and stays
        registered with the NameServer, so routes still send clients to it.

        Raises:
            ClusterError: no such node, or the cluster was not started with ``relay=True``.
        """
        self._node_relay(name).block(name)

    def unblock_broker(self, name: str) -> None:
        """Undo :meth:`block_broker`: what was held flows on, waiting connects complete."""
        self._node_relay(name).unblock(name)

    def _node_relay(self, name: str) -> TcpRelay:
        self._broker(name)  # known name
        if self._relay is None:
            raise ClusterError(
                "block_broker needs a started cluster with relay=True (clients then reach the brokers "
                "through a relay in this process that can cut them)"
            )
        return self._relay

    def kill_broker(self, name: str) -> None:
        """SIGKILL the node's JVM; its store is kept for :meth:`restart_broker`."""
        self._broker(name).kill()

    def restart_broker(self, name: str) -> None:
        """Kill the node if it runs, start it on the same ports and store, wait until it is registered."""
        proc = self._broker(name)
        proc.kill()
        # The shutdown of a killed broker leaves its lock file; the store recovers on start.
        self._start_node(name, proc, _BROKER_BOOT)
        self.wait_until_registered()

    def kill_proxy(self) -> None:
        """SIGKILL the Proxy (``proxy=True``); :meth:`restart_proxy` brings it back on its ports."""
        self._require_proxy().kill()

    def restart_proxy(self) -> None:
        """Kill the Proxy if it runs, start it again on the same ports, wait for its boot line."""
        proc = self._require_proxy()
        proc.kill()
        self._start_node("proxy", proc, PROXY_BOOT)

    def _require_proxy(self) -> JvmProcess:
        if self._proxy is None:
            raise ClusterError("this cluster has no Proxy (start it with proxy=True)")
        return self._proxy

    def stop_namesrv(self) -> None:
        """Kill the NameServer (brokers keep running); :meth:`start_namesrv` brings it back."""
        if self._namesrv is not None:
            self._namesrv.kill()

    def start_namesrv(self) -> None:
        """Start the NameServer again and wait until every running broker is registered with it.

        A restarted NameServer knows no broker: each registers again on its own timer
        (:data:`REGISTER_PERIOD_MS`), and only once its client has seen the NameServer reachable (a
        scan every 3 s). A broker still missing a period later is asked to register at once, so this
        returns as soon as the cluster is complete and fails only if a running broker never answers.
        """
        if self._namesrv is None:
            raise ClusterError("the cluster was never started")
        if not self._namesrv.running():
            self._start_node("namesrv", self._namesrv, _NAMESRV_BOOT)
        self._await_registration(ask_after=REGISTER_PERIOD_MS / 1000 + 3.0)

    def _await_registration(self, ask_after: float) -> None:
        """Wait until the NameServer lists every running broker (:func:`await_registration`).

        Raises:
            ClusterError: a running broker is still missing after :data:`NAMESRV_REREGISTER_TIMEOUT`.
        """
        ask = functools.partial(ask_to_register, ssl_context=self.ssl_context, credentials=self.credentials)
        await_registration(
            self.missing_members,
            ask,
            lambda: self.wait_until_registered(timeout=0.0),  # raises, naming the missing brokers
            namesrv=self.admin_namesrv_addr,
            ask_after=ask_after,
        )

    def broker_running(self, name: str) -> bool:
        """Whether the node's JVM is running (a paused one counts as running)."""
        return self._broker(name).running()

    # --- stop ------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Kill every JVM, delete the work directory and forget the cluster; idempotent."""
        if self._stopped:
            return
        self._stopped = True
        self._cancel_atexit()
        nodes = [*([self._proxy] if self._proxy else []), *self._brokers.values()]
        for proc in [*nodes, *([self._namesrv] if self._namesrv else [])]:
            proc.kill()
        if self._relay is not None:
            self._relay.close()
        if self._registry is not None:
            self._registry.discard()
        elif self.workdir != Path() and self._workdir_arg is None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def detach(self) -> Registry:
        """Forget the JVMs without stopping them (they stay in the registry for ``down``)."""
        if not self._detached or self._registry is None:
            raise ClusterError("only a cluster started with detached=True can be left running")
        self._stopped = True
        return self._registry

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            if not self._detached:
                self.stop()
