"""Planning calls and the executor's range pulls against in-process fake brokers (no Spark)."""

from __future__ import annotations

import dataclasses
import logging
import pickle
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pyarrow as pa
import pytest
import trio
from pyspark.sql.types import LongType, StructField, StructType, _parse_datatype_json_string
from pyspark.sql.worker.plan_data_source_read import records_to_arrow_batches

from rocketmq_py._client._api import RemotingApi
from rocketmq_py._transport import ConnectionPool
from rocketmq_py.errors import broker_error_for
from rocketmq_py.protocol import (
    BrokerData,
    HeartbeatData,
    Message,
    MessageQueue,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueueData,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    TopicRouteData,
    UpdateConsumerOffsetRequestHeader,
    decode_body,
    from_ext_fields,
    to_ext_fields,
)
from rocketmq_py.testing._fake_broker import FakeBroker
from spark_connector import SPARK_SCHEMA, DataLossError, RocketMQDataSource
from spark_connector._metadata import commit_group_offsets, queue_states, resolve_topics, search_offsets
from spark_connector._options import ReadOptions, parse_read_options
from spark_connector._planning import QueueRange
from spark_connector._read import READER_GROUP, pull_range

TOPIC = "spark-t"


@dataclass
class Fakes:
    namesrv: FakeBroker
    a: FakeBroker
    b: FakeBroker
    api: RemotingApi

    def options(self, **extra: str) -> ReadOptions:
        return parse_read_options({"namesrv": self.namesrv.address, "topic": TOPIC, **extra}, streaming=False)


@pytest.fixture
async def fakes() -> AsyncIterator[Fakes]:
    async with (
        FakeBroker(broker_name="namesrv") as namesrv,
        FakeBroker(broker_name="broker-a") as a,
        FakeBroker(broker_name="broker-b") as b,
        ConnectionPool() as pool,
    ):
        for fb in (a, b):
            fb.add_topic(TOPIC, queues=2)
        namesrv.set_route(
            TOPIC,
            TopicRouteData(
                queue_datas=tuple(
                    QueueData(broker_name=fb.broker_name, read_queue_nums=2, write_queue_nums=2, perm=6)
                    for fb in (a, b)
                ),
                broker_datas=tuple(
                    BrokerData(
                        cluster="DefaultCluster", broker_name=fb.broker_name, broker_addrs={0: fb.address}
                    )
                    for fb in (a, b)
                ),
            ),
        )
        yield Fakes(namesrv, a, b, RemotingApi(pool, timeout=5))


def fill(fb: FakeBroker, queue_id: int, count: int, *, ts: int = 1000) -> None:
    for i in range(count):
        tag = "A" if i % 2 == 0 else "B"
        fb.put_messages(queue_id, [Message(TOPIC, b"m%d" % i, tags=tag)], store_timestamp=ts + i)


async def test_queue_states_and_search(fakes: Fakes) -> None:
    fill(fakes.a, 1, 5)
    fill(fakes.b, 0, 3)
    options = fakes.options()
    topics = await resolve_topics(fakes.api, options)
    assert topics == [TOPIC]
    states = await queue_states(fakes.api, options, topics)
    assert [(s.queue.broker_name, s.queue.queue_id, s.min_offset, s.max_offset) for s in states] == [
        ("broker-a", 0, 0, 0),
        ("broker-a", 1, 0, 5),
        ("broker-b", 0, 0, 3),
        ("broker-b", 1, 0, 0),
    ]
    assert states[1].address == fakes.a.address
    found = await search_offsets(fakes.api, states, 1002, group=READER_GROUP)
    assert found[MessageQueue(TOPIC, "broker-a", 1)] == 2
    assert found[MessageQueue(TOPIC, "broker-b", 0)] == 2
    assert found[MessageQueue(TOPIC, "broker-a", 0)] == 0


async def test_pull_stops_exactly_at_the_end(fakes: Fakes) -> None:
    fill(fakes.a, 0, 20)
    r = QueueRange(TOPIC, "broker-a", 0, 3, 14, fakes.a.address)
    chunks = await pull_range(fakes.api, r, fakes.options(pullBatchSize="4"), batch_rows=5)
    offsets = [m.queue_offset for chunk in chunks for m in chunk]
    assert offsets == list(range(3, 14))
    assert {m.broker_name for chunk in chunks for m in chunk} == {"broker-a"}  # the range's broker
    assert all(len(c) >= 5 for c in chunks[:-1])
    pulls = [
        from_ext_fields(PullMessageRequestHeader, c.ext_fields)
        for c in fakes.a.requests(RequestCode.PULL_MESSAGE)
    ]
    assert sorted(p.max_msg_nums for p in pulls) == [3, 4, 4]  # never asks past the end
    assert {p.consumer_group for p in pulls} == {READER_GROUP}
    assert {p.sys_flag for p in pulls} == {0x4}  # subscription only: no commit, no long polling
    assert {p.commit_offset for p in pulls} == {0}


async def test_tags_filtered(fakes: Fakes) -> None:
    fill(fakes.a, 1, 10)
    r = QueueRange(TOPIC, "broker-a", 1, 0, 10, fakes.a.address)
    chunks = await pull_range(fakes.api, r, fakes.options(subExpression="A", pullBatchSize="3"))
    msgs = [m for chunk in chunks for m in chunk]
    assert [m.queue_offset for m in msgs] == [0, 2, 4, 6, 8]
    assert {m.tags for m in msgs} == {"A"}
    pulls = [
        from_ext_fields(PullMessageRequestHeader, c.ext_fields)
        for c in fakes.a.requests(RequestCode.PULL_MESSAGE)
    ]
    assert {(p.subscription, p.expression_type) for p in pulls} == {("A", "TAG")}


async def test_client_side_recheck_of_tags(fakes: Fakes) -> None:
    """A broker filters by tag hash only; messages of another tag that slip through are dropped here."""
    fill(fakes.a, 0, 6)
    default = fakes.a._handlers[RequestCode.PULL_MESSAGE]

    async def ignore_subscription(request: RemotingCommand) -> RemotingCommand | None:
        header = from_ext_fields(PullMessageRequestHeader, request.ext_fields)
        fields = to_ext_fields(dataclasses.replace(header, subscription="*"))
        return await default(dataclasses.replace(request, ext_fields=fields))

    fakes.a.on(RequestCode.PULL_MESSAGE, ignore_subscription)
    r = QueueRange(TOPIC, "broker-a", 0, 0, 6, fakes.a.address)
    chunks = await pull_range(fakes.api, r, fakes.options(subExpression="B"))
    assert [m.queue_offset for c in chunks for m in c] == [1, 3, 5]


def _moved_below(fb: FakeBroker, minimum: int) -> None:
    """Make the broker answer OFFSET_MOVED(minimum) for offsets below ``minimum``, as after a cleanup."""
    default = fb._handlers[RequestCode.PULL_MESSAGE]

    async def pull(request: RemotingCommand) -> RemotingCommand | None:
        header = from_ext_fields(PullMessageRequestHeader, request.ext_fields)
        if header.queue_offset < minimum:
            bounds = PullMessageResponseHeader(
                suggest_which_broker_id=0, next_begin_offset=minimum, min_offset=minimum, max_offset=10
            )
            return RemotingCommand.response(
                request, ResponseCode.PULL_OFFSET_MOVED, None, to_ext_fields(bounds)
            )
        return await default(request)

    fb.on(RequestCode.PULL_MESSAGE, pull)


async def test_data_loss_fails(fakes: Fakes) -> None:
    fill(fakes.a, 0, 10)
    _moved_below(fakes.a, 4)
    r = QueueRange(TOPIC, "broker-a", 0, 0, 10, fakes.a.address)
    with pytest.raises(DataLossError) as info:
        await pull_range(fakes.api, r, fakes.options())
    assert (info.value.queue, info.value.requested, info.value.available) == (f"{TOPIC}/broker-a/0", 0, 4)


async def test_data_loss_skipped_with_warning(fakes: Fakes, caplog: pytest.LogCaptureFixture) -> None:
    fill(fakes.a, 0, 10)
    _moved_below(fakes.a, 4)
    r = QueueRange(TOPIC, "broker-a", 0, 0, 10, fakes.a.address)
    with caplog.at_level(logging.WARNING, logger="spark_connector"):
        chunks = await pull_range(fakes.api, r, fakes.options(failOnDataLoss="false"))
    assert [m.queue_offset for c in chunks for m in c] == list(range(4, 10))
    assert f"{TOPIC}/broker-a/0" in caplog.text


async def test_queue_shorter_than_the_range(fakes: Fakes) -> None:
    fill(fakes.b, 1, 3)
    r = QueueRange(TOPIC, "broker-b", 1, 0, 8, fakes.b.address)
    with pytest.raises(DataLossError):
        await pull_range(fakes.api, r, fakes.options())
    chunks = await pull_range(fakes.api, r, fakes.options(failOnDataLoss="false"))
    assert [m.queue_offset for c in chunks for m in c] == [0, 1, 2]


async def test_commit_declares_an_unknown_group_first(fakes: Fakes) -> None:
    """Brokers 5.x refuse offsets of an unknown group; a heartbeat declares it, as Java's consumer does."""
    known: set[str] = set()
    heartbeat = fakes.a._handlers[RequestCode.HEART_BEAT]
    update = fakes.a._handlers[RequestCode.UPDATE_CONSUMER_OFFSET]

    async def on_heartbeat(request: RemotingCommand) -> RemotingCommand | None:
        known.update(fakes_groups(request))
        return await heartbeat(request)

    async def on_update(request: RemotingCommand) -> RemotingCommand | None:
        header = from_ext_fields(UpdateConsumerOffsetRequestHeader, request.ext_fields)
        if header.consumer_group not in known:
            raise broker_error_for(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"Group {header.consumer_group} not exist!"
            )
        return await update(request)

    fakes.a.on(RequestCode.HEART_BEAT, on_heartbeat)
    fakes.a.on(RequestCode.UPDATE_CONSUMER_OFFSET, on_update)
    commits = [(fakes.a.address, MessageQueue(TOPIC, "broker-a", q), 10 + q) for q in range(2)]
    await commit_group_offsets(fakes.api, "cg-spark", commits)
    assert known == {"cg-spark"}
    assert fakes.a.consumer_offsets == {("cg-spark", TOPIC, 0): 10, ("cg-spark", TOPIC, 1): 11}
    assert fakes.a.consumers.get("cg-spark", []) == []  # the declaring client left again
    assert len(fakes.a.requests(RequestCode.HEART_BEAT)) == 1


async def test_commit_through_a_proxy_declares_the_group_with_a_pull_per_broker(fakes: Fakes) -> None:
    """Through a 5.x Proxy one address serves every broker and heartbeats stay in the Proxy, so the
    group is declared with a pull, once per broker. A broker creates a group on the first check of
    any PULL_MESSAGE (``PullMessageProcessor.processRequest`` calls
    ``SubscriptionGroupManager.findSubscriptionGroupConfig``, which creates it with
    ``autoCreateSubscriptionGroup``); the real twin is ``test_spark_stream`` in ``make proxy``."""
    known: set[tuple[str, str]] = set()  # (group, broker name) the "brokers behind" know
    pull = fakes.a._handlers[RequestCode.PULL_MESSAGE]
    update = fakes.a._handlers[RequestCode.UPDATE_CONSUMER_OFFSET]

    async def on_pull(request: RemotingCommand) -> RemotingCommand | None:
        header = from_ext_fields(PullMessageRequestHeader, request.ext_fields)
        known.add((header.consumer_group, header.broker_name or ""))
        return await pull(request)

    async def on_update(request: RemotingCommand) -> RemotingCommand | None:
        header = from_ext_fields(UpdateConsumerOffsetRequestHeader, request.ext_fields)
        if (header.consumer_group, header.broker_name or "") not in known:
            raise broker_error_for(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"Group {header.consumer_group} not exist!"
            )
        return await update(request)

    fakes.a.on(RequestCode.PULL_MESSAGE, on_pull)
    fakes.a.on(RequestCode.UPDATE_CONSUMER_OFFSET, on_update)
    commits = [
        (fakes.a.address, MessageQueue(TOPIC, broker, q), 10 + q)
        for broker in ("broker-a", "broker-b")
        for q in (0, 1)
    ]
    await commit_group_offsets(fakes.api, "cg-spark", commits)
    assert known == {("cg-spark", "broker-a"), ("cg-spark", "broker-b")}
    assert fakes.a.consumer_offsets == {("cg-spark", TOPIC, 0): 10, ("cg-spark", TOPIC, 1): 11}
    pulls = [
        from_ext_fields(PullMessageRequestHeader, c.ext_fields)
        for c in fakes.a.requests(RequestCode.PULL_MESSAGE)
    ]
    assert [(h.broker_name, h.queue_offset, h.max_msg_nums, h.suspend_timeout_millis) for h in pulls] == [
        ("broker-a", 10, 1, 0),
        ("broker-b", 10, 1, 0),
    ]


def fakes_groups(request: RemotingCommand) -> set[str]:
    return {c.group_name for c in decode_body(HeartbeatData, request.body).consumer_data_set}


def read_table(options: dict[str, str], schema: StructType) -> pa.Table:
    """What Spark's Python workers do for ``spark.read...schema(schema).load()``, without Spark.

    The schema arrives as JSON; ``reader(schema)`` plans the partitions; the reader travels
    pickled to the executors, whose batches Spark's own check (``records_to_arrow_batches``)
    compares with the schema (``DATA_SOURCE_RETURN_SCHEMA_MISMATCH`` on any difference).
    """
    schema = _parse_datatype_json_string(schema.json())
    source = RocketMQDataSource(options)
    planned = source.reader(schema)
    reader = pickle.loads(pickle.dumps(planned))
    batches = [
        b
        for p in planned.partitions()  # type: ignore[attr-defined]
        for b in records_to_arrow_batches(iter(reader.read(p)), 10_000, schema, source)
    ]
    return pa.Table.from_batches(batches)


async def test_reader_returns_only_the_schemas_columns(fakes: Fakes) -> None:
    """Planning and pulling as without a schema; the batches hold its columns, in its order."""
    fill(fakes.a, 0, 7)
    fill(fakes.b, 1, 4)
    options = {"namesrv": fakes.namesrv.address, "topic": TOPIC, "subExpression": "B"}
    offset_not_null = StructField("queue_offset", LongType(), nullable=False)
    schema = StructType([SPARK_SCHEMA["body"], offset_not_null, SPARK_SCHEMA["broker_name"]])
    # The readers run their own trio loops (planning, the executor's pull thread): off this one,
    # which serves the fake brokers.
    pruned = await trio.to_thread.run_sync(read_table, options, schema)
    full = await trio.to_thread.run_sync(read_table, options, SPARK_SCHEMA)
    assert pruned.column_names == ["body", "queue_offset", "broker_name"]
    assert full.num_columns == 16
    for name in pruned.column_names:
        assert pruned[name].equals(full[name])
    assert sorted(
        zip(pruned["broker_name"].to_pylist(), pruned["queue_offset"].to_pylist(), strict=True)
    ) == [
        ("broker-a", 1),
        ("broker-a", 3),
        ("broker-a", 5),
        ("broker-b", 1),
        ("broker-b", 3),
    ]


async def test_a_namespace_reads_the_wrapped_topic_and_shows_the_plain_name(fakes: Fakes) -> None:
    wire = f"ns1%{TOPIC}"
    fakes.a.add_topic(wire, queues=1)
    fakes.a.put_messages(0, [Message(wire, b"n%d" % i) for i in range(3)])
    fakes.namesrv.set_route(
        wire,
        TopicRouteData(
            queue_datas=(QueueData(broker_name="broker-a", read_queue_nums=1, write_queue_nums=1, perm=6),),
            broker_datas=(
                BrokerData(
                    cluster="DefaultCluster", broker_name="broker-a", broker_addrs={0: fakes.a.address}
                ),
            ),
        ),
    )
    options = {"namesrv": fakes.namesrv.address, "topic": TOPIC, "namespace": "ns1"}
    table = await trio.to_thread.run_sync(read_table, options, SPARK_SCHEMA)
    assert table["topic"].to_pylist() == [TOPIC] * 3  # the plain name, as a client of ns1 sees it
    assert table["body"].to_pylist() == [b"n0", b"n1", b"n2"]
    pulls = [
        from_ext_fields(PullMessageRequestHeader, c.ext_fields)
        for c in fakes.a.requests(RequestCode.PULL_MESSAGE)
    ]
    assert {p.topic for p in pulls} == {wire}

    async def topic_list(request: RemotingCommand) -> RemotingCommand:
        body = b'{"topicList":["ns1%spark-t","ns1%other","ns2%spark-t","spark-t","%RETRY%ns1%spark-g"]}'
        return RemotingCommand.response(request, ResponseCode.SUCCESS, body=body)

    fakes.namesrv.on(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, topic_list)
    by_pattern = parse_read_options(
        {"namesrv": fakes.namesrv.address, "topicPattern": "spark-.*", "namespace": "ns1"}, streaming=False
    )
    assert await resolve_topics(fakes.api, by_pattern) == [wire]  # matched on the plain names of ns1


def read_twice(options: dict[str, str]) -> list[int]:
    """Plan once, then run every partition's read twice, as two Spark jobs' tasks in one executor
    process would; the rows each of the two reads returned."""
    reader = RocketMQDataSource(options).reader(SPARK_SCHEMA)
    partitions = reader.partitions()  # type: ignore[attr-defined]
    return [sum(b.num_rows for p in partitions for b in reader.read(p)) for _ in range(2)]


@pytest.mark.parametrize(("cache_timeout", "connections"), [("5m", 1), ("0", 4)])
async def test_an_executors_tasks_share_one_connection_pool(
    fakes: Fakes, cache_timeout: str, connections: int
) -> None:
    """With ``clientCacheTimeout`` (5 minutes by default) the tasks of one process pull over one
    pool: one connection to a broker for two reads of its two queues; with ``0`` each task opens
    its own (two partitions on broker-a, twice)."""
    for fb in (fakes.a, fakes.b):
        fill(fb, 0, 3)
        fill(fb, 1, 2)
    options = {"namesrv": fakes.namesrv.address, "topic": TOPIC, "clientCacheTimeout": cache_timeout}
    planned = await trio.to_thread.run_sync(
        lambda: RocketMQDataSource(options).reader(SPARK_SCHEMA).partitions()
    )  # type: ignore[attr-defined]
    assert len(planned) == 4
    before = fakes.a.accepted
    rows = await trio.to_thread.run_sync(read_twice, options)
    assert rows == [10, 10]
    # read_twice planned once more on the driver: one connection of its own to each broker
    assert fakes.a.accepted - before == 1 + connections
