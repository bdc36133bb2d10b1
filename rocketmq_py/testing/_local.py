"""A real NameServer and brokers as local JVM processes, from the Maven Central jars.

Everything lives in one temporary work directory::

    <workdir>/namesrv/{namesrv.properties, stdout.log, home/logs/...}
    <workdir>/broker-a/{broker.conf, stdout.log, store/..., home/logs/...}

``-Duser.home`` points into the node's directory so RocketMQ's own logs stay there too. Ports are
free loopback ports chosen at start; a broker uses three (``listenPort - 2`` for the VIP channel,
``listenPort``, ``listenPort + 1`` for HA), so they are picked as a block.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePath

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._cluster import CLUSTER_NAME, BrokerInfo, Cluster, broker_names
from rocketmq_py.testing._distribution import (
    DEFAULT_VERSION,
    Classpath,
    find_java,
    resolve_server,
    write_home_conf,
)
from rocketmq_py.testing._netfault import block_ports, unblock
from rocketmq_py.testing._processes import (
    JvmProcess,
    Registry,
    cleanup_stale,
    marker_for,
    on_exit,
    process_start_time,
    wait_for_line,
)

__all__ = ["LocalCluster"]

# Small heaps for a 2-core test box (the scripts default to 4-8 GiB).
NAMESRV_HEAP = ["-Xms128m", "-Xmx256m"]
BROKER_HEAP = ["-Xms256m", "-Xmx512m", "-XX:MaxDirectMemorySize=512m"]
# The store reflects into direct buffers; Java 17 needs these opened (users report failures without).
_MODULE_FLAGS = [
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
]
# Shrunken store files: the defaults pre-allocate 1 GiB of commit log and 100 MiB of timer log.
_BROKER_DEFAULTS: dict[str, str] = {
    "mappedFileSizeCommitLog": str(64 * 1024 * 1024),
    "mappedFileSizeConsumeQueue": str(300_000 * 20 // 10),
    "mappedFileSizeConsumeQueueExt": str(4 * 1024 * 1024),
    "mappedFileSizeTimerLog": str(8 * 1024 * 1024),
    "diskMaxUsedSpaceRatio": "95",
    "flushDiskType": "ASYNC_FLUSH",
    "autoCreateTopicEnable": "true",
    "autoCreateSubscriptionGroup": "true",
    "enablePropertyFilter": "true",
    # A loaded 2-core CI box stalls for a moment now and then; Java's 200 ms default makes the broker
    # answer SYSTEM_BUSY to sends that would have succeeded a little later.
    "waitTimeMillsInSendQueue": "1000",
    # Transaction check-back within seconds instead of a minute (defaults: 6 s timeout, 30 s
    # interval), so tests of the check callback stay short.
    "transactionTimeOut": "2000",
    "transactionCheckInterval": "3000",
}
_NAMESRV_BOOT = "The Name Server boot success"
_BROKER_BOOT = "boot success"
_PORT_RANGE = (12000, 30000)  # below Linux's ephemeral range, so connect() does not take them


def _port_free(port: int) -> bool:
    for host in ("127.0.0.1", "0.0.0.0"):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                return False
    return True


def pick_port_block(offsets: Sequence[int], taken: set[int], rng: random.Random | None = None) -> int:
    """A base port such that ``base + o`` is free (and not in ``taken``) for every offset."""
    rng = rng or random.Random()
    for _ in range(500):
        base = rng.randrange(*_PORT_RANGE)
        ports = [base + o for o in offsets]
        if all(p not in taken and _port_free(p) for p in ports):
            taken.update(ports)
            return base
    raise ClusterError("no free block of loopback ports found")


def render_properties(values: Mapping[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in values.items())


def broker_config(
    name: str, *, namesrv: str, port: int, store: PurePath, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The broker.conf of one master broker listening on 127.0.0.1:``port``."""
    conf = {
        "brokerClusterName": CLUSTER_NAME,
        "brokerName": name,
        "brokerId": "0",
        "brokerRole": "ASYNC_MASTER",
        "brokerIP1": "127.0.0.1",
        "namesrvAddr": namesrv,
        "listenPort": str(port),
        "haListenPort": str(port + 1),
        "storePathRootDir": str(store),
        "storePathCommitLog": str(store / "commitlog"),
        **_BROKER_DEFAULTS,
    }
    conf.update(extra or {})
    return conf


def _nothing() -> None:
    pass


class LocalCluster(Cluster):
    """A NameServer and ``brokers`` master brokers as JVM processes on 127.0.0.1.

    Args:
        brokers: how many brokers (``broker-a``, ``broker-b``, ...), all in cluster ``DefaultCluster``.
        version: the Apache RocketMQ release (jars from Maven Central).
        detached: keep the JVMs running when this Python process exits (the ``up`` command).
        broker_config: extra broker.conf entries, applied to every broker.
        boot_timeout: seconds to wait for each boot-success line.
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
    ) -> None:
        super().__init__(version)
        self._names = broker_names(brokers)
        self._detached = detached
        self._extra = dict(broker_config or {})
        self._boot_timeout = boot_timeout
        self._workdir_arg = workdir
        self.cluster_id = f"{'up' if detached else 'py'}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.workdir = Path()
        self._classpath: Classpath | None = None
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
        return f"127.0.0.1:{self._namesrv_port}"

    @property
    def brokers(self) -> list[BrokerInfo]:
        host = self._extra.get("brokerIP1", "127.0.0.1")  # the address the broker advertises
        return [BrokerInfo(n, f"{host}:{self._broker_ports[n]}") for n in self._names]

    def log_path(self, node: str) -> Path:
        """The stdout/stderr log of ``node`` (``namesrv`` or a broker name)."""
        return self.workdir / node / "stdout.log"

    # --- start -----------------------------------------------------------------------------------

    def start(self) -> LocalCluster:
        """Resolve the jars, start the NameServer and the brokers, wait until all are registered."""
        cleanup_stale()
        t0 = time.monotonic()
        self._classpath = resolve_server(self.version)
        t1 = time.monotonic()
        self.timings["resolve"] = t1 - t0
        self.workdir = self._workdir_arg or Path(tempfile.mkdtemp(prefix="rocketmq-py-"))
        write_home_conf(self.workdir)
        taken: set[int] = set()
        self._namesrv_port = pick_port_block([0], taken)
        for name in self._names:
            self._broker_ports[name] = pick_port_block([-2, 0, 1], taken)
        self._registry = Registry(
            cluster_id=self.cluster_id,
            owner_pid=os.getpid(),
            owner_start=process_start_time(os.getpid()),
            detached=self._detached,
            workdir=str(self.workdir),
            namesrv=self.namesrv_addr,
            brokers={b.name: b.address for b in self.brokers},
            version=self.version,
        )
        self._registry.save()
        if not self._detached:
            self._cancel_atexit = on_exit(self.stop)
        try:
            self._namesrv = self._make_namesrv()
            self._start_node("namesrv", self._namesrv, _NAMESRV_BOOT)
            t2 = time.monotonic()
            self.timings["namesrv"] = t2 - t1
            for name in self._names:
                self._brokers[name] = self._make_broker(name)
                self._brokers[name].start()
                self._record_pid(name, self._brokers[name])
            for name in self._names:  # brokers boot in parallel; wait for each
                wait_for_line(self._brokers[name], _BROKER_BOOT, self._boot_timeout, f"broker {name}")
            t3 = time.monotonic()
            self.timings["brokers"] = t3 - t2
            self.wait_until_registered()
            self.timings["registered"] = time.monotonic() - t3
        except BaseException:
            self.stop()
            raise
        return self

    def _jvm_argv(self, heap: Sequence[str], node: str, main: str, args: Sequence[str]) -> list[str]:
        assert self._classpath is not None
        home = self.workdir / node / "home"
        argv = [
            find_java(),
            *heap,
            "-XX:+UseG1GC",
            *_MODULE_FLAGS,
            f"-Duser.home={home}",
            f"-Drocketmq.home.dir={self.workdir}",
            marker_for(self.cluster_id),
        ]
        if not self.version.startswith("4."):
            # 5.x shades logback; silence its status chatter on stdout.
            argv.append(
                "-Dlogback.statusListenerClass="
                "org.apache.rocketmq.logging.ch.qos.logback.core.status.NopStatusListener"
            )
        return [*argv, "-cp", self._classpath.classpath, main, *args]

    def _env(self) -> dict[str, str]:
        env = dict(os.environ, ROCKETMQ_HOME=str(self.workdir))
        env.pop("NAMESRV_ADDR", None)
        return env

    def _make_namesrv(self) -> JvmProcess:
        node = self.workdir / "namesrv"
        node.mkdir(parents=True, exist_ok=True)
        conf = node / "namesrv.properties"
        conf.write_text(render_properties({"listenPort": str(self._namesrv_port)}))
        argv = self._jvm_argv(
            NAMESRV_HEAP, "namesrv", "org.apache.rocketmq.namesrv.NamesrvStartup", ["-c", str(conf)]
        )
        return JvmProcess(
            "namesrv",
            argv,
            log_path=self.log_path("namesrv"),
            env=self._env(),
            cwd=node,
            die_with_parent=not self._detached,
        )

    def _make_broker(self, name: str) -> JvmProcess:
        node = self.workdir / name
        node.mkdir(parents=True, exist_ok=True)
        conf_path = node / "broker.conf"
        conf = broker_config(
            name,
            namesrv=self.namesrv_addr,
            port=self._broker_ports[name],
            store=node / "store",
            extra=self._extra,
        )
        conf_path.write_text(render_properties(conf))
        argv = self._jvm_argv(
            BROKER_HEAP, name, "org.apache.rocketmq.broker.BrokerStartup", ["-c", str(conf_path)]
        )
        return JvmProcess(
            name,
            argv,
            log_path=self.log_path(name),
            env=self._env(),
            cwd=node,
            die_with_parent=not self._detached,
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
        self._broker(name).signal_group(signal.SIGSTOP)

    def resume_broker(self, name: str) -> None:
        self._broker(name).signal_group(signal.SIGCONT)

    def block_broker(self, name: str) -> None:
        self._broker(name)  # known name
        port = self._broker_ports[name]
        block_ports([port - 2, port], f"{self.cluster_id}/{name}")  # VIP channel and listenPort

    def unblock_broker(self, name: str) -> None:
        self._broker(name)
        unblock(f"{self.cluster_id}/{name}")

    def kill_broker(self, name: str) -> None:
        self._broker(name).kill()

    def restart_broker(self, name: str) -> None:
        proc = self._broker(name)
        proc.kill()
        # The shutdown of a killed broker leaves its lock file; the store recovers on start.
        self._start_node(name, proc, _BROKER_BOOT)
        self.wait_until_registered()

    def stop_namesrv(self) -> None:
        if self._namesrv is not None:
            self._namesrv.kill()

    def start_namesrv(self) -> None:
        if self._namesrv is None:
            raise ClusterError("the cluster was never started")
        if not self._namesrv.running():
            self._start_node("namesrv", self._namesrv, _NAMESRV_BOOT)
        # Brokers re-register every 30 s; wait for that so callers see a complete cluster again.
        self.wait_until_registered(timeout=60.0)

    def broker_running(self, name: str) -> bool:
        return self._broker(name).running()

    # --- stop ------------------------------------------------------------------------------------

    def stop(self) -> None:
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
