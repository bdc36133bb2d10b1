"""The failed commits a push member sends again (``consumer/_offset_store.py``), on a fake broker.

A commit that failed on a queue given up is sent again from two places: the periodic commit
(``persist_all``) and the rebalance that reads the queue's offset again (``read_from_broker``).
Both run once the killed broker is back, in the same seconds (the ``kill`` phase of
``integration/test_chaos.py``). The broker's behaviour relied on here is only that it stores an
UPDATE_CONSUMER_OFFSET and answers it (``ConsumerManageProcessor.updateConsumerOffset``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import cast

import pytest
import trio
import trio.testing

from rocketmq_py._client._api import RemotingApi
from rocketmq_py._client._route_service import RouteService
from rocketmq_py._transport import ConnectionPool
from rocketmq_py.consumer._offset_store import RemoteOffsetStore
from rocketmq_py.errors import RocketMQError, RouteNotFound
from rocketmq_py.protocol import MessageQueue, RequestCode
from rocketmq_py.testing._fake_broker import FakeBroker

GROUP = "g"
MQ = MessageQueue("T", "broker-a", 0)
KEY = (GROUP, MQ.topic, MQ.queue_id)


class OneBroker:
    """The route service's one call the store makes: the broker of a queue."""

    def __init__(self, address: str) -> None:
        self.address = address
        #: The broker has left the route (killed).
        self.gone = False

    async def require_replica(self, topic: str, broker_name: str) -> str:
        if self.gone:
            raise RouteNotFound(topic, ["fake-namesrv"], f"broker {broker_name} has no address")
        return self.address


@pytest.fixture
async def broker() -> AsyncIterator[FakeBroker]:
    async with FakeBroker(broker_name="broker-a") as fb:
        fb.add_topic(MQ.topic, queues=1)
        yield fb


@pytest.fixture
def routes(broker: FakeBroker) -> OneBroker:
    return OneBroker(broker.address)


@pytest.fixture
async def store(routes: OneBroker) -> AsyncIterator[RemoteOffsetStore]:
    async with ConnectionPool() as pool:
        api = RemotingApi(pool, timeout=3)
        yield RemoteOffsetStore(api, cast(RouteService, routes), GROUP)


async def given_up_with_a_failed_commit(routes: OneBroker, store: RemoteOffsetStore, offset: int) -> None:
    """The queue's commit fails (its broker has left the route), then the queue is given up."""
    routes.gone = True
    store.update(MQ, offset, increase_only=False)
    with pytest.raises(RocketMQError):
        await store.persist(MQ)
    store.remove(MQ)
    routes.gone = False


async def test_a_failed_commit_sent_again_by_the_periodic_commit_and_a_rebalance_at_once_is_stored_once(
    broker: FakeBroker, routes: OneBroker, store: RemoteOffsetStore, autojump_clock: trio.testing.MockClock
) -> None:
    """Both resends are in flight together; the second to be answered used to find the entry gone
    (``KeyError``, which ended the consumer: ci of d01447e, ``test_faults_lose_nothing_and_traffic_resumes``)."""
    await given_up_with_a_failed_commit(routes, store, 7)
    broker.delay(RequestCode.UPDATE_CONSUMER_OFFSET, 1.0)
    read: list[int] = []

    async def rebalance_reads() -> None:
        read.append(await store.read_from_broker(MQ))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(store.persist_all, [])
        nursery.start_soon(rebalance_reads)
    assert read == [7]
    assert broker.consumer_offsets[KEY] == 7
    # Nothing is left to send: the next periodic commit sends nothing for the queue.
    before = len(broker.requests(RequestCode.UPDATE_CONSUMER_OFFSET))
    await store.persist_all([])
    assert len(broker.requests(RequestCode.UPDATE_CONSUMER_OFFSET)) == before


async def test_a_newer_failed_commit_made_while_an_older_one_is_sent_again_is_kept(
    broker: FakeBroker, routes: OneBroker, store: RemoteOffsetStore, autojump_clock: trio.testing.MockClock
) -> None:
    """While the resend of offset 7 waits for its answer, the queue is taken again and its commit
    of 9 fails: the answer to 7 must not forget 9, which is sent with the next periodic commit."""
    await given_up_with_a_failed_commit(routes, store, 7)
    broker.delay(RequestCode.UPDATE_CONSUMER_OFFSET, 1.0)

    async def newer_commit_fails() -> None:
        await trio.sleep(0.5)  # the resend of 7 is in flight
        await given_up_with_a_failed_commit(routes, store, 9)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(store.persist_all, [])
        nursery.start_soon(newer_commit_fails)
    assert broker.consumer_offsets[KEY] == 7
    broker.clear_faults()
    await store.persist_all([])
    assert broker.consumer_offsets[KEY] == 9
