"""Executor side: pull a partition's offset ranges and turn them into Arrow record batches.

Each range ``[start, end)`` of a queue is pulled directly with PULL_MESSAGE: no consumer group
membership, no rebalance, no offset commit (commit flag off, no long polling). The TAG expression
is sent to the broker (which filters by tag hash) and re-checked here on the tags themselves, as
the Java client does. Messages at or past ``end`` are dropped, so a range stops exactly at its end.

A partition is read by one ``trio.run`` in a helper thread: up to four ranges at a time, each
with up to :data:`PIPELINE` pulls in flight over consecutive segments of ``pullBatchSize``
offsets, its messages kept in offset order. Finished Arrow batches (about :data:`BATCH_ROWS`
rows) pass to the Spark worker through a small bounded queue, so pulling the next batch overlaps
with Spark consuming the previous one and memory stays bounded. When Spark stops early (a
``LIMIT``), closing the generator stops the thread.

Replies stay bytes until a batch is built: :mod:`spark_connector._columns` turns them into
columns without a MessageExt per message (the window and the tag re-check are applied there),
only the columns of the reader's :class:`~spark_connector._schema.Projection` (all of them unless
the query gave a schema).

Pull answers (protocol.md §3.3): FOUND continues at ``nextBeginOffset``; NO_MATCHED_MSG (all
filtered) continues there too; NO_NEW_MSG means the queue ends before ``end`` (data loss:
the queue shrank or was recreated);
OFFSET_MOVED with ``nextBeginOffset`` above the asked offset means messages are gone: a
:class:`~spark_connector._errors.DataLossError`, or with ``failOnDataLoss=false`` a warning and
the range resumes at ``nextBeginOffset``.

A window of pulls that fails on its connection (the broker killed, or failing over to a replica
in controller mode) is pulled again from its first offset after ``fetchOffset.retryIntervalMs``,
from the address a route read anew names for the broker, up to ``fetchOffset.numRetries`` times in
a row: its rows were not emitted, so none is read twice or skipped. The route read that names the
brokers of ranges planned without an address (streaming replays) is tried again the same way.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import queue
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc
import trio

from rocketmq_py.errors import RocketMQError, unwrap_single
from rocketmq_py.lowlevel import ConnectionPool, MessageFilter, RemotingApi
from rocketmq_py.protocol import (
    MessageExt,
    MessageQueue,
    PullMessageResponseHeader,
    ResponseCode,
    build_subscription_data,
    decode_messages,
    from_ext_fields,
    pull_request_header,
    unwrap_name,
)
from spark_connector._columns import (
    ReplyChunk,
    chunks_to_batch,
    chunks_to_messages,
    last_queue_offset,
    record_starts,
)
from spark_connector._errors import DataLossError
from spark_connector._executor import CLIENTS
from spark_connector._metadata import (
    broker_addresses,
    connection_pool,
    reader_api,
    retrying,
    route,
    transport_failures,
)
from spark_connector._options import ReadOptions
from spark_connector._planning import QueueRange, RocketMQPartition
from spark_connector._schema import ALL_COLUMNS, Projection

__all__ = ["BATCH_ROWS", "PIPELINE", "READER_GROUP", "iter_partition", "plain_topics", "pull_range"]

_Emit = Callable[[list[ReplyChunk]], Awaitable[None]]

log = logging.getLogger("spark_connector")

#: The consumer group named in pull requests. The broker needs one to serve a pull; no client
#: registers in it and no offset is committed for it.
READER_GROUP: Final = "SPARK_ROCKETMQ_READER"
#: Rows gathered from one range before they become one Arrow batch. Spark pays per batch (Arrow
#: stream framing, JVM-side vector setup): ``benchmarks/spark_read.py`` read 4096-row batches at
#: 0.80 / 0.88 of the raw client (medians of 3 rounds, two runs) against 0.76 / 0.76 at 1024 rows,
#: although building one batch costs about 2.8 us/row at 4096 and 1.8 at 1024
#: (``benchmarks/spark_arrow.py``). Memory: at most ``_QUEUE_DEPTH`` + 1 batches per partition.
BATCH_ROWS: Final = 4096
#: Finished batches waiting for Spark, per partition.
_QUEUE_DEPTH: Final = 8
#: Ranges of one partition pulled at the same time.
_RANGE_CONCURRENCY: Final = 4
#: Pulls of one range in flight at once. A broker answers at most 32 messages a pull by default
#: (``maxTransferCountOnMessageInMemory``), so the round trip, not the decoding, bounds a lone
#: pull loop; the range is cut into pull-sized segments pulled side by side, emitted in order.
PIPELINE: Final = 8


class _Done:
    pass


_DONE: Final = _Done()


class _Stopped(Exception):
    """The consumer went away; the producer side unwinds."""


async def pull_range(
    api: RemotingApi, r: QueueRange, options: ReadOptions, *, batch_rows: int = BATCH_ROWS
) -> list[list[MessageExt]]:
    """Pull all of ``r`` from ``r.address``; the messages in chunks of about ``batch_rows`` (tests, benches)."""
    chunks: list[list[MessageExt]] = []
    accept = MessageFilter(build_subscription_data(r.topic, options.sub_expression, sub_version=0))

    async def emit(replies: list[ReplyChunk]) -> None:
        chunks.append(chunks_to_messages(replies, accept, broker_name=r.broker_name))

    await _pull_pipelined(api, r, options, r.address, emit, batch_rows)
    return chunks


async def _pull(
    api: RemotingApi,
    r: QueueRange,
    options: ReadOptions,
    address: str,
    emit: _Emit,
    batch_rows: int,
) -> None:
    subscription = build_subscription_data(r.topic, options.sub_expression, sub_version=0)
    mq = MessageQueue(r.topic, r.broker_name, r.queue_id)
    offset, end = r.start, r.end
    pending: list[ReplyChunk] = []
    rows = 0
    while offset < end:
        # The expression in the request; no commit, no long polling (the range is known to exist).
        header = pull_request_header(
            READER_GROUP,
            mq,
            offset=offset,
            max_msgs=min(options.pull_batch_size, end - offset),
            expression_type=subscription.expression_type,
            subscription=subscription.sub_string,
        )
        reply = await api.pull_message(address, header, timeout=options.pull_timeout)
        head = from_ext_fields(PullMessageResponseHeader, reply.ext_fields)
        next_offset = head.next_begin_offset
        if reply.code == ResponseCode.SUCCESS:
            # Records are kept as bytes (turned into columns per batch, filtered there by
            # [offset, end) and tags); a body whose records do not add up is decoded now, which
            # raises MalformedMessage for what is malformed.
            data = bytes(reply.body or b"")
            chunk = ReplyChunk(data, record_starts(data), offset, end)
            last = last_queue_offset(chunk)
            if chunk.starts is None:
                msgs = decode_messages(data)
                last = msgs[-1].queue_offset if msgs else None
            rows += chunk.rows
            pending.append(chunk)
            if last is not None:
                next_offset = max(next_offset, last + 1)
        elif reply.code == ResponseCode.PULL_NOT_FOUND:
            if offset < end:
                _lost(r, offset, head.max_offset, "the queue ends before the range does", options)
            break
        elif reply.code == ResponseCode.PULL_OFFSET_MOVED:
            if next_offset > offset:
                _lost(r, offset, next_offset, "the broker no longer has it", options)
            else:
                _lost(r, offset, next_offset, "the queue ends before the range does", options)
                break
        # PULL_RETRY_IMMEDIATELY: everything in the pulled span was filtered out; go on.
        if next_offset <= offset:
            raise DataLossError(r.key, offset, next_offset, "the broker did not advance")
        offset = next_offset
        if rows >= batch_rows:
            await emit(pending)
            pending, rows = [], 0
    if pending:
        await emit(pending)


async def _pull_pipelined(
    api: RemotingApi,
    r: QueueRange,
    options: ReadOptions,
    address: str,
    emit: _Emit,
    batch_rows: int,
) -> None:
    """:func:`_pull` over windows of :data:`PIPELINE` segments of ``pullBatchSize`` offsets each.

    A window whose pulls failed on their connections is pulled again (see the module docstring).
    """
    size = options.pull_batch_size
    pending: list[ReplyChunk] = []
    rows = 0
    offset = r.start
    failed_in_a_row = 0
    while offset < r.end:
        bounds = [
            (s, min(s + size, r.end)) for s in range(offset, min(r.end, offset + size * PIPELINE), size)
        ]
        found: list[list[ReplyChunk]] = [[] for _ in bounds]
        errors: list[Exception | None] = [None] * len(bounds)
        async with trio.open_nursery() as nursery:
            for i, (start, end) in enumerate(bounds):
                piece = QueueRange(r.topic, r.broker_name, r.queue_id, start, end, address)
                nursery.start_soon(_segment, api, piece, options, found[i], errors, i)
        failed = [error for error in errors if error is not None]
        if failed:
            # The lowest segment's error: what a lone pull loop would have met first.
            if failed_in_a_row >= options.fetch_offset_retries or any(
                transport_failures(error) is None for error in failed
            ):
                raise failed[0]
            failed_in_a_row += 1
            address = await _address_anew(api, options, r, address, failed[0], failed_in_a_row)
            continue
        failed_in_a_row = 0
        for replies in found:
            pending.extend(replies)
            rows += sum(reply.rows for reply in replies)
        offset = bounds[-1][1]
        if rows >= batch_rows:
            await emit(pending)
            pending, rows = [], 0
    if pending:
        await emit(pending)


async def _segment(
    api: RemotingApi,
    piece: QueueRange,
    options: ReadOptions,
    into: list[ReplyChunk],
    errors: list[Exception | None],
    index: int,
) -> None:
    async def keep(replies: list[ReplyChunk]) -> None:
        into.extend(replies)

    try:
        await _pull(api, piece, options, piece.address, keep, BATCH_ROWS)
    except Exception as exc:  # reported in segment order by the caller
        errors[index] = exc


async def _address_anew(
    api: RemotingApi, options: ReadOptions, r: QueueRange, address: str, error: Exception, attempt: int
) -> str:
    """After ``fetchOffset.retryIntervalMs``, the address the route now names for ``r``'s broker
    (``address`` again when the route cannot be read or lacks the broker: it may be back)."""
    interval = options.fetch_offset_retry_interval_ms
    log.warning(
        "queue %s: pulling from %s failed (%s: %s); reading the route again in %d ms (retry %d of %d)",
        r.key,
        address,
        type(error).__name__,
        error,
        interval,
        attempt,
        options.fetch_offset_retries,
    )
    await trio.sleep(interval / 1000.0)
    try:
        found = broker_addresses(await route(api, options, r.topic)).get(r.broker_name)
    except RocketMQError as exc:
        log.warning("queue %s: the route could not be read (%s); trying %s again", r.key, exc, address)
        return address
    return found or address


def _lost(r: QueueRange, offset: int, available: int, why: str, options: ReadOptions) -> None:
    if options.fail_on_data_loss:
        raise DataLossError(r.key, offset, available, why)
    log.warning(
        "queue %s: offset %d requested but %s (broker offset %d); skipping", r.key, offset, why, available
    )


#: Seconds a route read by one task serves the later tasks of its executor process (the Java
#: client's ``pollNameServerInterval``); a failing pull reads the route anew whatever its age.
ROUTE_REUSE: Final = 30.0


@dataclass(eq=False)
class ReaderClient:
    """What an executor process keeps for its reading tasks (:mod:`spark_connector._executor`):
    one connection pool and the broker addresses of the routes read lately."""

    pool: ConnectionPool
    #: topic -> (trio time read, broker name -> address)
    routes: dict[str, tuple[float, dict[str, str]]] = field(default_factory=dict)


@asynccontextmanager
async def open_reader_client(options: ReadOptions) -> AsyncIterator[ReaderClient]:
    """A :class:`ReaderClient` over a pool with the options' signing, TLS and client settings."""
    async with connection_pool(options) as pool:
        yield ReaderClient(pool)


def reader_client_key(options: ReadOptions) -> Hashable:
    """What tells reader clients apart: the NameServers (the routes), namespace and connection settings."""
    return (
        "reader",
        options.namesrv,
        options.namespace,
        options.access_key,
        options.secret_key,
        options.client.key(),
    )


async def _addresses(
    api: RemotingApi, options: ReadOptions, ranges: Sequence[QueueRange], client: ReaderClient | None = None
) -> dict[str, str]:
    """broker name (per topic) -> address, for ranges planned without one (streaming replays);
    a route ``client`` read less than :data:`ROUTE_REUSE` s ago is used again."""
    found: dict[str, str] = {}
    now = trio.current_time()
    for topic in sorted({r.topic for r in ranges if not r.address}):
        cached = client.routes.get(topic) if client is not None else None
        if cached is not None and now - cached[0] < ROUTE_REUSE:
            addresses = cached[1]
        else:
            addresses = broker_addresses(await route(api, options, topic))
            if client is not None:
                client.routes[topic] = (now, addresses)
        for name, address in addresses.items():
            found[f"{topic}/{name}"] = address
    return found


async def _produce(
    client: ReaderClient,
    partition: RocketMQPartition,
    options: ReadOptions,
    projection: Projection,
    out: queue.Queue[object],
    stop: threading.Event,
) -> None:
    def put(item: object) -> None:
        while not stop.is_set():
            try:
                out.put(item, timeout=0.2)
                return
            except queue.Full:
                continue
        raise _Stopped

    api = reader_api(client.pool, options)
    ranges = [r for r in partition.ranges if r.count > 0]
    resolved = await retrying(options, "reading the route", lambda: _addresses(api, options, ranges, client))
    limiter = trio.CapacityLimiter(_RANGE_CONCURRENCY)

    async def one(r: QueueRange) -> None:
        address = r.address or resolved.get(f"{r.topic}/{r.broker_name}")
        if address is None:
            raise DataLossError(r.key, r.start, r.start, f"broker {r.broker_name} is not in the route")

        accept = MessageFilter(build_subscription_data(r.topic, options.sub_expression, sub_version=0))

        async def emit(replies: list[ReplyChunk]) -> None:
            batch = chunks_to_batch(r.broker_name, replies, accept, projection)
            if options.namespace is not None:
                batch = plain_topics(batch, options.namespace)
            if batch.num_rows:
                await trio.to_thread.run_sync(put, batch)

        async with limiter:
            await _pull_pipelined(api, r, options, address, emit, BATCH_ROWS)

    async with trio.open_nursery() as nursery:
        for r in ranges:
            nursery.start_soon(one, r)


def plain_topics(batch: pa.RecordBatch, namespace: str) -> pa.RecordBatch:
    """``batch`` with its ``topic`` column (if projected) unwrapped from ``namespace``."""
    index = batch.schema.get_field_index("topic")
    if index < 0 or not batch.num_rows:
        return batch
    encoded = pc.dictionary_encode(batch.column(index))  # one distinct topic per queue range
    names = pa.array([unwrap_name(namespace, t) for t in encoded.dictionary.to_pylist()], pa.string())
    return batch.set_column(index, batch.schema.field(index), names.take(encoded.indices))


def iter_partition(
    partition: RocketMQPartition, options: ReadOptions, projection: Projection = ALL_COLUMNS
) -> Iterator[pa.RecordBatch]:
    """The partition's rows as Arrow batches of ``projection``'s columns, pulled in the executor
    process's client loop (:data:`~spark_connector._executor.CLIENTS`) for a helper thread that
    hands them over."""
    if not any(r.count > 0 for r in partition.ranges):
        return
    out: queue.Queue[object] = queue.Queue(maxsize=_QUEUE_DEPTH)
    stop = threading.Event()
    failure: list[BaseException] = []

    def runner() -> None:
        try:
            CLIENTS.run(
                reader_client_key(options),
                options.client.cache_timeout,
                functools.partial(open_reader_client, options),
                functools.partial(
                    _produce, partition=partition, options=options, projection=projection, out=out, stop=stop
                ),
            )
        except BaseException as exc:
            failure.append(unwrap_single(exc))
        while not stop.is_set():
            try:
                out.put(_DONE, timeout=0.2)
                return
            except queue.Full:
                continue

    thread = threading.Thread(target=runner, name=f"rocketmq-read-{partition.index}", daemon=True)
    thread.start()
    try:
        while True:
            item = out.get()
            if item is _DONE:
                break
            assert isinstance(item, pa.RecordBatch)
            yield item
        thread.join()
        if failure and not isinstance(failure[0], _Stopped):
            raise failure[0]
    finally:
        stop.set()
        while thread.is_alive():
            with contextlib.suppress(queue.Empty):
                out.get(timeout=0.2)
        thread.join()
