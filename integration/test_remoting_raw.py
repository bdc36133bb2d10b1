"""Raw remoting round trips against the real broker: our codec and transport, no client services.

Each test opens a ConnectionPool, builds typed headers by hand, and checks what the real
NameServer and broker answer: a route, a SEND_MESSAGE_V2 (JSON and binary headers) that a
PULL_MESSAGE then reads back, and a request the broker rejects, which must surface as a typed
BrokerError with the broker's code and remark.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest
import trio

from rocketmq_py._transport import ConnectionPool
from rocketmq_py.errors import BrokerError, broker_error_for
from rocketmq_py.protocol import (
    GetRouteInfoRequestHeader,
    HeartbeatData,
    Message,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
    SerializeType,
    TopicRouteData,
    UniqKeyGenerator,
    decode_body,
    decode_messages,
    decode_offset_msg_id,
    encode_body,
    encode_properties,
    from_ext_fields,
    send_header_to_v2,
    to_ext_fields,
)
from rocketmq_py.protocol._versions import release_name
from rocketmq_py.testing import Cluster

TIMEOUT = 10.0


def _checked(reply: RemotingCommand) -> RemotingCommand:
    if reply.code != ResponseCode.SUCCESS:
        raise broker_error_for(reply.code, reply.remark)
    return reply


async def _route(pool: ConnectionPool, namesrv: str, topic: str) -> TopicRouteData:
    header = GetRouteInfoRequestHeader(topic=topic, accept_standard_json_only=True)
    cmd = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, to_ext_fields(header))
    reply = _checked(await pool.request(namesrv, cmd, timeout=TIMEOUT))
    return decode_body(TopicRouteData, reply.body)


async def test_route_query(cluster: Cluster, create_topic: Callable[..., str]) -> None:
    topic = create_topic(8)
    async with ConnectionPool() as pool:
        route = await _route(pool, cluster.namesrv_addr, topic)
    assert sorted((q.broker_name, q.read_queue_nums, q.write_queue_nums) for q in route.queue_datas) == [
        ("broker-a", 8, 8),
        ("broker-b", 8, 8),
    ]
    masters = {b.broker_name: b.broker_addrs[0] for b in route.broker_datas}
    assert masters == {b.name: b.address for b in cluster.brokers}


async def test_every_reply_carries_the_servers_release(
    cluster: Cluster, create_topic: Callable[..., str], broker_version: int
) -> None:
    """The ``version`` header of NameServer and broker replies is their ``MQVersion`` ordinal (the
    client learns a broker's release from it: timer messages, timestamp search)."""
    topic = create_topic(1)
    async with ConnectionPool() as pool:
        route = RemotingCommand.request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC,
            to_ext_fields(GetRouteInfoRequestHeader(topic=topic, accept_standard_json_only=True)),
        )
        replies = [await pool.request(cluster.namesrv_addr, route, timeout=TIMEOUT)]
        for broker in cluster.brokers:  # a success and an error answer from each broker
            replies.append(await pool.request(broker.address, RemotingCommand.request(9999), timeout=TIMEOUT))
            heartbeat = RemotingCommand.request(
                RequestCode.HEART_BEAT, body=encode_body(HeartbeatData(client_id="raw-version-check"))
            )
            replies.append(await pool.request(broker.address, heartbeat, timeout=TIMEOUT))
    assert [r.code for r in replies] == [ResponseCode.SUCCESS] + [
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        ResponseCode.SUCCESS,
    ] * len(cluster.brokers)
    assert {r.version for r in replies} == {broker_version}
    assert release_name(broker_version) == cluster.version


@pytest.mark.parametrize("serialize_type", [SerializeType.JSON, SerializeType.ROCKETMQ])
async def test_send_v2_then_pull_reads_it_back(
    cluster: Cluster, create_topic: Callable[..., str], serialize_type: SerializeType
) -> None:
    topic = create_topic(2)
    uniq = UniqKeyGenerator(ip=b"\x7f\x00\x00\x01")
    async with ConnectionPool(serialize_type=serialize_type) as pool:
        route = await _route(pool, cluster.namesrv_addr, topic)
        broker = sorted(route.broker_datas, key=lambda b: b.broker_name)[0]
        address = broker.broker_addrs[0]
        sent = []
        for i in range(3):
            msg = Message(topic, f"body-{i}-ü".encode(), tags="TagA", keys=[f"k{i}", "shared"])
            msg.properties["user-prop"] = f"välue {i}"
            msg.properties["UNIQ_KEY"] = uniq.next()
            header = SendMessageRequestHeader(
                producer_group="raw-producer",
                topic=topic,
                default_topic="TBW102",
                default_topic_queue_nums=4,
                queue_id=1,
                sys_flag=0,
                born_timestamp=int(time.time() * 1000),
                flag=0,
                properties=encode_properties(msg.properties),
                broker_name=broker.broker_name,
            )
            cmd = RemotingCommand.request(
                RequestCode.SEND_MESSAGE_V2, to_ext_fields(send_header_to_v2(header)), msg.body
            )
            reply = _checked(await pool.request(address, cmd, timeout=TIMEOUT))
            result = from_ext_fields(SendMessageResponseHeader, reply.ext_fields)
            assert result.queue_id == 1
            host, _port, commit_log_offset = decode_offset_msg_id(result.msg_id)
            assert host == "127.0.0.1"
            sent.append((msg, result.queue_offset, commit_log_offset))
        assert [s[1] for s in sent] == [0, 1, 2]

        pull = PullMessageRequestHeader(
            consumer_group=f"raw-consumer-{uuid.uuid4().hex[:6]}",
            topic=topic,
            queue_id=1,
            queue_offset=0,
            max_msg_nums=32,
            sys_flag=0x4,  # SUBSCRIPTION: the broker takes the subscription from this request (no heartbeat)
            commit_offset=0,
            suspend_timeout_millis=0,
            sub_version=0,
            subscription="*",
            expression_type="TAG",
            broker_name=broker.broker_name,
        )
        # The broker acknowledges a send before its dispatcher has put it in the consume queue
        # (DefaultMessageStore's ReputMessageService runs behind the commit log), so an immediate pull
        # may find nothing yet (NO_MESSAGE_IN_QUEUE) or only the first sends (max_offset 2 of 3, seen
        # on a loaded machine): ask again until all three are in the consume queue.
        deadline = trio.current_time() + TIMEOUT
        while True:
            reply = await pool.request(
                address,
                RemotingCommand.request(RequestCode.PULL_MESSAGE, to_ext_fields(pull)),
                timeout=TIMEOUT,
            )
            dispatched = reply.code == ResponseCode.SUCCESS and (
                from_ext_fields(PullMessageResponseHeader, reply.ext_fields).max_offset >= len(sent)
            )
            if dispatched or reply.code not in (ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND):
                break
            if trio.current_time() > deadline:
                break
            await trio.sleep(0.1)
    assert reply.code == ResponseCode.SUCCESS, reply.remark  # FOUND
    pulled_header = from_ext_fields(PullMessageResponseHeader, reply.ext_fields)
    assert pulled_header.next_begin_offset == 3
    assert pulled_header.max_offset == 3
    pulled = decode_messages(reply.body)
    assert len(pulled) == 3
    for got, (msg, queue_offset, commit_log_offset) in zip(pulled, sent, strict=True):
        assert got.topic == topic
        assert got.body == msg.body
        assert got.queue_id == 1
        assert got.queue_offset == queue_offset
        assert got.commit_log_offset == commit_log_offset
        assert got.tags == "TagA"
        assert got.properties["user-prop"] == msg.properties["user-prop"]
        assert got.properties["KEYS"] == msg.properties["KEYS"]
        assert got.msg_id == msg.properties["UNIQ_KEY"]
        assert got.store_host == broker.broker_addrs[0]


async def test_rejected_request_is_a_typed_broker_error(cluster: Cluster) -> None:
    # The broker refuses a topic name with illegal characters (our producer validates before sending;
    # this raw request skips that on purpose).
    header = SendMessageRequestHeader(
        producer_group="raw-producer",
        topic="no such topic!",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=0,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
    )
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, to_ext_fields(send_header_to_v2(header)), b"x")
    async with ConnectionPool() as pool:
        reply = await pool.request(cluster.broker_address("broker-a"), cmd, timeout=TIMEOUT)
        unknown = await pool.request(
            cluster.broker_address("broker-a"), RemotingCommand.request(9999), timeout=TIMEOUT
        )
    assert reply.code != ResponseCode.SUCCESS
    error = broker_error_for(reply.code, reply.remark)
    assert isinstance(error, BrokerError)
    assert error.code == reply.code
    assert "illegal characters" in error.remark
    assert str(error.code) in str(error)
    assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    not_supported = broker_error_for(unknown.code, unknown.remark)
    assert type(not_supported).__name__ == "RequestCodeNotSupported"
    assert "9999" in not_supported.remark
