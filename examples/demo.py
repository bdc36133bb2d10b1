"""`make demo`: a real two-broker RocketMQ cluster, a consumer group of three, and Spark reading the topic.

1. Starts a NameServer and brokers broker-a and broker-b (Apache RocketMQ jars from Maven Central),
   or uses the cluster named by ROCKETMQ_NAMESRV.
2. Creates a topic with 8 queues (4 on each broker) and prints its route, decoded by rocketmq-py.
3. Starts a consumer group of three rocketmq-py PushConsumers (three instances in this process),
   waits until they have shared the queues, produces 10,000 messages with tags and keys, and
   prints each consumer's queues and how many messages it consumed.
4. Reads the topic with Spark (local[2], the ``rocketmq`` data source, 3 partitions allocated like
   the group) and prints the rows per Spark partition and queue.
5. Stops everything.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable

import trio

from rocketmq_py import ConsumeStatus, Message, MessageExt, MessageQueue, Producer, PushConsumer
from rocketmq_py.protocol._bodies import TopicRouteData
from rocketmq_py.testing import start_cluster, topic_route

QUEUES_PER_BROKER = 4
COUNT = 10_000
CONSUMERS = 3
TAGS = ("TagA", "TagB", "TagC")
PERMS = {4: "R", 2: "W", 1: "X"}
SETTLE_TIMEOUT = 60.0
CONSUME_TIMEOUT = 120.0


def perm_text(perm: int) -> str:
    return "".join(flag if perm & bit else "-" for bit, flag in PERMS.items())


def queue_text(queue: MessageQueue) -> str:
    return f"{queue.broker_name}/{queue.queue_id}"


def print_route(topic: str, route: TopicRouteData) -> None:
    print(f"\nRoute of {topic} (GET_ROUTEINFO_BY_TOPIC, decoded by rocketmq_py.protocol):")
    print(f"  {'broker':<10} {'master address':<22} {'read':>4} {'write':>5}  perm")
    masters = {b.broker_name: b.broker_addrs.get(0, "-") for b in route.broker_datas}
    for q in sorted(route.queue_datas, key=lambda q: q.broker_name):
        print(
            f"  {q.broker_name:<10} {masters.get(q.broker_name, '-'):<22} "
            f"{q.read_queue_nums:>4} {q.write_queue_nums:>5}  {perm_text(q.perm)}"
        )


# --- the consumer group ----------------------------------------------------------------------------


class Group:
    """Three PushConsumers of one group in this process, counting what each consumed."""

    def __init__(self, namesrv: str, topic: str) -> None:
        self.topic = topic
        self.counts = [0] * CONSUMERS
        self.per_queue: Counter[tuple[str, int]] = Counter()
        self.total = 0
        self.all_consumed = trio.Event()
        self.stop = trio.Event()
        self.consumers = [
            PushConsumer(
                "demo-group",
                namesrv=namesrv,
                listener=self._listener(i),
                consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                rebalance_interval=2.0,  # Java's 20 s is slow for a demo; joins also notify at once
            )
            for i in range(CONSUMERS)
        ]
        for consumer in self.consumers:
            consumer.subscribe(topic, " || ".join(TAGS))

    def _listener(self, index: int) -> Callable[[list[MessageExt]], Awaitable[ConsumeStatus]]:
        async def listener(messages: list[MessageExt]) -> ConsumeStatus:
            self.counts[index] += len(messages)
            for m in messages:
                self.per_queue[(m.topic, m.queue_id)] += 1
            self.total += len(messages)
            if self.total >= COUNT:
                self.all_consumed.set()
            return ConsumeStatus.CONSUME_SUCCESS

        return listener

    def allocation(self) -> list[list[MessageQueue]]:
        return [[q for q in sorted(c.assignment()) if q.topic == self.topic] for c in self.consumers]

    def settled(self, queues: int) -> bool:
        owned = self.allocation()
        flat = [q for mine in owned for q in mine]
        return all(owned) and len(flat) == len(set(flat)) == queues

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            for consumer in self.consumers:
                await nursery.start(self._member, consumer)
            task_status.started()

    async def _member(
        self, consumer: PushConsumer, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        async with consumer:  # leaving it commits the offsets and unregisters the member
            task_status.started()
            await self.stop.wait()


async def wait_settled(group: Group, queues: int) -> None:
    """Until every member owns queues, each queue once, for two rebalance intervals in a row."""
    with trio.fail_after(SETTLE_TIMEOUT):
        stable_since: float | None = None
        while True:
            if group.settled(queues):
                stable_since = stable_since or trio.current_time()
                if trio.current_time() - stable_since >= 4.0:
                    return
            else:
                stable_since = None
            await trio.sleep(0.2)


async def produce(namesrv: str, topic: str) -> float:
    started = time.monotonic()
    async with Producer("demo-producer", namesrv=namesrv) as producer:
        numbers = iter(range(0, COUNT, 50))

        async def sender() -> None:
            for first in numbers:
                await producer.send_batch(
                    [
                        Message(topic, f"order {i}".encode(), tags=TAGS[i % 3], keys=[f"order-{i}"])
                        for i in range(first, first + 50)
                    ]
                )

        async with trio.open_nursery() as nursery:
            for _ in range(8):
                nursery.start_soon(sender)
    return time.monotonic() - started


async def produce_and_consume(namesrv: str, topic: str, queues: int) -> None:
    group = Group(namesrv, topic)
    async with trio.open_nursery() as nursery:
        print(f"\nStarting consumer group 'demo-group': {CONSUMERS} PushConsumers ...", flush=True)
        await nursery.start(group.run)
        await wait_settled(group, queues)
        print("  the group settled (AllocateMessageQueueAveragely over the sorted client ids)")

        seconds = await produce(namesrv, topic)
        print(f"\nProduced {COUNT:,} messages (tags {', '.join(TAGS)}; keys order-N) in {seconds:.1f} s")
        with trio.move_on_after(CONSUME_TIMEOUT):
            await group.all_consumed.wait()
        await trio.sleep(1.0)  # anything delivered twice would show up in the counts now
        allocation = group.allocation()
        client_ids = [c.client_id for c in group.consumers]
        group.stop.set()

    print("\nQueue allocation and messages consumed per consumer:")
    for i, (client_id, owned) in enumerate(zip(client_ids, allocation, strict=True)):
        queues_text = ", ".join(queue_text(q) for q in owned)
        print(f"  consumer {i} ({client_id}): {group.counts[i]:>5} messages from {queues_text}")
    print(f"  total consumed: {group.total:,} of {COUNT:,}")
    if group.total != COUNT:
        raise SystemExit(f"the group consumed {group.total} messages, expected exactly {COUNT}")


# --- Spark -----------------------------------------------------------------------------------------


def read_with_spark(namesrv: str, topic: str) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Spark's Python workers need this venv
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no traffic off loopback
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import spark_connector

    print("\nStarting Spark (local[2]) ...", flush=True)
    spark = (
        SparkSession.builder.master("local[2]")
        # Stay on loopback: the driver and its block manager bind to 127.0.0.1 (with SPARK_LOCAL_IP).
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .appName("rocketmq-demo")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        spark_connector.register(spark)
        df = (
            spark.read.format("rocketmq")
            .option("namesrv", namesrv)
            .option("topic", topic)
            .option("numPartitions", str(CONSUMERS))
            .option("allocateStrategy", "AVG")
            .load()
        )
        rows = (
            df.groupBy(F.spark_partition_id().alias("partition"), "broker_name", "queue_id")
            .agg(F.count("*").alias("rows"), F.count_distinct("tags").alias("tags"))
            .orderBy("partition", "broker_name", "queue_id")
            .collect()
        )
        print(f"spark.read.format('rocketmq') of {topic}: {df.rdd.getNumPartitions()} Spark partitions")
        print(f"  {'partition':>9}  {'queue':<12} {'rows':>6}")
        for r in rows:
            print(f"  {r.partition:>9}  {r.broker_name + '/' + str(r.queue_id):<12} {r.rows:>6}")
        per_partition = Counter[int]()
        for r in rows:
            per_partition[r.partition] += r.rows
        summary = ", ".join(f"partition {p}: {n:,}" for p, n in sorted(per_partition.items()))
        print(f"  rows per partition: {summary}; total {sum(per_partition.values()):,}")
        by_tag = {r.tags: r["count"] for r in df.groupBy("tags").count().orderBy("tags").collect()}
        print(f"  rows per tag: {by_tag}")
    finally:
        spark.stop()


def main() -> int:
    started = time.monotonic()
    print("Starting a NameServer and two brokers ...", flush=True)
    with start_cluster(brokers=2) as cluster:
        print(f"  up in {time.monotonic() - started:.1f} s: NameServer {cluster.namesrv_addr}")
        for broker in cluster.brokers:
            print(f"  {broker.name} at {broker.address}")
        topic = f"DemoTopic{int(time.time())}"
        cluster.create_topic(topic, queues=QUEUES_PER_BROKER)
        route = topic_route(cluster.namesrv_addr, topic)
        if route is None:
            print(f"the NameServer has no route for {topic}", file=sys.stderr)
            return 1
        print_route(topic, route)
        queues = sum(q.read_queue_nums for q in route.queue_datas)
        print(f"  {queues} queues in all")
        trio.run(produce_and_consume, cluster.namesrv_addr, topic, queues)
        read_with_spark(cluster.namesrv_addr, topic)
        print("\nStopping the cluster ...", flush=True)
    print(f"Stopped. Demo took {time.monotonic() - started:.1f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
