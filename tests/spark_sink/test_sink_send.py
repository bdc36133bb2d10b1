"""The sink's use of the producer's bulk sender: its errors name the rows of the Spark task."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
import trio
from pyspark.sql.types import BinaryType, StructField, StructType

from rocketmq_py.errors import InvalidMessage, MessageIllegal, MessageTooLarge, broker_error_for
from rocketmq_py.protocol import (
    HeartbeatData,
    Message,
    MessageQueue,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    decode_body,
)
from spark_connector._sink import RocketMQWriter, send_messages

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from conftest import BulkCluster

    SparkBatches = Callable[..., Iterator[Any]]

TOPIC = "SinkTopic"


async def test_a_refused_send_fails_with_the_broker_error_and_the_rows(bulk_cluster: BulkCluster) -> None:
    async def refuse(request: RemotingCommand) -> RemotingCommand | None:
        raise broker_error_for(ResponseCode.MESSAGE_ILLEGAL, "the message body size over max value")

    for fb in (bulk_cluster.a, bulk_cluster.b):
        fb.on(RequestCode.SEND_BATCH_MESSAGE, refuse)
    messages = [Message(TOPIC, f"m{i}".encode()) for i in range(10)]
    async with bulk_cluster.producer() as producer:
        with pytest.raises(MessageIllegal) as info:  # the typed error itself, not an exception group
            await send_messages(producer, messages, batch_size=4)
    assert "the message body size over max value" in str(info.value)
    (note,) = info.value.__notes__
    assert note.startswith("rocketmq sink: sending rows ")
    assert note.endswith(f"of this task to topic {TOPIC!r} failed")


async def test_an_oversized_row_fails_before_any_io_for_it(bulk_cluster: BulkCluster) -> None:
    messages = [Message(TOPIC, b"ok"), Message(TOPIC, b"x" * 2048)]
    async with bulk_cluster.producer(max_message_size=1024) as producer:
        with pytest.raises(MessageTooLarge, match="2048 bytes, above the maximum of 1024") as info:
            await send_messages(producer, messages, batch_size=1)
    assert info.value.__notes__ == [f"rocketmq sink: sending row 1 of this task to topic {TOPIC!r} failed"]


async def test_rows_naming_their_queue_go_there_and_a_missing_queue_names_the_row(
    bulk_cluster: BulkCluster,
) -> None:
    """``broker_name`` / ``queue_id`` rows: to that queue, in row order; a queue the route lacks
    fails the task with the row's index."""
    pinned = MessageQueue(TOPIC, "broker-a", 1)
    items: list[Message | tuple[Message, MessageQueue]] = [
        (Message(TOPIC, f"r{i}".encode()), pinned) for i in range(20)
    ]
    async with bulk_cluster.producer() as producer:
        counts = await send_messages(producer, items, batch_size=4)
        assert counts.messages == 20
        stored = [m.body for m in bulk_cluster.a.messages(TOPIC, 1)]
        assert stored == [f"r{i}".encode() for i in range(20)]
        bad: list[Message | tuple[Message, MessageQueue]] = [
            (Message(TOPIC, b"x"), MessageQueue(TOPIC, "broker-z", 0))
        ]
        with pytest.raises(InvalidMessage, match="has no writable queue broker-z/0") as info:
            await send_messages(producer, bad)
    assert info.value.__notes__ == [f"rocketmq sink: sending row 0 of this task to topic {TOPIC!r} failed"]


@pytest.mark.parametrize(("options", "producers"), [({}, 1), ({"clientCacheTimeout": "0"}, 3)])
async def test_an_executors_tasks_share_one_producer(
    bulk_cluster: BulkCluster, options: dict[str, str], producers: int, spark_batches: SparkBatches
) -> None:
    """Three tasks of one write in one process send with one producer (its client id in every
    heartbeat, one route lookup), kept 10 minutes by default; with ``clientCacheTimeout=0`` each
    task starts its own. A writer with another producer group gets another producer.

    The fake brokers only record what arrives: a producer's heartbeat names its client id (Java
    ``MQClientInstance.sendHeartbeatToAllBroker``, ``HeartbeatData.clientID``); the real cluster runs
    the cached producer in integration/test_spark_write.py."""
    schema = StructType([StructField("body", BinaryType())])
    writer = RocketMQWriter(
        {"namesrv": bulk_cluster.namesrv.address, "topic": TOPIC, **options}, schema, False
    )
    for task in range(3):
        rows = spark_batches(schema, [(b"t%d" % task,)] * 5)
        report = await trio.to_thread.run_sync(writer.write, rows)
        assert report.rows == 5
    assert sum(len(v) for v in bulk_cluster.stored(TOPIC).values()) == 15
    heartbeats = [r for fb in (bulk_cluster.a, bulk_cluster.b) for r in fb.requests(RequestCode.HEART_BEAT)]
    assert len({decode_body(HeartbeatData, r.body).client_id for r in heartbeats}) == producers
    assert bulk_cluster.namesrv.accepted == producers
    other = RocketMQWriter(
        {"namesrv": bulk_cluster.namesrv.address, "topic": TOPIC, "producerGroup": "other", **options},
        schema,
        False,
    )
    await trio.to_thread.run_sync(other.write, spark_batches(schema, [(b"o",)]))
    assert bulk_cluster.namesrv.accepted == producers + 1
