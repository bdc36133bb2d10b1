"""A topic update the NameServer holds stale (a broker registration race) is mended by who updates it.

``_stale_route`` makes the state on purpose on the real NameServer: broker-a listed with the topic's
old queue count and broker-a's own data version, so the broker's registrations change nothing. The
test kit's ``create_topic`` and the CLI's ``topic create`` see a broker still stale after a few
seconds and make it register the topic again (an update with another filter type, then the asked one).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from integration._stale_route import stale_registrar
from rocketmq_py.cli import EXIT_OK, main
from rocketmq_py.testing import Cluster, topic_route


def _queues(cluster: Cluster, topic: str) -> dict[str, tuple[int, int]]:
    route = topic_route(cluster.namesrv_addr, topic)
    assert route is not None
    return {q.broker_name: (q.read_queue_nums, q.write_queue_nums) for q in route.queue_datas}


def _stale(cluster: Cluster, create_topic: Callable[..., str]) -> str:
    """A topic grown from 2 to 5 queues per broker that the NameServer shows with 2 on broker-a for good."""
    topic = create_topic(2)
    cluster.create_topic(topic, 5)
    with stale_registrar(cluster, "broker-a", topic=topic) as registrar:
        registrar.leave_stale(topic, 2)
        assert _queues(cluster, topic) == {"broker-a": (2, 2), "broker-b": (5, 5)}
        registrar.wait_for_the_broker(topic, timeout=60)  # broker-a registers itself again...
        assert _queues(cluster, topic) == {"broker-a": (2, 2), "broker-b": (5, 5)}  # ...and nothing changes
    return topic


def test_the_kits_create_topic_mends_a_stale_broker(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = _stale(cluster, create_topic)
    cluster.create_topic(topic, 5)  # without the mend: ClusterError "shows 7 queues after 30 s, not 10"
    assert _queues(cluster, topic) == {"broker-a": (5, 5), "broker-b": (5, 5)}


def test_the_clis_topic_create_mends_a_stale_broker(
    cluster: Cluster, create_topic: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    topic = _stale(cluster, create_topic)
    capsys.readouterr()
    code = main(["-n", cluster.namesrv_addr, "topic", "create", topic, "--queues", "5", "--wait", "30"])
    out, err = capsys.readouterr()
    assert (code, err) == (EXIT_OK, ""), err
    assert "2 broker(s), 10 read / 10 write queues" in out
    assert _queues(cluster, topic) == {"broker-a": (5, 5), "broker-b": (5, 5)}
