"""Consumers in a namespace: wrapped topics, groups and retry topics on the wire, plain ones shown.

The fake cluster holds ``ns1%TopicTest`` and ``%RETRY%ns1%cg-test`` (the conftest's ``cluster``
with the wire names); the consumers are made with ``group="cg-test", namespace="ns1"`` and
subscribe ``TopicTest``, as a user of the namespace would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing

from rocketmq_py.consumer._lite_pull import LitePullConsumer
from rocketmq_py.consumer._push import ConsumeStatus, PushConsumer
from rocketmq_py.hooks import ConsumeContext, Hook
from rocketmq_py.protocol import (
    ConsumerSendMsgBackRequestHeader,
    HeartbeatData,
    LockBatchRequestBody,
    MessageExt,
    MessageQueue,
    RequestCode,
    ResponseCode,
    decode_body,
    decode_properties,
    from_ext_fields,
)

if TYPE_CHECKING:
    from conftest import Cluster, Recorder

NS = "ns1"
TOPIC = "TopicTest"
GROUP = "cg-test"
MakeConsumer = Callable[..., PushConsumer]


@pytest.fixture
async def cluster(cluster: Cluster) -> Cluster:
    """The conftest's cluster with the wire names of ``TopicTest`` and ``cg-test`` in ``ns1``."""
    cluster.topic, cluster.group = f"{NS}%{TOPIC}", f"{NS}%{GROUP}"
    for fb in cluster.brokers:
        fb.add_topic(cluster.topic, queues=2)
        fb.add_topic(cluster.retry, queues=1)
    cluster.namesrv.set_route(cluster.topic, cluster.route(cluster.a, cluster.b, queues=2))
    cluster.namesrv.set_route(cluster.retry, cluster.route(cluster.a, cluster.b, queues=1))
    return cluster


def plain(mq: MessageQueue) -> MessageQueue:
    return MessageQueue(mq.topic.replace(f"{NS}%", ""), mq.broker_name, mq.queue_id)


def make_push(make_consumer: MakeConsumer, **options: Any) -> PushConsumer:
    return make_consumer(group=GROUP, namespace=NS, topics=[TOPIC], **options)


async def test_push_consumer_pulls_wire_names_and_shows_plain_ones(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0, b1 = cluster.queues()[0], cluster.queues()[3]
    cluster.put(a0, 2)
    cluster.put(b1, 1)
    consumer = make_push(make_consumer, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    assert consumer.group == cluster.group
    async with consumer:
        await cluster.wait_until(lambda: len(recorder.messages) == 3)
        await cluster.wait_until(lambda: consumer._offset_store.get(a0) == 2)
        await cluster.wait_until(lambda: bool(cluster.pulled_queues(cluster.retry)))
        owned = sorted(consumer.assignment())
        stats = consumer.statistics()

    assert {m.topic for m in recorder.messages} == {TOPIC}
    assert {mq.topic for mq in owned} == {TOPIC, f"%RETRY%{GROUP}"}
    assert plain(a0) in owned
    assert [s.queue for s in stats] == owned
    assert {h.topic for fb in cluster.brokers for h in cluster.pulls(fb)} == {cluster.topic, cluster.retry}
    assert {h.consumer_group for fb in cluster.brokers for h in cluster.pulls(fb)} == {cluster.group}
    assert cluster.a.consumer_offsets[(cluster.group, cluster.topic, 0)] == 2
    (beat, *_) = cluster.heartbeats(cluster.a)
    (data,) = beat.consumer_data_set
    assert data.group_name == cluster.group
    assert {s.topic for s in data.subscription_data_set} == {cluster.topic, cluster.retry}
    queried = {
        cmd.ext_fields["topic"] for cmd in cluster.namesrv.requests(RequestCode.GET_ROUTEINFO_BY_TOPIC)
    }
    assert queried == {cluster.topic, cluster.retry}


def _fail_first(recorder: Recorder) -> None:
    async def hook(msgs: list[MessageExt]) -> None:
        first = all(m.reconsume_times == 0 for m in msgs)
        recorder.status = ConsumeStatus.RECONSUME_LATER if first else ConsumeStatus.CONSUME_SUCCESS

    recorder.hook = hook


async def test_send_back_names_the_wire_topic_and_the_retry_shows_the_plain_one(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    _fail_first(recorder)
    async with make_push(make_consumer):
        cluster.put(a0, 1)
        await cluster.wait_until(lambda: len(recorder.messages) == 2)

    (cmd,) = [cmd for fb in cluster.brokers for cmd in fb.requests(RequestCode.CONSUMER_SEND_MSG_BACK)]
    header = from_ext_fields(ConsumerSendMsgBackRequestHeader, cmd.ext_fields)
    assert (header.group, header.origin_topic) == (cluster.group, cluster.topic)
    (requeued,) = cluster.a.messages(cluster.retry, 0)  # %RETRY%ns1%cg-test
    assert requeued.properties["RETRY_TOPIC"] == cluster.topic
    first, again = recorder.messages
    assert first.topic == again.topic == TOPIC  # restored from RETRY_TOPIC, then unwrapped
    assert again.reconsume_times == 1


async def test_send_back_fallback_resends_to_the_wrapped_retry_topic(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    for fb in cluster.brokers:
        fb.on_reply(RequestCode.CONSUMER_SEND_MSG_BACK, ResponseCode.SYSTEM_ERROR, remark="not today")
    _fail_first(recorder)
    async with make_push(make_consumer):
        cluster.put(a0, 1)
        await cluster.wait_until(lambda: len(recorder.messages) == 2)

    resends = [
        cmd.ext_fields
        for fb in cluster.brokers
        for cmd in fb.requests(RequestCode.SEND_MESSAGE_V2)
        if cmd.ext_fields["b"] == f"%RETRY%{NS}%{GROUP}"
    ]
    (fields,) = resends
    assert fields["a"] == "CLIENT_INNER_PRODUCER"  # the inner producer's group is not wrapped
    assert decode_properties(fields["i"])["RETRY_TOPIC"] == cluster.topic
    assert [m.topic for m in recorder.messages] == [TOPIC, TOPIC]
    beats = [
        decode_body(HeartbeatData, c.body)
        for fb in cluster.brokers
        for c in fb.requests(RequestCode.HEART_BEAT)
    ]
    assert {p.group_name for beat in beats for p in beat.producer_data_set} == {"CLIENT_INNER_PRODUCER"}


async def test_orderly_locks_the_wrapped_queues(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    a0 = cluster.queues()[0]
    async with make_push(make_consumer, orderly=True):
        cluster.put(a0, 1)
        await cluster.wait_until(lambda: len(recorder.messages) == 1)
    bodies = [
        decode_body(LockBatchRequestBody, c.body) for c in cluster.a.requests(RequestCode.LOCK_BATCH_MQ)
    ]
    assert bodies
    assert {b.consumer_group for b in bodies} == {cluster.group}
    assert a0 in {mq for b in bodies for mq in b.mq_set}
    assert recorder.messages[0].topic == TOPIC


# --- lite pull -------------------------------------------------------------------------------------


def make_lite(cluster: Cluster, **options: Any) -> LitePullConsumer:
    return LitePullConsumer(
        GROUP,
        namesrv=cluster.namesrv.address,
        namespace=NS,
        instance_name="me",
        client_ip="127.0.0.1",
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        **options,
    )


async def test_lite_assign_takes_plain_queues_and_polls_plain_topics(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    a0 = cluster.queues()[0]
    cluster.put(a0, 3)
    async with make_lite(cluster, auto_commit=False) as consumer:
        fetched = await consumer.fetch_message_queues(TOPIC)
        assert fetched == [plain(mq) for mq in cluster.queues()]
        consumer.assign([plain(a0)])
        assert consumer.assignment() == {plain(a0)}
        got: list[MessageExt] = []
        with trio.fail_after(60):
            while len(got) < 3:
                got.extend(await consumer.poll(timeout=1))
        consumer.pause([plain(a0)])
        assert consumer.paused() == {plain(a0)}
        consumer.resume([plain(a0)])
        await consumer.commit({plain(a0): 2})
        assert await consumer.committed(plain(a0)) == 2
        consumer.seek(plain(a0), 0)
        many = await consumer.getmany(timeout=5)

    assert {m.topic for m in got} == {TOPIC}
    assert list(many) == [plain(a0)]
    assert [m.topic for m in many[plain(a0)]] == [TOPIC] * 3
    assert {h.topic for h in cluster.pulls(cluster.a)} == {cluster.topic}
    assert {h.consumer_group for h in cluster.pulls(cluster.a)} == {cluster.group}
    assert cluster.a.consumer_offsets[(cluster.group, cluster.topic, 0)] == 2


async def test_lite_subscribe_registers_and_pulls_the_wrapped_topic(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    b1 = cluster.queues()[3]
    cluster.put(b1, 2)
    consumer = make_lite(cluster)
    consumer.subscribe(TOPIC)
    async with consumer:
        got: list[MessageExt] = []
        with trio.fail_after(60):
            while len(got) < 2:
                got.extend(await consumer.poll(timeout=1))
        assigned = consumer.assignment()

    assert {m.topic for m in got} == {TOPIC}
    assert assigned == {plain(mq) for mq in cluster.queues()}
    (beat, *_) = cluster.heartbeats(cluster.b)
    (data,) = beat.consumer_data_set
    assert data.group_name == cluster.group
    assert [s.topic for s in data.subscription_data_set] == [cluster.topic]
    assert cluster.b.consumer_offsets[(cluster.group, cluster.topic, 1)] == 2


class Contexts(Hook):
    """Keeps the context of every ``after_consume`` and the topics ``before_consume`` saw."""

    def __init__(self) -> None:
        self.seen: list[ConsumeContext] = []
        self.topics_before: list[list[str]] = []

    def before_consume(self, ctx: ConsumeContext) -> None:
        self.topics_before.append([m.topic for m in ctx.messages])

    def after_consume(self, ctx: ConsumeContext) -> None:
        self.seen.append(ctx)


@pytest.mark.parametrize("orderly", [False, True])
async def test_push_consume_contexts_carry_the_namespace(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
    orderly: bool,
) -> None:
    a0 = cluster.queues()[0]
    hook = Contexts()
    async with make_push(make_consumer, orderly=orderly, hooks=[hook]):
        cluster.put(a0, 1)
        await cluster.wait_until(lambda: len(hook.seen) == 1)
    (ctx,) = hook.seen
    assert (ctx.namespace, ctx.orderly, ctx.success) == (NS, orderly, True)
    assert [m.topic for m in ctx.messages] == [TOPIC]
    assert hook.topics_before == [[TOPIC]]  # before the call too: the plain topic, as the listener's


async def test_lite_poll_contexts_carry_the_namespace(
    cluster: Cluster, autojump_clock: trio.testing.MockClock
) -> None:
    a0 = cluster.queues()[0]
    cluster.put(a0, 2)
    hook = Contexts()
    async with make_lite(cluster, hooks=[hook]) as consumer:
        consumer.assign([plain(a0)])
        got: list[MessageExt] = []
        with trio.fail_after(60):
            while len(got) < 2:
                got.extend(await consumer.poll(timeout=1))
    assert hook.seen
    assert {ctx.namespace for ctx in hook.seen} == {NS}
    assert sum(len(ctx.messages) for ctx in hook.seen) == 2
