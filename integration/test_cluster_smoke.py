"""The cluster is real: the official Java tools see it, route it, and send through it."""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Callable

import pytest

from rocketmq_py.protocol._fastjson import parse_fastjson
from rocketmq_py.testing import Cluster, _settings
from rocketmq_py.testing._cluster import _request, topic_route


@pytest.fixture(scope="module")
def cluster(exclusive_cluster: Cluster) -> Cluster:
    """A cluster no other worker's tests use: this module pauses a broker."""
    return exclusive_cluster


#: A NameServer KV entry (Java ``RequestCode.GET_KV_CONFIG``).
GET_KV_CONFIG = 101


def test_cluster_list_shows_both_brokers(cluster: Cluster) -> None:
    out = cluster.mqadmin("clusterList").check().output
    for broker in cluster.brokers:
        line = next(ln for ln in out.splitlines() if f" {broker.name} " in f" {ln} ")
        assert broker.address in line
        assert cluster.cluster_name in line


def _route(cluster: Cluster, topic: str) -> dict[str, object]:
    out = cluster.mqadmin("topicRoute", "-t", topic).check().output
    start = out.index("{")
    # mqadmin prints fastjson output: bare integer keys in brokerAddrs, which json.loads rejects.
    route = parse_fastjson(out[start : out.rindex("}") + 1])
    assert isinstance(route, dict)
    return route


def test_topic_with_8_queues_on_2_brokers_routes_16_queues(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(8)
    route = _route(cluster, topic)
    queue_datas = route["queueDatas"]
    assert isinstance(queue_datas, list)
    assert sorted(q["brokerName"] for q in queue_datas) == ["broker-a", "broker-b"]
    assert sum(q["readQueueNums"] for q in queue_datas) == 16
    assert sum(q["writeQueueNums"] for q in queue_datas) == 16


def test_topics_are_created_as_mqadmin_creates_them(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    """``create_topic`` (our requests, no JVM) leaves what ``mqadmin updateTopic`` leaves: the same
    queues and permissions in the route, and for an order topic the same order conf on the NameServer."""
    for order in (False, True):
        ours = create_topic(2, prefix="it-ours", order=order)
        java = f"it-java-{uuid.uuid4().hex[:12]}"
        args = ["updateTopic", "-c", cluster.cluster_name, "-t", java, "-r", "2", "-w", "2"]
        cluster.mqadmin(*args, *(["-o", "true"] if order else [])).check()
        cluster.wait_for_route(java, 2 * len(cluster.brokers))

        def queues(topic: str) -> list[tuple[str, int, int, int, int]]:
            route = topic_route(cluster.namesrv_addr, topic, ssl_context=cluster.ssl_context)
            assert route is not None
            return sorted(
                (q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm, q.topic_sys_flag)
                for q in route.queue_datas
            )

        def order_conf(topic: str) -> tuple[int, set[str] | None]:
            """The NameServer's answer and entries (mqadmin writes them in hash order, we sort them)."""
            fields = {"namespace": "ORDER_TOPIC_CONFIG", "key": topic}
            reply = _request(cluster.namesrv_addr, GET_KV_CONFIG, fields, 3.0, b"", cluster.ssl_context, None)
            value = reply.ext_fields.get("value")
            return reply.code, None if value is None else set(value.split(";"))

        assert queues(ours) == queues(java)
        assert order_conf(ours) == order_conf(java)
        if order:
            assert order_conf(ours) == (0, {f"{b.name}:2" for b in cluster.brokers})
        else:
            assert order_conf(ours)[0] != 0  # no entry


def _max_offsets(cluster: Cluster, topic: str) -> dict[tuple[str, int], int]:
    """(broker, queue) -> max offset, parsed from mqadmin topicStatus."""
    out = cluster.mqadmin("topicStatus", "-t", topic).check().output
    offsets = {}
    for line in out.splitlines():
        m = re.match(r"^(broker-\w)\s+(\d+)\s+(\d+)\s+(\d+)", line.strip())
        if m:
            offsets[(m.group(1), int(m.group(2)))] = int(m.group(4))
    return offsets


def test_java_benchmark_producer_sends_and_offsets_advance(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(8)
    before = _max_offsets(cluster, topic)
    assert len(before) == 16
    assert sum(before.values()) == 0
    result = cluster.java_bench(
        "producer", "-t", topic, "-w", "4", "-q", "400", "-ri", "1000", "-s", "256"
    ).check()
    # The closing line's layout differs between runs (with or without TPS figures); read its counters.
    complete = next((ln for ln in result.output.splitlines() if ln.startswith("[Complete]")), None)
    assert complete, result.output[-2000:]
    counters = {
        k: int(v) for k, v in re.findall(r"(Send Total|Send Failed|Response Failed): (\d+)", complete)
    }
    assert counters == {"Send Total": 400, "Send Failed": 0, "Response Failed": 0}, complete
    after = _max_offsets(cluster, topic)
    assert sum(after.values()) == 400
    # The producer spreads messages over both brokers.
    assert {b for (b, _), off in after.items() if off > 0} == {"broker-a", "broker-b"}


def test_brokers_run_with_the_kits_settings(cluster: Cluster) -> None:
    """Every broker took the kit's broker.conf (``_settings.broker_config``), as mqadmin
    getBrokerConfig reads it back: among them 5.x's timer wheel written back every 30 s, not every
    second (``TimerMessageStore.TimerFlushService.run`` -> ``TimerWheel.flush``, a quarter of a core
    on an idle broker)."""
    for broker in cluster.brokers:
        out = cluster.mqadmin("getBrokerConfig", "-b", broker.address).check().output
        conf = dict(re.findall(r"^(\w+)\s*=\s*(\S*)\s*$", out, re.MULTILINE))
        assert conf["waitTimeMillsInSendQueue"] == "1000", out[-2000:]
        assert conf["registerNameServerPeriod"] == str(_settings.REGISTER_PERIOD_MS)
        if not cluster.version.startswith("4."):
            assert conf["timerFlushIntervalMs"] == str(_settings.TIMER_FLUSH_INTERVAL_MS)
            assert conf["timerGetMessageThreadNum"] == conf["timerPutMessageThreadNum"] == "1"


def test_paused_broker_times_out_and_answers_after_resume(cluster: Cluster) -> None:
    address = cluster.broker_address("broker-b")
    assert cluster.mqadmin("brokerStatus", "-b", address).check().output.count("brokerVersionDesc") == 1
    cluster.pause_broker("broker-b")
    try:
        started = time.monotonic()
        paused = cluster.mqadmin("brokerStatus", "-b", address, timeout=60)
        # mqadmin prints the exception and still exits 0: judge by what it printed.
        assert "brokerVersionDesc" not in paused.output
        assert "RemotingTimeoutException" in paused.output or paused.timed_out, paused.output[-2000:]
        assert time.monotonic() - started >= 2.0  # it waited for an answer that never came
    finally:
        cluster.resume_broker("broker-b")
    resumed = cluster.mqadmin("brokerStatus", "-b", address).check()
    assert "brokerVersionDesc" in resumed.output


def test_cluster_runs_on_the_requested_backend_over_loopback(cluster: Cluster) -> None:
    """``ROCKETMQ_BACKEND`` picks what runs the cluster, and every address clients get is loopback."""
    wanted = os.environ.get("ROCKETMQ_BACKEND", "auto")
    if wanted != "auto":
        assert cluster.backend == wanted
    assert cluster.namesrv_addr.startswith("127.0.0.1:")
    assert all(broker.address.startswith("127.0.0.1:") for broker in cluster.brokers)
    out = cluster.mqadmin("clusterList").check().output
    listed = re.findall(r"\b(\d+\.\d+\.\d+\.\d+):\d+", out)
    assert listed, out
    assert set(listed) == {"127.0.0.1"}, out
    if cluster.backend == "docker":
        import docker

        client = docker.from_env()
        try:
            containers = client.containers.list(
                filters={"label": "org.rocketmq-py.cluster"}, ignore_removed=True
            )
            ours = [c for c in containers if c.image.tags and c.image.tags[0] == cluster.image]
            assert len(ours) >= 1 + len(cluster.brokers)
            assert {c.attrs["HostConfig"]["NetworkMode"] for c in ours} == {"host"}
        finally:
            client.close()
