"""Spark reader hot path without broker or Spark: pull replies to Arrow batches, in us/msg.

Run with ``.venv/bin/python benchmarks/spark_arrow.py``. The input is what the executor gets from a
broker: PULL_MESSAGE reply bodies of 32 stored messages each (128-byte bodies, a tag, a key and the
properties a broker stores), encoded with ``encode_stored_message``; one Arrow batch is built from
:data:`~spark_connector._read.BATCH_ROWS` rows (128 replies) as the reader does. Stages:

- ``decode``: ``decode_messages`` of every reply body (MessageExt objects);
- ``to_batch``: ``messages_to_batch`` of 4096 decoded messages (the Arrow conversion alone);
- ``decode + to_batch``: both, what the reader did until the columnar path, in batches of 4096, 1024,
  ``BATCH_ROWS`` and 512 rows, with the cyclic garbage collector off (``timeit``'s default) and on,
  next to a heap of :data:`WORKER_HEAP` long-lived objects as in a Spark worker. Decoded messages
  are GC-tracked objects: the longer a batch keeps them alive, the more reach the oldest
  generation and the more often a full collection walks the whole heap.
- ``columnar``: what the reader does now: ``record_starts`` of each reply while pulling, then
  ``chunks_to_batch`` (no MessageExt objects; ``spark_connector/_columns.py``), same batch sizes.

Each figure is the best of five runs, on one core (the numbers move with the machine's load).
"""

from __future__ import annotations

import gc
import timeit
from collections.abc import Callable

from codec import BODY_SIZE, MESSAGES_PER_PULL, stored_record

from rocketmq_py.consumer._filter import MessageFilter
from rocketmq_py.protocol import build_subscription_data, decode_messages
from rocketmq_py.protocol._ids import UniqKeyGenerator
from spark_connector._columns import ReplyChunk, chunks_to_batch, record_starts
from spark_connector._read import BATCH_ROWS
from spark_connector._schema import messages_to_batch

BROKER = "broker-a"
#: Long-lived objects standing in for a Spark worker's heap in the gc-on runs.
WORKER_HEAP = 250_000


def pull_bodies(rows: int = BATCH_ROWS) -> list[bytes]:
    """``rows`` messages as reply bodies of :data:`MESSAGES_PER_PULL` stored messages each."""
    uniq = UniqKeyGenerator(ip="192.168.1.20", pid=4242, salt=0x1234ABCD)
    return [
        b"".join(
            stored_record(uniq, i, tags=f"Tag{i % 4}", key=f"k{1_000_000 + i}")
            for i in range(first, min(rows, first + MESSAGES_PER_PULL))
        )
        for first in range(0, rows, MESSAGES_PER_PULL)
    ]


def per_message_us(
    func: Callable[[], object], messages: int, seconds: float = 0.5, *, gc_on: bool = False
) -> float:
    """Microseconds per message of ``func`` (which handles ``messages``), best of five runs.

    ``timeit`` switches the cyclic garbage collector off; ``gc_on`` keeps it on, as in a Spark worker.
    """
    timer = timeit.Timer(func, setup="gc.enable()" if gc_on else "pass", globals={"gc": gc})
    number, elapsed = timer.autorange()
    number = max(1, int(number * seconds / max(elapsed, 1e-9)))
    return min(timer.repeat(repeat=5, number=number)) / number / messages * 1e6


def main() -> None:
    bodies = pull_bodies(4096)
    decoded = [m for body in bodies for m in decode_messages(body)]
    n = len(decoded)

    def decode() -> object:
        return [m for body in bodies for m in decode_messages(body)]

    def to_batch() -> object:
        return messages_to_batch(BROKER, decoded)

    def in_batches_of(rows: int) -> Callable[[], object]:
        per = max(1, rows // MESSAGES_PER_PULL)

        def run() -> object:
            return [
                messages_to_batch(BROKER, [m for body in bodies[i : i + per] for m in decode_messages(body)])
                for i in range(0, len(bodies), per)
            ]

        return run

    accept = MessageFilter(build_subscription_data("BenchmarkTopic", "*", sub_version=0))

    def columnar_in_batches_of(rows: int) -> Callable[[], object]:
        per = max(1, rows // MESSAGES_PER_PULL)

        def run() -> object:
            return [
                chunks_to_batch(
                    BROKER,
                    [ReplyChunk(body, record_starts(body), 0, 2**62) for body in bodies[i : i + per]],
                    accept,
                )
                for i in range(0, len(bodies), per)
            ]

        return run

    print(f"{n} messages, {len(bodies)} reply bodies of {MESSAGES_PER_PULL}, {BODY_SIZE}-byte bodies")
    print(f"{'decode':<36} {per_message_us(decode, n):6.3f} us/msg (gc off)")
    print(f"{'to_batch (4096 rows)':<36} {per_message_us(to_batch, n):6.3f} us/msg (gc off)")
    # A Spark worker holds a few hundred thousand long-lived objects (pyspark, pyarrow, ...): every
    # full collection walks them, and how often one runs depends on how many of our objects survive.
    heap = [[i] for i in range(WORKER_HEAP)]
    gc.collect()  # now long-lived, in the oldest generation
    for rows in sorted({4096, 1024, BATCH_ROWS, 512}, reverse=True):
        run = in_batches_of(rows)
        off, on = per_message_us(run, n), per_message_us(run, n, gc_on=True)
        label = f"decode + to_batch, {rows}-row batches"
        print(f"{label:<36} {off:6.3f} us/msg (gc off) {on:6.3f} us/msg (gc on)")
        run = columnar_in_batches_of(rows)
        off, on = per_message_us(run, n), per_message_us(run, n, gc_on=True)
        label = f"columnar, {rows}-row batches"
        print(f"{label:<36} {off:6.3f} us/msg (gc off) {on:6.3f} us/msg (gc on)")
    del heap


if __name__ == "__main__":
    main()
