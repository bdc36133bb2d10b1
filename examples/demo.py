"""`make demo`: a real two-broker RocketMQ cluster, a topic on it, its route and the cluster list.

Starts a NameServer and brokers broker-a and broker-b (Apache RocketMQ jars from Maven Central, or
the cluster named by ROCKETMQ_NAMESRV), creates a topic with 4 queues on every broker, asks the
NameServer for its route with rocketmq-py's own protocol codec, prints the cluster as the official
mqadmin tool sees it, and stops everything.
"""

from __future__ import annotations

import sys
import time

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
        print("\nmqadmin clusterList:")
        print(cluster.mqadmin("clusterList").check().output.strip())
    print(f"\nStopped. Demo took {time.monotonic() - started:.1f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
