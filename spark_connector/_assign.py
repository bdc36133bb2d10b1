"""Option ``assign``: the queues a read takes, named one by one, with no I/O.

JSON ``{"topic": {"broker": [queueId, ...]}}``, Spark's Kafka source's ``assign``
(``{"topic": [partition, ...]}``) with RocketMQ's queue address: a broker name and a queue id.
Instead of ``topic`` or ``topicPattern`` (exactly one of the three). The read takes only those
queues; a queue the routes do not have fails a batch read, or a stream when it starts, with
:class:`SparkOptionError` naming the option (:func:`check_assigned`); a stream that loses one
later keeps its offset, as for a queue gone from a topic's route, and reads it again when it is back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TypeAlias

from rocketmq_py.protocol import MessageQueue
from spark_connector._errors import SparkOptionError
from spark_connector._offset_spec import wrap_topics
from spark_connector._option_values import TOPIC_NAME
from spark_connector._planning import QueueState, queue_key

__all__ = ["Assignment", "assigned", "check_assigned", "parse_assign", "wrap_assignment"]

#: ``{topic: {broker: (queue_id, ...)}}``, queue ids sorted and distinct.
Assignment: TypeAlias = Mapping[str, Mapping[str, tuple[int, ...]]]

_SHAPE = '{"topic": {"broker": [queueId, ...]}}'


def parse_assign(text: str) -> Assignment:
    """Parse option ``assign``.

    Raises:
        SparkOptionError: not that JSON shape, a bad topic name, a queue id that is not an integer
            >= 0, or no queue at all.
    """
    try:
        raw = json.loads(text)
    except ValueError:
        raise SparkOptionError("assign", f"{text!r} is not JSON {_SHAPE}") from None
    if not isinstance(raw, dict):
        raise SparkOptionError("assign", f"must be {_SHAPE}")
    parsed: dict[str, dict[str, tuple[int, ...]]] = {}
    for topic, brokers in raw.items():
        if TOPIC_NAME.fullmatch(topic) is None:
            raise SparkOptionError(
                "assign", f"{topic!r} is not a valid topic name ([%|a-zA-Z0-9_-], 1-127 chars)"
            )
        if not isinstance(brokers, dict):
            raise SparkOptionError("assign", f"topic {topic!r}: must be {_SHAPE}")
        for broker, ids in brokers.items():
            if not broker.strip():
                raise SparkOptionError("assign", f"topic {topic!r}: a broker name is blank")
            if not isinstance(ids, list) or not ids:
                raise SparkOptionError("assign", f"{topic}/{broker}: must be a non-empty list of queue ids")
            for qid in ids:
                if isinstance(qid, bool) or not isinstance(qid, int) or qid < 0:
                    raise SparkOptionError(
                        "assign", f"{topic}/{broker}: queue id {qid!r} is not an integer >= 0"
                    )
            parsed.setdefault(topic, {})[broker] = tuple(sorted(set(ids)))
    if not parsed:
        raise SparkOptionError("assign", "names no queue")
    return parsed


def _queues(assign: Assignment) -> set[MessageQueue]:
    return {
        MessageQueue(topic, broker, qid)
        for topic, brokers in assign.items()
        for broker, ids in brokers.items()
        for qid in ids
    }


def assigned(
    queues: Iterable[tuple[MessageQueue, str]], assign: Assignment
) -> list[tuple[MessageQueue, str]]:
    """The ``(queue, address)`` pairs whose queue ``assign`` names, in the given order."""
    wanted = _queues(assign)
    return [(q, address) for q, address in queues if q in wanted]


def check_assigned(states: Iterable[QueueState], assign: Assignment | None) -> None:
    """Every queue ``assign`` names is among ``states`` (what the routes have).

    Raises:
        SparkOptionError: naming option ``assign`` and the queues the routes lack.
    """
    if assign is None:
        return
    found = {s.queue for s in states}
    missing = sorted(_queues(assign) - found)
    if missing:
        shown = ", ".join(queue_key(q.topic, q.broker_name, q.queue_id) for q in missing[:10])
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        raise SparkOptionError(
            "assign", f"names queues no topic route has as a readable queue: {shown}{more}"
        )


def wrap_assignment(namespace: str | None, assign: Assignment) -> Assignment:
    """``assign`` with its topics in ``namespace`` (the names the brokers use)."""
    return wrap_topics(namespace, assign)
