"""FakeBroker's default handlers: route, send, pull (long polling, tags), offsets; and its edges."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio

from rocketmq_py._transport import Connection, open_connection
from rocketmq_py.errors import StateError
from rocketmq_py.protocol._admin_headers import GetRouteInfoRequestHeader
from rocketmq_py.protocol._bodies import BrokerData, QueueData, TopicRouteData
from rocketmq_py.protocol._codes import RequestCode, ResponseCode
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.protocol._ext_fields import from_ext_fields, to_ext_fields
from rocketmq_py.protocol._headers import (
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
    UpdateConsumerOffsetRequestHeader,
    send_header_to_v2,
)
from rocketmq_py.protocol._ids import decode_offset_msg_id
from rocketmq_py.protocol._json_body import decode_body
from rocketmq_py.protocol._message import Message
from rocketmq_py.protocol._properties import encode_properties
from rocketmq_py.protocol._stored import decode_messages
from rocketmq_py.protocol._versions import V4_9_7
from rocketmq_py.testing._fake_broker import FakeBroker

TOPIC = "TopicTest"


@pytest.fixture
async def broker() -> AsyncIterator[FakeBroker]:
    async with FakeBroker() as fb:
        fb.add_topic(TOPIC, queues=2)
        yield fb


@pytest.fixture
async def conn(broker: FakeBroker) -> AsyncIterator[Connection]:
    async with open_connection(broker.address) as connection:
        yield connection


def _send_header(
    queue_id: int = 0, *, topic: str = TOPIC, tags: str | None = None
) -> SendMessageRequestHeader:
    return SendMessageRequestHeader(
        producer_group="pg",
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=1_700_000_000_000,
        flag=7,
        properties=encode_properties({"TAGS": tags} if tags else {"KEYS": "k1"}),
    )


async def _send(
    conn: Connection, body: bytes, queue_id: int = 0, *, tags: str | None = None
) -> RemotingCommand:
    header = to_ext_fields(send_header_to_v2(_send_header(queue_id, tags=tags)))
    return await conn.request(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header, body), timeout=3)


def _pull_header(
    offset: int, *, subscription: str = "*", sys_flag: int = 0, suspend_ms: int = 0
) -> dict[str, str]:
    return to_ext_fields(
        PullMessageRequestHeader(
            consumer_group="cg",
            topic=TOPIC,
            queue_id=0,
            queue_offset=offset,
            max_msg_nums=32,
            sys_flag=sys_flag,
            commit_offset=0,
            suspend_timeout_millis=suspend_ms,
            sub_version=0,
            subscription=subscription,
            expression_type="TAG",
        )
    )


async def _pull(
    conn: Connection, offset: int, *, subscription: str = "*", sys_flag: int = 0, suspend_ms: int = 0
) -> RemotingCommand:
    ext = _pull_header(offset, subscription=subscription, sys_flag=sys_flag, suspend_ms=suspend_ms)
    return await conn.request(RemotingCommand.request(RequestCode.PULL_MESSAGE, ext), timeout=60)


async def test_route_of_a_known_topic(broker: FakeBroker, conn: Connection) -> None:
    ext = to_ext_fields(GetRouteInfoRequestHeader(topic=TOPIC, accept_standard_json_only=True))
    response = await conn.request(RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, ext), timeout=3)
    assert response.code == ResponseCode.SUCCESS
    route = decode_body(TopicRouteData, response.body)
    (queues,) = route.queue_datas
    assert (queues.broker_name, queues.read_queue_nums, queues.write_queue_nums, queues.perm) == (
        "broker-a",
        2,
        2,
        6,
    )
    (brokers,) = route.broker_datas
    assert dict(brokers.broker_addrs) == {0: broker.address}
    assert brokers.cluster == "DefaultCluster"


async def test_route_of_an_unknown_topic_and_an_explicit_route(broker: FakeBroker, conn: Connection) -> None:
    ext = to_ext_fields(GetRouteInfoRequestHeader(topic="Nope"))
    response = await conn.request(RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, ext), timeout=3)
    assert response.code == ResponseCode.TOPIC_NOT_EXIST
    assert response.remark is not None
    assert "Nope" in response.remark

    route = TopicRouteData(
        queue_datas=(QueueData(broker_name="b", read_queue_nums=1, write_queue_nums=1, perm=6),),
        broker_datas=(BrokerData(cluster="c", broker_name="b", broker_addrs={0: "10.0.0.1:10911"}),),
    )
    broker.set_route("Nope", route)
    response = await conn.request(RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, ext), timeout=3)
    assert decode_body(TopicRouteData, response.body) == route


async def test_send_then_pull(broker: FakeBroker, conn: Connection) -> None:
    first = await _send(conn, b"one")
    second = await _send(conn, b"two")
    assert first.code == second.code == ResponseCode.SUCCESS
    headers = [from_ext_fields(SendMessageResponseHeader, r.ext_fields) for r in (first, second)]
    assert [(h.queue_id, h.queue_offset) for h in headers] == [(0, 0), (0, 1)]
    assert headers[0].extra == {"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}
    host, port, commit_log_offset = decode_offset_msg_id(headers[1].msg_id)
    assert f"{host}:{port}" == broker.address
    assert commit_log_offset > 0  # after the first record

    stored = broker.messages(TOPIC, 0)
    assert [m.body for m in stored] == [b"one", b"two"]
    assert stored[0].flag == 7
    assert stored[0].keys == ("k1",)
    assert stored[1].offset_msg_id == headers[1].msg_id

    found = await _pull(conn, 0)
    assert found.code == ResponseCode.SUCCESS
    bounds = from_ext_fields(PullMessageResponseHeader, found.ext_fields)
    assert (bounds.next_begin_offset, bounds.min_offset, bounds.max_offset) == (2, 0, 2)
    pulled = decode_messages(found.body)
    assert [(m.body, m.queue_offset, m.born_timestamp) for m in pulled] == [
        (b"one", 0, 1_700_000_000_000),
        (b"two", 1, 1_700_000_000_000),
    ]

    not_found = await _pull(conn, 2)
    assert not_found.code == ResponseCode.PULL_NOT_FOUND
    assert from_ext_fields(PullMessageResponseHeader, not_found.ext_fields).next_begin_offset == 2
    moved = await _pull(conn, 9)
    assert moved.code == ResponseCode.PULL_OFFSET_MOVED
    assert from_ext_fields(PullMessageResponseHeader, moved.ext_fields).next_begin_offset == 2


async def test_send_with_the_long_header_and_any_queue(broker: FakeBroker, conn: Connection) -> None:
    for _ in range(3):
        ext = to_ext_fields(_send_header(-1))
        response = await conn.request(RemotingCommand.request(RequestCode.SEND_MESSAGE, ext, b"x"), timeout=3)
        assert response.code == ResponseCode.SUCCESS
    assert [len(broker.messages(TOPIC, q)) for q in (0, 1)] == [2, 1]


async def test_send_errors(conn: Connection) -> None:
    unknown = to_ext_fields(_send_header(topic="Unknown"))
    response = await conn.request(RemotingCommand.request(RequestCode.SEND_MESSAGE, unknown, b"x"), timeout=3)
    assert response.code == ResponseCode.TOPIC_NOT_EXIST
    bad_queue = to_ext_fields(_send_header(5))
    response = await conn.request(
        RemotingCommand.request(RequestCode.SEND_MESSAGE, bad_queue, b"x"), timeout=3
    )
    assert response.code == ResponseCode.SYSTEM_ERROR
    missing = RemotingCommand.request(RequestCode.SEND_MESSAGE, {"topic": TOPIC}, b"x")
    response = await conn.request(missing, timeout=3)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark is not None
    assert "producerGroup" in response.remark


async def test_auto_create_topics() -> None:
    async with FakeBroker(auto_create_topics=True) as fb, open_connection(fb.address) as conn:
        ext = to_ext_fields(_send_header(topic="Fresh"))
        response = await conn.request(RemotingCommand.request(RequestCode.SEND_MESSAGE, ext, b"x"), timeout=3)
        assert response.code == ResponseCode.SUCCESS
        route = await conn.request(
            RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Fresh"}), timeout=3
        )
    assert decode_body(TopicRouteData, route.body).queue_datas[0].write_queue_nums == 4


async def test_pull_filters_by_tag(broker: FakeBroker, conn: Connection) -> None:
    for tag in ("A", "B", "A"):
        await _send(conn, tag.encode(), tags=tag)
    only_a = await _pull(conn, 0, subscription="A")
    assert [m.body for m in decode_messages(only_a.body)] == [b"A", b"A"]
    both = await _pull(conn, 0, subscription="A || B")
    assert len(decode_messages(both.body)) == 3
    none = await _pull(conn, 0, subscription="C")
    assert none.code == ResponseCode.PULL_RETRY_IMMEDIATELY
    assert from_ext_fields(PullMessageResponseHeader, none.ext_fields).next_begin_offset == 3


async def test_long_polling_pull(broker: FakeBroker, conn: Connection, autojump_clock: object) -> None:
    start = trio.current_time()
    timed_out = await _pull(conn, 0, sys_flag=0x2, suspend_ms=15_000)
    assert timed_out.code == ResponseCode.PULL_NOT_FOUND
    assert trio.current_time() - start == pytest.approx(15)

    async with trio.open_nursery() as nursery:

        async def send_later() -> None:
            await trio.sleep(3)
            await _send(conn, b"late")

        nursery.start_soon(send_later)
        start = trio.current_time()
        found = await _pull(conn, 0, sys_flag=0x2, suspend_ms=15_000)
    assert found.code == ResponseCode.SUCCESS
    assert trio.current_time() - start == pytest.approx(3)
    assert [m.body for m in decode_messages(found.body)] == [b"late"]


async def test_put_messages_and_offsets(broker: FakeBroker, conn: Connection) -> None:
    def query() -> RemotingCommand:
        ext = to_ext_fields(QueryConsumerOffsetRequestHeader(consumer_group="cg", topic=TOPIC, queue_id=0))
        return RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, ext)

    # No offset for the group (ConsumerManageProcessor.queryConsumerOffset, 5.x): an empty queue is
    # not found; one whose first message is in memory (a young broker) answers 0; once it left
    # memory, not found again.
    assert (await conn.request(query(), timeout=3)).code == ResponseCode.QUERY_NOT_FOUND
    stored = broker.put_messages(0, [Message(TOPIC, b"a"), Message(TOPIC, b"b", tags="t")])
    assert [m.queue_offset for m in stored] == [0, 1]
    fresh = await conn.request(query(), timeout=3)
    assert from_ext_fields(QueryConsumerOffsetResponseHeader, fresh.ext_fields).offset == 0
    broker.first_in_memory = False
    assert (await conn.request(query(), timeout=3)).code == ResponseCode.QUERY_NOT_FOUND

    update = to_ext_fields(
        UpdateConsumerOffsetRequestHeader(consumer_group="cg", topic=TOPIC, queue_id=0, commit_offset=1)
    )
    await conn.oneway(RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, update))
    committed = await conn.request(query(), timeout=3)
    assert from_ext_fields(QueryConsumerOffsetResponseHeader, committed.ext_fields).offset == 1
    assert broker.consumer_offsets == {("cg", TOPIC, 0): 1}

    ext = to_ext_fields(GetMaxOffsetRequestHeader(topic=TOPIC, queue_id=0))
    max_offset = await conn.request(RemotingCommand.request(RequestCode.GET_MAX_OFFSET, ext), timeout=3)
    assert from_ext_fields(GetMaxOffsetResponseHeader, max_offset.ext_fields).offset == 2
    heartbeat = await conn.request(RemotingCommand.request(RequestCode.HEART_BEAT), timeout=3)
    assert heartbeat.code == ResponseCode.SUCCESS


async def test_a_4x_fake_answers_offset_queries_as_4x_brokers() -> None:
    """4.x (``ConsumerManageProcessor.queryConsumerOffset`` in 4.9.7): 0 unless the queue's first
    message is on disk only (``!checkInDiskByConsumeOffset``, true for an empty queue)."""
    async with FakeBroker(version=V4_9_7) as fb:
        fb.add_topic(TOPIC, queues=1)
        async with open_connection(fb.address) as conn4:
            ext = to_ext_fields(
                QueryConsumerOffsetRequestHeader(consumer_group="cg", topic=TOPIC, queue_id=0)
            )

            async def offset() -> int | None:
                reply = await conn4.request(
                    RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, ext), timeout=3
                )
                if reply.code == ResponseCode.QUERY_NOT_FOUND:
                    return None
                return from_ext_fields(QueryConsumerOffsetResponseHeader, reply.ext_fields).offset

            assert await offset() == 0  # empty
            fb.put_messages(0, [Message(TOPIC, b"a")])
            assert await offset() == 0  # in memory
            fb.first_in_memory = False
            assert await offset() is None


async def test_broker_without_defaults_answers_not_supported() -> None:
    async with FakeBroker(defaults=False) as fb, open_connection(fb.address) as conn:
        response = await conn.request(RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC), timeout=3)
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


async def test_fake_broker_state_errors() -> None:
    fb = FakeBroker()
    with pytest.raises(StateError):
        _ = fb.address
    async with fb:
        with pytest.raises(StateError, match="no client"):
            await fb.send_to_client(RemotingCommand.request(40, oneway=True), expect_reply=False)
        assert fb.address.startswith("127.0.0.1:")
    with pytest.raises(StateError):
        async with fb:
            pass
