"""Choosing a backend: an external cluster, local JVMs from Maven jars, or Docker."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._acl import Credentials
from rocketmq_py.testing._cluster import Cluster
from rocketmq_py.testing._distribution import DEFAULT_VERSION

__all__ = ["BACKENDS", "choose_backend", "start_cluster"]

BACKENDS = ("auto", "external", "jar", "docker")


def choose_backend(requested: str | None = None) -> str:
    """The backend to use.

    ``ROCKETMQ_NAMESRV`` set -> ``external`` (it overrides everything); else the request, else
    ``ROCKETMQ_BACKEND``, else ``auto``: the local jars when Java is installed, else Docker when an engine
    answers.
    """
    if os.environ.get("ROCKETMQ_NAMESRV"):
        return "external"
    backend = requested or os.environ.get("ROCKETMQ_BACKEND") or "auto"
    if backend not in BACKENDS:
        raise ClusterError(f"unknown backend {backend!r}; one of {', '.join(BACKENDS)}")
    if backend != "auto":
        return backend
    if shutil.which("java") or os.environ.get("JAVA_HOME"):
        return "jar"
    from rocketmq_py.testing._docker import docker_available

    if docker_available():
        return "docker"
    raise ClusterError(
        "no way to run RocketMQ here: install Java 17+ and Maven, start Docker, or set ROCKETMQ_NAMESRV"
    )


def start_cluster(
    brokers: int = 1,
    *,
    version: str | None = None,
    backend: str | None = None,
    detached: bool = False,
    acl: bool | Credentials = False,
    tls: bool = False,
    slaves: Sequence[str] = (),
    relay: bool = False,
    proxy: bool = False,
    clients_via_proxy: bool = False,
    controller: bool = False,
) -> Cluster:
    """Start (or attach to) a RocketMQ cluster and return it; use it as a context manager to stop it.

    Args:
        brokers: number of master brokers (``broker-a``, ``broker-b``, ...).
        version: Apache RocketMQ release; default ``ROCKETMQ_VERSION`` or 5.3.3.
        backend: ``auto``, ``jar``, ``docker`` or ``external`` (see :func:`choose_backend`).
        detached: (jar backend) leave the JVMs running after this process exits.
        acl: (jar backend) ACL on, with these credentials or random ones (``True``).
        tls: (jar backend) NameServer and brokers enforce TLS with certificates made for the cluster.
        slaves: (jar backend) broker names that get one slave each.
        relay: (jar backend, 5.x) clients reach the brokers through a relay in this process, so that
            ``cluster.block_broker(name)`` can black-hole one (no root needed).
        proxy: (jar and docker backends, 5.x) a Proxy in cluster mode in front of the cluster:
            ``cluster.client_options(proxy=True)`` connects through it.
        clients_via_proxy: (with ``proxy``) ``cluster.namesrv_addr`` and ``cluster.client_options()``
            give the Proxy, so code written for a plain cluster runs through it.
        controller: (jar backend, 5.x) a controller-mode group instead: a NameServer with an
            embedded controller and one broker group ``broker-a`` of a master and two slaves that
            elect their master (a :class:`~rocketmq_py.testing.ControllerCluster`); no other shape
            option goes with it.

    ``cluster.client_options()`` then gives what a client needs to connect (ACL keys, TLS context).

    Raises:
        ClusterError: the cluster could not be resolved or started; the message holds the last log lines.
    """
    version = version or os.environ.get("ROCKETMQ_VERSION") or DEFAULT_VERSION
    chosen = choose_backend(backend)
    if chosen != "jar" and (acl or tls or slaves or relay or clients_via_proxy or controller):
        raise ClusterError(
            "ACL, TLS, slaves, the relay, clients_via_proxy and a controller-mode group are only set "
            f"up by the jar backend, not {chosen}"
        )
    if proxy and chosen not in ("jar", "docker"):
        raise ClusterError(f"a Proxy is set up by the jar and docker backends, not {chosen}")
    if controller:
        if brokers != 1 or acl or tls or slaves or relay or proxy:
            raise ClusterError(
                "a controller-mode group is one broker group of three replicas, without ACL, TLS, "
                "slaves=, the relay or a Proxy"
            )
        from rocketmq_py.testing._controller_cluster import ControllerCluster

        return ControllerCluster(version=version, detached=detached).start()
    if chosen == "external":
        from rocketmq_py.testing._external import ExternalCluster

        return ExternalCluster(os.environ["ROCKETMQ_NAMESRV"], version=version).start()
    if chosen == "docker":
        from rocketmq_py.testing._docker import DockerCluster

        return DockerCluster(brokers, version=version, proxy=proxy).start()
    from rocketmq_py.testing._local import LocalCluster

    return LocalCluster(
        brokers,
        version=version,
        detached=detached,
        acl=acl,
        tls=tls,
        slaves=slaves,
        relay=relay,
        proxy=proxy,
        clients_via_proxy=clients_via_proxy,
    ).start()
