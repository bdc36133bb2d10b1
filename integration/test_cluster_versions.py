"""RocketMQ 4.x runs too: a one-broker 4.9.7 cluster (the newest 4.x broker on Maven Central)."""

from __future__ import annotations

import os
import uuid

import pytest

from rocketmq_py.testing import LocalCluster, topic_route

VERSION_4X = "4.9.7"


@pytest.mark.skipif(
    bool(os.environ.get("ROCKETMQ_NAMESRV")),
    reason="an external cluster is in use: its version is not ours to pick",
)
def test_a_4x_cluster_starts_routes_and_stops() -> None:
    with LocalCluster(1, version=VERSION_4X).start() as cluster:
        assert [b.name for b in cluster.brokers] == ["broker-a"]
        topic = f"v4-{uuid.uuid4().hex[:8]}"
        cluster.create_topic(topic, 4)
        route = topic_route(cluster.namesrv_addr, topic)
        assert route is not None
        assert [(q.broker_name, q.read_queue_nums, q.write_queue_nums) for q in route.queue_datas] == [
            ("broker-a", 4, 4)
        ]
        assert route.broker_datas[0].broker_addrs[0] == cluster.broker_address("broker-a")
        assert "V4_9_7" in cluster.mqadmin("clusterList").check().output
        workdir = cluster.workdir
    assert not workdir.exists()
