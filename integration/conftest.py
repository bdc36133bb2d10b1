"""Integration tests run against a real Apache RocketMQ cluster (two brokers) started once per run.

When ``CI`` is set or ``RMQ_REQUIRE_BROKER=1``, a cluster that cannot start fails the run; elsewhere
those tests are skipped with the reason. ``ROCKETMQ_NAMESRV=host:port`` uses an external cluster.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator

import pytest

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing import Cluster, start_cluster


def _broker_required() -> bool:
    return bool(os.environ.get("CI")) or os.environ.get("RMQ_REQUIRE_BROKER") == "1"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    """A NameServer and brokers ``broker-a`` and ``broker-b``, for the whole test run."""
    try:
        started = start_cluster(brokers=2)
    except ClusterError as exc:
        if _broker_required():
            pytest.fail(
                f"a real RocketMQ cluster is required here and could not start:\n{exc}", pytrace=False
            )
        pytest.skip(f"no RocketMQ cluster: {exc}")
    with started:
        yield started


@pytest.fixture
def create_topic(cluster: Cluster) -> Callable[..., str]:
    """Create a fresh topic with N queues on every broker; returns its name."""

    def create(queues: int = 8, *, prefix: str = "it", order: bool = False) -> str:
        topic = f"{prefix}-{uuid.uuid4().hex[:12]}"
        cluster.create_topic(topic, queues, order=order)
        return topic

    return create
