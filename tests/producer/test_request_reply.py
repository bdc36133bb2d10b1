"""Request-reply: ``Producer.request``, replies pushed by the broker, ``create_reply`` and its send.

The fake broker stands in for the real one: the test pushes PUSH_REPLY_MESSAGE_TO_CLIENT to the
requester (``FakeBroker.send_to_client``), or a handler for SEND_REPLY_MESSAGE_V2 does, as the
broker's ``ReplyMessageProcessor``. The real broker, and the Java client on either side, are in
``integration/test_request_reply.py``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py import create_reply
from rocketmq_py.errors import (
    ClientError,
    InvalidMessage,
    RequestReplyTimeout,
    RequestTimeout,
    ReservedProperty,
    UnsupportedByProxy,
)
from rocketmq_py.producer._producer import Producer
from rocketmq_py.protocol import (
    CompressionType,
    Message,
    MessageExt,
    PropertyKey,
    RemotingCommand,
    ReplyMessageRequestHeader,
    RequestCode,
    ResponseCode,
    SendMessageRequestHeaderV2,
    SysFlag,
    compress_body,
    decode_properties,
    decode_pushed_reply,
    from_ext_fields,
    pushed_reply_command,
    reply_topic,
)
from rocketmq_py.testing._fake_broker import FakeBroker

TOPIC = "RequestTopic"
REPLY_TOPIC = "DefaultCluster_REPLY_TOPIC"


@pytest.fixture
async def broker() -> AsyncIterator[FakeBroker]:
    async with FakeBroker() as fb:
        fb.add_topic(TOPIC, queues=2)
        fb.add_topic(REPLY_TOPIC, queues=1)
        yield fb


def _requests(broker: FakeBroker) -> list[MessageExt]:
    """The request messages ``broker`` stored, with the CLUSTER property a real broker adds."""
    stored = [msg for queue_id in range(2) for msg in broker.messages(TOPIC, queue_id)]
    for msg in stored:
        msg.properties[PropertyKey.CLUSTER] = broker.cluster_name
    return stored


async def _push(broker: FakeBroker, reply: Message) -> RemotingCommand:
    """Push ``reply`` to the (last connected) client as a broker does; the client's answer."""
    command = pushed_reply_command(
        reply, born_host="10.0.0.9:50000", store_host=broker.address, store_timestamp=int(time.time() * 1000)
    )
    response = await broker.send_to_client(command)
    assert response is not None
    return response


async def _wait_requests(broker: FakeBroker, count: int) -> list[MessageExt]:
    """The stored requests, once there are ``count``."""
    await broker.wait_received(count, RequestCode.SEND_MESSAGE_V2)
    await trio.testing.wait_all_tasks_blocked()  # a frame is recorded before its handler stores it
    stored = _requests(broker)
    assert len(stored) == count
    return stored


# --- create_reply --------------------------------------------------------------------------------


def _request_message(**properties: str) -> MessageExt:
    base = {
        PropertyKey.CLUSTER: "DefaultCluster",
        PropertyKey.CORRELATION_ID: "c0ffee",
        PropertyKey.REPLY_TO_CLIENT: "10.0.0.1@4242",
        PropertyKey.MESSAGE_TTL: "3000",
        PropertyKey.UNIQ_KEY: "AC110001000018B4AAC20A9B1E5A0000",
    }
    base.update(properties)
    return MessageExt(TOPIC, b"ask", properties=base)


def test_create_reply_goes_to_the_clusters_reply_topic_with_the_request_properties() -> None:
    reply = create_reply(_request_message(), b"answer")
    assert reply.topic == "DefaultCluster_REPLY_TOPIC" == reply_topic("DefaultCluster")
    assert reply.body == b"answer"
    assert reply.properties == {
        "MSG_TYPE": "reply",
        "CORRELATION_ID": "c0ffee",
        "REPLY_TO_CLIENT": "10.0.0.1@4242",
        "TTL": "3000",
    }


def test_create_reply_needs_the_cluster_and_the_correlation_properties() -> None:
    with pytest.raises(InvalidMessage, match="CLUSTER"):
        create_reply(MessageExt(TOPIC, b"x", properties={PropertyKey.CORRELATION_ID: "c"}), b"y")
    with pytest.raises(InvalidMessage, match="not a request"):
        create_reply(MessageExt(TOPIC, b"x", properties={PropertyKey.CLUSTER: "DefaultCluster"}), b"y")


_text = st.text(st.characters(codec="utf-8", exclude_characters="\x01\x02", exclude_categories=["Cs"]))


@given(
    body=st.binary(max_size=200),
    properties=st.dictionaries(
        _text.filter(bool), _text.filter(bool), max_size=5
    ),  # empty values are not encoded
    compressed=st.booleans(),
)
def test_a_pushed_reply_decodes_to_what_the_broker_sent(
    body: bytes, properties: dict[str, str], compressed: bool
) -> None:
    command = pushed_reply_command(
        Message(REPLY_TOPIC, body, properties=properties),
        born_host="10.0.0.9:50000",
        store_host="10.0.0.2:10911",
        store_timestamp=1_764_000_000_000,
    )
    header = from_ext_fields(ReplyMessageRequestHeader, command.ext_fields)
    if compressed:  # the responder compressed the body: the header says so, the body is as sent
        fields = dict(command.ext_fields, sysFlag=str(SysFlag.COMPRESSED))
        header = from_ext_fields(ReplyMessageRequestHeader, fields)
        command_body = compress_body(body, CompressionType.ZLIB)
    else:
        command_body = command.body
    reply = decode_pushed_reply(header, command_body, arrive_time_ms=1_764_000_000_123)
    assert reply.topic == REPLY_TOPIC
    assert reply.body == body
    assert reply.sys_flag & SysFlag.COMPRESSED == 0
    assert reply.properties == {**properties, PropertyKey.REPLY_MESSAGE_ARRIVE_TIME: "1764000000123"}
    assert (reply.born_host, reply.store_host) == ("10.0.0.9:50000", "10.0.0.2:10911")
    assert reply.store_timestamp == 1_764_000_000_000


# --- Producer.request ----------------------------------------------------------------------------


async def test_request_returns_the_reply_the_broker_pushes(broker: FakeBroker) -> None:
    async with Producer("pg-requester", namesrv=broker.address) as producer:
        replies: list[MessageExt] = []

        async def ask() -> None:
            replies.append(await producer.request(Message(TOPIC, b"2+2?"), timeout=5.0))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask)
            [request] = await _wait_requests(broker, 1)
            assert request.body == b"2+2?"
            properties = request.properties
            assert properties[PropertyKey.REPLY_TO_CLIENT] == producer.client_id
            assert properties[PropertyKey.MESSAGE_TTL] == "5000"
            assert len(properties[PropertyKey.CORRELATION_ID]) == 36  # a UUID, as Java's
            assert len(producer._client_instance.replies) == 1
            response = await _push(broker, create_reply(request, b"4"))
            assert response.code == ResponseCode.SUCCESS
        [reply] = replies
        assert reply.topic == REPLY_TOPIC
        assert reply.body == b"4"
        assert reply.properties[PropertyKey.CORRELATION_ID] == properties[PropertyKey.CORRELATION_ID]
        assert PropertyKey.REPLY_MESSAGE_ARRIVE_TIME in reply.properties
        assert reply.store_host == broker.address
        assert len(producer._client_instance.replies) == 0


async def test_the_first_request_to_a_topic_heartbeats_before_it_is_sent(broker: FakeBroker) -> None:
    async with Producer("pg-requester", namesrv=broker.address) as producer:
        with pytest.raises(RequestReplyTimeout):
            await producer.request(Message(TOPIC, b"hello"), timeout=0.5)
    codes = [cmd.code for cmd in broker.requests()]
    send_at = codes.index(RequestCode.SEND_MESSAGE_V2)
    route_at = codes.index(RequestCode.GET_ROUTEINFO_BY_TOPIC)
    assert route_at < send_at
    assert RequestCode.HEART_BEAT in codes[route_at:send_at]


async def test_no_reply_is_a_typed_timeout_and_a_late_reply_is_dropped(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock
) -> None:
    async with Producer("pg-requester", namesrv=broker.address) as producer:
        with pytest.raises(RequestReplyTimeout) as caught:
            await producer.request(Message(TOPIC, b"anyone?"), timeout=2.0)
        error = caught.value
        assert isinstance(error, RequestTimeout)
        assert error.sent is True
        assert error.topic == TOPIC
        assert error.timeout == 2.0
        [request] = _requests(broker)
        assert error.correlation_id == request.properties[PropertyKey.CORRELATION_ID]
        assert len(producer._client_instance.replies) == 0
        # The responder answers after the requester gave up: acknowledged, dropped.
        response = await _push(broker, create_reply(request, b"too late"))
        assert response.code == ResponseCode.SUCCESS
        assert producer._client_instance.replies.dropped == 1


async def test_a_request_that_could_not_be_sent_in_time_says_so(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock
) -> None:
    broker.never_reply(RequestCode.SEND_MESSAGE_V2)
    async with Producer("pg-requester", namesrv=broker.address, attempt_timeout=None) as producer:
        with pytest.raises(RequestReplyTimeout) as caught:
            await producer.request(Message(TOPIC, b"hello"), timeout=1.5)
        assert caught.value.sent is False
        assert len(producer._client_instance.replies) == 0


async def test_a_cancelled_request_leaves_no_waiting_entry(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock
) -> None:
    async with Producer("pg-requester", namesrv=broker.address) as producer:
        with trio.move_on_after(1.0) as scope:
            await producer.request(Message(TOPIC, b"hello"), timeout=30.0)
        assert scope.cancelled_caught
        assert len(producer._client_instance.replies) == 0


async def test_concurrent_requests_get_their_own_replies(broker: FakeBroker) -> None:
    async with Producer("pg-requester", namesrv=broker.address) as producer:
        answers: dict[bytes, bytes] = {}

        async def ask(question: bytes) -> None:
            reply = await producer.request(Message(TOPIC, question), timeout=5.0)
            answers[question] = reply.body

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, b"first")
            nursery.start_soon(ask, b"second")
            requests = await _wait_requests(broker, 2)
            assert len({r.properties[PropertyKey.CORRELATION_ID] for r in requests}) == 2
            for request in reversed(sorted(requests, key=lambda r: r.body)):  # out of order on purpose
                await _push(broker, create_reply(request, b"re: " + request.body))
        assert answers == {b"first": b"re: first", b"second": b"re: second"}


async def test_a_push_that_does_not_decode_gets_system_error(broker: FakeBroker) -> None:
    async with Producer("pg-requester", namesrv=broker.address) as producer:
        await producer.send(Message(TOPIC, b"connect"))
        command = RemotingCommand.request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, {"topic": REPLY_TOPIC})
        response = await broker.send_to_client(command)
        assert response is not None
        assert response.code == ResponseCode.SYSTEM_ERROR


async def test_a_request_sets_its_own_properties_and_may_be_asked_again(
    broker: FakeBroker, autojump_clock: trio.testing.MockClock
) -> None:
    async with Producer("pg-requester", namesrv=broker.address) as producer:
        message = Message(TOPIC, b"x")
        for _ in range(2):
            with pytest.raises(RequestReplyTimeout):
                await producer.request(message, timeout=1.0)
        # A plain send may not carry them, nor a request claim to be a reply.
        with pytest.raises(ReservedProperty):
            await producer.send(message)
        with pytest.raises(ReservedProperty):
            await producer.request(Message(TOPIC, b"x", properties={PropertyKey.MESSAGE_TYPE: "reply"}))
        with pytest.raises(ClientError, match="positive"):
            await producer.request(Message(TOPIC, b"x"), timeout=0)
    ids = [r.properties[PropertyKey.CORRELATION_ID] for r in _requests(broker)]
    assert len(ids) == len(set(ids)) == 2


# --- the responder's send ------------------------------------------------------------------------


async def test_a_reply_is_sent_with_send_reply_message_v2(broker: FakeBroker) -> None:
    received: list[RemotingCommand] = []

    async def on_reply(request: RemotingCommand) -> RemotingCommand:
        received.append(request)
        # The real broker's answer once the push succeeded.
        return RemotingCommand.response(
            request, ResponseCode.SUCCESS, ext_fields={"msgId": "0", "queueId": "0", "queueOffset": "0"}
        )

    broker.on(RequestCode.SEND_REPLY_MESSAGE_V2, on_reply)
    async with Producer("pg-responder", namesrv=broker.address) as producer:
        await producer.send(create_reply(_request_message(), b"answer"))
        await producer.send(Message(TOPIC, b"not a reply"))
    [request] = received
    header = from_ext_fields(SendMessageRequestHeaderV2, request.ext_fields)
    assert header.b == REPLY_TOPIC
    assert header.a == "pg-responder"
    assert request.body == b"answer"
    properties = decode_properties(header.i or "")
    assert properties["MSG_TYPE"] == "reply"
    assert properties["CORRELATION_ID"] == "c0ffee"
    assert properties["REPLY_TO_CLIENT"] == "10.0.0.1@4242"
    assert len(broker.requests(RequestCode.SEND_MESSAGE_V2)) == 1  # the plain message


async def test_a_reply_refused_by_a_proxy_says_request_reply_needs_a_direct_route(broker: FakeBroker) -> None:
    """A 5.x Proxy registers no SEND_REPLY_MESSAGE_V2 (rocketmq-proxy ``RemotingProtocolServer``):
    the reply fails with a typed error saying why, once (no retry), instead of the bare "request
    type 325 not supported". Through a real Proxy: ``integration/test_proxy.py``."""
    broker.refuse(RequestCode.SEND_REPLY_MESSAGE_V2)
    async with Producer("pg-responder", namesrv=broker.address) as producer:
        with pytest.raises(
            UnsupportedByProxy,
            match=r"does not serve SEND_REPLY_MESSAGE_V2 .* as a 5\.x Proxy does not: it takes no replies",
        ):
            await producer.send(create_reply(_request_message(), b"answer"))
    assert len(broker.requests(RequestCode.SEND_REPLY_MESSAGE_V2)) == 1


async def test_a_requester_and_a_responder_through_the_fake_broker() -> None:
    # Broker a serves the requester; broker b takes the responder's reply and pushes it to the
    # requester's connection, as ReplyMessageProcessor does (the fake has no client table).
    async with FakeBroker(broker_name="broker-a") as a, FakeBroker(broker_name="broker-b") as b:
        a.add_topic(TOPIC, queues=2)
        b.add_topic(REPLY_TOPIC, queues=1)

        async def push_to_requester(request: RemotingCommand) -> RemotingCommand:
            header = from_ext_fields(SendMessageRequestHeaderV2, request.ext_fields)
            reply = Message(header.b, request.body, properties=decode_properties(header.i or ""))
            pushed = await _push(a, reply)
            code = ResponseCode.SUCCESS if pushed.code == ResponseCode.SUCCESS else ResponseCode.SYSTEM_ERROR
            return RemotingCommand.response(
                request, code, ext_fields={"msgId": "0", "queueId": "0", "queueOffset": "0"}
            )

        b.on(RequestCode.SEND_REPLY_MESSAGE_V2, push_to_requester)
        async with (
            Producer("pg-requester", namesrv=a.address) as requester,
            Producer("pg-responder", namesrv=b.address) as responder,
        ):
            result: list[MessageExt] = []

            async def ask() -> None:
                result.append(await requester.request(Message(TOPIC, b"ping"), timeout=5.0))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(ask)
                [request] = await _wait_requests(a, 1)
                sent = await responder.send(create_reply(request, b"pong"))
                assert sent.queue.topic == REPLY_TOPIC
        assert [r.body for r in result] == [b"pong"]
        assert len(b.requests(RequestCode.SEND_REPLY_MESSAGE_V2)) == 1
