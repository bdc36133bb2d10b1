"""A 5.x controller-mode group on loopback: a NameServer with an embedded controller and one broker
group whose replicas elect their master (:class:`ControllerCluster`).

Everything lives in one temporary work directory::

    <workdir>/namesrv/{namesrv.properties, stdout.log, controller/ (the controller's Raft log), home/}
    <workdir>/broker-a-n0/{broker.conf, stdout.log, store/{brokerIdentity, ...}, home/}
    <workdir>/broker-a-n1/...   <workdir>/broker-a-n2/...

What each node is given and why is in :mod:`rocketmq_py.testing._controller`; the JVMs are
launched and guarded as a :class:`~rocketmq_py.testing.LocalCluster`'s are (the same
:class:`~rocketmq_py.testing._jvm_nodes.NodeLauncher`, registry and parent-death signal). It is a
class of its own rather than a shape of ``LocalCluster`` because its members are not fixed: which
node is the master, and under which id a slave registers, is the controller's choice and changes
when the master dies, so ``brokers``, ``slaves`` and the registration wait are computed, not
configured; and none of ``LocalCluster``'s other shapes (ACL, TLS, relay, Proxy) is set up for it.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from rocketmq_py.errors import ClusterError, RocketMQError
from rocketmq_py.testing._cluster import BrokerInfo, Cluster, cluster_members
from rocketmq_py.testing._controller import (
    CONTROLLER_BOOT,
    CONTROLLER_JAR_PREFIX,
    ReplicaInfo,
    controller_broker_config,
    controller_metadata,
    namesrv_controller_config,
    read_controller_id,
    replica_info,
)
from rocketmq_py.testing._distribution import DEFAULT_VERSION, Classpath, resolve_server, write_home_conf
from rocketmq_py.testing._jvm_nodes import NodeLauncher, node_log
from rocketmq_py.testing._local import _BROKER_BOOT, _NAMESRV_BOOT
from rocketmq_py.testing._processes import (
    JvmProcess,
    Registry,
    cleanup_stale,
    on_exit,
    process_start_time,
    wait_for_line,
)
from rocketmq_py.testing._settings import pick_port_block

__all__ = ["GROUP_NAME", "ControllerCluster", "check_controller_jars"]

#: The ``brokerName`` of the group.
GROUP_NAME = "broker-a"
T = TypeVar("T")
_NAMESRV_STAYS = "the NameServer of a controller-mode group is its controller; it is not stopped alone"


def _nothing() -> None:
    pass


def check_controller_jars(classpath: Classpath) -> None:
    """Make sure ``classpath`` holds the controller (``rocketmq-controller``, 5.x server jars).

    Raises:
        ClusterError: it does not.
    """
    if not any(classpath.lib.glob(f"{CONTROLLER_JAR_PREFIX}*.jar")):
        raise ClusterError(
            f"the {classpath.name} jars of RocketMQ {classpath.version} in {classpath.lib} have no "
            f"{CONTROLLER_JAR_PREFIX}*.jar: the controller came with 5.0"
        )


class ControllerCluster(Cluster):
    """A NameServer with an embedded controller and one broker group, ``broker-a``, of ``replicas``
    brokers in controller mode (5.x), as JVM processes on 127.0.0.1.

    The nodes are named ``broker-a-n0``, ``broker-a-n1``, ...; the controller elects one the master
    (the first to ask), the others are its slaves. :meth:`start` returns once the group has a
    master registered with the NameServer as ``brokerId`` 0, every slave is registered under the id
    the controller gave it, and every replica is in the master's sync state set, so that a dead
    master can be replaced at once. :meth:`kill_broker` of the master then makes the controller
    elect another, which :meth:`wait_for_master` waits for.

    Args:
        replicas: brokers in the group (at least 2: a master and a slave).
        version: the Apache RocketMQ release (5.x; jars from Maven Central).
        detached: keep the JVMs running when this Python process exits (the ``up`` command).
        broker_config: extra broker.conf entries, applied to every replica.
        boot_timeout: seconds to wait for each boot-success line.
        election_timeout: seconds to wait for a master, its registration and the sync state set.
        workdir: the work directory (default: a fresh temporary one, deleted by :meth:`stop`).

    Raises:
        ClusterError: a 4.x release (it has no controller mode), or fewer than 2 replicas.
    """

    backend = "jar"

    def __init__(
        self,
        replicas: int = 3,
        *,
        version: str = DEFAULT_VERSION,
        detached: bool = False,
        broker_config: Mapping[str, str] | None = None,
        boot_timeout: float = 90.0,
        election_timeout: float = 60.0,
        workdir: Path | None = None,
    ) -> None:
        super().__init__(version)
        if version.startswith("4."):
            raise ClusterError(f"RocketMQ {version} has no controller mode: it came with 5.0")
        if not 2 <= replicas <= 9:
            raise ClusterError(f"a controller-mode group needs 2 to 9 replicas, not {replicas}")
        #: The node names, ``broker-a-n0`` first.
        self.nodes = [f"{GROUP_NAME}-n{i}" for i in range(replicas)]
        self._detached = detached
        self._extra = dict(broker_config or {})
        self._boot_timeout = boot_timeout
        self._election_timeout = election_timeout
        self._workdir_arg = workdir
        self.cluster_id = f"{'up' if detached else 'py'}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.workdir = Path()
        self._namesrv_port = 0
        self._controller_port = 0
        self._ports: dict[str, int] = {}
        self._namesrv: JvmProcess | None = None
        self._brokers: dict[str, JvmProcess] = {}
        self._master: str | None = None
        self._registry: Registry | None = None
        self._cancel_atexit: Callable[[], None] = _nothing
        self._stopped = False
        #: Seconds each phase took on the last start (``resolve``, ``namesrv``, ``brokers``,
        #: ``elected``, ``in_sync``).
        self.timings: dict[str, float] = {}

    # --- addresses -------------------------------------------------------------------------------

    @property
    def namesrv_addr(self) -> str:
        """``127.0.0.1:port`` of the NameServer."""
        return f"127.0.0.1:{self._namesrv_port}"

    @property
    def controller_addr(self) -> str:
        """``127.0.0.1:port`` of the controller (its DLedger port; the brokers' ``controllerAddr``)."""
        return f"127.0.0.1:{self._controller_port}"

    def node_address(self, node: str) -> str:
        """``127.0.0.1:port`` of the broker ``node``."""
        self._known(node)
        return f"127.0.0.1:{self._ports.get(node, 0)}"

    @property
    def master(self) -> str | None:
        """The master's node as last seen (:meth:`start`, :meth:`master_node`, :meth:`wait_for_master`);
        ``None`` once :meth:`kill_broker` killed it, until a wait sees the next one."""
        return self._master

    @property
    def brokers(self) -> list[BrokerInfo]:
        """The master (``broker_id`` 0) as last seen, or nothing (see :attr:`master`)."""
        if self._master is None:
            return []
        return [BrokerInfo(GROUP_NAME, self.node_address(self._master), 0)]

    @property
    def slaves(self) -> list[BrokerInfo]:
        """The other running replicas, under the id the controller gave each (-1 before it has one)."""
        return [
            BrokerInfo(GROUP_NAME, self.node_address(node), self._id_or_unknown(node))
            for node in self.nodes
            if node != self._master and self.broker_running(node)
        ]

    def controller_id(self, node: str) -> int | None:
        """The id the controller gave ``node`` (from its store), or ``None`` before it has one."""
        self._known(node)
        return read_controller_id(self._store(node), GROUP_NAME)

    def expected_members(self) -> list[BrokerInfo]:
        """The running replicas as the NameServer should list them: the master as 0, the slaves
        under their controller ids (one not known yet never counts as listed)."""
        master = self.brokers if self._master is not None and self.broker_running(self._master) else []
        return [*master, *self.slaves]

    def log_path(self, node: str) -> Path:
        """The stdout/stderr log of ``node`` (``namesrv`` or a broker node)."""
        return node_log(self.workdir, node)

    def _id_or_unknown(self, node: str) -> int:
        found = self.controller_id(node)
        return -1 if found is None else found

    def _store(self, node: str) -> Path:
        return self.workdir / node / "store"

    def _known(self, node: str) -> None:
        if node not in self.nodes:
            raise ClusterError(f"no broker node named {node!r} (have {', '.join(self.nodes)})")

    # --- what the controller says ------------------------------------------------------------------

    def replica_info(self) -> ReplicaInfo | None:
        """What the controller knows of the group now (``None`` while it cannot tell).

        Raises:
            OSError: the controller is unreachable.
            ClusterError: it answered an error.
        """
        return replica_info(self.controller_addr, GROUP_NAME)

    def node_of(self, address: str | None) -> str | None:
        """The node listening on ``address``, if any."""
        return next((node for node in self.nodes if address and self.node_address(node) == address), None)

    def master_node(self) -> str | None:
        """The master's node as the controller names it now (``None``: no master); remembered."""
        info = self.replica_info()
        self._master = None if info is None else self.node_of(info.master_address)
        return self._master

    def wait_for_master(self, timeout: float | None = None, *, other_than: str | None = None) -> str:
        """Wait until the controller names a running master (not ``other_than``) and the NameServer
        lists it as ``brokerId`` 0; return its node, remembered as :attr:`master`.

        Raises:
            ClusterError: none within ``timeout`` (default: the cluster's ``election_timeout``).
        """

        def elected(info: ReplicaInfo | None) -> str | None:
            node = None if info is None else self.node_of(info.master_address)
            if node is None or node == other_than or not self.broker_running(node):
                return None
            listed = cluster_members(self.namesrv_addr).get(GROUP_NAME, {})
            return node if listed.get(0) == self.node_address(node) else None

        node = self._poll_replicas(timeout, "no master was elected and registered", elected)
        self._master = node
        return node

    def wait_until_in_sync(self, timeout: float | None = None) -> ReplicaInfo:
        """Wait until every running replica is in the master's sync state set (the master can then
        die and any of them take over with nothing lost); return what the controller said.

        Raises:
            ClusterError: not within ``timeout`` (default: the cluster's ``election_timeout``).
        """

        def in_sync(info: ReplicaInfo | None) -> ReplicaInfo | None:
            ids = {self.controller_id(node) for node in self.nodes if self.broker_running(node)}
            if info is not None and info.master_broker_id is not None and ids <= info.sync_state_set:
                return info
            return None

        return self._poll_replicas(timeout, "the replicas did not all get in sync", in_sync)

    def _poll_replicas(
        self, timeout: float | None, failure: str, check: Callable[[ReplicaInfo | None], T | None]
    ) -> T:
        """Ask the controller every 0.2 s until ``check`` of its answer is not None; return that.

        Raises:
            ClusterError: ``failure``, not within ``timeout`` (default: ``election_timeout``).
        """
        wait = self._election_timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        info: ReplicaInfo | None = None
        while True:
            with contextlib.suppress(OSError, RocketMQError):
                info = self.replica_info()
                found = check(info)
                if found is not None:
                    return found
            if time.monotonic() > deadline:
                raise ClusterError(self._failure(failure, wait, info))
            time.sleep(0.2)

    def _wait_for_controller(self) -> None:
        """Wait until the controller leads its Raft group (brokers can only register then)."""
        deadline = time.monotonic() + self._boot_timeout
        while True:
            with contextlib.suppress(OSError, RocketMQError):
                if controller_metadata(self.controller_addr).is_leader:
                    return
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"the controller at {self.controller_addr} did not become its group's leader in "
                    f"{self._boot_timeout:.0f} s; last log lines:\n{self._tail('namesrv')}"
                )
            time.sleep(0.2)

    def _failure(self, what: str, waited: float, info: ReplicaInfo | None) -> str:
        ids = {node: self.controller_id(node) for node in self.nodes}
        running = [node for node in self.nodes if self.broker_running(node)]
        tails = "\n".join(f"--- {node}:\n{self._tail(node)}" for node in running)
        return (
            f"{what} in {waited:g} s; the controller said {info}; controller ids "
            f"{ids}; running {running}\n{tails}"
        )

    def _tail(self, node: str) -> str:
        proc = self._namesrv if node == "namesrv" else self._brokers.get(node)
        return "" if proc is None else proc.tail(15)

    # --- start -----------------------------------------------------------------------------------

    def start(self) -> ControllerCluster:
        """Resolve the jars, start the NameServer with its controller, then the replicas; wait until
        a master is elected and registered and every replica is in sync."""
        cleanup_stale()
        t0 = time.monotonic()
        classpath = resolve_server(self.version)
        check_controller_jars(classpath)
        t1 = time.monotonic()
        self.timings["resolve"] = t1 - t0
        self.workdir = self._workdir_arg or Path(tempfile.mkdtemp(prefix="rocketmq-py-ctl-"))
        write_home_conf(self.workdir)
        self.pick_ports()
        self._registry = Registry(
            cluster_id=self.cluster_id,
            owner_pid=os.getpid(),
            owner_start=process_start_time(os.getpid()),
            detached=self._detached,
            workdir=str(self.workdir),
            namesrv=self.namesrv_addr,
            brokers={node: self.node_address(node) for node in self.nodes},
            version=self.version,
            shape={"controller": True},
        )
        self._registry.save()
        if not self._detached:
            self._cancel_atexit = on_exit(self.stop)
        launcher = NodeLauncher(self.workdir, classpath, self.cluster_id, self.version, None, self._detached)
        try:
            self._namesrv = launcher.namesrv(self._namesrv_port, self.namesrv_conf())
            self._start_node("namesrv", self._namesrv, _NAMESRV_BOOT)
            wait_for_line(self._namesrv, CONTROLLER_BOOT, self._boot_timeout, "the controller")
            self._wait_for_controller()
            t2 = time.monotonic()
            self.timings["namesrv"] = t2 - t1
            for node in self.nodes:
                self._brokers[node] = launcher.broker(node, self.broker_conf(node))
                self._brokers[node].start()
                self._record_pid(node, self._brokers[node])
            for node in self.nodes:  # they boot in parallel; the controller picks the first as master
                wait_for_line(self._brokers[node], _BROKER_BOOT, self._boot_timeout, f"broker {node}")
            t3 = time.monotonic()
            self.timings["brokers"] = t3 - t2
            self.wait_for_master()
            self.wait_until_registered(timeout=self._election_timeout)
            t4 = time.monotonic()
            self.timings["elected"] = t4 - t3
            self.wait_until_in_sync()
            self.timings["in_sync"] = time.monotonic() - t4
        except BaseException:
            self.stop()
            raise
        return self

    def pick_ports(self, rng: random.Random | None = None) -> None:
        """Choose free loopback ports: one for the NameServer, one for the controller, and a block
        per replica (``listenPort - 2`` for the VIP channel, ``listenPort``, ``listenPort + 1`` for
        HA), none shared."""
        taken: set[int] = set()
        self._namesrv_port = pick_port_block([0], taken, rng)
        self._controller_port = pick_port_block([0], taken, rng)
        for node in self.nodes:
            self._ports[node] = pick_port_block([-2, 0, 1], taken, rng)

    def namesrv_conf(self) -> dict[str, str]:
        """The NameServer's properties: its port and the embedded controller's settings."""
        return namesrv_controller_config(
            self._namesrv_port, self._controller_port, self.workdir / "namesrv" / "controller"
        )

    def broker_conf(self, node: str) -> dict[str, str]:
        """The broker.conf entries of ``node``."""
        self._known(node)
        return controller_broker_config(
            GROUP_NAME,
            namesrv=self.namesrv_addr,
            controller=self.controller_addr,
            port=self._ports.get(node, 0),
            store=self._store(node),
            extra=self._extra,
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

    def _broker(self, node: str) -> JvmProcess:
        self._known(node)
        try:
            return self._brokers[node]
        except KeyError:
            raise ClusterError(f"broker {node} was never started") from None

    def broker_running(self, node: str) -> bool:
        """Whether the node's JVM is running (a paused one counts as running)."""
        self._known(node)
        proc = self._brokers.get(node)
        return proc is not None and proc.running()

    def pause_broker(self, name: str) -> None:
        """Freeze the node's JVM (SIGSTOP): its connections stay open, nothing answers (the
        controller notices a paused master when its heartbeats stop, 10 s by Java's default)."""
        self._broker(name).signal_group(signal.SIGSTOP)

    def resume_broker(self, name: str) -> None:
        """Undo :meth:`pause_broker` (SIGCONT)."""
        self._broker(name).signal_group(signal.SIGCONT)

    def kill_broker(self, name: str) -> None:
        """SIGKILL the node's JVM, its store kept for :meth:`restart_broker`. The controller sees a
        master's connection close and elects another replica of the sync state set:
        ``wait_for_master(other_than=name)`` waits for it."""
        self._broker(name).kill()
        if name == self._master:
            self._master = None

    def restart_broker(self, name: str) -> None:
        """Kill the node if it runs, start it on the same ports and store, and wait until the group
        has a registered master again and every replica (this one too) is back in sync."""
        proc = self._broker(name)
        self.kill_broker(name)
        self._start_node(name, proc, _BROKER_BOOT)
        self.wait_for_master()
        self.wait_until_registered(timeout=self._election_timeout)
        self.wait_until_in_sync()

    def stop_namesrv(self) -> None:
        """Not offered: this NameServer is the group's only controller."""
        raise ClusterError(_NAMESRV_STAYS)

    def start_namesrv(self) -> None:
        """Not offered (see :meth:`stop_namesrv`)."""
        raise ClusterError(_NAMESRV_STAYS)

    # --- stop ------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Kill every JVM, delete the work directory and forget the cluster; idempotent."""
        if self._stopped:
            return
        self._stopped = True
        self._cancel_atexit()
        for proc in [*self._brokers.values(), *([self._namesrv] if self._namesrv else [])]:
            proc.kill()
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
