"""Offset specifications, parsed with no I/O; a bad one raises :class:`SparkOptionError`.

* ``startingOffsets`` / ``endingOffsets``: ``earliest``, ``latest`` or JSON
  ``{"topic": {"broker": {"queueId": offset}}}``, where offset ``-2`` means earliest and ``-1``
  latest, as in Spark's Kafka source (whose JSON is ``{"topic": {"partition": offset}}``).
* ``startingOffsetsByTimestamp`` / ``endingOffsetsByTimestamp``: JSON
  ``{"topic": {"broker": {"queueId": epochMs}}}``; the broker turns each time into the queue's
  offset (the first message stored at or after it).
* ``startingOffsetsByTimestampStrategy``: what a starting time no message matches does
  (:data:`TIMESTAMP_STRATEGIES`).

:func:`parse_window` reads all of them (and ``startingTimestamp`` / ``endingTimestamp``) into one
:class:`ReadWindow`, with the Kafka source's precedence applied (see there).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Final, Literal, TypeAlias, TypeVar

from rocketmq_py.protocol import wrap_name
from spark_connector._errors import SparkOptionError
from spark_connector._option_values import get_int, get_text

__all__ = [
    "EARLIEST",
    "LATEST",
    "TIMESTAMP_STRATEGIES",
    "OffsetSpec",
    "ReadWindow",
    "SpecificOffsets",
    "TimestampSpec",
    "TimestampStrategy",
    "parse_offset_spec",
    "parse_timestamp_spec",
    "parse_timestamp_strategy",
    "parse_window",
    "wrap_spec",
    "wrap_topics",
    "wrap_window",
]

T = TypeVar("T")

#: Offset value in a JSON offset specification meaning "the queue's minimum" (Kafka: -2).
EARLIEST: Final = -2
#: Offset value in a JSON offset specification meaning "the queue's maximum" (Kafka: -1).
LATEST: Final = -1

#: ``{topic: {broker: {queue_id: offset}}}`` with :data:`EARLIEST` / :data:`LATEST` allowed.
SpecificOffsets: TypeAlias = Mapping[str, Mapping[str, Mapping[int, int]]]
OffsetSpec: TypeAlias = Literal["earliest", "latest"] | SpecificOffsets
#: ``{topic: {broker: {queue_id: epoch_ms}}}`` (``startingOffsetsByTimestamp`` and its ending twin).
TimestampSpec: TypeAlias = Mapping[str, Mapping[str, Mapping[int, int]]]
#: What a starting time that matches no message of a queue does: fail, or start at the latest offset.
TimestampStrategy: TypeAlias = Literal["latest", "error"]
#: The values of ``startingOffsetsByTimestampStrategy``; the first is the default. Kafka's source
#: defaults to ``error``; ours to ``latest``, which is what the broker's own search answers (the
#: queue's max offset, as Java's ``searchOffset`` and ``LitePullConsumer.seek`` by time give) and
#: what ``startingTimestamp`` always did: a topic's queues are many and often empty, and an empty
#: queue matches no time.
TIMESTAMP_STRATEGIES: Final[tuple[TimestampStrategy, ...]] = ("latest", "error")


def wrap_spec(namespace: str | None, spec: OffsetSpec) -> OffsetSpec:
    """``spec`` with its topics in ``namespace`` (the names the brokers use)."""
    if namespace is None or isinstance(spec, str):
        return spec
    return wrap_topics(namespace, spec)


def wrap_topics(namespace: str | None, spec: Mapping[str, T]) -> dict[str, T]:
    """A JSON specification with its topics in ``namespace`` (the names the brokers use)."""
    return {wrap_name(namespace, topic): value for topic, value in spec.items()}


def _queues_json(
    name: str, text: str, shape: str, value_of: Callable[[str, object], int]
) -> dict[str, dict[str, dict[int, int]]]:
    """``{topic: {broker: {queueId: value}}}`` from JSON ``text``, each value checked by ``value_of``."""
    try:
        raw = json.loads(text)
    except ValueError:
        raise SparkOptionError(name, f"{text!r} is not JSON {shape}") from None
    if not isinstance(raw, dict):
        raise SparkOptionError(name, f"must be {shape}")
    parsed: dict[str, dict[str, dict[int, int]]] = {}
    for topic, brokers in raw.items():
        if not isinstance(brokers, dict):
            raise SparkOptionError(name, f"topic {topic!r}: must be {shape}")
        for broker, queues in brokers.items():
            if not isinstance(queues, dict):
                raise SparkOptionError(name, f"{topic}/{broker}: must be {shape}")
            for queue_id, value in queues.items():
                try:
                    qid = int(queue_id)
                except ValueError:
                    raise SparkOptionError(
                        name, f"{topic}/{broker}: queue id {queue_id!r} is not an integer"
                    ) from None
                if qid < 0:
                    raise SparkOptionError(name, f"{topic}/{broker}: queue id {qid} is negative")
                parsed.setdefault(topic, {}).setdefault(broker, {})[qid] = value_of(
                    f"{topic}/{broker}/{qid}", value
                )
    return parsed


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
    if not text.strip().startswith("{"):
        raise SparkOptionError(
            name, f"{text!r} is not 'earliest', 'latest' or JSON {{topic: {{broker: {{queueId: offset}}}}}}"
        )

    def offset(where: str, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < EARLIEST:
            raise SparkOptionError(name, f"{where}: offset {value!r} is not an integer >= -2")
        if value == EARLIEST and not allow_earliest:
            raise SparkOptionError(name, f"{where}: -2 (earliest) makes no sense here")
        return value

    return _queues_json(name, text, "{topic: {broker: {queueId: offset}}}", offset)


def parse_timestamp_spec(name: str, text: str) -> TimestampSpec:
    """Parse JSON ``{topic: {broker: {queueId: epochMs}}}`` (each time an integer >= 0).

    Raises:
        SparkOptionError: anything else, naming ``name``.
    """

    def timestamp(where: str, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SparkOptionError(name, f"{where}: {value!r} is not a time in epoch ms (an integer >= 0)")
        return value

    spec = _queues_json(name, text, "{topic: {broker: {queueId: epochMs}}}", timestamp)
    if not spec:
        raise SparkOptionError(name, "names no queue")
    return spec


def parse_timestamp_strategy(name: str, text: str | None) -> TimestampStrategy:
    """``latest`` (the default, for ``None``) or ``error``, in any case.

    Raises:
        SparkOptionError: anything else, naming ``name``.
    """
    lowered = TIMESTAMP_STRATEGIES[0] if text is None else text.strip().lower()
    for strategy in TIMESTAMP_STRATEGIES:
        if lowered == strategy:
            return strategy
    raise SparkOptionError(name, f"{text!r} is not one of {', '.join(repr(s) for s in TIMESTAMP_STRATEGIES)}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadWindow:
    """Where a read starts and (a batch read) ends, from the offset and time options, precedence applied.

    Per queue, the first that names it wins, as in Spark's Kafka source: the global time
    (``startingTimestamp``), then the queue's time (``startingOffsetsByTimestamp``), then
    ``startingOffsets`` (whose JSON starts a queue it does not name at its minimum). The ending
    side likewise. A time is turned into the queue's offset by its broker when the read is planned.

    Attributes:
        starting, ending: ``startingOffsets`` / ``endingOffsets`` (or their defaults).
        starting_timestamp, ending_timestamp: the global times (epoch ms).
        starting_by_timestamp, ending_by_timestamp: per-queue times; ``None`` when not given or
            when the global time of their side shadows them.
        timestamp_strategy: ``startingOffsetsByTimestampStrategy``.
    """

    starting: OffsetSpec
    ending: OffsetSpec = "latest"
    starting_timestamp: int | None = None
    ending_timestamp: int | None = None
    starting_by_timestamp: TimestampSpec | None = None
    ending_by_timestamp: TimestampSpec | None = None
    timestamp_strategy: TimestampStrategy = TIMESTAMP_STRATEGIES[0]


def parse_window(options: Mapping[str, str], *, streaming: bool) -> ReadWindow:
    """The start and end options from lower-cased ``options``, checked and with precedence applied.

    Raises:
        SparkOptionError: a bad value; an ending option on a stream; an end before its start.
    """
    start_text = get_text(options, "startingOffsets")
    starting: OffsetSpec = (
        parse_offset_spec("startingOffsets", start_text)
        if start_text is not None
        else ("latest" if streaming else "earliest")
    )
    starting_ts = get_int(options, "startingTimestamp", minimum=0)
    by_text = get_text(options, "startingOffsetsByTimestamp")
    starting_by = None if by_text is None else parse_timestamp_spec("startingOffsetsByTimestamp", by_text)
    strategy = parse_timestamp_strategy(
        "startingOffsetsByTimestampStrategy", get_text(options, "startingOffsetsByTimestampStrategy")
    )
    end_text = get_text(options, "endingOffsets")
    ending_ts = get_int(options, "endingTimestamp", minimum=0)
    end_by_text = get_text(options, "endingOffsetsByTimestamp")
    if streaming:
        for name, given in (
            ("endingOffsets", end_text),
            ("endingTimestamp", ending_ts),
            ("endingOffsetsByTimestamp", end_by_text),
        ):
            if given is not None:
                raise SparkOptionError(name, "is for batch reads only; a stream reads on")
    ending: OffsetSpec = (
        parse_offset_spec("endingOffsets", end_text, allow_earliest=False)
        if end_text is not None
        else "latest"
    )
    ending_by = None if end_by_text is None else parse_timestamp_spec("endingOffsetsByTimestamp", end_by_text)
    window = ReadWindow(
        starting=starting,
        ending=ending,
        starting_timestamp=starting_ts,
        ending_timestamp=ending_ts,
        starting_by_timestamp=None if starting_ts is not None else starting_by,
        ending_by_timestamp=None if ending_ts is not None else ending_by,
        timestamp_strategy=strategy,
    )
    _check_order(window)
    return window


def _check_order(window: ReadWindow) -> None:
    """No queue may end before it starts, where both of its times are given."""
    start, end = window.starting_timestamp, window.ending_timestamp
    if start is not None and end is not None and end < start:
        raise SparkOptionError("endingTimestamp", f"{end} is before startingTimestamp {start}")
    named = _named(window.starting_by_timestamp) | _named(window.ending_by_timestamp)
    for topic, broker, qid in sorted(named):
        begin = start if start is not None else _time_of(window.starting_by_timestamp, topic, broker, qid)
        stop = end if end is not None else _time_of(window.ending_by_timestamp, topic, broker, qid)
        if begin is not None and stop is not None and stop < begin:
            option = "endingTimestamp" if end is not None else "endingOffsetsByTimestamp"
            raise SparkOptionError(
                option, f"{topic}/{broker}/{qid}: {stop} is before its starting time {begin}"
            )


def _named(spec: TimestampSpec | None) -> set[tuple[str, str, int]]:
    if spec is None:
        return set()
    return {(t, b, q) for t, brokers in spec.items() for b, queues in brokers.items() for q in queues}


def _time_of(spec: TimestampSpec | None, topic: str, broker: str, queue_id: int) -> int | None:
    return None if spec is None else spec.get(topic, {}).get(broker, {}).get(queue_id)


def wrap_window(namespace: str | None, window: ReadWindow) -> ReadWindow:
    """``window`` with the topics of its JSON specifications in ``namespace``."""
    if namespace is None:
        return window
    return replace(
        window,
        starting=wrap_spec(namespace, window.starting),
        ending=wrap_spec(namespace, window.ending),
        starting_by_timestamp=None
        if window.starting_by_timestamp is None
        else wrap_topics(namespace, window.starting_by_timestamp),
        ending_by_timestamp=None
        if window.ending_by_timestamp is None
        else wrap_topics(namespace, window.ending_by_timestamp),
    )
