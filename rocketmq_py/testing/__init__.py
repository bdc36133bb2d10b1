"""Test helpers that ship with the SDK: a real local RocketMQ cluster and the official Java tools.

``start_cluster()`` gives a NameServer and brokers from the Apache RocketMQ jars on Maven Central
(local JVMs), the ``apache/rocketmq`` Docker image, or an external cluster named by
``ROCKETMQ_NAMESRV``. The local JVMs also come in production shapes: ACL on, TLS enforced, masters
with slaves (``start_cluster(acl=True, tls=True, slaves=["broker-b"])``), and
``cluster.client_options()`` connects a client to any of them; :class:`ControllerCluster`
(``start_cluster(controller=True)``) is a 5.x controller-mode group, a master and two slaves that
elect their master. ``python -m rocketmq_py.testing up|status|down|mqadmin|java-bench`` does the
same from a shell, and ``record`` puts a recording proxy between a client and a server.
:class:`FakeBroker` is an in-process broker built from our codec, for deterministic tests of timing
and faults (never a stand-in for the real broker in a compatibility claim).
:class:`SparkStandalone` and :class:`SparkConnectServer` start a Spark standalone cluster and a
Spark Connect server on 127.0.0.1 from pyspark's own distribution; :func:`build_image` builds the
Docker backend's image where no image registry answers.
"""

from rocketmq_py.testing._acl import Credentials
from rocketmq_py.testing._cluster import (
    CLUSTER_NAME,
    BrokerInfo,
    Cluster,
    cluster_info,
    cluster_members,
    topic_route,
)
from rocketmq_py.testing._controller import ReplicaInfo
from rocketmq_py.testing._controller_cluster import ControllerCluster
from rocketmq_py.testing._distribution import (
    DEFAULT_VERSION,
    Classpath,
    bench_version_for,
    cache_dir,
    resolve_bench,
    resolve_server,
)
from rocketmq_py.testing._fake_broker import FakeBroker
from rocketmq_py.testing._image import build_image
from rocketmq_py.testing._local import LocalCluster
from rocketmq_py.testing._processes import cleanup_stale
from rocketmq_py.testing._spark import SparkConnectServer, SparkStandalone, loopback_conf, worker_python
from rocketmq_py.testing._start import choose_backend, start_cluster
from rocketmq_py.testing._tools import ToolResult, run_java_bench, run_mqadmin

__all__ = [
    "CLUSTER_NAME",
    "DEFAULT_VERSION",
    "BrokerInfo",
    "Classpath",
    "Cluster",
    "ControllerCluster",
    "Credentials",
    "FakeBroker",
    "LocalCluster",
    "ReplicaInfo",
    "SparkConnectServer",
    "SparkStandalone",
    "ToolResult",
    "bench_version_for",
    "build_image",
    "cache_dir",
    "choose_backend",
    "cleanup_stale",
    "cluster_info",
    "cluster_members",
    "loopback_conf",
    "resolve_bench",
    "resolve_server",
    "run_java_bench",
    "run_mqadmin",
    "start_cluster",
    "topic_route",
    "worker_python",
]
