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
4. :func:`split_to_min` -- with ``minPartitions`` (Kafka's), while fewer partitions read
   something, the one whose pieces would be largest is cut into one more piece by offset range,
   until that many do; each piece still reads only its consumer id's queues. It only cuts, so the pieces
   still respect ``maxRecordsPerPartition``; a read with fewer records than ``minPartitions`` ends
   with one partition per record.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Final

from pyspark.sql.datasource import InputPartition

from rocketmq_py.lowlevel import allocate, sort_queues
from rocketmq_py.protocol import MessageQueue
from spark_connector._errors import DataLossError
from spark_connector._offset_spec import EARLIEST, LATEST, OffsetSpec

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
    "split_to_min",
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


def _cut(ranges: Sequence[QueueRange], sizes: Sequence[int]) -> list[list[QueueRange]]:
    """``ranges`` (in order) cut into consecutive pieces of ``sizes`` offsets each."""
    pieces: list[list[QueueRange]] = []
    queue = list(ranges)
    for size in sizes:
        piece: list[QueueRange] = []
        while size > 0:
            r = queue.pop(0)
            take = min(size, r.count)
            piece.append(QueueRange(r.topic, r.broker_name, r.queue_id, r.start, r.start + take, r.address))
            if take < r.count:
                queue.insert(
                    0, QueueRange(r.topic, r.broker_name, r.queue_id, r.start + take, r.end, r.address)
                )
            size -= take
        pieces.append(piece)
    return pieces


def split_to_min(
    partitions: Sequence[RocketMQPartition], min_partitions: int | None
) -> list[RocketMQPartition]:
    """``partitions``, cut by offset range until at least ``min_partitions`` of them read something
    (``minPartitions``; empty ones do not count, as Kafka's source drops empty ranges first).

    While there are too few, the partition whose pieces are largest (offsets per piece, ties to the
    first) gets one more piece, so the largest piece is as small as it can be; a partition's pieces
    differ by one offset at most, and each keeps its consumer id and reads its offsets in order. A
    partition cannot have more pieces than offsets, so a read of fewer records than
    ``min_partitions`` gets fewer partitions. The result is renumbered from 0.
    """
    counts = [p.count for p in partitions]
    reading = sum(1 for c in counts if c > 0)
    if min_partitions is None or reading >= min_partitions:
        return list(partitions)
    pieces = [1] * len(partitions)
    # Largest offsets per piece first, compared exactly.
    heap = [(-Fraction(c), i) for i, c in enumerate(counts) if c > 1]
    heapq.heapify(heap)
    for _ in range(min_partitions - reading):
        if not heap:
            break
        _, i = heapq.heappop(heap)
        pieces[i] += 1
        if counts[i] > pieces[i]:
            heapq.heappush(heap, (-Fraction(counts[i], pieces[i]), i))
    result: list[RocketMQPartition] = []
    for partition, count, k in zip(partitions, counts, pieces, strict=True):
        if k == 1:
            result.append(RocketMQPartition(len(result), partition.consumer_id, partition.ranges))
            continue
        sizes = [count // k + (1 if j < count % k else 0) for j in range(k)]
        for piece in _cut([r for r in partition.ranges if r.count > 0], sizes):
            result.append(RocketMQPartition(len(result), partition.consumer_id, piece))
    return result


def plan_partitions(
    ranges: Sequence[QueueRange],
    *,
    num_partitions: int | None,
    strategy: str,
    max_records: int | None,
    min_partitions: int | None = None,
) -> list[RocketMQPartition]:
    """:func:`allocate_ranges`, :func:`split_partitions`, then :func:`split_to_min`;
    ``num_partitions`` defaults to one per queue."""
    count = num_partitions if num_partitions is not None else max(1, len(ranges))
    return split_to_min(
        split_partitions(allocate_ranges(ranges, count, strategy), max_records), min_partitions
    )
