"""The lite pull consumer against the real two-broker cluster: a tag filter in assign mode, and a
queue-change listener that sees the topic grow (``cluster.create_topic`` again with more queues,
as ``mqadmin updateTopic`` does).
"""

from __future__ import annotations

import itertools
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import trio

from rocketmq_py import Message, MessageExt, MessageQueue, Producer
from rocketmq_py.consumer._lite_pull import LitePullConsumer
from rocketmq_py.testing import Cluster


def lite(cluster: Cluster, group: str, **options: Any) -> LitePullConsumer:
    options.setdefault("instance_name", f"lite-{uuid.uuid4().hex[:8]}")
    options.setdefault("consume_from_where", "CONSUME_FROM_FIRST_OFFSET")
    return LitePullConsumer(group, namesrv=cluster.namesrv_addr, **options)


async def test_assign_with_tag_expression_polls_only_that_tag(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(4)  # 4 queues on each broker
    sent: dict[str, list[str]] = {"a": [], "b": []}
    async with Producer("it-lite-filter-producer", namesrv=cluster.namesrv_addr) as producer:
        for i in range(80):
            tag = "ab"[i % 2]
            result = await producer.send(Message(topic, f"{tag}-{i}".encode(), tags=tag))
            sent[tag].append(result.msg_id)
    got: list[MessageExt] = []
    async with lite(cluster, f"it-lite-filter-{topic}") as consumer:
        queues = await consumer.fetch_message_queues(topic)
        assert len(queues) == 8
        consumer.assign(queues, "a")
        with trio.fail_after(60):
            while not set(sent["a"]) <= {m.msg_id for m in got}:
                got.extend(await consumer.poll(timeout=1))
        with trio.move_on_after(3):  # anything else would come now
            while True:
                got.extend(await consumer.poll(timeout=1))
        info = consumer._running_info()
    assert {m.tags for m in got} == {"a"}
    assert Counter(m.msg_id for m in got) == Counter(sent["a"])  # each "a" once, no "b"
    assert [(s.topic, s.sub_string) for s in info.subscription_set] == [(topic, "a")]


async def test_queue_change_listener_sees_the_topic_grow(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(2)  # 2 queues on each broker: 4 in all
    heard: list[frozenset[MessageQueue]] = []
    topics: set[str] = set()
    changed = trio.Event()

    def on_change(changed_topic: str, queues: frozenset[MessageQueue]) -> None:
        topics.add(changed_topic)
        heard.append(queues)
        if len(queues) == 10:  # both brokers updated (a set with one of them may come first)
            changed.set()

    consumer = lite(cluster, f"it-lite-watch-{topic}", topic_metadata_check_interval=1.0)
    consumer.register_queue_change_listener(topic, on_change)
    async with consumer:
        assert [len(q) for q in heard] == [4]  # told before the block ran
        await trio.to_thread.run_sync(cluster.create_topic, topic, 5)  # updateTopic: 5 per broker
        with trio.fail_after(30):
            await changed.wait()
        # Following the listener: assign what it was told last, and read a message from a new queue.
        consumer.assign(heard[-1])
        newest = MessageQueue(topic, "broker-a", 4)
        async with Producer("it-lite-watch-producer", namesrv=cluster.namesrv_addr) as producer:
            await producer.send(Message(topic, b"to-a-new-queue"), queue=newest)
        got: list[MessageExt] = []
        with trio.fail_after(30):
            while not got:
                got.extend(await consumer.poll(timeout=1))
    assert topics == {topic}
    assert len(heard[0]) == 4
    assert len(heard[-1]) == 10
    assert all(old < new for old, new in itertools.pairwise(heard))  # only ever grew
    assert {(m.broker_name, m.queue_id, m.body) for m in got} == {("broker-a", 4, b"to-a-new-queue")}
