"""Quickstart: send messages with rocketmq-py's Producer and consume them with a PushConsumer.

    python examples/quickstart.py

Uses the cluster named by ROCKETMQ_NAMESRV (``host:port``), or starts a local two-broker cluster
(Apache RocketMQ jars from Maven Central, cached after the first run) and stops it at the end.
"""

from __future__ import annotations

import sys
import time

import trio

from rocketmq_py import ConsumeStatus, Message, MessageExt, Producer, PushConsumer
from rocketmq_py.testing import start_cluster

COUNT = 20


async def produce(namesrv: str, topic: str) -> None:
    async with Producer("quickstart-producer", namesrv=namesrv) as producer:
        for i in range(COUNT):
            message = Message(topic, f"hello #{i}".encode(), tags="TagA" if i % 2 else "TagB", keys=[f"k{i}"])
            result = await producer.send(message)
            print(
                f"sent {result.msg_id} to {result.queue.broker_name}/{result.queue.queue_id} @ {result.queue_offset}"
            )


async def consume(namesrv: str, topic: str) -> list[MessageExt]:
    received: list[MessageExt] = []
    done = trio.Event()

    async def listener(messages: list[MessageExt]) -> ConsumeStatus:
        received.extend(messages)
        if len(received) >= COUNT:
            done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        "quickstart-consumer",
        namesrv=namesrv,
        listener=listener,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",  # a new group reads the topic from the start
    )
    consumer.subscribe(topic, "TagA || TagB")
    async with consumer:
        with trio.move_on_after(60):
            await done.wait()
    return received


async def main(namesrv: str, topic: str) -> int:
    await produce(namesrv, topic)
    received = await consume(namesrv, topic)
    for msg in sorted(received, key=lambda m: int(m.body.split(b"#")[1])):
        print(f"got {msg.body.decode()!r} tags={msg.tags} keys={list(msg.keys)} queue={msg.queue_id}")
    print(f"{len(received)} of {COUNT} messages consumed")
    return 0 if len(received) >= COUNT else 1


def run() -> int:
    with start_cluster(brokers=2) as cluster:
        topic = f"QuickstartTopic{int(time.time())}"
        cluster.create_topic(topic, queues=4)
        return trio.run(main, cluster.namesrv_addr, topic)


if __name__ == "__main__":
    sys.exit(run())
