"""Offset specifications (``startingOffsets``, ``endingOffsets``): ``earliest``, ``latest`` or JSON
``{"topic": {"broker": {"queueId": offset}}}``, where offset ``-2`` means earliest and ``-1`` latest,
as in Spark's Kafka source. Parsed with no I/O; a bad one raises :class:`SparkOptionError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final, Literal, TypeAlias

from rocketmq_py.protocol import wrap_name
from spark_connector._errors import SparkOptionError

__all__ = ["EARLIEST", "LATEST", "OffsetSpec", "SpecificOffsets", "parse_offset_spec", "wrap_spec"]

#: Offset value in a JSON offset specification meaning "the queue's minimum" (Kafka: -2).
EARLIEST: Final = -2
#: Offset value in a JSON offset specification meaning "the queue's maximum" (Kafka: -1).
LATEST: Final = -1

#: ``{topic: {broker: {queue_id: offset}}}`` with :data:`EARLIEST` / :data:`LATEST` allowed.
SpecificOffsets: TypeAlias = Mapping[str, Mapping[str, Mapping[int, int]]]
OffsetSpec: TypeAlias = Literal["earliest", "latest"] | SpecificOffsets


def wrap_spec(namespace: str | None, spec: OffsetSpec) -> OffsetSpec:
    """``spec`` with its topics in ``namespace`` (the names the brokers use)."""
    if namespace is None or isinstance(spec, str):
        return spec
    return {wrap_name(namespace, topic): brokers for topic, brokers in spec.items()}


def parse_offset_spec(name: str, text: str, *, allow_earliest: bool = True) -> OffsetSpec:
    """Parse ``earliest`` / ``latest`` / JSON ``{topic: {broker: {queueId: offset}}}``.

    Raises:
        SparkOptionError: anything else, naming ``name``.
    """
    lowered = text.strip().lower()
    if lowered == "latest":
        return "latest"
    if lowered == "earliest":
        if not allow_earliest:
            raise SparkOptionError(name, "'earliest' makes no sense here: use 'latest' or JSON offsets")
        return "earliest"
    try:
        raw = json.loads(text)
    except ValueError:
        raise SparkOptionError(
            name, f"{text!r} is not 'earliest', 'latest' or JSON {{topic: {{broker: {{queueId: offset}}}}}}"
        ) from None
    shape = "JSON {topic: {broker: {queueId: offset}}}"
    if not isinstance(raw, dict):
        raise SparkOptionError(name, f"must be {shape}")
    parsed: dict[str, dict[str, dict[int, int]]] = {}
    for topic, brokers in raw.items():
        if not isinstance(brokers, dict):
            raise SparkOptionError(name, f"topic {topic!r}: must be {shape}")
        for broker, queues in brokers.items():
            if not isinstance(queues, dict):
                raise SparkOptionError(name, f"{topic}/{broker}: must be {shape}")
            for queue_id, offset in queues.items():
                try:
                    qid = int(queue_id)
                except ValueError:
                    raise SparkOptionError(
                        name, f"{topic}/{broker}: queue id {queue_id!r} is not an integer"
                    ) from None
                if isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
                    raise SparkOptionError(
                        name, f"{topic}/{broker}/{qid}: offset {offset!r} is not an integer >= -2"
                    )
                if offset == EARLIEST and not allow_earliest:
                    raise SparkOptionError(name, f"{topic}/{broker}/{qid}: -2 (earliest) makes no sense here")
                parsed.setdefault(topic, {}).setdefault(broker, {})[qid] = offset
    return parsed
