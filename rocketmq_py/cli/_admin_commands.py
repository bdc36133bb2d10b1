"""The commands over the public Admin API (:class:`rocketmq_py.admin.Admin`): ``topic stats``,
``group list``, ``group lag``, ``group reset-offsets`` and ``message get``. Names are shown as the
brokers store them (``NS%T`` under ``--namespace NS``), as the other admin commands do; the Admin
signs its requests and speaks TLS as the common options say.

``group list`` hides the system groups as ``mqadmin``'s ``getUserSubscriptionGroup`` does (Java
``MixAll.isSysConsumerGroup`` or ``MixAll.isPredefinedGroup``): the ``CID_RMQ_SYS_`` ones and the
groups every broker predefines (:data:`PREDEFINED_GROUPS`). Under ``--namespace NS`` it lists the
groups of that namespace only (``NS%G``, as stored); a system group is in none.
"""

from __future__ import annotations

import datetime
import json
from typing import Any, Final, TextIO

from rocketmq_py.admin import Admin
from rocketmq_py.cli._parser import (
    LATEST,
    Common,
    GroupLagCommand,
    GroupListCommand,
    MessageGetCommand,
    ResetOffsetsCommand,
    TopicStatsCommand,
)
from rocketmq_py.protocol import MessageExt, MessageQueue, namespace_of

__all__ = [
    "PREDEFINED_GROUPS",
    "SYSTEM_GROUP_PREFIX",
    "is_system_group",
    "run_group_lag",
    "run_group_list",
    "run_message_get",
    "run_reset_offsets",
    "run_topic_stats",
]

#: Groups starting with this are the brokers' own (Java ``MixAll.CID_RMQ_SYS_PREFIX``).
SYSTEM_GROUP_PREFIX: Final = "CID_RMQ_SYS_"
#: The groups RocketMQ predefines (Java ``MixAll.PREDEFINE_GROUP_SET``, 5.3.3); the brokers create
#: some of them (TOOLS_CONSUMER, FILTERSRV_CONSUMER, SELF_TEST_C_GROUP, CID_ONS-HTTP-PROXY, ...).
PREDEFINED_GROUPS: Final = frozenset(
    {
        "DEFAULT_CONSUMER",
        "DEFAULT_PRODUCER",
        "TOOLS_CONSUMER",
        "SCHEDULE_CONSUMER",
        "FILTERSRV_CONSUMER",
        "__MONITOR_CONSUMER",
        "CLIENT_INNER_PRODUCER",
        "SELF_TEST_P_GROUP",
        "SELF_TEST_C_GROUP",
        "CID_ONS-HTTP-PROXY",
        "CID_ONSAPI_PERMISSION",
        "CID_ONSAPI_OWNER",
        "CID_ONSAPI_PULL",
        "CID_RMQ_SYS_TRANS",
    }
)


def is_system_group(group: str) -> bool:
    """``group`` is one of RocketMQ's own, which ``mqadmin`` leaves out of a group listing (Java
    ``MixAll.isSysConsumerGroup(group) || MixAll.isPredefinedGroup(group)``)."""
    return group.startswith(SYSTEM_GROUP_PREFIX) or group in PREDEFINED_GROUPS


def _admin(common: Common) -> Admin:
    return Admin(
        ";".join(common.namesrv),
        timeout=common.timeout,
        **common.connection_options(),
    )


def _when(ms: int) -> str:
    if ms <= 0:
        return "-"
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _queue(mq: MessageQueue) -> dict[str, Any]:
    return {"topic": mq.topic, "broker_name": mq.broker_name, "queue_id": mq.queue_id}


async def run_topic_stats(command: TopicStatsCommand, out: TextIO) -> int:
    """Print each queue of the topic: first and next offsets, messages, last store time."""
    topic = command.common.wire(command.topic)
    async with _admin(command.common) as admin:
        stats = await admin.topic_stats(topic)
    if command.json:
        rows = [
            {
                **_queue(q.queue),
                "min_offset": q.min_offset,
                "max_offset": q.max_offset,
                "last_update_ms": q.last_update_ms,
            }
            for q in stats
        ]
        out.write(json.dumps(rows, indent=2) + "\n")
        return 0
    out.write(f"{'broker':<16} {'queue':>5} {'min':>12} {'max':>12} {'messages':>10}  last stored (UTC)\n")
    for q in stats:
        out.write(
            f"{q.queue.broker_name:<16} {q.queue.queue_id:>5} {q.min_offset:>12} {q.max_offset:>12} "
            f"{q.messages:>10}  {_when(q.last_update_ms)}\n"
        )
    out.write(f"{topic}: {len(stats)} queues, {sum(q.messages for q in stats)} messages\n")
    return 0


async def run_group_list(command: GroupListCommand, out: TextIO) -> int:
    """Print the consumer groups, one per line (or a JSON array), sorted; see the module docstring."""
    async with _admin(command.common) as admin:
        groups = await admin.groups()
    namespace = command.common.namespace
    shown = [
        group
        for group in groups
        if (namespace is None or namespace_of(group) == namespace)
        and (command.all_groups or not is_system_group(group))
    ]
    if command.json:
        out.write(json.dumps(shown, indent=2) + "\n")
    else:
        out.writelines(f"{group}\n" for group in shown)
    return 0


async def run_group_lag(command: GroupLagCommand, out: TextIO) -> int:
    """Print the group's offsets and lag per queue, and the total."""
    group = command.common.wire(command.group)
    topic = None if command.topic is None else command.common.wire(command.topic)
    async with _admin(command.common) as admin:
        progress = await admin.group_progress(group, topic, owners=command.owners)
    if command.json:
        data = {
            "group": group,
            "lag": progress.lag,
            "consume_tps": progress.consume_tps,
            "queues": [
                {
                    **_queue(q.queue),
                    "broker_offset": q.broker_offset,
                    "consumer_offset": q.consumer_offset,
                    "lag": q.lag,
                    "last_timestamp_ms": q.last_timestamp_ms,
                    **({"owner": q.client_id} if command.owners else {}),
                }
                for q in progress.queues
            ],
        }
        out.write(json.dumps(data, indent=2) + "\n")
        return 0
    owner_title = "  owner" if command.owners else ""
    out.write(
        f"{'topic':<32} {'broker':<16} {'queue':>5} {'broker off':>12} {'consumer off':>12} {'lag':>10}"
        f"{owner_title}\n"
    )
    for q in progress.queues:
        owner = f"  {q.client_id or '-'}" if command.owners else ""
        out.write(
            f"{q.queue.topic:<32} {q.queue.broker_name:<16} {q.queue.queue_id:>5} {q.broker_offset:>12} "
            f"{q.consumer_offset:>12} {q.lag:>10}{owner}\n"
        )
    out.write(
        f"{group}: lag {progress.lag} over {len(progress.queues)} queues, {progress.consume_tps:.1f} msg/s\n"
    )
    return 0


async def run_reset_offsets(command: ResetOffsetsCommand, out: TextIO) -> int:
    """Reset the group's offsets on the topic; print each queue's new offset."""
    group, topic = command.common.wire(command.group), command.common.wire(command.topic)
    async with _admin(command.common) as admin:
        done = await admin.reset_offsets(group, topic, command.timestamp_ms, force=command.force)
    to = (
        "the earliest"
        if command.timestamp_ms == 0
        else "the latest"
        if command.timestamp_ms == LATEST
        else _when(command.timestamp_ms)
    )
    for mq, offset in done.items():
        out.write(f"{mq.broker_name:<16} {mq.queue_id:>5} {offset:>12}\n")
    out.write(f"{group} on {topic}: {len(done)} queues reset to {to}\n")
    return 0


def _message_json(msg: MessageExt) -> dict[str, Any]:
    return {
        "msg_id": msg.msg_id,
        "topic": msg.topic,
        "broker_name": msg.broker_name,
        "queue_id": msg.queue_id,
        "queue_offset": msg.queue_offset,
        "tags": msg.tags,
        "keys": list(msg.keys),
        "store_host": msg.store_host,
        "born_host": msg.born_host,
        "store_timestamp": msg.store_timestamp,
        "born_timestamp": msg.born_timestamp,
        "reconsume_times": msg.reconsume_times,
        "properties": dict(msg.properties),
        "body": msg.body.decode("utf-8", "replace"),
    }


async def run_message_get(command: MessageGetCommand, out: TextIO) -> int:
    """Print one message, found by offset id or (with a topic) by unique key."""
    async with _admin(command.common) as admin:
        if command.topic is None:
            msg = await admin.message(command.msg_id)
        else:
            msg = await admin.message_by_unique_key(command.common.wire(command.topic), command.msg_id)
    data = _message_json(msg)
    if command.json:
        out.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
        return 0
    for key in (
        "msg_id",
        "topic",
        "broker_name",
        "queue_id",
        "queue_offset",
        "tags",
        "keys",
        "store_host",
        "born_host",
        "reconsume_times",
    ):
        out.write(f"{key + ':':<17} {data[key]}\n")
    out.write(f"{'stored:':<17} {_when(msg.store_timestamp)} UTC\n")
    for key, value in sorted(msg.properties.items()):
        out.write(f"{'property:':<17} {key}={value}\n")
    out.write(f"{'body:':<17} {data['body']}\n")
    return 0
