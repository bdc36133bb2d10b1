"""The same cluster from the official ``apache/rocketmq`` image, through testcontainers.

Used where a Docker engine answers (``ROCKETMQ_BACKEND=docker``, or ``auto`` without Java). Every
container joins one Docker network; the brokers reach the NameServer by its alias. Each broker
listens on a port that is published to the same port number on the host and advertises
``brokerIP1=127.0.0.1``, so the address the NameServer hands out works from the test process.
"""

from __future__ import annotations

import contextlib
import io
import random
import tarfile
import time
from pathlib import PurePosixPath
from typing import Any

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._cluster import BrokerInfo, Cluster, broker_names
from rocketmq_py.testing._distribution import DEFAULT_VERSION
from rocketmq_py.testing._local import broker_config, pick_port_block, render_properties

__all__ = ["DockerCluster", "docker_available"]

_IMAGE = "apache/rocketmq"
_HOME = "/home/rocketmq/rocketmq-{version}"
_JAVA_OPT = "-Xms256m -Xmx512m -XX:MaxDirectMemorySize=512m"


def docker_available() -> bool:
    """True when a Docker engine answers a ping."""
    try:
        import docker  # type: ignore[import-not-found,unused-ignore]

        client = docker.from_env(timeout=3)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:
        return False


def _put_file(container: Any, path: str, text: str) -> None:
    data = text.encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(path.rsplit("/", 1)[1])
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    container.put_archive(path.rsplit("/", 1)[0], buf.getvalue())


class DockerCluster(Cluster):
    """A NameServer and ``brokers`` brokers in ``apache/rocketmq:<version>`` containers."""

    backend = "docker"

    def __init__(
        self, brokers: int = 1, *, version: str = DEFAULT_VERSION, boot_timeout: float = 180.0
    ) -> None:
        super().__init__(version)
        self._names = broker_names(brokers)
        self._boot_timeout = boot_timeout
        self._network: Any = None
        self._namesrv: Any = None
        self._brokers: dict[str, Any] = {}
        self._ports: dict[str, int] = {}
        self._namesrv_port = 0
        self._stopped = False

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self._namesrv_port}"

    @property
    def brokers(self) -> list[BrokerInfo]:
        return [BrokerInfo(n, f"127.0.0.1:{self._ports[n]}") for n in self._names]

    def start(self) -> DockerCluster:
        try:
            from testcontainers.core.container import DockerContainer
            from testcontainers.core.network import Network
        except ImportError as exc:  # pragma: no cover - dev extra missing
            raise ClusterError(
                "the docker backend needs testcontainers (pip install rocketmq-py[dev])"
            ) from exc
        image = f"{_IMAGE}:{self.version}"
        home = _HOME.format(version=self.version)
        taken: set[int] = set()
        self._namesrv_port = pick_port_block([0], taken, random.Random())
        for name in self._names:
            self._ports[name] = pick_port_block([-2, 0, 1], taken)
        try:
            self._network = Network().create()
            self._namesrv = (
                DockerContainer(image)
                .with_command("sh mqnamesrv")
                .with_env("JAVA_OPT_EXT", "-Xms128m -Xmx256m")
                .with_bind_ports(9876, self._namesrv_port)
                .with_network(self._network)
                .with_network_aliases("namesrv")
            )
            self._namesrv.start()
            self._wait_log(self._namesrv, "The Name Server boot success")
            for name in self._names:
                port = self._ports[name]
                conf = broker_config(name, namesrv="namesrv:9876", port=port, store=_store_path(home, name))
                container = (
                    DockerContainer(image)
                    .with_command(
                        f"sh -c 'while [ ! -f {home}/conf/{name}.conf ]; do sleep 0.2; done; "
                        f"exec sh mqbroker -c {home}/conf/{name}.conf'"
                    )
                    .with_env("JAVA_OPT_EXT", _JAVA_OPT)
                    .with_env("NAMESRV_ADDR", "namesrv:9876")
                    .with_bind_ports(port, port)
                    .with_bind_ports(port - 2, port - 2)
                    .with_network(self._network)
                )
                container.start()
                _put_file(
                    container.get_wrapped_container(), f"{home}/conf/{name}.conf", render_properties(conf)
                )
                self._brokers[name] = container
            for container in self._brokers.values():
                self._wait_log(container, "boot success")
            self.wait_until_registered()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_log(self, container: Any, needle: str) -> None:
        deadline = time.monotonic() + self._boot_timeout
        while time.monotonic() < deadline:
            out, err = container.get_logs()
            if needle in (out + err).decode(errors="replace"):
                return
            time.sleep(0.5)
        raise ClusterError(
            f"container {container.image} did not log {needle!r} in {self._boot_timeout:.0f} s"
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

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        for container in [*self._brokers.values(), self._namesrv]:
            if container is not None:
                with contextlib.suppress(Exception):
                    container.stop()
        if self._network is not None:
            with contextlib.suppress(Exception):
                self._network.remove()


def _store_path(home: str, name: str) -> PurePosixPath:
    return PurePosixPath(home) / "store" / name
