"""ACL on the real broker: every client kind with credentials; bad credentials are AuthenticationFailed.

One single-broker cluster with ACL on per broker version: the run's version (5.x: ACL 2.0, the
launcher's account is a SUPER user) and 4.9.7 (ACL 1.0, ``plain_acl.yml`` admin account). No
address is white-listed, so every request the brokers accept was signed. Delay levels are all 1 s
so retries and dead letters take seconds.

The orderly DLQ test fails until the consumer re-sends through its own client instance (issue 11
defect 2): the consumer's inner producer is built without the consumer's ACL keys, so the broker
refuses the dead letter and the queue stays suspended.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
import trio

from integration._shapes import (
    FAST_DELAY_LEVELS,
    new_topic,
    read_topic,
    shape_cluster,
    stored_messages,
    version_under_test,
    wait_until,
)
from rocketmq_py import (
    ConsumeOrderlyStatus,
    ConsumeStatus,
    LitePullConsumer,
    LocalTransactionState,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    TransactionProducer,
    select_by_hash,
)
from rocketmq_py.errors import AuthenticationFailed
from rocketmq_py.testing import LocalCluster

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ACL_VERSIONS = list(dict.fromkeys([version_under_test(), "4.9.7"]))


@pytest.fixture(scope="module", params=ACL_VERSIONS)
def acl_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    with shape_cluster(
        1, version=request.param, acl=True, broker_config={"messageDelayLevel": FAST_DELAY_LEVELS}
    ) as cluster:
        yield cluster


def group(prefix: str) -> str:
    return f"acl-{prefix}-{uuid.uuid4().hex[:8]}"


async def test_producer_send_kinds_are_signed_and_stored(acl_cluster: LocalCluster) -> None:
    cluster = acl_cluster
    topic = new_topic(cluster, 4, prefix="acl-send")
    async with Producer(group("pg"), **cluster.client_options()) as producer:
        single = await producer.send(Message(topic, b"single"))
        batch = await producer.send_batch([Message(topic, f"batch-{i}".encode()) for i in range(3)])
        await producer.send_oneway(Message(topic, b"oneway"))
        queues = [
            (
                await producer.send(Message(topic, f"order-{i}".encode()), selector=select_by_hash, arg="k")
            ).queue
            for i in range(3)
        ]
    assert single.queue.topic == topic
    assert batch.msg_id.count(",") == 2
    assert len(set(queues)) == 1  # one sharding key, one queue
    got = await read_topic(cluster, topic, expect=8)
    bodies = sorted(m.body for m in got)
    assert bodies == sorted(
        [
            b"single",
            b"oneway",
            *(f"batch-{i}".encode() for i in range(3)),
            *(f"order-{i}".encode() for i in range(3)),
        ]
    )
    ordered = [m for m in got if m.body.startswith(b"order-")]
    assert [m.body for m in sorted(ordered, key=lambda m: m.queue_offset)] == [
        b"order-0",
        b"order-1",
        b"order-2",
    ]


async def test_transactions_commit_rollback_and_check_back(acl_cluster: LocalCluster) -> None:
    cluster = acl_cluster
    topic = new_topic(cluster, 1, prefix="acl-tx")
    checked: list[bytes] = []
    decide = {
        b"commit": LocalTransactionState.COMMIT_MESSAGE,
        b"rollback": LocalTransactionState.ROLLBACK_MESSAGE,
    }

    def execute(message: Message, arg: object) -> LocalTransactionState:
        return decide.get(message.body, LocalTransactionState.UNKNOWN)

    async def check(message: MessageExt) -> LocalTransactionState:
        # Answers as an application does, from its own record: on a loaded machine the broker may
        # check a half message back before our oneway END_TRANSACTION for it lands (5.x batches the
        # op records), so "rollback" can be checked too and must stay rolled back.
        checked.append(message.body)
        return decide.get(message.body, LocalTransactionState.COMMIT_MESSAGE)  # the unknown one commits

    async with TransactionProducer(
        group("tx"),
        execute_local_transaction=execute,
        check_local_transaction=check,
        **cluster.client_options(),
    ) as producer:
        for body in (b"commit", b"rollback", b"unknown"):
            await producer.send_message_in_transaction(Message(topic, body))
        # The broker checks the unknown one back (CHECK_TRANSACTION_STATE to us, END_TRANSACTION signed).
        await wait_until(lambda: b"unknown" in checked, 60, "the broker checked the unknown transaction back")
        # Until both bodies came, not two messages: a committed half message checked back as well
        # is stored twice (at-least-once), which is not "unknown".
        got = await read_topic(
            cluster, topic, expect=2, until=lambda got: {m.body for m in got} >= {b"commit", b"unknown"}
        )
    assert {m.body for m in got} == {b"commit", b"unknown"}


async def test_push_consumer_consumes_retries_and_dead_letters(acl_cluster: LocalCluster) -> None:
    """Send-back (CONSUMER_SEND_MSG_BACK) is signed: a flaky message comes back from the retry
    topic, a doomed one lands in the DLQ, a good one is consumed once."""
    cluster = acl_cluster
    topic = new_topic(cluster, 2, prefix="acl-push")
    name = group("push")
    seen: list[tuple[bytes, int]] = []

    async def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        status = ConsumeStatus.CONSUME_SUCCESS
        for m in msgs:
            seen.append((m.body, m.reconsume_times))
            if m.body == b"doomed" or (m.body == b"flaky" and m.reconsume_times == 0):
                status = ConsumeStatus.RECONSUME_LATER
        return status

    consumer = PushConsumer(
        name,
        listener=listener,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        max_reconsume_times=1,
        rebalance_interval=1,
        **cluster.client_options(),
    )
    consumer.subscribe(topic)
    async with consumer:
        async with Producer(group("pg"), **cluster.client_options()) as producer:
            for body in (b"good", b"flaky", b"doomed"):
                await producer.send(Message(topic, body))
        await wait_until(lambda: (b"flaky", 1) in seen and (b"doomed", 1) in seen, 60, "retries delivered")
        dlq = f"%DLQ%{name}"
        await wait_until(lambda: stored_messages(cluster, dlq) >= 1, 30, "the doomed message in the DLQ")
    assert (b"good", 0) in seen
    assert {r for b, r in seen if b == b"good"} == {0}


async def test_orderly_consumer_dead_letters_through_the_consumers_own_credentials(
    acl_cluster: LocalCluster,
) -> None:
    """An orderly queue that keeps failing sends its message to the DLQ and goes on in order."""
    cluster = acl_cluster
    topic = new_topic(cluster, 1, prefix="acl-orderly")
    name = group("orderly")
    consumed: list[bytes] = []

    async def listener(msgs: list[MessageExt]) -> ConsumeOrderlyStatus:
        if any(m.body == b"poison" for m in msgs):
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        consumed.extend(m.body for m in msgs)
        return ConsumeOrderlyStatus.SUCCESS

    consumer = PushConsumer(
        name,
        listener=listener,
        orderly=True,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        max_reconsume_times=1,
        suspend_current_queue_time=0.2,
        rebalance_interval=1,
        **cluster.client_options(),
    )
    consumer.subscribe(topic)
    async with consumer:
        async with Producer(group("pg"), **cluster.client_options()) as producer:
            for body in (b"first", b"poison", b"after"):
                await producer.send(Message(topic, body))
        await wait_until(lambda: b"after" in consumed, 30, "the message after the poison one consumed")
    assert consumed == [b"first", b"after"]
    # A broker creates the DLQ topic on the first dead letter; mqadmin finds it once the broker has
    # registered it with the NameServer (4.9.7 took a few seconds more).
    dlq = f"%DLQ%{name}"
    await wait_until(lambda: stored_messages(cluster, dlq) >= 1, 30, "the poison message in the DLQ")


async def test_lite_pull_polls_and_commits(acl_cluster: LocalCluster) -> None:
    cluster = acl_cluster
    topic = new_topic(cluster, 2, prefix="acl-lite")
    async with Producer(group("pg"), **cluster.client_options()) as producer:
        for i in range(10):
            await producer.send(Message(topic, f"m{i}".encode()))
    name = group("lite")
    consumer = LitePullConsumer(
        name, consume_from_where="CONSUME_FROM_FIRST_OFFSET", auto_commit=False, **cluster.client_options()
    )
    consumer.subscribe(topic)
    got: list[MessageExt] = []
    async with consumer:
        with trio.fail_after(60):
            while len(got) < 10:
                got.extend(await consumer.poll(timeout=1))
        await consumer.commit()
        committed = {mq: await consumer.committed(mq) for mq in consumer.assignment()}
    assert sorted(m.body for m in got) == sorted(f"m{i}".encode() for i in range(10))
    assert sum(committed.values()) == 10


async def test_mqadmin_consumer_status_sees_our_consumer(
    acl_cluster: LocalCluster, tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The broker forwards GET_CONSUMER_RUNNING_INFO from mqadmin (signed with the tools' account)."""
    cluster = acl_cluster
    monkeypatch.chdir(str(tmp_path))  # consumerStatus writes files into its working directory
    topic = new_topic(cluster, 2, prefix="acl-admin")
    name = group("admin")

    async def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(name, listener=listener, rebalance_interval=1, **cluster.client_options())
    consumer.subscribe(topic)
    async with consumer:
        await wait_until(
            lambda: len([s for s in consumer.statistics() if s.queue.topic == topic]) == 2,
            30,
            "both queues owned",
        )
        status = await trio.to_thread.run_sync(
            lambda: cluster.mqadmin("consumerStatus", "-g", name, "-i", consumer.client_id).output
        )
    assert f"consumerGroup                           : {name}" in status, status
    assert f"Topic: {topic} " in status.split("#Consumer Subscription#", 1)[1]


def test_spark_writes_and_reads_with_credentials(acl_cluster: LocalCluster, spark: SparkSession) -> None:
    import spark_connector  # the spark extra: imported here so that the other tests run without it

    cluster = acl_cluster
    spark_connector.register(spark)
    topic = new_topic(cluster, 2, prefix="acl-spark")
    creds = cluster.credentials
    assert creds is not None
    n = 50
    df = spark.createDataFrame([(f"row-{i}".encode(),) for i in range(n)], "body binary")
    (
        df.write.format("rocketmq")
        .mode("append")
        .option("namesrv", cluster.namesrv_addr)
        .option("topic", topic)
        .option("accessKey", creds.access_key)
        .option("secretKey", creds.secret_key)
        .save()
    )
    rows = (
        spark.read.format("rocketmq")
        .option("namesrv", cluster.namesrv_addr)
        .option("topic", topic)
        .option("accessKey", creds.access_key)
        .option("secretKey", creds.secret_key)
        .load()
        .select("body")
        .collect()
    )
    assert sorted(bytes(r.body) for r in rows) == sorted(f"row-{i}".encode() for i in range(n))


async def test_bad_credentials_are_authentication_failed_and_secrets_stay_hidden(
    acl_cluster: LocalCluster, caplog: pytest.LogCaptureFixture
) -> None:
    cluster = acl_cluster
    caplog.set_level(logging.DEBUG)
    creds = cluster.credentials
    assert creds is not None
    topic = new_topic(cluster, 1, prefix="acl-bad")
    wrong_secret = f"wrong-{uuid.uuid4().hex}"
    cases = {
        "wrong secret": {"access_key": creds.access_key, "secret_key": wrong_secret},
        "unknown access key": {"access_key": f"nobody-{uuid.uuid4().hex[:6]}", "secret_key": wrong_secret},
        "no credentials": {},
    }
    errors: dict[str, AuthenticationFailed] = {}
    for case, keys in cases.items():
        producer = Producer(group("bad"), namesrv=cluster.namesrv_addr, **keys)
        async with producer:
            with pytest.raises(AuthenticationFailed) as caught:
                await producer.send(Message(topic, b"refused"))
        errors[case] = caught.value
        assert wrong_secret not in repr(producer) + repr(producer.config)
    # The right account works alongside, and its secret does not leak either.
    async with Producer(group("good"), **cluster.client_options()) as good:
        await good.send(Message(topic, b"accepted"))
        shown = repr(good) + repr(good.config)
    for error in errors.values():
        assert not error.retriable
        shown += str(error) + repr(error) + error.remark
    shown += caplog.text
    assert wrong_secret not in shown
    assert creds.secret_key not in shown
    assert (await read_topic(cluster, topic, expect=1))[0].body == b"accepted"
    assert stored_messages(cluster, topic) == 1  # nothing refused was stored
