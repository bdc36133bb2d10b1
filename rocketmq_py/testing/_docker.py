"""The same cluster in Docker containers, through testcontainers.

Used where a Docker engine answers (``ROCKETMQ_BACKEND=docker``, or ``auto`` without Java). The
image is ``rocketmq-py/rocketmq:<version>`` when it was built on this machine
(:mod:`rocketmq_py.testing._image`, for engines without a registry), else the official
``apache/rocketmq:<version>``, pulled as usual; both have the same layout and scripts.

Every container uses the host's network (``network_mode=host``): the NameServer and each broker
listen on free ports picked on the host, the brokers advertise ``brokerIP1=127.0.0.1`` and reach the
NameServer at 127.0.0.1, so tests talk to the cluster over loopback only, with no traffic to a
bridge network's private addresses and no port-publishing proxy in between. Each container's
configuration is written by its own command before the JVM starts, so a restarted container boots
with the same settings and its store (kept in the container's file system).

With ``proxy=True`` (5.x) a Proxy in cluster mode runs in a container of its own in front of the
brokers, as the jar backend's does (``rmq-proxy.json`` from
:func:`~rocketmq_py.testing._jvm_nodes.proxy_config`, ``bin/mqproxy``): :attr:`DockerCluster.proxy_addr`
is its remoting port, which clients take as their NameServer (``client_options(proxy=True)``).

``mqadmin`` runs inside the NameServer's container (the image carries the tool), so a machine with
Docker and no Java can create topics.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shlex
import tarfile
import time
from collections.abc import Callable, Mapping
from pathlib import PurePosixPath
from typing import Any

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._cluster import BrokerInfo, Cluster, broker_names
from rocketmq_py.testing._distribution import DEFAULT_VERSION
from rocketmq_py.testing._image import LOCAL_REPOSITORY, engine_problem, image_for
from rocketmq_py.testing._jvm_nodes import (
    BROKER_HEAP,
    JVM_OPTS_ENV,
    NAMESRV_HEAP,
    PROXY_BOOT,
    PROXY_HEAP,
    proxy_config,
)
from rocketmq_py.testing._local import broker_config, pick_port_block, render_properties
from rocketmq_py.testing._processes import on_exit, pid_alive
from rocketmq_py.testing._tools import ToolResult

__all__ = ["DockerCluster", "docker_available"]

_STORE = PurePosixPath("/home/rocketmq/store")
_LABEL = "org.rocketmq-py.cluster"


def docker_available() -> bool:
    """True when a Docker engine answers a ping."""
    if engine_problem() is not None:
        return False
    try:
        import docker  # type: ignore[import-not-found,unused-ignore]

        client = docker.from_env(timeout=3)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:
        return False


def _java_opt(heap: list[str]) -> str:
    """A container JVM's ``JAVA_OPT_EXT``: the node's heap, then ``RMQ_JVM_OPTS`` (as the jar backend's
    nodes get it, after their own options, so it wins)."""
    return " ".join([*heap, *os.environ.get(JVM_OPTS_ENV, "").split()])


def _start_command(conf_path: str, conf: Mapping[str, str], script: str) -> str:
    """A shell command that writes ``conf`` to ``conf_path`` and then runs ``sh <script> -c <conf>``."""
    return _write_then_run(conf_path, render_properties(conf), f"{script} -c {conf_path}")


def _proxy_command(conf_path: str, conf: Mapping[str, object]) -> str:
    """A shell command that writes the Proxy's ``rmq-proxy.json`` and starts it in cluster mode."""
    return _write_then_run(conf_path, json.dumps(dict(conf)), f"mqproxy -pc {conf_path} -pm cluster")


def _write_then_run(conf_path: str, text: str, script_args: str) -> str:
    lines = text.splitlines()
    write = "printf '%s\\n' " + " ".join(shlex.quote(line) for line in lines) + f" > {conf_path}"
    return f"sh -c {shlex.quote(f'{write} && exec sh {script_args}')}"


class DockerCluster(Cluster):
    """A NameServer and ``brokers`` brokers, one container each, on the host's network.

    Args:
        brokers: how many brokers (``broker-a``, ``broker-b``, ...).
        version: the RocketMQ release.
        boot_timeout: seconds each container may take to log its boot line.
        image: the image to run (default: ours when built here, else ``apache/rocketmq:<version>``).
        proxy: (5.x) a Proxy in cluster mode in front of the brokers, in a container of its own:
            :attr:`proxy_addr` is its remoting port, :attr:`proxy_grpc_addr` its gRPC port.

    Raises:
        ClusterError: ``proxy`` with a 4.x release (it has no Proxy).
    """

    backend = "docker"

    def __init__(
        self,
        brokers: int = 1,
        *,
        version: str = DEFAULT_VERSION,
        boot_timeout: float = 180.0,
        image: str | None = None,
        proxy: bool = False,
    ) -> None:
        super().__init__(version)
        if proxy and version.startswith("4."):
            raise ClusterError(f"RocketMQ {version} has no Proxy: it came with 5.0")
        self._with_proxy = proxy
        self._proxy: Any = None
        self._proxy_ports = (0, 0)
        self._names = broker_names(brokers)
        self._boot_timeout = boot_timeout
        self._image = image
        self._namesrv: Any = None
        self._brokers: dict[str, Any] = {}
        self._ports: dict[str, int] = {}
        self._namesrv_port = 0
        self._stopped = False
        self._cluster_id = f"{os.getpid()}-{random.randrange(1 << 32):08x}"
        self._cancel_exit: Callable[[], None] = lambda: None

    @property
    def image(self) -> str:
        """The image the containers run (known once the cluster started)."""
        return self._image or ""

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self._namesrv_port}"

    @property
    def proxy_addr(self) -> str | None:
        """``127.0.0.1:port`` of the Proxy's remoting port (``proxy=True``), else ``None``."""
        return f"127.0.0.1:{self._proxy_ports[0]}" if self._with_proxy else None

    @property
    def proxy_grpc_addr(self) -> str | None:
        """``127.0.0.1:port`` of the Proxy's gRPC port (``proxy=True``), else ``None``."""
        return f"127.0.0.1:{self._proxy_ports[1]}" if self._with_proxy else None

    @property
    def brokers(self) -> list[BrokerInfo]:
        return [BrokerInfo(n, f"127.0.0.1:{self._ports[n]}") for n in self._names]

    def _container(self, command: str, java_opt: str) -> Any:
        from testcontainers.core.container import DockerContainer

        return (
            DockerContainer(self.image)
            .with_command(command)
            .with_env("JAVA_OPT_EXT", java_opt)
            .with_kwargs(network_mode="host", labels={_LABEL: self._cluster_id})
        )

    def start(self) -> DockerCluster:
        try:
            import docker
            from testcontainers.core.config import testcontainers_config
        except ImportError as exc:  # pragma: no cover - dev extra missing
            raise ClusterError(
                "the docker backend needs testcontainers (pip install rocketmq-py[dev])"
            ) from exc
        problem = engine_problem()
        if problem is not None:
            raise ClusterError(f"the docker backend needs a Docker engine that answers: {problem}")
        try:
            client = docker.from_env()
            try:
                if self._image is None:
                    self._image = image_for(self.version, client)
                if self._image.startswith(LOCAL_REPOSITORY + ":") and not _present(
                    client, testcontainers_config.ryuk_image
                ):
                    # A locally built image means no registry: the reaper image could not be
                    # pulled either. The cluster removes its containers itself (stop(), at exit).
                    testcontainers_config.ryuk_disabled = True
                _remove_orphans(client)
            finally:
                client.close()
        except docker.errors.DockerException as exc:
            raise ClusterError(f"the docker backend needs a Docker engine that answers: {exc}") from exc
        self._cancel_exit = on_exit(self.stop)
        taken: set[int] = set()
        self._namesrv_port = pick_port_block([0], taken, random.Random())
        for name in self._names:
            self._ports[name] = pick_port_block([-2, 0, 1], taken)
        if self._with_proxy:
            self._proxy_ports = (pick_port_block([0], taken), pick_port_block([0], taken))
        try:
            command = _start_command(
                "/tmp/namesrv.conf", {"listenPort": str(self._namesrv_port)}, "mqnamesrv"
            )
            self._namesrv = self._container(command, _java_opt(NAMESRV_HEAP))
            self._namesrv.start()
            self._wait_log(self._namesrv, "The Name Server boot success")
            for name in self._names:
                conf = broker_config(
                    name, namesrv=self.namesrv_addr, port=self._ports[name], store=_STORE / name
                )
                container = self._container(
                    _start_command(f"/tmp/{name}.conf", conf, "mqbroker"), _java_opt(BROKER_HEAP)
                )
                container.start()
                self._brokers[name] = container
            for container in self._brokers.values():
                self._wait_log(container, "boot success")
            self.wait_until_registered()
            if self._with_proxy:
                proxy_conf = proxy_config(self.cluster_name, self.namesrv_addr, *self._proxy_ports)
                command = _proxy_command("/tmp/rmq-proxy.json", proxy_conf)
                self._proxy = self._container(command, _java_opt(PROXY_HEAP))
                self._proxy.start()
                self._wait_log(self._proxy, PROXY_BOOT)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_log(self, container: Any, needle: str) -> None:
        deadline = time.monotonic() + self._boot_timeout
        text = ""
        while time.monotonic() < deadline:
            out, err = container.get_logs()
            text = (out + err).decode(errors="replace")
            if needle in text:
                return
            wrapped = container.get_wrapped_container()
            wrapped.reload()
            if wrapped.status == "exited":
                break
            time.sleep(0.5)
        tail = "\n".join(text.splitlines()[-30:])
        raise ClusterError(
            f"container of {self.image} did not log {needle!r} in {self._boot_timeout:.0f} s:\n{tail}"
        )

    def _wrapped(self, name: str) -> Any:
        try:
            return self._brokers[name].get_wrapped_container()
        except KeyError:
            raise ClusterError(f"no broker named {name!r}") from None

    def pause_broker(self, name: str) -> None:
        self._wrapped(name).pause()

    def resume_broker(self, name: str) -> None:
        self._wrapped(name).unpause()

    def kill_broker(self, name: str) -> None:
        self._wrapped(name).kill()

    def restart_broker(self, name: str) -> None:
        wrapped = self._wrapped(name)
        with contextlib.suppress(Exception):
            wrapped.kill()
        wrapped.start()
        self._wait_log(self._brokers[name], "boot success")
        self.wait_until_registered()

    def stop_namesrv(self) -> None:
        self._namesrv.get_wrapped_container().stop(timeout=1)

    def start_namesrv(self) -> None:
        self._namesrv.get_wrapped_container().start()
        self.wait_until_registered(timeout=90.0)

    def mqadmin(self, *args: str, timeout: float | None = 120.0) -> ToolResult:
        """Run mqadmin inside the NameServer's container, against this cluster."""
        argv = ["sh", "mqadmin", *args]
        if "-n" not in args:
            argv += ["-n", self.namesrv_addr]
        if timeout is not None:
            argv = ["timeout", "-s", "KILL", str(max(1, round(timeout))), *argv]
        wrapped = self._namesrv.get_wrapped_container()
        code, output = wrapped.exec_run(argv, environment={"JAVA_OPT_EXT": "-Xmx256m"})
        text = output.decode(errors="replace")
        clean = "\n".join(ln for ln in text.splitlines() if "|-INFO in " not in ln and "|-WARN in " not in ln)
        return ToolResult(tuple(argv), code, clean, timeout is not None and code in (124, 137))

    def read_tool_file(self, path: str) -> bytes:
        """A file :meth:`mqadmin` wrote, read from the NameServer's container (where the tool ran)."""
        stream, _ = self._namesrv.get_wrapped_container().get_archive(path)
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            member = tar.next()
            handle = tar.extractfile(member) if member is not None else None
            if handle is None:
                raise ClusterError(f"{path} is not a file in the NameServer's container")
            return handle.read()

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._cancel_exit()
        for container in [self._proxy, *self._brokers.values(), self._namesrv]:
            if container is not None:
                with contextlib.suppress(Exception):
                    container.stop()


def _remove_orphans(client: Any) -> None:
    """Remove the containers of clusters whose owning process is gone (killed before its stop()).

    Other processes' clusters start and stop meanwhile (``make test`` runs pytest workers side by
    side): a container the engine lists may be gone when it is inspected, which is not an error.
    """
    listed = client.containers.list(all=True, filters={"label": _LABEL}, ignore_removed=True)
    for container in listed:
        owner = str(container.labels.get(_LABEL, "")).split("-", 1)[0]
        if owner.isdigit() and not pid_alive(int(owner)):
            with contextlib.suppress(Exception):
                container.remove(force=True, v=True)


def _present(client: Any, image: str) -> bool:
    import docker

    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        return False
    return True
