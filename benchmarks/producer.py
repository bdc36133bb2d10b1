"""Producer throughput: rocketmq-py and the official Java benchmark tools, same cluster, one run.

Both sides send 128-byte messages to the same topic with 64 sends in flight for the same duration:
the Java ``benchmark.Producer`` with 64 threads (``-w 64``), ours with 64 trio tasks sharing one
``Producer``. Then batches: Java ``BatchProducer`` (64 threads, 16 messages a batch) against our
``send_batch`` (64 tasks, 16 a batch). Prints TPS (messages/s), mean and p99 latency, and the ratio
ours/Java. The Java tools print a 10-s moving TPS and mean latency once a second and no
percentiles; their last report (the final 10 s) is used, and the p99 column shows "n/a" for them.

    python benchmarks/producer.py [--seconds 30] [--in-flight 64] [--size 128] [--batch 16]

A local two-broker cluster is started unless ROCKETMQ_NAMESRV names one.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
import uuid
from dataclasses import dataclass

import trio

from rocketmq_py import Message, Producer
from rocketmq_py.testing import Cluster, run_java_bench, start_cluster


@dataclass
class Figures:
    name: str
    tps: float
    mean_ms: float
    p99_ms: float | None
    failed: int


def java_figures(name: str, output: str) -> Figures:
    """The last periodic report of a Java benchmark tool (a 10-s moving window)."""
    reports = [ln for ln in output.splitlines() if ln.startswith("Current Time:")]
    if not reports:
        raise SystemExit(f"{name}: the Java tool printed no report:\n{output[-3000:]}")
    last = reports[-1]
    values = dict(re.findall(r"([A-Za-z() ]+?): +([\d.]+)", last.split("|", 1)[1].replace("|", "\n")))
    values = {k.strip(): v for k, v in values.items()}
    tps = float(values.get("Send MPS", values["Send TPS"]))  # messages/s for the batch tool
    mean = float(values.get("Average Message RT(ms)", values["Average RT(ms)"]))
    failed = int(values.get("Send Failed", "0"))
    return Figures(name, tps, mean, None, failed)


async def ours(namesrv: str, topic: str, seconds: float, in_flight: int, size: int, batch: int) -> Figures:
    latencies: list[float] = []
    sent = 0
    failed = 0
    body = b"x" * size
    async with Producer("bench-py-producer", namesrv=namesrv) as producer:
        await producer.send(Message(topic, body))  # route and connections
        deadline = trio.current_time() + seconds

        async def worker() -> None:
            nonlocal sent, failed
            while trio.current_time() < deadline:
                started = time.perf_counter()
                try:
                    if batch > 1:
                        await producer.send_batch([Message(topic, body) for _ in range(batch)])
                    else:
                        await producer.send(Message(topic, body))
                except Exception:
                    failed += 1
                    continue
                latencies.append((time.perf_counter() - started) * 1000)
                sent += batch

        started = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for _ in range(in_flight):
                nursery.start_soon(worker)
        elapsed = time.perf_counter() - started
    latencies.sort()
    p99 = latencies[int(len(latencies) * 0.99) - 1] if latencies else 0.0
    mean = statistics.fmean(latencies) if latencies else 0.0
    if batch > 1:
        mean, p99 = mean / batch, p99  # mean per message, like the Java batch tool's "message RT"
    return Figures(
        "rocketmq-py" + (f" batch {batch}" if batch > 1 else ""), sent / elapsed, mean, p99, failed
    )


def print_pair(java: Figures, py: Figures) -> None:
    def row(f: Figures) -> str:
        p99 = f"{f.p99_ms:9.2f}" if f.p99_ms is not None else "      n/a"
        return f"  {f.name:<28} {f.tps:>10,.0f} {f.mean_ms:>9.2f} {p99} {f.failed:>7}"

    print(f"  {'client':<28} {'msgs/s':>10} {'mean ms':>9} {'p99 ms':>9} {'failed':>7}")
    print(row(java))
    print(row(py))
    print(f"  ratio ours/Java: {py.tps / java.tps:.2f}\n")


def run(cluster: Cluster, args: argparse.Namespace) -> None:
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, 8)
    print(f"cluster {cluster.namesrv_addr}, topic {topic} (8 queues x {len(cluster.brokers)} brokers)")
    print(f"{args.size} B messages, {args.in_flight} in flight, {args.seconds:g} s each\n")
    common = ["-t", topic, "-w", str(args.in_flight), "-s", str(args.size), "-ri", "1000"]
    java = run_java_bench("producer", common, namesrv=cluster.namesrv_addr, timeout=args.seconds + 8)
    java_f = java_figures("Java benchmark.Producer", java.output)
    py_f = trio.run(ours, cluster.namesrv_addr, topic, args.seconds, args.in_flight, args.size, 1)
    print("Single sends:")
    print_pair(java_f, py_f)
    java_b = run_java_bench(
        "batch-producer",
        [*common, "-b", str(args.batch)],
        namesrv=cluster.namesrv_addr,
        timeout=args.seconds + 8,
    )
    java_bf = java_figures(f"Java BatchProducer ({args.batch})", java_b.output)
    py_bf = trio.run(ours, cluster.namesrv_addr, topic, args.seconds, args.in_flight, args.size, args.batch)
    print(f"Batches of {args.batch}:")
    print_pair(java_bf, py_bf)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--batch", type=int, default=16)
    args = parser.parse_args()
    if os.environ.get("ROCKETMQ_NAMESRV"):
        run(start_cluster(), args)
    else:
        with start_cluster(brokers=2) as cluster:
            run(cluster, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
