"""One push consumer in its own process, for the multi-process tests (run as a script, not collected).

    python integration/_consumer_proc.py --namesrv H:P --group G --topic T [--rebalance-interval S]
        [--orderly] [--message-model BROADCASTING --instance-name N --offsets-dir D]
        [--listen-rebalance] [--consume-delay S] [--pop --pop-invisible-time S]

It prints JSON lines on stdout, flushed one by one:

    {"event": "started", "client_id": "..."}
    {"event": "owned", "queues": [["broker-a", 0], ...]}       whenever the owned queues of T change
    {"event": "consumed", "queue": ["127.0.0.1:10911", 0], "msgs": [[offset, body, reconsume], ...],
     "at": <epoch seconds, float>}
    {"event": "received", "bodies": [...]}   (--consume-delay: before the listener's delay)
    {"event": "revoked" | "assigned", "queues": [["broker-a", 0], ...], "at": ...}
                                                                 (--listen-rebalance; queues of T only)
    {"event": "stopped"}

(a consumed batch names its queue by store host: the message does not carry the broker's name). It
stops cleanly (offsets persisted, client unregistered) on SIGTERM, SIGINT or when its stdin closes;
SIGKILL stops it with nothing persisted, as a crash would.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time

import trio

from rocketmq_py import PushConsumer
from rocketmq_py.protocol import MessageExt, MessageQueue

_OWNED_POLL = 0.1  # seconds between looks at the owned queues


def emit(event: str, **fields: object) -> None:
    sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


async def listener(msgs: list[MessageExt]) -> None:
    first = msgs[0]
    if CONSUME_DELAY:
        emit("received", bodies=[m.body.decode(errors="replace") for m in msgs])
        await trio.sleep(CONSUME_DELAY)
    emit(
        "consumed",
        queue=[first.store_host, first.queue_id],
        msgs=[[m.queue_offset, m.body.decode(errors="replace"), m.reconsume_times] for m in msgs],
        at=time.time(),
    )


CONSUME_DELAY = 0.0


class RebalanceReporter:
    """Reports the rebalance listener's calls for the topic under test."""

    def __init__(self, topic: str) -> None:
        self.topic = topic

    def _emit(self, event: str, queues: list[MessageQueue]) -> None:
        mine = [[q.broker_name, q.queue_id] for q in queues if q.topic == self.topic]
        if mine:
            emit(event, queues=mine, at=time.time())

    def on_revoked(self, queues: list[MessageQueue]) -> None:
        self._emit("revoked", queues)

    def on_assigned(self, queues: list[MessageQueue]) -> None:
        self._emit("assigned", queues)


async def report_owned(consumer: PushConsumer, topic: str) -> None:
    last: list[list[object]] | None = None
    while True:
        owned = [[q.broker_name, q.queue_id] for q in sorted(consumer.assignment()) if q.topic == topic]
        if owned != last:
            emit("owned", queues=owned)
            last = owned
        await trio.sleep(_OWNED_POLL)


async def wait_for_stop(cancel_scope: trio.CancelScope) -> None:
    async def stdin_closed() -> None:
        # A trio stream, not a thread blocked in read(): that one would hold stdin's lock at exit.
        async with trio.lowlevel.FdStream(os.dup(sys.stdin.fileno())) as stdin:
            while await stdin.receive_some():
                pass
        cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(stdin_closed)
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for _ in signals:
                cancel_scope.cancel()
                return


async def main(args: argparse.Namespace) -> None:
    global CONSUME_DELAY
    CONSUME_DELAY = args.consume_delay
    options: dict[str, object] = {}
    if args.instance_name:
        options["instance_name"] = args.instance_name
    if args.offsets_dir:
        options["offsets_dir"] = args.offsets_dir
    if args.listen_rebalance:
        options["rebalance_listener"] = RebalanceReporter(args.topic)
    if args.pop:  # the broker assigns the queues and hides what is popped (group in POP mode)
        options["client_rebalance"] = False
        options["pop_invisible_time"] = args.pop_invisible_time
    consumer = PushConsumer(
        args.group,
        namesrv=args.namesrv,
        listener=listener,
        consume_from_where=args.consume_from_where,
        rebalance_interval=args.rebalance_interval,
        persist_interval=args.persist_interval,
        orderly=args.orderly,
        message_model=args.message_model,
        **options,  # type: ignore[arg-type]
    )
    consumer.subscribe(args.topic, args.expression)
    async with consumer:
        emit("started", client_id=consumer.client_id)
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(report_owned, consumer, args.topic)
                nursery.start_soon(wait_for_stop, scope)
    emit("stopped")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namesrv", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--expression", default="*")
    parser.add_argument("--consume-from-where", default="CONSUME_FROM_FIRST_OFFSET")
    parser.add_argument("--rebalance-interval", type=float, default=2.0)
    parser.add_argument("--persist-interval", type=float, default=1.0)
    parser.add_argument("--orderly", action="store_true")
    parser.add_argument("--message-model", default="CLUSTERING")
    parser.add_argument("--instance-name", default=None)
    parser.add_argument("--offsets-dir", default=None)
    parser.add_argument("--listen-rebalance", action="store_true")
    parser.add_argument("--consume-delay", type=float, default=0.0)
    parser.add_argument("--pop", action="store_true")
    parser.add_argument("--pop-invisible-time", type=float, default=60.0)
    trio.run(main, parser.parse_args())
