"""Batch and micro-batch planning on the driver, as pure functions over what the brokers reported.

Three steps, each a plain function:

1. :func:`resolve_ranges` -- one ``[start, end)`` offset range per queue from the queue's
   ``[min, max)`` bounds and the starting/ending specifications (``earliest``, ``latest``, JSON,
   or offsets the broker found for a timestamp). A start below the queue's minimum is data loss:
   :class:`~spark_connector._errors.DataLossError`, or (``failOnDataLoss=false``) the range starts
   at the minimum and a warning names the skipped messages. A start past the end gives an empty range.
2. :func:`allocate_ranges` -- the queues go to ``numPartitions`` consumer ids
   ``spark-partition-0000``, ``spark-partition-0001``, ... through the consumer's allocation
   strategy, so Spark partition *i* reads exactly the queues the strategy gives consumer *i*.
3. :func:`split_partitions` -- with ``maxRecordsPerPartition``, a consumer id's ranges are cut
   into offset sub-ranges and packed into as many partitions as needed, each reading at most that
   many records (and each still reading only that consumer id's queues).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from pyspark.sql.datasource import InputPartition

from rocketmq_py.lowlevel import allocate, sort_queues
from rocketmq_py.protocol import MessageQueue
from spark_connector._errors import DataLossError
from spark_connector._options import EARLIEST, LATEST, OffsetSpec

__all__ = [
    "CONSUMER_ID_PREFIX",
    "PLANNING_GROUP",
    "QueueRange",
    "QueueState",
    "RocketMQPartition",
    "allocate_ranges",
    "consumer_ids",
    "plan_partitions",
    "queue_key",
    "resolve_ranges",
    "split_partitions",
]

log = logging.getLogger("spark_connector")

#: Each Spark partition plays one consumer id of this form (zero-padded: Java string order = index order).
CONSUMER_ID_PREFIX: Final = "spark-partition-"
#: The group name handed to the allocation strategies (only used in their messages).
PLANNING_GROUP: Final = "spark-rocketmq"


def queue_key(topic: str, broker_name: str, queue_id: int) -> str:
    """The streaming offset key of a queue: ``"topic/broker/queueId"``."""
    return f"{topic}/{broker_name}/{queue_id}"


@dataclass(frozen=True, slots=True)
class QueueState:
    """What the driver learnt about one queue: where its broker is and its ``[min, max)`` offsets."""

    queue: MessageQueue
    address: str
    min_offset: int
    max_offset: int


@dataclass(frozen=True, slots=True, order=True)
class QueueRange:
    """Offsets ``[start, end)`` of one queue, to be pulled from ``address``."""

    topic: str
    broker_name: str
    queue_id: int
    start: int
    end: int
    address: str = field(default="", compare=False)

    @property
    def count(self) -> int:
        """Offsets in the range (messages, unless a tag filter drops some)."""
        return max(0, self.end - self.start)

    @property
    def key(self) -> str:
        return queue_key(self.topic, self.broker_name, self.queue_id)

    @property
    def queue(self) -> MessageQueue:
        return MessageQueue(self.topic, self.broker_name, self.queue_id)


class RocketMQPartition(InputPartition):
    """One Spark partition: the offset ranges one consumer id reads. Small and picklable.

    Attributes:
        index: the partition's position in the plan.
        consumer_id: the consumer id the allocation strategy served (``spark-partition-0003``).
        ranges: the ranges to pull, in queue order.
    """

    def __init__(self, index: int, consumer_id: str, ranges: Sequence[QueueRange]) -> None:
        super().__init__(None)
        self.index = index
        self.consumer_id = consumer_id
        self.ranges = tuple(ranges)

    @property
    def count(self) -> int:
        return sum(r.count for r in self.ranges)

    def __repr__(self) -> str:
        ranges = ", ".join(f"{r.key}[{r.start},{r.end})" for r in self.ranges)
        return f"RocketMQPartition({self.index}, {self.consumer_id}, [{ranges}])"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RocketMQPartition):
            return NotImplemented
        return (self.index, self.consumer_id, self.ranges) == (other.index, other.consumer_id, other.ranges)

    def __hash__(self) -> int:
        return hash((self.index, self.consumer_id, self.ranges))


def _spec_offset(spec: OffsetSpec, state: QueueState, *, default: int) -> int:
    """The offset ``spec`` asks for in this queue (``default`` when a JSON spec does not name it)."""
    if spec == "earliest":
        return state.min_offset
    if spec == "latest":
        return state.max_offset
    assert not isinstance(spec, str)
    q = state.queue
    value = spec.get(q.topic, {}).get(q.broker_name, {}).get(q.queue_id)
    if value is None:
        return default
    if value == EARLIEST:
        return state.min_offset
    if value == LATEST:
        return state.max_offset
    return value


def resolve_ranges(
    states: Iterable[QueueState],
    *,
    starting: OffsetSpec,
    ending: OffsetSpec,
    starting_offsets: Mapping[MessageQueue, int] | None = None,
    ending_offsets: Mapping[MessageQueue, int] | None = None,
    fail_on_data_loss: bool = True,
) -> list[QueueRange]:
    """One range per queue, in queue order (empty ranges included: allocation sees every queue).

    Args:
        states: the queues and their bounds.
        starting, ending: the specifications; a JSON spec that does not name a queue starts it at
            its minimum and ends it at its maximum.
        starting_offsets, ending_offsets: per-queue offsets found for ``startingTimestamp`` /
            ``endingTimestamp``; they replace the specification for the queues they name.
        fail_on_data_loss: what a start below the minimum does (see the module docstring).

    Raises:
        DataLossError: a start below its queue's minimum while ``fail_on_data_loss``.
    """
    ranges = []
    for state in sorted(states, key=lambda s: s.queue):
        q = state.queue
        if starting_offsets is not None and q in starting_offsets:
            start = starting_offsets[q]
        else:
            start = _spec_offset(starting, state, default=state.min_offset)
        if ending_offsets is not None and q in ending_offsets:
            end = ending_offsets[q]
        else:
            end = _spec_offset(ending, state, default=state.max_offset)
        end = min(end, state.max_offset)
        if start < state.min_offset:
            key = queue_key(q.topic, q.broker_name, q.queue_id)
            if fail_on_data_loss:
                raise DataLossError(key, start, state.min_offset, "the queue's minimum offset is higher")
            log.warning(
                "queue %s: offsets %d..%d are gone (minimum %d); skipping them (failOnDataLoss=false)",
                key,
                start,
                state.min_offset - 1,
                state.min_offset,
            )
            start = state.min_offset
        start = min(start, end)
        ranges.append(QueueRange(q.topic, q.broker_name, q.queue_id, start, end, state.address))
    return ranges


def consumer_ids(count: int) -> list[str]:
    """``count`` consumer ids in Java string order (zero-padded indexes)."""
    width = max(4, len(str(count - 1)))
    return [f"{CONSUMER_ID_PREFIX}{i:0{width}d}" for i in range(count)]


def allocate_ranges(
    ranges: Sequence[QueueRange], num_partitions: int, strategy: str
) -> list[tuple[str, list[QueueRange]]]:
    """Each consumer id with the ranges of the queues ``strategy`` allocates to it.

    Every queue with a range takes part in the allocation, empty or not, so a partition's queues
    are exactly what a consumer group of ``num_partitions`` members would get; empty ranges are
    then dropped from the result.

    Raises:
        ClientError: an unknown or unconfigured strategy.
    """
    by_queue = {r.queue: r for r in ranges}
    mq_all = sort_queues(by_queue)
    cids = consumer_ids(num_partitions)
    result = []
    for cid in cids:
        mine = allocate(strategy, PLANNING_GROUP, cid, mq_all, cids) if mq_all else []
        result.append((cid, [by_queue[q] for q in sort_queues(mine) if by_queue[q].count > 0]))
    return result


def _pieces(ranges: Iterable[QueueRange], limit: int) -> Iterable[QueueRange]:
    for r in ranges:
        start = r.start
        while start < r.end:
            stop = min(r.end, start + limit)
            yield QueueRange(r.topic, r.broker_name, r.queue_id, start, stop, r.address)
            start = stop


def split_partitions(
    allocation: Sequence[tuple[str, Sequence[QueueRange]]], max_records: int | None
) -> list[RocketMQPartition]:
    """Partitions from an allocation; with ``max_records``, none reads more than that many offsets.

    A consumer id's ranges are cut into sub-ranges of at most ``max_records`` offsets, packed in
    order into partitions of at most ``max_records`` offsets. A consumer id with nothing to read
    still gets one (empty) partition, so the partition count never drops below ``numPartitions``.
    """
    partitions: list[RocketMQPartition] = []
    for cid, ranges in allocation:
        if max_records is None:
            partitions.append(RocketMQPartition(len(partitions), cid, ranges))
            continue
        current: list[QueueRange] = []
        room = max_records
        emitted = False
        for piece in _pieces(ranges, max_records):
            if piece.count > room:
                head = QueueRange(
                    piece.topic,
                    piece.broker_name,
                    piece.queue_id,
                    piece.start,
                    piece.start + room,
                    piece.address,
                )
                tail = QueueRange(
                    piece.topic, piece.broker_name, piece.queue_id, head.end, piece.end, piece.address
                )
                current.append(head)
                partitions.append(RocketMQPartition(len(partitions), cid, current))
                emitted = True
                current, room = [tail], max_records - tail.count
            else:
                current.append(piece)
                room -= piece.count
            if room == 0:
                partitions.append(RocketMQPartition(len(partitions), cid, current))
                emitted = True
                current, room = [], max_records
        if current or not emitted:
            partitions.append(RocketMQPartition(len(partitions), cid, current))
    return partitions


def plan_partitions(
    ranges: Sequence[QueueRange],
    *,
    num_partitions: int | None,
    strategy: str,
    max_records: int | None,
) -> list[RocketMQPartition]:
    """:func:`allocate_ranges` then :func:`split_partitions`; ``num_partitions`` defaults to one per queue."""
    count = num_partitions if num_partitions is not None else max(1, len(ranges))
    return split_partitions(allocate_ranges(ranges, count, strategy), max_records)
