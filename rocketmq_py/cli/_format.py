"""Text output of the CLI: tables, permissions, routes, send results (pure functions)."""

from __future__ import annotations

from collections.abc import Sequence

from rocketmq_py._client._route import MASTER_ID, PERM_INHERIT, PERM_READ, PERM_WRITE
from rocketmq_py.producer._types import SendResult
from rocketmq_py.protocol import TopicRouteData

__all__ = ["format_send_result", "perm_letters", "route_lines", "table"]


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
