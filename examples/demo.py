"""`make demo`: a real two-broker RocketMQ cluster, a topic on it, messages through it.

Starts a NameServer and brokers broker-a and broker-b (Apache RocketMQ jars from Maven Central, or
the cluster named by ROCKETMQ_NAMESRV), creates a topic with 4 queues on every broker, asks the
NameServer for its route with rocketmq-py's own protocol codec, sends ten messages with the
rocketmq-py Producer and reads them back with a PushConsumer, prints the cluster as the official
mqadmin tool sees it, and stops everything.
"""

from __future__ import annotations

import sys
import time

import trio

from rocketmq_py import ConsumeStatus, Message, MessageExt, Producer, PushConsumer
from rocketmq_py.protocol._bodies import TopicRouteData
from rocketmq_py.testing import start_cluster, topic_route

PERMS = {4: "R", 2: "W", 1: "X"}


def perm_text(perm: int) -> str:
    return "".join(flag if perm & bit else "-" for bit, flag in PERMS.items())


def print_route(topic: str, route: TopicRouteData) -> None:
    print(f"\nRoute of {topic} (GET_ROUTEINFO_BY_TOPIC, decoded by rocketmq_py.protocol):")
    print(f"  {'broker':<10} {'master address':<22} {'read':>4} {'write':>5}  perm")
    masters = {b.broker_name: b.broker_addrs.get(0, "-") for b in route.broker_datas}
    for q in sorted(route.queue_datas, key=lambda q: q.broker_name):
        print(
            f"  {q.broker_name:<10} {masters.get(q.broker_name, '-'):<22} "
            f"{q.read_queue_nums:>4} {q.write_queue_nums:>5}  {perm_text(q.perm)}"
        )
    total = sum(q.write_queue_nums for q in route.queue_datas)
    print(f"  {total} writable queues in all")


async def send_and_consume(namesrv: str, topic: str) -> None:
    print(f"\nSending 10 messages to {topic} with rocketmq_py.Producer:")
    async with Producer("demo-producer", namesrv=namesrv) as producer:
        for i in range(10):
            result = await producer.send(Message(topic, f"hello #{i}".encode(), tags="demo", keys=[f"k{i}"]))
            print(
                f"  {result.msg_id} -> {result.queue.broker_name} queue {result.queue.queue_id} offset {result.queue_offset}"
            )
    received: list[MessageExt] = []
    done = trio.Event()

    async def listener(messages: list[MessageExt]) -> ConsumeStatus:
        received.extend(messages)
        if len(received) >= 10:
            done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    print("Consuming them with rocketmq_py.PushConsumer:")
    consumer = PushConsumer(
        "demo-consumer", namesrv=namesrv, listener=listener, consume_from_where="CONSUME_FROM_FIRST_OFFSET"
    )
    consumer.subscribe(topic, "demo")
    async with consumer:
        with trio.move_on_after(60):
            await done.wait()
    for msg in sorted(received, key=lambda m: m.body):
        print(
            f"  {msg.body.decode()!r} tags={msg.tags} keys={list(msg.keys)} from {msg.store_host} queue {msg.queue_id}"
        )
    if len(received) < 10:
        raise SystemExit(f"only {len(received)} of 10 messages came back")


def main() -> int:
    started = time.monotonic()
    print("Starting a NameServer and two brokers ...", flush=True)
    with start_cluster(brokers=2) as cluster:
        print(f"  up in {time.monotonic() - started:.1f} s: NameServer {cluster.namesrv_addr}")
        for broker in cluster.brokers:
            print(f"  {broker.name} at {broker.address}")
        topic = f"DemoTopic{int(time.time())}"
        cluster.create_topic(topic, queues=4)
        route = topic_route(cluster.namesrv_addr, topic)
        if route is None:
            print(f"the NameServer has no route for {topic}", file=sys.stderr)
            return 1
        print_route(topic, route)
        trio.run(send_and_consume, cluster.namesrv_addr, topic)
        print("\nmqadmin clusterList:")
        print(cluster.mqadmin("clusterList").check().output.strip())
    print(f"\nStopped. Demo took {time.monotonic() - started:.1f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
