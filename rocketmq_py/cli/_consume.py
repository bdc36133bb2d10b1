"""``consume``: print a topic's messages as a member of a consumer group (our PushConsumer).

One listener call at a time, one message per call, so that the lines come out whole and ``--count
N`` prints exactly N: once N are printed the next call waits until the consumer closes, which
cancels it uncommitted (the group reads that message again next time). Leaving, by count or by
Ctrl-C (SIGINT is caught while consuming), closes the consumer normally: its offsets are persisted
to the brokers. ``--from-beginning`` means CONSUME_FROM_FIRST_OFFSET, which, as in Java (and Kafka),
only applies to a group with no committed offset.
"""

from __future__ import annotations

import json
import signal
import threading
from typing import TextIO

import trio

from rocketmq_py import PushConsumer
from rocketmq_py.cli._format import message_json, message_line
from rocketmq_py.cli._options import admin_of
from rocketmq_py.cli._parser import ConsumeCommand
from rocketmq_py.lowlevel import validate_group, validate_topic
from rocketmq_py.protocol import ConsumeFromWhere, MessageExt

__all__ = ["run_consume"]


async def run_consume(command: ConsumeCommand, out: TextIO, err: TextIO) -> int:
    """Consume until ``count`` messages are printed or SIGINT; returns 0, or 130 when interrupted."""
    validate_topic(command.topic)
    validate_group(command.group)
    namesrv = list(command.common.namesrv)
    async with admin_of(command.common) as admin:
        route = await admin.route(command.common.wire(command.topic))  # fail fast on an unknown topic
    brokers = {addr: b.broker_name for b in route.broker_datas for addr in b.broker_addrs.values()}
    printed = 0
    done = trio.Event()
    interrupted = False

    async def listener(msgs: list[MessageExt]) -> None:
        nonlocal printed
        for msg in msgs:
            if command.count is not None and printed >= command.count:
                await trio.sleep_forever()  # cancelled, uncommitted, when the consumer closes
            # The consumer names the queue's broker; the route's addresses are a Proxy's behind one.
            name = msg.broker_name or brokers.get(msg.store_host)
            if command.json:
                out.write(json.dumps(message_json(msg, name), ensure_ascii=False) + "\n")
            else:
                out.write(message_line(msg, name) + "\n")
            out.flush()
            printed += 1
        if command.count is not None and printed >= command.count:
            done.set()

    consumer = PushConsumer(
        command.group,
        namesrv=";".join(namesrv),
        listener=listener,
        consume_from_where=(
            ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
            if command.from_beginning
            else ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
        ),
        consume_concurrency=1,
        consume_batch_max_size=1,
        request_timeout=command.common.timeout,
        namespace=command.common.namespace,
        enable_trace=command.trace,
        **command.common.connection_options(),
    )
    consumer.subscribe(command.topic, command.tag)

    async def on_sigint(*, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        nonlocal interrupted
        with trio.open_signal_receiver(signal.SIGINT) as signals:
            task_status.started()
            async for _ in signals:
                interrupted = True
                done.set()
                return

    async with trio.open_nursery() as nursery:
        if threading.current_thread() is threading.main_thread():
            await nursery.start(on_sigint)
        async with consumer:
            await done.wait()
        nursery.cancel_scope.cancel()
    err.write(f"consumed {printed} message(s) from {command.topic} as {command.group}; offsets persisted\n")
    if interrupted:
        err.write("rocketmq-py: interrupted\n")
        return 130
    return 0
