"""One session cluster for all the pytest-xdist workers of a run, started and stopped by the controller.

Each worker used to start a cluster of its own (a NameServer and two brokers): with three workers,
three clusters ran side by side for the whole run, each idle broker polling away a few percent of a
core (``ReputMessageService`` sleeps 1 ms at a time), and their starts fell in the run's busiest
minute. Now the pytest-xdist controller, which runs no test, starts one cluster as soon as a worker
has collected an integration test (in a thread, so that it keeps scheduling), and writes what the
workers need to reach it into a file named in each worker's ``workerinput``; every worker's
``cluster`` fixture waits for that file and gets a :class:`SharedCluster` over it. The controller
stops the cluster when the run ends.

Shared by tests running at once on other workers, the cluster must not be paused, killed or
reconfigured: :class:`SharedCluster` refuses the fault methods, and a module that needs them (or
changes a broker setting) overrides ``cluster`` with ``exclusive_cluster``, a cluster of its own
when the run's is shared (see ``integration/conftest.py``).

Only the jar backend is shared (the docker backend runs its tools inside its containers, which the
workers do not own) and never an external cluster (``ROCKETMQ_NAMESRV``). A run without workers
starts its cluster in the test process, as before.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Final

import pytest

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing import BrokerInfo, Cluster, start_cluster
from rocketmq_py.testing._settings import claim_shared_ports
from rocketmq_py.testing._start import choose_backend

__all__ = ["WORKERINPUT_KEY", "SessionClusterOwner", "SharedCluster", "shared_cluster_file"]

#: The ``workerinput`` key naming the file the controller writes the cluster's addresses into.
WORKERINPUT_KEY: Final = "rmq_shared_cluster"
#: Seconds a worker waits for the controller's cluster: its start, on the run's busiest minute.
WAIT_FOR_SHARED: Final = 600.0


def start_session_cluster() -> Cluster:
    """The session cluster's shape: a NameServer and ``broker-a``, ``broker-b``; through a Proxy in
    the Proxy run (``RMQ_THROUGH_PROXY=1``, clients given the Proxy as their NameServer)."""
    through = os.environ.get("RMQ_THROUGH_PROXY") == "1"
    return start_cluster(brokers=2, proxy=through, clients_via_proxy=through)


class SharedCluster(Cluster):
    """The run's session cluster as a worker sees it: addresses and release, the tools, topic creation.

    Faults (pause, kill, restart, stopping the NameServer) are refused: other workers' tests run on
    this cluster at the same time.
    """

    def __init__(self, info: dict[str, Any]) -> None:
        super().__init__(info["version"])
        self.backend = info["backend"]
        self.cluster_name = info["cluster_name"]
        self._namesrv: str = info["namesrv_addr"]
        self._admin_namesrv: str = info["admin_namesrv_addr"]
        self._proxy: str | None = info["proxy_addr"]
        self._brokers = [BrokerInfo(name, address) for name, address in info["brokers"]]

    @property
    def namesrv_addr(self) -> str:
        return self._namesrv

    @property
    def admin_namesrv_addr(self) -> str:
        return self._admin_namesrv

    @property
    def proxy_addr(self) -> str | None:
        return self._proxy

    @property
    def brokers(self) -> list[BrokerInfo]:
        return list(self._brokers)

    def stop(self) -> None:
        """Nothing: the controller stops the cluster when the run ends."""

    def _refuse(self, what: str) -> None:
        raise ClusterError(
            f"{what}: the session cluster is shared by every worker of this run, whose tests run on it "
            "at the same time; give the module a cluster of its own (`exclusive_cluster`)"
        )

    def pause_broker(self, name: str) -> None:
        self._refuse(f"pause_broker({name!r})")

    def resume_broker(self, name: str) -> None:
        self._refuse(f"resume_broker({name!r})")

    def block_broker(self, name: str) -> None:
        self._refuse(f"block_broker({name!r})")

    def unblock_broker(self, name: str) -> None:
        self._refuse(f"unblock_broker({name!r})")

    def kill_broker(self, name: str) -> None:
        self._refuse(f"kill_broker({name!r})")

    def restart_broker(self, name: str) -> None:
        self._refuse(f"restart_broker({name!r})")

    def stop_namesrv(self) -> None:
        self._refuse("stop_namesrv()")

    def start_namesrv(self) -> None:
        self._refuse("start_namesrv()")


def _describe(cluster: Cluster) -> dict[str, Any]:
    return {
        "version": cluster.version,
        "backend": cluster.backend,
        "cluster_name": cluster.cluster_name,
        "namesrv_addr": cluster.namesrv_addr,
        "admin_namesrv_addr": cluster.admin_namesrv_addr,
        "proxy_addr": cluster.proxy_addr,
        "brokers": [[b.name, b.address] for b in cluster.brokers],
    }


def _write(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)  # a reader sees the whole file or none


class SessionClusterOwner:
    """The controller's plugin: starts the shared cluster once a worker has collected an integration
    test, names its file to every worker, and stops it at the end of the run."""

    def __init__(self, integration_dir: Path, rootdir: Path) -> None:
        self._prefix = integration_dir.relative_to(rootdir).as_posix() + "/"  # node ids are rootdir-relative
        self._dir = Path(tempfile.mkdtemp(prefix="rocketmq-py-session-"))
        self.path = self._dir / "cluster.json"
        self._thread: threading.Thread | None = None
        self._cluster: Cluster | None = None

    @staticmethod
    def wanted() -> bool:
        """Whether this run's session cluster can be shared (the jar backend, not an external one)."""
        try:
            return choose_backend(None) == "jar"
        except ClusterError:
            return False  # the workers' fixtures report the same problem

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[WORKERINPUT_KEY] = str(self.path)

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if self._thread is None and any(i.startswith(self._prefix) for i in ids):
            self._thread = threading.Thread(target=self._start, name="session cluster", daemon=True)
            self._thread.start()

    def _start(self) -> None:
        claim_shared_ports()
        try:
            cluster = start_session_cluster()
        except ClusterError as exc:
            _write(self.path, {"error": str(exc)})
            return
        self._cluster = cluster
        _write(self.path, _describe(cluster))

    def pytest_unconfigure(self) -> None:
        if self._thread is not None:
            self._thread.join(timeout=300)
        if self._cluster is not None:
            self._cluster.stop()
        for leftover in self._dir.glob("*"):
            leftover.unlink(missing_ok=True)
        self._dir.rmdir()


def shared_cluster_file(config: pytest.Config) -> Path | None:
    """The controller's file for this worker, when the run's session cluster is shared."""
    found = getattr(config, "workerinput", {}).get(WORKERINPUT_KEY)
    return None if found is None else Path(found)


def wait_for_shared(path: Path, timeout: float = WAIT_FOR_SHARED) -> SharedCluster:
    """The shared cluster once the controller has written ``path``.

    Raises:
        ClusterError: the controller could not start it (its message), or it did not within ``timeout``.
    """
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise ClusterError(f"the run's session cluster was not started within {timeout:.0f} s ({path})")
        time.sleep(0.2)
    info = json.loads(path.read_text())
    if "error" in info:
        raise ClusterError(info["error"])
    return SharedCluster(info)
