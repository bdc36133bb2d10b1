"""Producers in a namespace: wrapped names on the wire, plain names in what the caller gets back."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing

from rocketmq_py.errors import ClientError, InvalidTopic, RequestReplyTimeout, StateError
from rocketmq_py.hooks import Hook, SendContext
from rocketmq_py.producer._producer import Producer
from rocketmq_py.producer._transaction import TransactionProducer
from rocketmq_py.producer._types import LocalTransactionState
from rocketmq_py.protocol import (
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
    HeartbeatData,
    Message,
    MessageExt,
    MessageQueue,
    RemotingCommand,
    RequestCode,
    decode_body,
    encode_stored_message,
    from_ext_fields,
    to_ext_fields,
)

if TYPE_CHECKING:
    from conftest import Cluster

MakeProducer = Callable[..., Producer]
NS = "ns1"
WIRE_TOPIC = "ns1%TopicTest"


@pytest.fixture
async def cluster(cluster: Cluster) -> Cluster:
    """The conftest's cluster, with the namespaced topic routed and created on both brokers."""
    for fb in cluster.brokers:
        fb.add_topic(WIRE_TOPIC, queues=2)
    cluster.namesrv.set_route(WIRE_TOPIC, cluster.route(cluster.a, cluster.b))
    return cluster


async def test_send_wraps_topic_and_group_and_unwraps_the_result(
    cluster: Cluster, make_producer: MakeProducer
) -> None:
    message = cluster.message(b"hello")
    async with make_producer(namespace=NS) as producer:
        assert producer.group == "ns1%pg-test"
        result = await producer.send(message)
        await producer._client_instance.heartbeat_all()

    assert cluster.route_queries() == [WIRE_TOPIC]
    fb = cluster.broker(result.queue.broker_name)
    (request,) = cluster.sends(fb)
    assert request.ext_fields["a"] == "ns1%pg-test"
    assert request.ext_fields["b"] == WIRE_TOPIC
    (stored,) = fb.messages(WIRE_TOPIC, result.queue.queue_id)
    assert stored.body == b"hello"
    assert result.queue == MessageQueue("TopicTest", fb.broker_name, stored.queue_id)
    assert message.topic == "TopicTest"  # the caller's message is left as given
    assert result.msg_id == message.uniq_key  # the id made for the send shows on it
    beats = [decode_body(HeartbeatData, cmd.body) for cmd in fb.requests(RequestCode.HEART_BEAT)]
    assert {p.group_name for beat in beats for p in beat.producer_data_set} >= {"ns1%pg-test"}


async def test_config_namespace_is_used_and_checked(cluster: Cluster, make_producer: MakeProducer) -> None:
    from rocketmq_py._client._config import ClientConfig

    config = ClientConfig(namesrv=cluster.namesrv.address, namespace=NS)
    async with Producer("pg-test", config=config) as producer:
        result = await producer.send(cluster.message())
    assert result.queue.topic == "TopicTest"
    assert cluster.sends(cluster.broker(result.queue.broker_name))[0].ext_fields["b"] == WIRE_TOPIC
    with pytest.raises(ClientError, match="namespace"):
        make_producer(namespace="bad%ns")


async def test_selector_sees_plain_queues_and_explicit_queues_are_wrapped(
    cluster: Cluster, make_producer: MakeProducer
) -> None:
    seen: list[tuple[list[MessageQueue], str]] = []

    def last(queues: Sequence[MessageQueue], message: Message, arg: Any) -> MessageQueue:
        seen.append((list(queues), message.topic))
        return queues[-1]

    async with make_producer(namespace=NS) as producer:
        chosen = await producer.send(cluster.message(b"sel"), selector=last)
        given = await producer.send(cluster.message(b"q"), queue=MessageQueue("TopicTest", "broker-a", 0))

    ((queues, topic),) = seen
    assert topic == "TopicTest"
    assert {mq.topic for mq in queues} == {"TopicTest"}
    assert chosen.queue == queues[-1]
    assert given.queue == MessageQueue("TopicTest", "broker-a", 0)
    assert [m.body for m in cluster.a.messages(WIRE_TOPIC, 0)] == [b"q"]
    assert [m.body for m in cluster.b.messages(WIRE_TOPIC, 1)] == [b"sel"]


async def test_batch_and_oneway_go_to_the_wrapped_topic(
    cluster: Cluster, make_producer: MakeProducer
) -> None:
    async with make_producer(namespace=NS) as producer:
        result = await producer.send_batch([cluster.message(b"1"), cluster.message(b"2")])
        await producer.send_oneway(cluster.message(b"one"), queue=MessageQueue("TopicTest", "broker-b", 0))
        with trio.fail_after(5):
            while not cluster.b.messages(WIRE_TOPIC, 0):  # noqa: ASYNC110 - the fake stores it
                await trio.sleep(0.01)
    assert result.queue.topic == "TopicTest"
    fb = cluster.broker(result.queue.broker_name)
    batch = [cmd for cmd in cluster.sends(fb) if cmd.code == RequestCode.SEND_BATCH_MESSAGE]
    assert batch[0].ext_fields["b"] == WIRE_TOPIC
    assert b"one" in [m.body for m in cluster.b.messages(WIRE_TOPIC, 0)]


async def test_transaction_producer_wraps_end_and_unwraps_the_check(cluster: Cluster) -> None:
    checked: list[str] = []
    executed: list[str] = []

    def execute(message: Message, arg: Any) -> LocalTransactionState:
        executed.append(message.topic)
        return LocalTransactionState.COMMIT_MESSAGE

    def check(message: MessageExt) -> LocalTransactionState:
        checked.append(message.topic)
        return LocalTransactionState.ROLLBACK_MESSAGE

    producer = TransactionProducer(
        "tx-group",
        namesrv=cluster.namesrv.address,
        namespace=NS,
        execute_local_transaction=execute,
        check_local_transaction=check,
    )
    async with producer:
        sent = await producer.send_message_in_transaction(cluster.message(b"tx"))
        fb = cluster.broker(sent.send_result.queue.broker_name)
        with trio.fail_after(5):
            ends = await fb.wait_received(1, RequestCode.END_TRANSACTION)
        (stored,) = fb.messages(WIRE_TOPIC, sent.send_result.queue.queue_id)
        check_header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=stored.queue_offset,
            commit_log_offset=stored.commit_log_offset,
            msg_id=sent.msg_id,
        )
        request = RemotingCommand.request(
            RequestCode.CHECK_TRANSACTION_STATE,
            to_ext_fields(check_header),
            body=encode_stored_message(stored),
            oneway=True,
        )
        await fb.send_to_client(request, expect_reply=False)
        with trio.fail_after(5):
            ends = await fb.wait_received(2, RequestCode.END_TRANSACTION)

    assert sent.send_result.queue.topic == "TopicTest"
    assert executed == ["TopicTest"]
    assert checked == ["TopicTest"]
    assert stored.properties["PGROUP"] == "ns1%tx-group"
    first, second = (from_ext_fields(EndTransactionRequestHeader, cmd.ext_fields) for cmd in ends)
    assert (first.producer_group, first.topic) == ("ns1%tx-group", WIRE_TOPIC)
    assert (second.producer_group, second.topic) == ("ns1%tx-group", WIRE_TOPIC)
    assert second.commit_or_rollback == LocalTransactionState.ROLLBACK_MESSAGE


class Contexts(Hook):
    """Keeps the context of every ``before_send``."""

    def __init__(self) -> None:
        self.seen: list[SendContext] = []

    def before_send(self, ctx: SendContext) -> None:
        self.seen.append(ctx)


async def test_send_contexts_carry_the_namespace(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    plain_hook, ns_hook, tx_hook = Contexts(), Contexts(), Contexts()
    async with make_producer(hooks=[plain_hook]) as producer:
        await producer.send(Message("TopicTest", b"no namespace"))
    async with make_producer(namespace=NS, hooks=[ns_hook]) as producer:
        await producer.send(cluster.message(b"1"))
        await producer.send_batch([cluster.message(b"2"), cluster.message(b"3")])
        await producer.send_oneway(cluster.message(b"4"))
        with pytest.raises(RequestReplyTimeout):  # nobody answers: the request was sent all the same
            await producer.request(cluster.message(b"5"), timeout=1)
    producer = TransactionProducer(
        "tx-group",
        namesrv=cluster.namesrv.address,
        namespace=NS,
        execute_local_transaction=lambda message, arg: LocalTransactionState.COMMIT_MESSAGE,
        check_local_transaction=lambda message: LocalTransactionState.COMMIT_MESSAGE,
        hooks=[tx_hook],
    )
    async with producer:
        await producer.send_message_in_transaction(cluster.message(b"tx"))

    assert [ctx.namespace for ctx in plain_hook.seen] == [""]
    assert [(ctx.batch, ctx.oneway) for ctx in ns_hook.seen] == [
        (False, False),
        (True, False),
        (False, True),
        (False, False),
    ]
    assert {ctx.namespace for ctx in ns_hook.seen} == {NS}
    assert {ctx.message.topic for ctx in ns_hook.seen} == {WIRE_TOPIC}
    ((tx_ctx),) = tx_hook.seen
    assert (tx_ctx.transactional, tx_ctx.namespace, tx_ctx.producer_group) == (True, NS, "ns1%tx-group")


async def test_fetch_publish_queues_names_the_queues_as_the_caller_does(
    cluster: Cluster, make_producer: MakeProducer
) -> None:
    """The route of the wrapped topic; its queues under the plain name (Java
    ``DefaultMQProducer.fetchPublishMessageQueues`` unwraps them the same way)."""
    async with make_producer(namespace=NS) as producer:
        queues = await producer.fetch_publish_queues("TopicTest")
    assert queues == [
        MessageQueue("TopicTest", fb.broker_name, queue_id)
        for fb in (cluster.a, cluster.b)
        for queue_id in (0, 1)
    ]
    assert cluster.route_queries() == [WIRE_TOPIC]


async def test_fetch_publish_queues_checks_the_name_and_the_producer(make_producer: MakeProducer) -> None:
    producer = make_producer()
    with pytest.raises(StateError, match="not started"):
        await producer.fetch_publish_queues("TopicTest")
    async with producer:
        with pytest.raises(InvalidTopic):
            await producer.fetch_publish_queues("bad topic!")
