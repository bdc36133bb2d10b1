"""TLS on the real broker: a NameServer and a broker that enforce TLS, and clients that verify them.

The module cluster's certificates come from a CA made for it (``LocalCluster(tls=True)``); the
client trusts that CA only and checks the host name (127.0.0.1), so a handshake that succeeds was
made with the cluster's own certificate. The broker's registration with the NameServer and mqadmin
(topic creation) speak TLS too.

A client on the wrong side of TLS must fail fast with our ConnectionFailed (the transport may say
TlsMismatch, a subclass), not hang until a timeout.

The Spark connector writes and reads over TLS with its ``tls`` / ``tlsCaFile`` options, trusting the
cluster's CA file (``<workdir>/tls/ca.pem``, which ``up --tls`` prints too).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING

import pytest

from integration._shapes import new_topic, read_topic, shape_cluster, version_under_test, wait_until
from rocketmq_py import ConsumeStatus, Message, MessageExt, Producer, PushConsumer
from rocketmq_py._transport import ConnectionPool
from rocketmq_py.errors import ConnectionFailed, RouteNotFound
from rocketmq_py.protocol import RemotingCommand, RequestCode
from rocketmq_py.testing import Cluster, LocalCluster

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: A mismatch must be reported within this many seconds (a hang would run into the call timeout).
MISMATCH_BOUND = 10.0


@pytest.fixture(scope="module")
def tls_cluster() -> Iterator[LocalCluster]:
    with shape_cluster(1, version=version_under_test(), tls=True) as cluster:
        yield cluster


async def test_producer_push_and_lite_consumers_over_tls(tls_cluster: LocalCluster) -> None:
    cluster = tls_cluster
    assert cluster.ssl_context is not None
    topic = new_topic(cluster, 2, prefix="tls")
    bodies = {f"tls-{i}".encode() for i in range(20)}
    pushed: list[bytes] = []

    async def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        pushed.extend(m.body for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        f"tls-push-{uuid.uuid4().hex[:8]}",
        listener=listener,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        rebalance_interval=1,
        **cluster.client_options(),
    )
    consumer.subscribe(topic)
    async with consumer:
        async with Producer("tls-pg", **cluster.client_options()) as producer:
            for body in sorted(bodies):
                await producer.send(Message(topic, body))
            await producer.send_batch([Message(topic, b"batch-1"), Message(topic, b"batch-2")])
        await wait_until(lambda: len(set(pushed)) == 22, 60, "every message pushed")
    assert set(pushed) == bodies | {b"batch-1", b"batch-2"}
    pulled = await read_topic(cluster, topic, expect=22)
    assert {m.body for m in pulled} == bodies | {b"batch-1", b"batch-2"}


async def _timed_failure(call: Callable[[], Awaitable[object]]) -> tuple[BaseException, float]:
    """Run ``call``, which must fail; returns its exception and how long it took."""
    started = time.monotonic()
    try:
        await call()
    except Exception as exc:  # the type is checked by the caller
        return exc, time.monotonic() - started
    pytest.fail("the call succeeded across a TLS mismatch")


async def test_plaintext_client_against_tls_servers_fails_fast(tls_cluster: LocalCluster) -> None:
    cluster = tls_cluster

    async def ask(address: str) -> None:
        async with ConnectionPool() as pool:
            await pool.request(
                address, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), timeout=30
            )

    for address in (cluster.namesrv_addr, cluster.brokers[0].address):
        error, seconds = await _timed_failure(lambda a=address: ask(a))
        assert isinstance(error, ConnectionFailed), repr(error)
        assert seconds < MISMATCH_BOUND, (address, seconds)

    async def send() -> None:
        async with Producer("tls-plain-pg", namesrv=cluster.namesrv_addr) as producer:
            await producer.send(Message("tls-any-topic", b"x"))

    error, seconds = await _timed_failure(send)
    # The route lookup is what fails: reported as the connection failure or as no route, with the cause.
    assert isinstance(error, ConnectionFailed | RouteNotFound), repr(error)
    assert seconds < MISMATCH_BOUND + 5, seconds


async def test_tls_client_against_a_plaintext_cluster_fails_fast(
    tls_cluster: LocalCluster, cluster: Cluster
) -> None:
    """Against the session's plaintext cluster (whose brokers accept TLS with a throw-away
    self-signed certificate, RocketMQ's default "permissive" test mode), our verifying client refuses."""
    assert tls_cluster.ssl_context is not None
    for address in (cluster.namesrv_addr, cluster.brokers[0].address):
        async with ConnectionPool(ssl_context=tls_cluster.ssl_context) as pool:
            error, seconds = await _timed_failure(
                lambda a=address: pool.request(
                    a, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), timeout=30
                )
            )
        assert isinstance(error, ConnectionFailed), repr(error)
        assert seconds < MISMATCH_BOUND, (address, seconds)


def test_spark_writes_and_reads_over_tls(tls_cluster: LocalCluster, spark: SparkSession) -> None:
    import spark_connector  # the spark extra: imported here so that the other tests run without it

    cluster = tls_cluster
    spark_connector.register(spark)
    topic = new_topic(cluster, 2, prefix="tls-spark")
    tls = {"tls": "true", "tlsCaFile": str(cluster.workdir / "tls" / "ca.pem")}
    n = 50
    df = spark.createDataFrame([(f"row-{i}".encode(),) for i in range(n)], "body binary")
    (
        df.write.format("rocketmq")
        .mode("append")
        .option("namesrv", cluster.namesrv_addr)
        .option("topic", topic)
        .options(**tls)
        .save()
    )
    rows = (
        spark.read.format("rocketmq")
        .option("namesrv", cluster.namesrv_addr)
        .option("topic", topic)
        .options(**tls)
        .load()
        .select("body")
        .collect()
    )
    assert sorted(bytes(r.body) for r in rows) == sorted(f"row-{i}".encode() for i in range(n))
