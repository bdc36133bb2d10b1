"""Through a 5.x Proxy (cluster mode, remoting port) in front of a two-broker cluster: a new user's
everyday cases.

The clients are given the Proxy's remoting port as their NameServer (``client_options(proxy=True)``)
and never see the NameServer or a broker; topics are created against the NameServer, as an
operator would. What the Proxy serves works; what it does not, falls back or says so:

- a member with ``client_rebalance=False`` reads by client rebalance and pull (the Proxy serves
  no QUERY_ASSIGNMENT and never answers ACK_MESSAGE over remoting; the same on a FakeBroker:
  ``tests/consumer/test_push_pop.py``);
- a reply to a request is refused with a typed error that names the limitation (the Proxy serves
  no SEND_REPLY_MESSAGE_V2; ``tests/producer/test_request_reply.py``);
- the CLI's ``topic create`` and ``group inspect`` fail at once with ``UnsupportedByProxy``, which
  names the call (GET_BROKER_CLUSTER_INFO) and says to give the NameServer
  (``tests/cli/test_cli_fake_broker.py``, ``tests/cli/test_group_inspect_cli.py``); its other
  commands run through the Proxy in ``make proxy`` (``integration/test_cli.py``);
- a delay message needs a topic of message type DELAY (the Proxy checks it,
  ``enableTopicMessageTypeCheck``; a broker reached directly does not): elsewhere the Proxy's
  MessageIllegal says which type the topic expects.
"""

from __future__ import annotations

import functools
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import trio

from integration._shapes import new_topic, read_topic, shape_cluster, version_under_test
from rocketmq_py import (
    ConsumeStatus,
    LitePullConsumer,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    create_reply,
    select_by_hash,
)
from rocketmq_py.cli import EXIT_ERROR, main
from rocketmq_py.errors import (
    MessageIllegal,
    RequestCodeNotSupported,
    RequestReplyTimeout,
    UnsupportedByProxy,
)
from rocketmq_py.lowlevel import ConnectionPool, RemotingApi
from rocketmq_py.testing import LocalCluster

pytestmark = pytest.mark.skipif(
    version_under_test().startswith("4."), reason="a Proxy came with RocketMQ 5.0 (the 4.x run has none)"
)

COUNT = 50
#: Seconds to wait for what a loaded machine may take (a rebalance, a first pull through the Proxy).
WAIT = 60.0


@pytest.fixture(scope="module")
def proxied() -> Iterator[LocalCluster]:
    with shape_cluster(2, proxy=True) as cluster:
        yield cluster


def group(prefix: str) -> str:
    return f"px-{prefix}-{uuid.uuid4().hex[:8]}"


def push_consumer(
    cluster: LocalCluster, prefix: str, topic: str, listener: Any, **options: Any
) -> PushConsumer:
    """A push consumer of ``topic`` through the Proxy, of a fresh group, from the first offset."""
    consumer = PushConsumer(
        group(prefix),
        listener=listener,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        **options,
        **cluster.client_options(proxy=True),
    )
    consumer.subscribe(topic)
    return consumer


async def wait_for(predicate: Callable[[], object], what: str) -> None:
    with trio.move_on_after(WAIT):
        while not predicate():  # noqa: ASYNC110 - the state of a listener
            await trio.sleep(0.1)
    assert predicate(), f"{what} within {WAIT:g} s"


async def test_the_proxy_is_the_route_of_every_broker(proxied: LocalCluster) -> None:
    topic = new_topic(proxied, 4, "px")
    assert proxied.proxy_addr is not None
    async with ConnectionPool() as pool:
        route = await RemotingApi(pool, timeout=10).get_route_info(proxied.proxy_addr, topic)
    assert sorted(b.broker_name for b in route.broker_datas) == ["broker-a", "broker-b"]
    # The Proxy names itself as the master of both brokers, on the address the kit makes it
    # advertise (localServeAddr: loopback, not the machine's first network address).
    addresses = {address for b in route.broker_datas for address in b.broker_addrs.values()}
    assert addresses == {proxied.proxy_addr}


async def test_sends_and_a_push_consumer(proxied: LocalCluster) -> None:
    topic = new_topic(proxied, 4, "px")
    got: list[bytes] = []

    async def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        got.extend(m.body for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    options = proxied.client_options(proxy=True)
    consumer = push_consumer(proxied, "push", topic, listener)
    sent: set[bytes] = set()
    async with Producer(group("producer"), **options) as producer, consumer:
        for i in range(COUNT // 2):
            await producer.send(Message(topic, f"single-{i}".encode()))
            sent.add(f"single-{i}".encode())
        batch = [Message(topic, f"batch-{i}".encode()) for i in range(COUNT // 2)]
        await producer.send_batch(batch)
        sent.update(m.body for m in batch)
        await wait_for(lambda: set(got) >= sent, f"{COUNT} messages consumed")
    assert set(got) == sent


async def test_an_orderly_consumer_keeps_each_keys_order(proxied: LocalCluster) -> None:
    topic = new_topic(proxied, 4, "px")
    keys = [f"key-{k}" for k in range(5)]
    steps: dict[str, list[int]] = defaultdict(list)

    async def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        for m in msgs:
            key, step = m.body.decode().split(":")
            steps[key].append(int(step))
        return ConsumeStatus.CONSUME_SUCCESS

    options = proxied.client_options(proxy=True)
    consumer = push_consumer(proxied, "orderly", topic, listener, orderly=True)
    async with Producer(group("producer"), **options) as producer, consumer:
        for step in range(10):
            for key in keys:
                await producer.send(
                    Message(topic, f"{key}:{step}".encode()), selector=select_by_hash, arg=key
                )
        await wait_for(lambda: sum(map(len, steps.values())) >= 10 * len(keys), "every step consumed")
        assert all(s.locked for s in consumer.statistics())
    assert dict(steps) == {key: list(range(10)) for key in keys}


async def test_a_lite_pull_consumer_polls_and_commits(proxied: LocalCluster) -> None:
    topic = new_topic(proxied, 4, "px")
    options = proxied.client_options(proxy=True)
    async with Producer(group("producer"), **options) as producer:
        await producer.send_batch([Message(topic, f"m-{i}".encode()) for i in range(COUNT)])
    consumer = LitePullConsumer(group("lite"), consume_from_where="CONSUME_FROM_FIRST_OFFSET", **options)
    consumer.subscribe(topic)
    got: set[bytes] = set()
    async with consumer:
        with trio.move_on_after(WAIT):
            while len(got) < COUNT:
                got.update(m.body for m in await consumer.poll(timeout=1))
        await consumer.commit()
        queues = consumer.assignment()
    assert len(got) == COUNT
    # What the brokers stored, asked directly (not through the Proxy).
    stored = 0
    async with ConnectionPool() as pool:
        api = RemotingApi(pool, timeout=10)
        for mq in queues:
            address = proxied.broker_address(mq.broker_name)
            offset = await api.query_consumer_offset(
                address, consumer.group, mq.topic, mq.queue_id, mq.broker_name
            )
            stored += max(offset, 0)
    assert stored == COUNT


async def test_a_member_left_to_the_broker_reads_by_pull(proxied: LocalCluster) -> None:
    """``client_rebalance=False``: the Proxy answers QUERY_ASSIGNMENT "not supported", and POP could
    not be acknowledged through it; the member pulls every message once instead of none."""
    topic = new_topic(proxied, 4, "px")
    got: list[bytes] = []

    async def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        got.extend(m.body for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    options = proxied.client_options(proxy=True)
    consumer = push_consumer(proxied, "pop", topic, listener, client_rebalance=False)
    async with Producer(group("producer"), **options) as producer, consumer:
        for i in range(COUNT):
            await producer.send(Message(topic, f"m-{i}".encode()))
        await wait_for(lambda: len(set(got)) >= COUNT, f"{COUNT} messages consumed")
        assert consumer._pop is not None
        assert consumer._pop.queues == {}  # nothing popped
        assert {mq.topic for mq in consumer.assignment()} >= {topic}
    assert len(got) == COUNT


async def test_a_reply_is_refused_with_the_reason(proxied: LocalCluster) -> None:
    """The Proxy serves no SEND_REPLY_MESSAGE_V2: the responder's reply fails at once with a typed
    error that names the limitation, and the requester times out."""
    topic = new_topic(proxied, 2, "px")
    refused: list[BaseException] = []

    options = proxied.client_options(proxy=True)
    async with Producer(group("responder"), **options) as responder:

        async def listener(msgs: list[MessageExt]) -> ConsumeStatus:
            for request in msgs:
                try:
                    await responder.send(create_reply(request, b"re: " + request.body))
                except RequestCodeNotSupported as exc:
                    refused.append(exc)
            return ConsumeStatus.CONSUME_SUCCESS

        consumer = push_consumer(proxied, "rr", topic, listener)
        async with consumer, Producer(group("requester"), **options) as requester:
            with pytest.raises(RequestReplyTimeout):
                await requester.request(Message(topic, b"ping"), timeout=10)
            await wait_for(lambda: refused, "the reply refused")
    assert isinstance(refused[0], UnsupportedByProxy)
    assert "does not serve SEND_REPLY_MESSAGE_V2" in str(refused[0])
    assert "as a 5.x Proxy does not: it takes no replies" in str(refused[0])


async def test_a_proxy_turns_tracing_off_by_default(proxied: LocalCluster) -> None:
    """A 5.x Proxy answers every send with its own ``TRACE_ON`` (``ProxyConfig.traceOn``, false unless
    configured), and a traced producer then writes no trace record, as Java's trace hook does."""
    options = proxied.client_options(proxy=True)
    topic = new_topic(proxied, 4, "px")
    async with Producer(group("traced"), enable_trace=True, **options) as producer:
        result = await producer.send(Message(topic, b"not traced"))
    assert result.trace_on is False


async def test_a_delay_message_needs_a_delay_topic(proxied: LocalCluster) -> None:
    options = proxied.client_options(proxy=True)
    plain = new_topic(proxied, 4, "px")
    delayed = Message(plain, b"later")
    delayed.delay_level = 1
    async with Producer(group("producer"), **options) as producer:
        with pytest.raises(MessageIllegal, match="expected type is NORMAL, but actual type is DELAY"):
            await producer.send(delayed)
        delay_topic = f"px-delay-{uuid.uuid4().hex[:8]}"
        # As mqadmin updateTopic -a +message.type=DELAY, without starting a JVM: in one CI run the
        # Proxy answered nothing for 3 s right after such a start, and the send failed.
        await trio.to_thread.run_sync(
            functools.partial(proxied.create_topic, delay_topic, 4, message_type="DELAY")
        )
        late = Message(delay_topic, b"later")
        late.delay_level = 1
        await producer.send(late)
    assert [m.body for m in await read_topic(proxied, delay_topic, 1)] == [b"later"]


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["topic", "create", "px-cli", "--queues", "2"], id="topic-create"),
        pytest.param(["group", "inspect", "px-cli-group", "TOPIC"], id="group-inspect"),
    ],
)
async def test_cli_admin_commands_name_what_to_use_instead(
    proxied: LocalCluster, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The Proxy refuses GET_BROKER_CLUSTER_INFO, the first call of both commands: one line says so
    and names the NameServer, and the exit code is 1."""
    assert proxied.proxy_addr is not None
    topic = new_topic(proxied, 2, "px")
    argv = ["-n", proxied.proxy_addr, *(topic if word == "TOPIC" else word for word in command)]
    assert await trio.to_thread.run_sync(main, argv) == EXIT_ERROR
    err = capsys.readouterr().err
    assert err == (
        "rocketmq-py: error: broker answered code 3 (UnsupportedByProxy): "
        f"{proxied.proxy_addr} does not serve GET_BROKER_CLUSTER_INFO (request code 106), as a 5.x "
        "Proxy does not: `topic create` and `group inspect` list the brokers with it; give the "
        "NameServer (-n HOST:PORT, port 9876 by default) instead of the Proxy\n"
    )
