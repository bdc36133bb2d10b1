"""How one node of a :class:`~rocketmq_py.testing.LocalCluster` is launched: its directory and
config file, its JVM command line and environment.

A node lives in ``<workdir>/<node>/`` (``namesrv``, ``broker-a``, ``broker-b-slave``, ``proxy``):
its config file (``namesrv.properties``, ``broker.conf`` or ``rmq-proxy.json``), its ``stdout.log``, and ``home/`` for
``-Duser.home`` so that RocketMQ's own logs stay there too. :class:`NodeLauncher` writes the config
and builds the :class:`~rocketmq_py.testing._processes.JvmProcess`; starting, waiting for the boot
line and the faults are the cluster's business.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rocketmq_py.testing._distribution import Classpath, find_java
from rocketmq_py.testing._processes import JvmProcess, marker_for, timer_slack_ns
from rocketmq_py.testing._settings import render_properties
from rocketmq_py.testing._tls import TlsFiles

__all__ = [
    "BROKER_HEAP",
    "NAMESRV_HEAP",
    "PROXY_BOOT",
    "PROXY_HEAP",
    "NodeLauncher",
    "no_tls_file",
    "node_log",
    "proxy_config",
]

# Small heaps for a 2-core test box (the scripts default to 4-8 GiB).
#: The environment variable whose options (split on white space) every NameServer, broker, Proxy
#: and controller JVM of the jar backend gets after its own: ``make test`` uses it for a C1-only JIT
#: with fewer compiler and GC threads, which costs test clusters about a fifth less CPU.
JVM_OPTS_ENV = "RMQ_JVM_OPTS"
NAMESRV_HEAP = ["-Xms128m", "-Xmx256m"]
BROKER_HEAP = ["-Xms256m", "-Xmx512m", "-XX:MaxDirectMemorySize=512m"]
PROXY_HEAP = ["-Xms128m", "-Xmx384m", "-XX:MaxDirectMemorySize=256m"]
# The store reflects into direct buffers; Java 17 needs these opened (users report failures without).
_MODULE_FLAGS = [
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
]
_NAMESRV_MAIN = "org.apache.rocketmq.namesrv.NamesrvStartup"
_BROKER_MAIN = "org.apache.rocketmq.broker.BrokerStartup"
_PROXY_MAIN = "org.apache.rocketmq.proxy.ProxyStartup"
#: What a Proxy prints on its standard output once it serves (both backends wait for it).
PROXY_BOOT = "rocketmq-proxy startup successfully"


def node_log(workdir: Path, node: str) -> Path:
    """The stdout/stderr log of ``node`` (``namesrv`` or a broker's node name)."""
    return workdir / node / "stdout.log"


def no_tls_file(workdir: Path) -> Path:
    """The ``tls.config.file`` every JVM of the cluster is given: a path that does not exist (see
    :meth:`~rocketmq_py.testing._tls.TlsFiles.jvm_properties`)."""
    return workdir / "tls" / "no-tls.properties"


def proxy_config(cluster_name: str, namesrv: str, remoting_port: int, grpc_port: int) -> dict[str, object]:
    """A Proxy's ``rmq-proxy.json`` (Java ``ProxyConfig``): cluster mode in front of ``cluster_name``,
    whose routes it reads from ``namesrv``; clients reach it on ``remoting_port`` (the remoting
    protocol, as a NameServer and broker in one) and ``grpc_port``. Its routes name it by
    ``localServeAddr``, which is the machine's first network address unless set: loopback here, as
    every address of the kit's clusters."""
    return {
        "rocketMQClusterName": cluster_name,
        "namesrvAddr": namesrv,
        "remotingListenPort": remoting_port,
        "grpcServerPort": grpc_port,
        "proxyMode": "cluster",
        "localServeAddr": "127.0.0.1",
    }


@dataclass(frozen=True, slots=True)
class NodeLauncher:
    """Builds the (not yet started) JVM of each node of one local cluster.

    Attributes:
        workdir: the cluster's work directory (``ROCKETMQ_HOME`` too).
        classpath: the server jars.
        cluster_id: marks every JVM of the cluster (``marker_for``), so stale ones can be found.
        version: the RocketMQ release (5.x shades logback, whose status chatter is silenced).
        tls_files: the certificates when the cluster enforces TLS.
        detached: the JVMs outlive this Python process (else they die with it, on Linux).
    """

    workdir: Path
    classpath: Classpath
    cluster_id: str
    version: str
    tls_files: TlsFiles | None
    detached: bool

    def namesrv(self, port: int, extra: Mapping[str, str] | None = None) -> JvmProcess:
        """The NameServer, listening on ``port``; ``extra`` entries join its properties (an
        embedded controller's, :func:`~rocketmq_py.testing._controller.namesrv_controller_config`)."""
        conf = {"listenPort": str(port), **(extra or {})}
        return self._node("namesrv", "namesrv.properties", conf, NAMESRV_HEAP, _NAMESRV_MAIN)

    def broker(self, node: str, conf: Mapping[str, str]) -> JvmProcess:
        """The broker ``node`` (a broker name or ``<name>-slave``) with these broker.conf entries."""
        return self._node(node, "broker.conf", conf, BROKER_HEAP, _BROKER_MAIN)

    def proxy(self, classpath: Classpath, conf: Mapping[str, object]) -> JvmProcess:
        """A Proxy (``ProxyStartup``, cluster mode) with these ``rmq-proxy.json`` entries, from the
        ``rocketmq-proxy`` jars (``classpath``); its home (``RMQ_PROXY_HOME``) is its directory."""
        node = self.workdir / "proxy"
        node.mkdir(parents=True, exist_ok=True)
        conf_path = node / "rmq-proxy.json"
        conf_path.write_text(json.dumps(dict(conf), indent=2) + "\n")
        args = ["-pc", str(conf_path), "-pm", "cluster"]
        return JvmProcess(
            "proxy",
            self._argv(PROXY_HEAP, "proxy", _PROXY_MAIN, args, classpath=classpath),
            log_path=node_log(self.workdir, "proxy"),
            env=dict(self._env(), RMQ_PROXY_HOME=str(node)),
            cwd=node,
            die_with_parent=not self.detached,
            timer_slack_ns=timer_slack_ns(),
        )

    def _node(
        self, name: str, conf_name: str, conf: Mapping[str, str], heap: Sequence[str], main: str
    ) -> JvmProcess:
        node = self.workdir / name
        node.mkdir(parents=True, exist_ok=True)
        conf_path = node / conf_name
        conf_path.write_text(render_properties(conf))
        return JvmProcess(
            name,
            self._argv(heap, name, main, ["-c", str(conf_path)]),
            log_path=node_log(self.workdir, name),
            env=self._env(),
            cwd=node,
            die_with_parent=not self.detached,
            timer_slack_ns=timer_slack_ns(),
        )

    def _argv(
        self,
        heap: Sequence[str],
        node: str,
        main: str,
        args: Sequence[str],
        *,
        classpath: Classpath | None = None,
    ) -> list[str]:
        home = self.workdir / node / "home"
        argv = [
            find_java(),
            *heap,
            "-XX:+UseG1GC",
            *_MODULE_FLAGS,
            f"-Duser.home={home}",
            # Temporary files (TLS test-mode certificates, native libraries) go with the cluster's
            # directory, not into /tmp, where a killed JVM would leave them.
            f"-Djava.io.tmpdir={self.workdir / node}",
            f"-Drocketmq.home.dir={self.workdir}",
            marker_for(self.cluster_id),
        ]
        if self.tls_files is not None:
            argv += self.tls_files.jvm_properties(no_tls_file(self.workdir))
        if not self.version.startswith("4."):
            # 5.x shades logback; silence its status chatter on stdout.
            argv.append(
                "-Dlogback.statusListenerClass="
                "org.apache.rocketmq.logging.ch.qos.logback.core.status.NopStatusListener"
            )
        argv += os.environ.get(JVM_OPTS_ENV, "").split()
        return [*argv, "-cp", (classpath or self.classpath).classpath, main, *args]

    def _env(self) -> dict[str, str]:
        env = dict(os.environ, ROCKETMQ_HOME=str(self.workdir))
        env.pop("NAMESRV_ADDR", None)
        return env
