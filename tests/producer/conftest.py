"""Fixtures for producer behaviour tests: a NameServer and two brokers, all FakeBrokers.

``cluster`` is three in-process fakes: ``namesrv`` answers route queries (its route for
``cluster.topic`` names ``broker-a`` and ``broker-b`` with two queues each), ``a`` and ``b`` store
what producers send them. ``make_producer(**options)`` builds a producer pointed at the fake
NameServer. (Test modules cannot import this file under ``--import-mode=importlib``, so the
helpers are methods of the fixture.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from rocketmq_py.producer._producer import Producer
from rocketmq_py.protocol import (
    BrokerData,
    Message,
    QueueData,
    RemotingCommand,
    RequestCode,
    TopicRouteData,
    decode_properties,
)
from rocketmq_py.testing._fake_broker import FakeBroker

_SEND_CODES = (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE)


@dataclass
class Cluster:
    """A fake NameServer and two fake brokers, with helpers to read what they received."""

    namesrv: FakeBroker
    a: FakeBroker
    b: FakeBroker
    topic: str = "TopicTest"
    group: str = "pg-test"

    @staticmethod
    def route(*brokers: FakeBroker, queues: int = 2, perm: int = 6) -> TopicRouteData:
        """A route naming each fake as the master of its ``broker_name``, ``queues`` queues each."""
        return TopicRouteData(
            queue_datas=tuple(
                QueueData(
                    broker_name=fb.broker_name, read_queue_nums=queues, write_queue_nums=queues, perm=perm
                )
                for fb in brokers
            ),
            broker_datas=tuple(
                BrokerData(cluster="DefaultCluster", broker_name=fb.broker_name, broker_addrs={0: fb.address})
                for fb in brokers
            ),
        )

    @staticmethod
    def sends(fb: FakeBroker) -> list[RemotingCommand]:
        """The send requests (single and batch) ``fb`` received, in order."""
        return [cmd for cmd in fb.requests() if cmd.code in _SEND_CODES]

    @staticmethod
    def uniq_key(request: RemotingCommand) -> str:
        """The UNIQ_KEY in a V2 send request's properties (header ``i``)."""
        return decode_properties(request.ext_fields["i"])["UNIQ_KEY"]

    @property
    def brokers(self) -> tuple[FakeBroker, FakeBroker]:
        return (self.a, self.b)

    def broker(self, name: str) -> FakeBroker:
        return {self.a.broker_name: self.a, self.b.broker_name: self.b}[name]

    def message(self, body: bytes = b"hello", **kwargs: Any) -> Message:
        return Message(self.topic, body, **kwargs)

    def route_queries(self) -> list[str]:
        """The topics the NameServer was asked about, in order."""
        return [cmd.ext_fields["topic"] for cmd in self.namesrv.requests(RequestCode.GET_ROUTEINFO_BY_TOPIC)]


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


@pytest.fixture
def make_producer(cluster: Cluster) -> Callable[..., Producer]:
    """``make_producer(**options)``: a producer (not yet started) of ``cluster.group``."""

    def make(**options: Any) -> Producer:
        options.setdefault("namesrv", cluster.namesrv.address)
        return Producer(options.pop("group", cluster.group), **options)

    return make
