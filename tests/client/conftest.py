"""Fixtures for client-layer tests: a fake NameServer, two fake brokers and a refused address.

``cluster`` is three in-process FakeBrokers: ``namesrv`` answers route queries (its route for
``cluster.topic`` names ``broker-a`` and ``broker-b``), ``a`` and ``b`` are the brokers. Test
modules cannot import this file under ``--import-mode=importlib``, so helpers are methods.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass

import pytest

from rocketmq_py.protocol import BrokerData, QueueData, RequestCode, TopicRouteData
from rocketmq_py.testing._fake_broker import FakeBroker


@dataclass
class Cluster:
    """A fake NameServer and two fake brokers."""

    namesrv: FakeBroker
    a: FakeBroker
    b: FakeBroker
    topic: str = "TopicTest"

    @property
    def brokers(self) -> tuple[FakeBroker, FakeBroker]:
        return (self.a, self.b)

    @staticmethod
    def route(
        *brokers: FakeBroker,
        queues: int = 2,
        perm: int = 6,
        slaves: Mapping[str, FakeBroker] | None = None,
    ) -> TopicRouteData:
        """A route naming each fake as the master of its ``broker_name`` (and ``slaves[name]`` as
        its broker id 1)."""
        slaves = slaves or {}
        return TopicRouteData(
            queue_datas=tuple(
                QueueData(
                    broker_name=fb.broker_name, read_queue_nums=queues, write_queue_nums=queues, perm=perm
                )
                for fb in brokers
            ),
            broker_datas=tuple(
                BrokerData(
                    cluster="DefaultCluster",
                    broker_name=fb.broker_name,
                    broker_addrs={0: fb.address}
                    | ({1: slaves[fb.broker_name].address} if fb.broker_name in slaves else {}),
                )
                for fb in brokers
            ),
        )

    @staticmethod
    def route_queries(namesrv: FakeBroker) -> list[str]:
        """The topics ``namesrv`` was asked about, in order."""
        return [cmd.ext_fields["topic"] for cmd in namesrv.requests(RequestCode.GET_ROUTEINFO_BY_TOPIC)]


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    async with (
        FakeBroker(broker_name="namesrv") as namesrv,
        FakeBroker(broker_name="broker-a") as a,
        FakeBroker(broker_name="broker-b") as b,
    ):
        result = Cluster(namesrv, a, b)
        for fb in (a, b):
            fb.add_topic(result.topic, queues=2)
        namesrv.set_route(result.topic, Cluster.route(a, b))
        yield result
