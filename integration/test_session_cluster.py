"""The run's session cluster shared by pytest-xdist workers (integration/_session.py), without a JVM:
the controller's plugin starts it once, on the first collection that holds an integration test, names
its file to every worker and stops it at the end; a worker reads the file, or the controller's error."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from integration import _session
from integration._session import WORKERINPUT_KEY, SessionClusterOwner, SharedCluster, wait_for_shared
from rocketmq_py.errors import ClusterError
from rocketmq_py.testing import BrokerInfo, Cluster

INFO: dict[str, Any] = {
    "version": "5.3.3",
    "backend": "jar",
    "cluster_name": "DefaultCluster",
    "namesrv_addr": "127.0.0.1:28001",
    "admin_namesrv_addr": "127.0.0.1:28001",
    "proxy_addr": None,
    "brokers": [["broker-a", "127.0.0.1:28011"], ["broker-b", "127.0.0.1:28021"]],
}


class _Started(Cluster):
    backend = "jar"

    def __init__(self) -> None:
        super().__init__("5.3.3")
        self.stopped = 0

    @property
    def namesrv_addr(self) -> str:
        return "127.0.0.1:28001"

    @property
    def brokers(self) -> list[BrokerInfo]:
        return [BrokerInfo("broker-a", "127.0.0.1:28011"), BrokerInfo("broker-b", "127.0.0.1:28021")]

    def stop(self) -> None:
        self.stopped += 1


class _Node:
    def __init__(self) -> None:
        self.workerinput: dict[str, Any] = {}


def _owner(tmp_path: Path) -> SessionClusterOwner:
    (tmp_path / "integration").mkdir()
    return SessionClusterOwner(tmp_path / "integration", tmp_path)


def test_the_controller_starts_it_once_for_integration_tests_and_stops_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[_Started] = []
    claimed = threading.Event()

    def start() -> _Started:
        started.append(_Started())
        return started[-1]

    monkeypatch.setattr(_session, "start_session_cluster", start)
    monkeypatch.setattr(_session, "claim_shared_ports", claimed.set)
    owner = _owner(tmp_path)
    node = _Node()
    owner.pytest_configure_node(node)
    path = Path(node.workerinput[WORKERINPUT_KEY])
    owner.pytest_xdist_node_collection_finished(node, ["tests/test_a.py::test_x"])
    assert owner._thread is None  # no integration test: no cluster
    ids = ["tests/test_a.py::test_x", "integration/test_b.py::test_y"]
    owner.pytest_xdist_node_collection_finished(node, ids)
    owner.pytest_xdist_node_collection_finished(_Node(), ids)  # the next worker's: started already
    assert owner._thread is not None
    owner._thread.join(5)
    assert len(started) == 1
    assert claimed.is_set()  # its ports come from the part the workers never pick from
    shared = wait_for_shared(path, timeout=5)
    assert (shared.namesrv_addr, shared.admin_namesrv_addr, shared.proxy_addr) == (
        "127.0.0.1:28001",
        "127.0.0.1:28001",
        None,
    )
    assert [b.address for b in shared.brokers] == ["127.0.0.1:28011", "127.0.0.1:28021"]
    assert (shared.version, shared.backend, shared.cluster_name) == ("5.3.3", "jar", "DefaultCluster")
    owner.pytest_unconfigure()
    assert started[0].stopped == 1
    assert not path.parent.exists()


def test_a_cluster_that_could_not_start_is_the_workers_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def start() -> Cluster:
        raise ClusterError("the broker did not boot within 60 s; last log lines: ...")

    monkeypatch.setattr(_session, "start_session_cluster", start)
    monkeypatch.setattr(_session, "claim_shared_ports", lambda: None)
    owner = _owner(tmp_path)
    node = _Node()
    owner.pytest_configure_node(node)
    owner.pytest_xdist_node_collection_finished(node, ["integration/test_b.py::test_y"])
    assert owner._thread is not None
    owner._thread.join(5)
    with pytest.raises(ClusterError, match="the broker did not boot within 60 s"):
        wait_for_shared(Path(node.workerinput[WORKERINPUT_KEY]), timeout=5)
    owner.pytest_unconfigure()


def test_a_worker_waits_for_the_file_and_gives_up_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "cluster.json"

    def write_later() -> None:
        path.with_suffix(".tmp").write_text(json.dumps(INFO))
        path.with_suffix(".tmp").replace(path)

    timer = threading.Timer(0.3, write_later)
    timer.start()
    assert wait_for_shared(path, timeout=10).namesrv_addr == "127.0.0.1:28001"
    timer.join()
    with pytest.raises(ClusterError, match=f"not started within 0 s \\({tmp_path / 'none.json'}\\)"):
        wait_for_shared(tmp_path / "none.json", timeout=0.3)


@pytest.mark.parametrize(
    "fault",
    [
        lambda c: c.pause_broker("broker-b"),
        lambda c: c.resume_broker("broker-b"),
        lambda c: c.block_broker("broker-b"),
        lambda c: c.unblock_broker("broker-b"),
        lambda c: c.kill_broker("broker-b"),
        lambda c: c.restart_broker("broker-b"),
        lambda c: c.stop_namesrv(),
        lambda c: c.start_namesrv(),
    ],
)
def test_a_shared_cluster_refuses_faults(fault: Any) -> None:
    """Other workers' tests run on it at the same time: a fault would be theirs too."""
    with pytest.raises(ClusterError, match=r"shared by every worker of this run.*exclusive_cluster"):
        fault(SharedCluster(INFO))
