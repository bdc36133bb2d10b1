"""Text output of the CLI: tables, permissions, routes, send results, group reports, messages (pure)."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from rocketmq_py import SendResult
from rocketmq_py.cli._inspect import GroupReport
from rocketmq_py.lowlevel import MASTER_ID, PERM_INHERIT, PERM_READ, PERM_WRITE
from rocketmq_py.protocol import SYSTEM_PROPERTY_KEYS, MessageExt, TopicRouteData

__all__ = [
    "body_text",
    "format_send_result",
    "group_report_lines",
    "message_json",
    "message_line",
    "perm_letters",
    "route_lines",
    "table",
]


def perm_letters(perm: int) -> str:
    """``RWX``-style permission letters, as Java's ``PermName.perm2String``.

    ``R`` readable, ``W`` writable, ``X`` inherit (the topic's permission follows the broker's);
    a ``-`` for each bit not set. ``6`` is ``RW-``, ``7`` is ``RWX``, ``4`` is ``R--``.
    """
    return "".join(
        letter if perm & bit else "-"
        for letter, bit in (("R", PERM_READ), ("W", PERM_WRITE), ("X", PERM_INHERIT))
    )


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns two spaces apart; trailing spaces stripped."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in (headers, *rows)
    ]


def route_lines(topic: str, route: TopicRouteData) -> list[str]:
    """A topic's route as a table: one row per broker, then the totals and the order conf.

    A broker with queues but no address (or the reverse) is shown with ``-`` for what is missing.
    """
    queues = {q.broker_name: q for q in route.queue_datas}
    brokers = {b.broker_name: b for b in route.broker_datas}
    rows = []
    for name in sorted(queues.keys() | brokers.keys()):
        data, broker = queues.get(name), brokers.get(name)
        addrs = dict(broker.broker_addrs) if broker else {}
        slaves = [addrs[i] for i in sorted(addrs) if i != MASTER_ID]
        rows.append(
            [
                name,
                broker.cluster if broker else "-",
                addrs.get(MASTER_ID, "-"),
                ",".join(slaves) or "-",
                str(data.read_queue_nums) if data else "-",
                str(data.write_queue_nums) if data else "-",
                f"{perm_letters(data.perm)} ({data.perm})" if data else "-",
            ]
        )
    lines = [f"topic {topic}"]
    lines += table(["BROKER", "CLUSTER", "MASTER", "SLAVES", "READ", "WRITE", "PERM"], rows)
    read = sum(q.read_queue_nums for q in route.queue_datas)
    write = sum(q.write_queue_nums for q in route.queue_datas)
    lines.append(f"{len(rows)} broker(s), {read} read / {write} write queues")
    if route.order_topic_conf:
        lines.append(f"order conf: {route.order_topic_conf}")
    return lines


def format_send_result(result: SendResult) -> str:
    """One line: status, ids, queue and offset."""
    queue = result.queue
    line = (
        f"{result.status.name} msgId={result.msg_id} offsetMsgId={result.offset_msg_id} "
        f"queue={queue.broker_name}:{queue.queue_id} queueOffset={result.queue_offset}"
    )
    if result.transaction_id and result.transaction_id != result.msg_id:  # brokers echo the msgId
        line += f" transactionId={result.transaction_id}"
    return line


def group_report_lines(report: GroupReport) -> list[str]:
    """``group inspect`` as text: the members, one table per topic, then the flags."""
    model = "BROADCASTING" if report.broadcasting else "CLUSTERING"
    lines = [
        f"group {report.group}: {len(report.consumer_ids)} consumer(s), "
        f"strategy {report.strategy or 'unknown'}, {model}"
    ]
    if report.members:
        rows = [
            [
                m.client_id,
                m.strategy or "-",
                str(len(m.owned)) if m.answered else "-",
                "yes" if m.answered else "NO",
            ]
            for m in report.members
        ]
        lines += table(["CONSUMER", "STRATEGY", "QUEUES", "ANSWERED"], rows)
    for topic in report.topics:
        lines.append("")
        lines.append(f"topic {topic.topic}: {len(topic.queues)} queue(s)")
        rows = [
            [
                mq.broker_name,
                str(mq.queue_id),
                ",".join(topic.owners.get(mq, ())) or "-",
                topic.expected_owner(mq) or "-",
            ]
            for mq in topic.queues
        ]
        lines += table(["BROKER", "QUEUE", "OWNER", "EXPECTED"], rows)
        if topic.note:
            lines.append(f"({topic.note})")
    lines.append("")
    if report.flags:
        lines.append(f"{len(report.flags)} problem(s):")
        lines += [f"  [{flag.kind}] {flag.message}" for flag in report.flags]
    else:
        lines.append("no problems found" if report.consumer_ids else "no consumer of this group is online")
    return lines


def body_text(body: bytes) -> tuple[str, str]:
    """``(text, encoding)``: the body as UTF-8 text when it is, else base64 (encoding ``"base64"``)."""
    try:
        return body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return base64.b64encode(body).decode("ascii"), "base64"


def message_line(msg: MessageExt, broker_name: str | None = None) -> str:
    """One line: queue, offset, message id, tags, keys and body (quoted when it has control characters).

    The queue is ``broker:queueId``, with the store host standing in for an unknown broker name.
    """
    text, encoding = body_text(msg.body)
    if encoding == "utf-8":
        body = f"body={text if text.isprintable() else json.dumps(text, ensure_ascii=False)}"
    else:
        body = f"body(base64)={text}"
    return (
        f"{broker_name or msg.store_host}:{msg.queue_id} offset={msg.queue_offset} msgId={msg.msg_id} "
        f"tags={msg.tags or '-'} keys={','.join(msg.keys) or '-'} {body}"
    )


def message_json(msg: MessageExt, broker_name: str | None = None) -> dict[str, Any]:
    """A message as a JSON object (``body`` text or base64, as ``bodyEncoding`` says)."""
    text, encoding = body_text(msg.body)
    return {
        "topic": msg.topic,
        "brokerName": broker_name,
        "queueId": msg.queue_id,
        "queueOffset": msg.queue_offset,
        "msgId": msg.msg_id,
        "tags": msg.tags,
        "keys": list(msg.keys),
        "body": text,
        "bodyEncoding": encoding,
        "bornTimestamp": msg.born_timestamp,
        "storeTimestamp": msg.store_timestamp,
        "storeHost": msg.store_host,
        "reconsumeTimes": msg.reconsume_times,
        "properties": {k: v for k, v in msg.properties.items() if k not in SYSTEM_PROPERTY_KEYS},
    }
