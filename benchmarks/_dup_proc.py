"""One rocketmq-py push consumer in its own process, for ``rebalance_duplicates.py`` (run as a script).

    python benchmarks/_dup_proc.py --namesrv H:P --group G --topic T --out FILE [--consume-ms 20]
                                   [--api-timeout 3] [--wait-for-go]

The twin of ``benchmarks/java/DupCountConsumer.java``, line for line in its output. Client
defaults throughout, except that a new group starts from the first offset and that
``--api-timeout`` sets ``request_timeout`` (name-server and admin calls). Each delivery appends
``<body> <epoch ms>`` to FILE when the listener is entered; the listener then sleeps ``--consume-ms``
(the "work"). With ``--wait-for-go`` it starts its consumer only once a line arrives on stdin
(the process is up, Python and the client imported: joining the group is then quick). Standard
output gets one line per event, each starting with epoch ms::

    <ms> ready                                  with --wait-for-go: waiting for the line
    <ms> started <client id>
    <ms> owned <n> <broker>:<queue id>,...     whenever the owned queues of T change
    <ms> stopping                               SIGTERM or SIGINT: the consumer closes
    <ms> stopped
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from typing import BinaryIO

import trio

from rocketmq_py import MessageExt, PushConsumer

_OWNED_POLL = 0.1  # seconds between looks at the owned queues, as the Java twin


def event(text: str) -> None:
    sys.stdout.write(f"{time.time_ns() // 1_000_000} {text}\n")
    sys.stdout.flush()


async def report_owned(consumer: PushConsumer, topic: str) -> None:
    last: str | None = None
    while True:
        owned = [f"{q.broker_name}:{q.queue_id}" for q in sorted(consumer.assignment()) if q.topic == topic]
        now = f"{len(owned)} {','.join(owned)}"
        if now != last:
            event(f"owned {now}")
            last = now
        await trio.sleep(_OWNED_POLL)


async def wait_for_signal(cancel_scope: trio.CancelScope) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            cancel_scope.cancel()
            return


async def main(args: argparse.Namespace, record: BinaryIO) -> None:
    work = args.consume_ms / 1000

    async def listener(msgs: list[MessageExt]) -> None:
        now = time.time_ns() // 1_000_000
        record.write(b"".join(m.body + f" {now}\n".encode() for m in msgs))
        if work > 0:
            await trio.sleep(work)

    consumer = PushConsumer(
        args.group,
        namesrv=args.namesrv,
        listener=listener,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        request_timeout=args.api_timeout,
    )
    consumer.subscribe(args.topic)
    async with consumer:
        event(f"started {consumer.client_id}")
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(report_owned, consumer, args.topic)
                nursery.start_soon(wait_for_signal, scope)
        event("stopping")
    event("stopped")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namesrv", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--consume-ms", type=float, default=20.0)
    parser.add_argument("--api-timeout", type=float, default=3.0)
    parser.add_argument("--wait-for-go", action="store_true")
    arguments = parser.parse_args()
    if arguments.wait_for_go:
        event("ready")
        sys.stdin.readline()
    # Unbuffered: a line is in the file once written, whatever happens to the process afterwards.
    with open(arguments.out, "ab", buffering=0) as deliveries:
        trio.run(main, arguments, deliveries)
