"""Where bulk sends end: a pure decision, no I/O, no trio.

:class:`Batcher` takes messages one at a time and hands back the batches (:class:`Chunk`) that are
complete, in the order they must be sent:

- messages without a queue are grouped per topic, up to ``batch_size`` messages and
  :data:`BATCH_BYTES` estimated bytes (every message keeps its own UNIQ_KEY inside a batch);
- messages with a queue (an ordered lane: the queue their sharding key selects) are grouped per
  queue with the same limits, and a lane's chunks come out in the order of its messages;
- a delayed message, and one estimated at more than :data:`BATCH_BYTES`, goes alone (Java refuses
  delays in batches); in a lane it first closes the lane's open chunk, so the order holds (a
  topic's open chunk stays open: unordered messages have no order to keep).

:meth:`Batcher.flush` returns what is still open at the end. The sending loop
(:mod:`rocketmq_py.producer._send_many`) sends unordered chunks concurrently and each lane's chunks
one at a time, in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from rocketmq_py.errors import InvalidOption
from rocketmq_py.protocol import Message, MessageQueue

__all__ = ["BATCH_BYTES", "PER_MESSAGE_OVERHEAD", "Batcher", "Chunk", "estimated_size"]

#: Estimated bytes per batch send, well under the broker's 4 MiB maximum message size.
BATCH_BYTES: Final = 1024 * 1024
#: A batch entry's fixed fields (Java ``MessageDecoder.encodeMessage``), added to each estimate.
PER_MESSAGE_OVERHEAD: Final = 64


def estimated_size(message: Message) -> int:
    """Bytes ``message`` takes in a batch body: body, topic, properties and the fixed fields."""
    size = len(message.body) + len(message.topic) + PER_MESSAGE_OVERHEAD
    for key, value in message.properties.items():  # each entry: key, value and their two separators
        size += len(key) + len(value) + 2
    return size


@dataclass(slots=True)
class Chunk:
    """Messages sent in one request: one message (a plain send) or several (a batch send).

    :func:`~rocketmq_py.send_many` hands each chunk to its ``on_sent`` / ``on_failure`` /
    ``describe`` callbacks.

    ``first_index`` is the position of the first message in the caller's sequence (the rest
    follow, not necessarily contiguously when lanes interleave); ``queue`` is set for an ordered
    lane's chunk (sent to that queue, one attempt, in order).
    """

    messages: list[Message] = field(default_factory=list)
    first_index: int = 0
    size: int = 0
    queue: MessageQueue | None = None
    indexes: list[int] = field(default_factory=list)

    @property
    def last_index(self) -> int:
        """Position of the last message in the caller's sequence."""
        return self.indexes[-1] if self.indexes else self.first_index

    def _add(self, message: Message, index: int, size: int) -> None:
        if not self.messages:
            self.first_index = index
        self.messages.append(message)
        self.indexes.append(index)
        self.size += size


class Batcher:
    """Groups messages into chunks (see the module docstring).

    Args:
        batch_size: most messages per chunk (1: every message alone).
        max_bytes: most estimated bytes per chunk.

    Raises:
        InvalidOption: ``batch_size`` is below 1.
    """

    def __init__(self, batch_size: int, max_bytes: int = BATCH_BYTES) -> None:
        if batch_size < 1:
            raise InvalidOption(f"batch_size must be at least 1, not {batch_size}")
        self.batch_size = batch_size
        self.max_bytes = max_bytes
        self._open: dict[str | MessageQueue, Chunk] = {}

    def add(self, message: Message, index: int, queue: MessageQueue | None = None) -> list[Chunk]:
        """Take ``message`` (position ``index``; ``queue`` for an ordered lane); return the chunks
        completed by it, in sending order (often none)."""
        size = estimated_size(message)
        key: str | MessageQueue = message.topic if queue is None else queue
        alone = self.batch_size == 1 or message.delay_level > 0 or size > self.max_bytes
        done: list[Chunk] = []
        chunk = self._open.get(key)
        # A lone message closes its lane's open chunk (order); a topic's open chunk stays open.
        closes = (queue is not None) if alone else chunk is not None and chunk.size + size > self.max_bytes
        if chunk is not None and closes:
            done.append(self._open.pop(key))
            chunk = None
        if alone:
            single = Chunk(queue=queue)
            single._add(message, index, size)
            done.append(single)
            return done
        if chunk is None:
            chunk = self._open[key] = Chunk(queue=queue)
        chunk._add(message, index, size)
        if len(chunk.messages) >= self.batch_size:
            done.append(self._open.pop(key))
        return done

    def flush(self) -> list[Chunk]:
        """Every chunk still open, oldest key first; the batcher is empty afterwards."""
        done = list(self._open.values())
        self._open.clear()
        return done
