"""Producer throughput: rocketmq-py and the official Java benchmark tools, same cluster, alternating rounds.

Both sides send 128-byte messages to the same topic with 64 sends in flight: the Java
``benchmark.Producer`` with 64 threads (``-w 64``), ours with 64 trio tasks sharing one ``Producer``
in a child process (and, as a third column ``aio``, the same loop on asyncio with
:mod:`rocketmq_py.aio`). Then batches: Java ``BatchProducer`` (64 threads, 16 messages a batch) against
our ``send_batch`` (64 tasks, 16 a batch). Each round runs Java and ours one after the other, the
order alternating between rounds, and prints both; the end prints the medians and the median of the
per-round ratios ours/Java.

What is measured, the same way for both sides:

- **msgs/s** over a window of steady sending. The Java tools print a 10-s moving TPS once a second
  (messages/s for the batch tool); their last report is used. Ours opens its window after a warm-up
  (``--warmup`` seconds) and counts the messages acknowledged in it.
- **CPU µs per message**: CPU seconds (user + system, all threads) of the client process over that
  window, read from ``/proc`` by this script when the window's first and last lines arrive (for
  Java, the report ten lines before the last and the last), divided by the messages sent in it;
  and the brokers' CPU per message over the same window. The broker shares the two cores, so the
  client's CPU per message is what decides throughput here.
- mean and p99 latency (ours; the Java tools print the mean only).

    python benchmarks/producer.py [--rounds 3] [--seconds 20] [--in-flight 64] [--size 128]
                                  [--batch 16] [--only single|batch]

A local two-broker cluster is started unless ROCKETMQ_NAMESRV names one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import statistics
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

import trio
from _side_by_side import Line, Watched, median, ratio_line, write_results

from rocketmq_py import Message, Producer
from rocketmq_py.testing import Cluster, resolve_bench, start_cluster
from rocketmq_py.testing._distribution import find_java, write_home_conf
from rocketmq_py.testing._tools import _BENCH_JVM_OPTS, BENCH_MAIN_CLASSES, cache_dir

#: How the child runs each of our sides (``trace`` is the trio API with ``--trace``).
API = {
    "ours": "trio",
    "trace": "trio",
    "metrics": "trio",
    "aio": "asyncio",
    "portal": "portal",
    "threads": "threads",
}
JAVA_WINDOW_REPORTS = 10  # the Java tools' TPS is a moving window over their last 10 reports


@dataclass
class Figures:
    """One client's figures in one round."""

    tps: float
    cpu_us: float  # client CPU per message
    broker_cpu_us: float
    mean_ms: float
    p99_ms: float | None
    failed: int


# --- ours, in a child process ----------------------------------------------------------------------


async def send_loop(args: argparse.Namespace) -> dict[str, float]:
    """Sends for ``args.seconds`` after ``args.warmup``, ``args.in_flight`` at once; the window's figures."""
    latencies: list[float] = []
    sent = 0
    failed = 0
    counting = False
    body = b"x" * args.size
    topic = args.topic
    async with Producer(
        "bench-py-producer", namesrv=args.namesrv, enable_trace=args.trace, hooks=metrics_hooks(args.metrics)
    ) as producer:
        await producer.send(Message(topic, body))  # route and connections
        window_start = trio.current_time() + args.warmup
        deadline = window_start + args.seconds

        async def worker() -> None:
            nonlocal sent, failed
            while (now := trio.current_time()) < deadline:
                started = time.perf_counter()
                try:
                    if args.batch > 1:
                        await producer.send_batch([Message(topic, body) for _ in range(args.batch)])
                    else:
                        await producer.send(Message(topic, body))
                except Exception:
                    failed += 1
                    continue
                if counting and now >= window_start:
                    latencies.append((time.perf_counter() - started) * 1000)
                    sent += args.batch

        async def window() -> None:
            nonlocal counting
            await trio.sleep_until(window_start)
            counting = True
            print("window start", flush=True)
            started = time.perf_counter()
            await trio.sleep_until(deadline)
            counting = False
            print("window end", flush=True)
            elapsed.append(time.perf_counter() - started)

        elapsed: list[float] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(window)
            for _ in range(args.in_flight):
                nursery.start_soon(worker)
    latencies.sort()
    return {
        "sent": sent,
        "seconds": elapsed[0],
        "mean_ms": statistics.fmean(latencies) if latencies else 0.0,
        "p99_ms": latencies[int(len(latencies) * 0.99)] if latencies else 0.0,
        "failed": failed,
        "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,  # KiB on Linux
    }


class PortalProducer:
    """The other asyncio design issue 14 weighed: the trio client in a thread of its own (a portal).

    Each ``send`` puts the trio call on the trio thread (``TrioToken.run_sync_soon`` starts it in a
    nursery there) and its asyncio caller waits on a future that the trio side resolves with
    ``loop.call_soon_threadsafe``: two thread wake-ups per call, nothing else. Benchmark-only, to
    compare with trio's guest mode (``rocketmq_py.aio``) by measurement.
    """

    def __init__(self, namesrv: str) -> None:
        self._namesrv = namesrv
        self._thread: threading.Thread | None = None

    async def __aenter__(self) -> PortalProducer:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()

        async def main() -> None:
            async with Producer("bench-py-producer", namesrv=self._namesrv) as producer:
                self._producer = producer
                self._closed = trio.Event()
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    self._token = trio.lowlevel.current_trio_token()
                    loop.call_soon_threadsafe(ready.set_result, None)
                    await self._closed.wait()
                    nursery.cancel_scope.cancel()

        self._thread = threading.Thread(target=trio.run, args=(main,), daemon=True)
        self._thread.start()
        await ready
        self._loop = loop
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._token.run_sync_soon(self._closed.set)
        assert self._thread is not None
        await asyncio.to_thread(self._thread.join)

    def _call(self, fn: Any, *args: Any) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = self._loop.create_future()
        loop = self._loop

        def done(result: Any, error: BaseException | None) -> None:
            if not future.done():
                if error is None:
                    future.set_result(result)
                else:
                    future.set_exception(error)

        async def run() -> None:
            try:
                result = await fn(*args)
            except Exception as error:
                loop.call_soon_threadsafe(done, None, error)
            else:
                loop.call_soon_threadsafe(done, result, None)

        self._token.run_sync_soon(self._nursery.start_soon, run)
        return future

    async def send(self, message: Message) -> Any:
        return await self._call(self._producer.send, message)

    async def send_batch(self, messages: list[Message]) -> Any:
        return await self._call(self._producer.send_batch, messages)


class ThreadedProducer:
    """What asyncio users had before ``rocketmq_py.aio``: the blocking facade in worker threads.

    ``await asyncio.to_thread(producer.send, message)`` on an executor with a thread per send in
    flight. Benchmark-only.
    """

    def __init__(self, namesrv: str, threads: int) -> None:
        from rocketmq_py import sync

        self._producer = sync.Producer("bench-py-producer", namesrv=namesrv)
        self._threads = threads

    async def __aenter__(self) -> ThreadedProducer:
        from concurrent.futures import ThreadPoolExecutor

        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(self._threads))
        await asyncio.to_thread(self._producer.__enter__)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self._producer.close)

    async def send(self, message: Message) -> Any:
        return await asyncio.to_thread(self._producer.send, message)

    async def send_batch(self, messages: list[Message]) -> Any:
        return await asyncio.to_thread(self._producer.send_batch, messages)


async def aio_send_loop(args: argparse.Namespace) -> dict[str, float]:
    """The same loop on asyncio: :mod:`rocketmq_py.aio` with asyncio tasks (the asyncio column).

    ``--api portal`` and ``--api threads`` run it over :class:`PortalProducer` and
    :class:`ThreadedProducer` instead (the designs the asyncio API was chosen against).
    """
    from rocketmq_py import aio

    latencies: list[float] = []
    sent = 0
    failed = 0
    counting = False
    body = b"x" * args.size
    topic = args.topic
    loop = asyncio.get_running_loop()
    client: Any
    if args.api == "portal":
        client = PortalProducer(args.namesrv)
    elif args.api == "threads":
        client = ThreadedProducer(args.namesrv, args.in_flight)
    else:
        client = aio.Producer("bench-py-producer", namesrv=args.namesrv, enable_trace=args.trace)
    async with client as producer:
        await producer.send(Message(topic, body))  # route and connections
        window_start = loop.time() + args.warmup
        deadline = window_start + args.seconds

        async def worker() -> None:
            nonlocal sent, failed
            while (now := loop.time()) < deadline:
                started = time.perf_counter()
                try:
                    if args.batch > 1:
                        await producer.send_batch([Message(topic, body) for _ in range(args.batch)])
                    else:
                        await producer.send(Message(topic, body))
                except Exception:
                    failed += 1
                    continue
                if counting and now >= window_start:
                    latencies.append((time.perf_counter() - started) * 1000)
                    sent += args.batch

        async def window() -> None:
            nonlocal counting
            await asyncio.sleep(window_start - loop.time())
            counting = True
            print("window start", flush=True)
            started = time.perf_counter()
            await asyncio.sleep(deadline - loop.time())
            counting = False
            print("window end", flush=True)
            elapsed.append(time.perf_counter() - started)

        elapsed: list[float] = []
        await asyncio.gather(window(), *(worker() for _ in range(args.in_flight)))
    latencies.sort()
    return {
        "sent": sent,
        "seconds": elapsed[0],
        "mean_ms": statistics.fmean(latencies) if latencies else 0.0,
        "p99_ms": latencies[int(len(latencies) * 0.99)] if latencies else 0.0,
        "failed": failed,
        "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,  # KiB on Linux
    }


def metrics_hooks(on: bool) -> list[Any]:
    """``--metrics``: an OpenTelemetryMetrics on an SDK meter provider whose reader never collects
    during the run, so what is timed is the recording in the send path."""
    if not on:
        return []
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from rocketmq_py.otel import OpenTelemetryMetrics

    return [OpenTelemetryMetrics(meter_provider=MeterProvider(metric_readers=[InMemoryMetricReader()]))]


def child_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    for name in ("namesrv", "topic"):
        parser.add_argument(f"--{name}", required=True)
    for name in ("seconds", "warmup"):
        parser.add_argument(f"--{name}", type=float, required=True)
    for name in ("in-flight", "size", "batch"):
        parser.add_argument(f"--{name}", type=int, required=True)
    parser.add_argument("--api", choices=["trio", "asyncio", "portal", "threads"], default="trio")
    parser.add_argument("--trace", action="store_true", help="enable_trace=True (message trace records)")
    parser.add_argument("--metrics", action="store_true", help="hooks=[OpenTelemetryMetrics(...)]")
    args = parser.parse_args(argv)
    result = trio.run(send_loop, args) if args.api == "trio" else asyncio.run(aio_send_loop(args))
    print("result " + json.dumps(result), flush=True)
    return 0


def run_ours(
    cluster: Cluster,
    topic: str,
    args: argparse.Namespace,
    batch: int,
    api: str = "trio",
    *,
    trace: bool = False,
    metrics: bool = False,
) -> Figures:
    argv = [
        sys.executable,
        __file__,
        "child",
        *("--namesrv", cluster.namesrv_addr, "--topic", topic),
        *("--seconds", str(args.seconds), "--warmup", str(args.warmup)),
        *("--in-flight", str(args.in_flight), "--size", str(args.size), "--batch", str(batch)),
        *("--api", api),
        *(["--trace"] if trace else []),
        *(["--metrics"] if metrics else []),
    ]
    child = Watched(argv)
    try:
        start = child.wait_for(r"^window start", args.warmup + 60)
        end = child.wait_for(r"^window end", args.seconds + 30)
        result = json.loads(child.wait_for(r"^result ", 60).text.split(" ", 1)[1])
    finally:
        child.stop()
    return window_figures(start, end, result["sent"], result["sent"] / result["seconds"], result)


# --- the Java tools -------------------------------------------------------------------------------


def run_java(
    cluster: Cluster, topic: str, args: argparse.Namespace, batch: int, trace: bool = False
) -> Figures:
    home = cache_dir() / "tools-home"
    write_home_conf(home)
    tool = "batch-producer" if batch > 1 else "producer"
    argv = [
        find_java(),
        *_BENCH_JVM_OPTS,
        f"-Duser.home={home}",
        f"-Drocketmq.home.dir={home}",
        "-cp",
        resolve_bench(cluster.version).classpath,
        BENCH_MAIN_CLASSES[tool],
        *("-n", cluster.namesrv_addr, "-t", topic, "-w", str(args.in_flight), "-s", str(args.size)),
        *("-ri", "1000", *(("-b", str(batch)) if batch > 1 else ())),
        *(("-m", "true") if trace else ()),  # msgTraceEnable: the Java client's trace dispatcher
    ]
    java = Watched(argv, env=dict(os.environ, ROCKETMQ_HOME=str(home)), cwd=home)
    try:
        # As long as ours runs: warm-up, then a window (at least the tool's 10-s TPS window).
        reports = max(JAVA_WINDOW_REPORTS, round(args.seconds))
        java.wait_for(r"^Current Time:", 60)
        deadline = time.perf_counter() + args.warmup + reports + 30
        while len(report_lines(java.lines)) < round(args.warmup) + reports + 1:
            if java.proc.poll() is not None or time.perf_counter() > deadline:
                raise SystemExit(f"the Java {tool} stopped or stalled:\n{java.tail()}")
            time.sleep(0.2)
    finally:
        java.stop()
    lines = report_lines(java.lines)
    end = lines[-1]
    start = lines[-1 - JAVA_WINDOW_REPORTS]
    values = report_values(end.text)
    tps = float(values.get("Send MPS", values["Send TPS"]))  # messages/s for the batch tool
    mean = float(values.get("Average Message RT(ms)", values["Average RT(ms)"]))
    sent = tps * (end.at - start.at)
    failed = int(values.get("Send Failed", "0"))
    return window_figures(start, end, sent, tps, {"mean_ms": mean, "p99_ms": None, "failed": failed})


def report_lines(lines: list[Line]) -> list[Line]:
    return [line for line in lines if line.text.startswith("Current Time:")]


def report_values(text: str) -> dict[str, str]:
    values = dict(re.findall(r"([A-Za-z() ]+?): +([\d.]+)", text.split("|", 1)[1].replace("|", "\n")))
    return {k.strip(): v for k, v in values.items()}


def window_figures(start: Line, end: Line, sent: float, tps: float, result: dict[str, float]) -> Figures:
    sent = max(sent, 1.0)
    return Figures(
        tps=tps,
        cpu_us=(end.cpu - start.cpu) / sent * 1e6,
        broker_cpu_us=(end.broker_cpu - start.broker_cpu) / sent * 1e6,
        mean_ms=result["mean_ms"],
        p99_ms=result["p99_ms"],
        failed=int(result["failed"]),
    )


# --- the run ---------------------------------------------------------------------------------------


def row(name: str, f: Figures) -> str:
    p99 = f"{f.p99_ms:8.2f}" if f.p99_ms is not None else "     n/a"
    return (
        f"    {name:<6} {f.tps:>10,.0f} {f.cpu_us:>9.1f} {f.broker_cpu_us:>10.1f} {f.mean_ms:>8.2f} {p99}"
        f" {f.failed:>6}"
    )


def run(cluster: Cluster, args: argparse.Namespace) -> None:
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, 8)
    print(f"cluster {cluster.namesrv_addr}, topic {topic} (8 queues x {len(cluster.brokers)} brokers)")
    print(
        f"{args.size} B messages, {args.in_flight} in flight, {args.warmup:g} s warm-up then "
        f"{args.seconds:g} s measured, {args.rounds} rounds, order alternating\n"
    )
    modes = {"single": 1, "batch": args.batch}
    if args.only:
        modes = {args.only: modes[args.only]}
    sides = args.sides.split(",")
    results: dict[str, dict[str, list[Figures]]] = {m: {side: [] for side in sides} for m in modes}
    rows: list[dict[str, object]] = []
    header = f"    {'client':<6} {'msgs/s':>10} {'CPU µs/m':>9} {'broker µs':>10} {'mean ms':>8} {'p99 ms':>8} {'failed':>6}"
    for r in range(args.rounds):
        for mode, batch in modes.items():
            order = sides if r % 2 == 0 else sides[::-1]
            print(f"round {r + 1}, {'single sends' if batch == 1 else f'batches of {batch}'}:")
            print(header)
            for side in order:
                if side in ("java", "javatrace"):
                    figures = run_java(cluster, topic, args, batch, trace=side == "javatrace")
                else:
                    api = API.get(side, "trio")
                    figures = run_ours(
                        cluster, topic, args, batch, api, trace=side == "trace", metrics=side == "metrics"
                    )
                results[mode][side].append(figures)
                rows.append(
                    {
                        "case": "single sends" if batch == 1 else f"batches of {batch}",
                        "side": side,
                        "round": r + 1,
                        "rate": figures.tps,
                        "cpu_us": figures.cpu_us,
                    }
                )
                print(row(side, figures), flush=True)
    write_results(args.json, "producer", rows)
    print("\nmedians:")
    for mode, by_side in results.items():
        print(f"  {mode}:")
        print(header)
        for side, figs in by_side.items():
            p99s = [f.p99_ms for f in figs if f.p99_ms is not None]
            print(
                row(
                    side,
                    Figures(
                        median([f.tps for f in figs]),
                        median([f.cpu_us for f in figs]),
                        median([f.broker_cpu_us for f in figs]),
                        median([f.mean_ms for f in figs]),
                        median(p99s) if p99s else None,
                        sum(f.failed for f in figs),
                    ),
                )
            )
        java, ours = by_side.get("java"), by_side.get("ours")
        traced, java_traced = by_side.get("trace"), by_side.get("javatrace")
        if java_traced and java:
            print(
                "  "
                + ratio_line(
                    "Java throughput", [f.tps for f in java_traced], [f.tps for f in java], "traced/untraced"
                )
            )
            print(
                "  "
                + ratio_line(
                    "Java CPU per message",
                    [f.cpu_us for f in java_traced],
                    [f.cpu_us for f in java],
                    "traced/untraced",
                )
            )
        if traced and ours:
            print(
                "  " + ratio_line("throughput", [f.tps for f in traced], [f.tps for f in ours], "traced/trio")
            )
            print(
                "  "
                + ratio_line(
                    "CPU per message", [f.cpu_us for f in traced], [f.cpu_us for f in ours], "traced/trio"
                )
            )
        if (measured := by_side.get("metrics")) and ours:
            print(
                "  "
                + ratio_line("throughput", [f.tps for f in measured], [f.tps for f in ours], "metrics/trio")
            )
            print(
                "  "
                + ratio_line(
                    "CPU per message", [f.cpu_us for f in measured], [f.cpu_us for f in ours], "metrics/trio"
                )
            )
        if java and ours:
            print("  " + ratio_line("throughput", [f.tps for f in ours], [f.tps for f in java]))
            print("  " + ratio_line("CPU per message", [f.cpu_us for f in ours], [f.cpu_us for f in java]))
        for other, label in (
            ("aio", "asyncio/trio"),
            ("portal", "portal thread/trio"),
            ("threads", "to_thread/trio"),
        ):
            if (others := by_side.get(other)) and ours:
                print("  " + ratio_line("throughput", [f.tps for f in others], [f.tps for f in ours], label))
                print(
                    "  "
                    + ratio_line(
                        "CPU per message", [f.cpu_us for f in others], [f.cpu_us for f in ours], label
                    )
                )


def main() -> int:
    if sys.argv[1:2] == ["child"]:
        return child_main(sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=20.0, help="measured window of each run")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds of sending before the window")
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--only", choices=["single", "batch"])
    parser.add_argument("--json", help="also write every round's figures here (for benchmarks/plot.py)")
    parser.add_argument(
        "--sides",
        default="java,ours,aio",
        help="comma-separated, in round order: java, ours (the trio API), aio (rocketmq_py.aio on asyncio), "
        "trace (the trio API with enable_trace=True), metrics (the trio API with an OpenTelemetryMetrics hook), javatrace (the Java tool with -m true: its trace), "
        "portal (asyncio over the trio client in a thread of its own), threads (asyncio.to_thread over "
        "the blocking facade)",
    )
    args = parser.parse_args()
    if os.environ.get("ROCKETMQ_NAMESRV"):
        run(start_cluster(), args)
    else:
        with start_cluster(brokers=2) as cluster:
            run(cluster, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
