"""The Apache RocketMQ 5.x Python client (gRPC, through the Proxy) as a child of ``peers.py``.

Runs in the benchmark's own virtualenv (``benchmarks/.peers-venv``, where ``peers.py`` installs
PyPI ``rocketmq-python-client``), so it imports nothing of rocketmq-py, only the standard library
and that client's ``rocketmq`` package. It speaks to ``peers.py`` as our children of
``producer.py`` and ``consumer.py`` do: lines that the parent timestamps and CPU-samples as they
arrive (``window start`` / ``window end`` around a send window, ``start`` / ``done`` around a
drain), then one line of JSON figures.

    python _peers_grpc.py send --endpoint HOST:PORT --topic T --seconds 20 --warmup 5 --in-flight 64 --size 128
    python _peers_grpc.py drain --endpoint HOST:PORT --topic T --group G --count 20000 [--batch 32] [--threads 1]

``send``: the client's ``Producer.send_async`` (a ``concurrent.futures.Future`` per message),
``--in-flight`` of them outstanding at any time (a semaphore released by each future's callback).
``drain``: a ``SimpleConsumer`` (the client's POP model: each ``receive`` is a POP through the
Proxy, each message is acknowledged by its own ``ack``) in ``--threads`` threads, until
``--count`` distinct message ids were received and acknowledged; redeliveries are counted.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import threading
import time
from typing import Any

MAX_ERRORS = 200  # failed receives or acks before a drain gives up


def _config(endpoint: str) -> Any:
    from rocketmq import ClientConfiguration, Credentials

    return ClientConfiguration(endpoint, Credentials())


def send(args: argparse.Namespace) -> dict[str, Any]:
    """Keep ``args.in_flight`` asynchronous sends outstanding; the figures of the measured window."""
    from rocketmq import Message, Producer

    body = b"x" * args.size

    def message() -> Any:
        msg = Message()
        msg.topic = args.topic
        msg.body = body
        return msg

    producer = Producer(_config(args.endpoint), (args.topic,))
    producer.startup()
    producer.send(message())  # route and channel
    lock = threading.Lock()
    slots = threading.Semaphore(args.in_flight)
    latencies: list[float] = []
    counts = {"sent": 0, "failed": 0}
    counting = False
    window_start = time.monotonic() + args.warmup
    deadline = window_start + args.seconds

    def done(started: float, future: Any) -> None:
        ok = future.exception() is None
        with lock:
            if not ok:
                counts["failed"] += 1
            elif counting and started >= window_start:
                counts["sent"] += 1
                latencies.append((time.monotonic() - started) * 1000)
        slots.release()

    opened = 0.0
    while (now := time.monotonic()) < deadline:
        if not counting and now >= window_start:
            counting = True
            print("window start", flush=True)
            opened = time.perf_counter()
        if not slots.acquire(timeout=0.5):
            continue
        started = time.monotonic()
        try:
            future = producer.send_async(message())
        except Exception:
            with lock:
                counts["failed"] += 1
            slots.release()
            continue
        future.add_done_callback(lambda f, started=started: done(started, f))
    with lock:
        counting = False
    print("window end", flush=True)
    seconds = time.perf_counter() - opened
    latencies.sort()
    result = {
        "sent": counts["sent"],
        "seconds": seconds,
        "mean_ms": statistics.fmean(latencies) if latencies else 0.0,
        "p99_ms": latencies[int(len(latencies) * 0.99)] if latencies else 0.0,
        "failed": counts["failed"],
        "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }
    for _ in range(args.in_flight):  # let the last sends finish before the client stops
        slots.acquire(timeout=5)
    producer.shutdown()
    return result


def drain(args: argparse.Namespace) -> dict[str, Any]:
    """Receive (POP) and acknowledge until ``args.count`` distinct messages; the drain's figures."""
    from rocketmq import FilterExpression, SimpleConsumer

    lock = threading.Lock()
    seen: set[str] = set()
    state = {"consumed": 0, "errors": 0, "first": 0.0, "last": 0.0}
    finished = threading.Event()
    failure: list[str] = []
    consumer = SimpleConsumer(
        _config(args.endpoint), args.group, {args.topic: FilterExpression()}, await_duration=args.await_s
    )
    print("start", flush=True)  # the parent samples our CPU here and at "done"
    started = time.perf_counter()  # start-up counts, as for ours
    consumer.startup()

    def receiver() -> None:
        while not finished.is_set():
            try:
                messages = consumer.receive(args.batch, args.invisible)
            except Exception as exc:
                with lock:
                    state["errors"] += 1
                    if state["errors"] > MAX_ERRORS and not finished.is_set():
                        failure.append(f"{state['errors']} failed receives, the last: {exc!r}")
                        finished.set()
                time.sleep(0.01)
                continue
            for msg in messages:
                try:
                    consumer.ack(msg)
                except Exception:
                    with lock:
                        state["errors"] += 1
                    continue
                with lock:
                    if not state["consumed"]:
                        state["first"] = time.perf_counter()
                    state["consumed"] += 1
                    seen.add(msg.message_id)
                    if len(seen) >= args.count and not finished.is_set():
                        state["last"] = time.perf_counter()
                        finished.set()

    threads = [threading.Thread(target=receiver, daemon=True) for _ in range(args.threads)]
    for thread in threads:
        thread.start()
    finished.wait()
    if failure:
        raise SystemExit(failure[0])
    print("done", flush=True)
    return {
        "consumed": state["consumed"],
        "duplicates": state["consumed"] - len(seen),
        "errors": state["errors"],
        "seconds": state["last"] - started,
        "to_first": state["first"] - started,
        "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }


def main(argv: list[str]) -> int:
    """Run ``send`` or ``drain`` and print the figures as the last line (JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    commands = parser.add_subparsers(dest="command", required=True)
    sender = commands.add_parser("send")
    drainer = commands.add_parser("drain")
    for sub in (sender, drainer):
        sub.add_argument("--endpoint", required=True, help="the Proxy's gRPC host:port")
        sub.add_argument("--topic", required=True)
    sender.add_argument("--seconds", type=float, required=True)
    sender.add_argument("--warmup", type=float, required=True)
    sender.add_argument("--in-flight", type=int, required=True)
    sender.add_argument("--size", type=int, required=True)
    drainer.add_argument("--group", required=True)
    drainer.add_argument("--count", type=int, required=True)
    drainer.add_argument("--batch", type=int, default=32, help="max messages a receive")
    drainer.add_argument("--threads", type=int, default=1, help="receiving threads")
    drainer.add_argument("--invisible", type=int, default=30, help="seconds a received message is hidden")
    drainer.add_argument("--await-s", type=int, default=5, help="long-polling seconds of a receive")
    args = parser.parse_args(argv)
    if args.command == "send":
        result = send(args)
        print("result " + json.dumps(result), flush=True)
    else:
        result = drain(args)
        print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
