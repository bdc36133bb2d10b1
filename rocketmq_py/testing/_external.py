"""An existing cluster, named by ``ROCKETMQ_NAMESRV=host:port``: used as is, never started or stopped."""

from __future__ import annotations

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._cluster import BrokerInfo, Cluster, cluster_info
from rocketmq_py.testing._distribution import DEFAULT_VERSION

__all__ = ["ExternalCluster"]


class ExternalCluster(Cluster):
    """A cluster someone else runs; brokers are discovered from the NameServer."""

    backend = "external"

    def __init__(self, namesrv: str, *, version: str = DEFAULT_VERSION) -> None:
        super().__init__(version)
        self._namesrv = namesrv.split(";")[0].strip()
        self._brokers: list[BrokerInfo] = []

    @property
    def namesrv_addr(self) -> str:
        return self._namesrv

    @property
    def brokers(self) -> list[BrokerInfo]:
        return list(self._brokers)

    def start(self) -> ExternalCluster:
        try:
            table = cluster_info(self._namesrv)
        except OSError as exc:
            raise ClusterError(f"the external NameServer {self._namesrv} does not answer: {exc}") from exc
        if not table:
            raise ClusterError(f"the external NameServer {self._namesrv} lists no brokers")
        self._brokers = [BrokerInfo(name, addr) for name, addr in sorted(table.items())]
        return self

    def stop(self) -> None:
        """Nothing to stop: the cluster is not ours."""
