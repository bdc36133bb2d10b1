"""What each command does, as async functions writing to the streams they are given.

Admin commands (``route``, ``topic create``, ``group inspect``; ``topic stats``, ``group list``,
``group lag``, ``group reset-offsets`` and ``message get`` in :mod:`._admin_commands`) show topics and
groups as the brokers store them (``NS%T`` under ``--namespace NS``); ``send`` and ``consume`` as a
client of the namespace sees them (``T``). Every command signs its requests with the ACL keys and
speaks TLS as the common options say (:class:`~rocketmq_py.cli._options.Common`). Each returns the
process exit code; a
:class:`~rocketmq_py.errors.RocketMQError` that ends a command is left to
:func:`rocketmq_py.cli.main` to print.
"""

from __future__ import annotations

import json
from typing import TextIO

from rocketmq_py import Chunk, Producer, SendResult, send_many
from rocketmq_py.cli._admin_commands import (
    run_group_lag,
    run_group_list,
    run_message_get,
    run_reset_offsets,
    run_topic_stats,
)
from rocketmq_py.cli._consume import run_consume
from rocketmq_py.cli._format import format_send_result, group_report_lines, perm_letters, route_lines
from rocketmq_py.cli._group import collect_group
from rocketmq_py.cli._options import admin_of
from rocketmq_py.cli._parser import (
    Command,
    ConsumeCommand,
    CreateTopicCommand,
    GroupInspectCommand,
    GroupLagCommand,
    GroupListCommand,
    MessageGetCommand,
    ResetOffsetsCommand,
    RouteCommand,
    SendCommand,
    TopicStatsCommand,
)
from rocketmq_py.cli._progress import Progress
from rocketmq_py.errors import RocketMQError
from rocketmq_py.lowlevel import order_conf, validate_message, validate_topic
from rocketmq_py.protocol import Message

__all__ = ["SHOW_EACH_MAX", "run_command"]

#: ``send`` prints every result up to this many messages, and a progress display above it.
SHOW_EACH_MAX = 10


async def run_command(command: Command, out: TextIO, err: TextIO) -> int:
    """Run one parsed command; returns the exit code."""
    if isinstance(command, RouteCommand):
        return await run_route(command, out)
    if isinstance(command, CreateTopicCommand):
        return await run_create_topic(command, out)
    if isinstance(command, GroupInspectCommand):
        return await run_group_inspect(command, out)
    if isinstance(command, ConsumeCommand):
        return await run_consume(command, out, err)
    if isinstance(command, TopicStatsCommand):
        return await run_topic_stats(command, out)
    if isinstance(command, GroupLagCommand):
        return await run_group_lag(command, out)
    if isinstance(command, GroupListCommand):
        return await run_group_list(command, out)
    if isinstance(command, ResetOffsetsCommand):
        return await run_reset_offsets(command, out)
    if isinstance(command, MessageGetCommand):
        return await run_message_get(command, out)
    return await run_send(command, out, err)


async def run_group_inspect(command: GroupInspectCommand, out: TextIO) -> int:
    """Print the group's report; the exit code is 0 whether or not it found problems."""
    async with admin_of(command.common) as admin:
        topic = None if command.topic is None else command.common.wire(command.topic)
        report = await collect_group(admin, command.common.wire(command.group), topic)
    if command.json:
        out.write(json.dumps(report.to_json(), indent=2, sort_keys=True) + "\n")
    else:
        out.write("\n".join(group_report_lines(report)) + "\n")
    return 0


async def run_route(command: RouteCommand, out: TextIO) -> int:
    topic = command.common.wire(command.topic)
    async with admin_of(command.common) as admin:
        route = await admin.route(topic)
    if command.json:
        out.write(json.dumps(route.to_json(), indent=2, sort_keys=True) + "\n")
    else:
        out.write("\n".join(route_lines(topic, route)) + "\n")
    return 0


async def run_create_topic(command: CreateTopicCommand, out: TextIO) -> int:
    validate_topic(command.topic)
    topic = command.common.wire(command.topic)
    validate_topic(topic)
    async with admin_of(command.common) as admin:
        created = await admin.create_topic(
            topic, command.queues, cluster=command.cluster, order=command.order
        )
        for item in created:
            out.write(
                f"created {topic} on {item.broker_name} ({item.address}): "
                f"{item.queues} read / {item.queues} write queues, perm {perm_letters(item.perm)}\n"
            )
        if command.order:
            conf = order_conf({item.broker_name: item.queues for item in created})
            out.write(
                f"order conf {conf} stored on the NameServer (routes carry it when the NameServer "
                "runs with orderMessageEnable=true)\n"
            )
        out.flush()
        route = await admin.wait_for_route(
            topic, {item.broker_name: item.queues for item in created}, command.wait, created=created
        )
    out.write("\n".join(route_lines(topic, route)) + "\n")
    return 0


async def run_send(command: SendCommand, out: TextIO, err: TextIO) -> int:
    """Send ``count`` messages, ``concurrency`` requests in flight; failures are counted, not fatal.

    A broker or transport error fails one message and the run goes on (exit code 1 at the end);
    an invalid message or a missing route stops the run at once. The sending loop is the
    producer's bulk sender (:func:`rocketmq_py.producer.send_many`, one message per request).
    """

    def message() -> Message:
        return Message(
            command.topic, command.body, tags=command.tags, keys=command.keys, properties=command.properties
        )

    validate_message(message())  # fail before connecting (and before any progress line)
    show_each = command.count <= SHOW_EACH_MAX
    progress = Progress(command.count, err, enabled=not show_each and not command.quiet)
    last_error: BaseException | None = None

    def sent(result: SendResult, chunk: Chunk) -> None:
        progress.sent()
        if show_each:
            out.write(format_send_result(result) + "\n")

    def failed(error: RocketMQError, chunk: Chunk) -> None:
        nonlocal last_error
        last_error = error
        progress.failed()
        if show_each:
            err.write(f"#{chunk.first_index + 1} failed: {error}\n")

    producer = Producer(
        command.group,
        namesrv=";".join(command.common.namesrv),
        send_timeout=command.common.timeout,
        # Each attempt may take the whole --timeout, as mqadmin sendMessage's: an attempt abandoned
        # after the producer's default 1 s and tried again stores the message twice when the first
        # answer was only slow.
        attempt_timeout=None,
        request_timeout=command.common.timeout,
        namespace=command.common.namespace,
        enable_trace=command.trace,
        **command.common.connection_options(),
    )
    async with producer:
        try:
            await send_many(
                producer,
                (message() for _ in range(command.count)),
                batch_size=1,
                max_in_flight=command.concurrency,
                on_sent=sent,
                on_failure=failed,
            )
        finally:
            progress.finish()
    out.write(
        f"sent {progress.ok} of {command.count} message(s) to {command.topic} in "
        f"{progress.elapsed:.2f} s ({progress.rate:.1f} msg/s), {progress.errors} failed\n"
    )
    if progress.errors:
        err.write(f"rocketmq-py: error: {progress.errors} send(s) failed; last error: {last_error}\n")
        return 1
    return 0
