"""``LitePullConsumer.commit()`` with no offsets: the queues whose consumed offset moved, as Java's.

Java's ``DefaultLitePullConsumerImpl.commitAll`` stores a queue's offset only once its consumer
offset is set, by a poll that returned messages from it or by a seek (``AssignedMessageQueue``
keeps -1 until then). A broker that has not seen the group's pull yet answers an offset commit
SUBSCRIPTION_GROUP_NOT_EXIST (``ConsumerManageProcessor.updateConsumerOffset``); through a 5.x
Proxy that is every broker the group has not pulled from yet (the Proxy keeps heartbeats to
itself). Real twin: ``integration/test_proxy.py::test_a_lite_pull_consumer_polls_and_commits``
(it failed so once, in the CI run of stop 34's ci8: broker-b's queues were empty).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from rocketmq_py.consumer._lite_pull import LitePullConsumer
from rocketmq_py.errors import RocketMQError
from rocketmq_py.protocol import MessageExt, RequestCode, ResponseCode

if TYPE_CHECKING:
    from conftest import Cluster


def lite(cluster: Cluster) -> LitePullConsumer:
    consumer = LitePullConsumer(
        cluster.group,
        namesrv=cluster.namesrv.address,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        auto_commit=False,
    )
    consumer.subscribe(cluster.topic)
    return consumer


async def poll_n(consumer: LitePullConsumer, count: int) -> list[MessageExt]:
    got: list[MessageExt] = []
    with trio.fail_after(60):
        while len(got) < count:
            got.extend(await consumer.poll(timeout=1))
    return got


def group_unknown_to(cluster: Cluster) -> None:
    """``broker-b`` has not seen the group: it refuses the group's offset commits."""
    cluster.b.on_reply(
        RequestCode.UPDATE_CONSUMER_OFFSET,
        ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
        remark=f"subscription group not exist, {cluster.group}",
    )


async def test_commit_stores_the_queues_polled_from_and_leaves_the_others_alone(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    a0 = cluster.queues()[0]
    cluster.put(a0, 5)
    group_unknown_to(cluster)
    async with lite(cluster) as consumer:
        await poll_n(consumer, 5)
        await consumer.commit()
        assert await consumer.committed(a0) == 5
    assert cluster.offset_updates(cluster.b) == []
    # Every other queue of broker-a was left alone too.
    on_a = [mq for mq in cluster.queues() if mq.broker_name == cluster.a.broker_name]
    assert {mq for mq in on_a if cluster.offset_updates(cluster.a, mq)} == {a0}


async def test_a_seeked_queue_is_committed_and_its_broker_refusal_is_raised(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    b0 = next(mq for mq in cluster.queues() if mq.broker_name == cluster.b.broker_name)
    cluster.put(b0, 3)
    group_unknown_to(cluster)
    async with lite(cluster) as consumer:
        await poll_n(consumer, 3)
        consumer.seek(b0, 1)
        with pytest.raises(RocketMQError, match="subscription group not exist"):
            await consumer.commit()
