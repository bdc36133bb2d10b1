"""``rocketmq-py group inspect`` against a FakeBroker playing NameServer and broker.

The fake answers GET_CONSUMER_RUNNING_INFO itself from canned running infos (a real broker forwards
it to the consumer; ``integration/test_cli_group.py`` covers that path).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
import trio

from rocketmq_py.cli import EXIT_ERROR, EXIT_OK, main
from rocketmq_py.cli._inspect import STRATEGY_NAME_PROPERTY
from rocketmq_py.protocol import (
    ConsumerListBody,
    ConsumerRunningInfo,
    GetConsumerRunningInfoRequestHeader,
    MessageQueue,
    ProcessQueueInfo,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    build_subscription_data,
    encode_body,
    from_ext_fields,
)
from rocketmq_py.testing import FakeBroker

CLUSTER_INFO = (
    '{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"ADDRESS"},"brokerName":"broker-a",'
    '"cluster":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
)
A, B = "10.0.0.1@a", "10.0.0.1@b"


def running(strategy: str, queue_ids: list[int]) -> ConsumerRunningInfo:
    return ConsumerRunningInfo(
        {STRATEGY_NAME_PROPERTY: strategy, "messageModel": "CLUSTERING"},
        (build_subscription_data("T", "*", sub_version=1),),
        {MessageQueue("T", "broker-a", q): ProcessQueueInfo(commit_offset=q) for q in queue_ids},
        {},
    )


@dataclass
class Fake:
    broker: FakeBroker
    #: client id -> what it answers (None: the broker says it is not online)
    infos: dict[str, ConsumerRunningInfo | None]

    @property
    def address(self) -> str:
        return self.broker.address


@pytest.fixture
async def fake() -> AsyncIterator[Fake]:
    async with FakeBroker(broker_name="broker-a") as fb:
        fb.add_topic("T", queues=4)
        infos: dict[str, ConsumerRunningInfo | None] = {
            A: running("AVG", [0, 1]),
            B: running("AVG", [2, 3]),
        }

        async def cluster_info(request: RemotingCommand) -> RemotingCommand:
            body = CLUSTER_INFO.replace("ADDRESS", fb.address)
            return RemotingCommand.response(request, ResponseCode.SUCCESS, body=body.encode())

        async def consumer_list(request: RemotingCommand) -> RemotingCommand:
            body = encode_body(ConsumerListBody(consumer_id_list=tuple(infos)))
            return RemotingCommand.response(request, ResponseCode.SUCCESS, body=body)

        async def running_info(request: RemotingCommand) -> RemotingCommand:
            header = from_ext_fields(GetConsumerRunningInfoRequestHeader, request.ext_fields)
            found = infos.get(header.client_id)
            if found is None:
                return RemotingCommand.response(
                    request, ResponseCode.SYSTEM_ERROR, remark=f"The Consumer <{header.client_id}> not online"
                )
            return RemotingCommand.response(request, ResponseCode.SUCCESS, body=found.encode())

        fb.on(RequestCode.GET_BROKER_CLUSTER_INFO, cluster_info)
        fb.on(RequestCode.GET_CONSUMER_LIST_BY_GROUP, consumer_list)
        fb.on(RequestCode.GET_CONSUMER_RUNNING_INFO, running_info)
        yield Fake(fb, infos)


async def run(*argv: str) -> int:
    return await trio.to_thread.run_sync(main, list(argv))


async def test_healthy_group_with_topic(fake: Fake, capsys: pytest.CaptureFixture[str]) -> None:
    assert await run("-n", fake.address, "group", "inspect", "g1", "T") == EXIT_OK
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert lines[0] == "group g1: 2 consumer(s), strategy AVG, CLUSTERING"
    assert lines[1].split() == ["CONSUMER", "STRATEGY", "QUEUES", "ANSWERED"]
    assert lines[2].split() == [A, "AVG", "2", "yes"]
    assert lines[3].split() == [B, "AVG", "2", "yes"]
    assert "topic T: 4 queue(s)" in lines
    rows = [line.split() for line in lines if line.startswith("broker-a")]
    assert rows == [["broker-a", str(q), owner, owner] for q, owner in ((0, A), (1, A), (2, B), (3, B))]
    assert lines[-1] == "no problems found"
    requests = fake.broker.requests(RequestCode.GET_CONSUMER_RUNNING_INFO)
    asked = [from_ext_fields(GetConsumerRunningInfoRequestHeader, r.ext_fields) for r in requests]
    assert sorted((h.consumer_group, h.client_id, h.jstack_enable) for h in asked) == [
        ("g1", A, False),
        ("g1", B, False),
    ]


async def test_without_topic_uses_every_broker_and_subscription(
    fake: Fake, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.infos[B] = running("AVG_BY_CIRCLE", [1, 3])
    assert await run("-n", fake.address, "group", "inspect", "g1", "--json") == EXIT_OK
    data = json.loads(capsys.readouterr().out)
    assert fake.broker.requests(RequestCode.GET_BROKER_CLUSTER_INFO)
    assert [t["topic"] for t in data["topics"]] == ["T"]
    assert data["healthy"] is False
    kinds = {f["kind"] for f in data["flags"]}
    assert kinds == {"shared-queue", "unowned-queue", "allocation-differs", "strategy-differs"}
    (shared,) = [f for f in data["flags"] if f["kind"] == "shared-queue"]
    assert shared["queues"] == [{"topic": "T", "brokerName": "broker-a", "queueId": 1}]
    assert shared["clientIds"] == [A, B]


async def test_a_consumer_that_is_not_online(fake: Fake, capsys: pytest.CaptureFixture[str]) -> None:
    fake.infos[B] = None
    assert await run("-n", fake.address, "group", "inspect", "g1", "T") == EXIT_OK
    out = capsys.readouterr().out
    assert f"[no-answer] {B} did not answer: {fake.address}: " in out
    assert "not online" in out
    assert "[unowned-queue] T: 2 queue(s) owned by no consumer: broker-a:2, broker-a:3" in out


async def test_unknown_topic(fake: Fake, capsys: pytest.CaptureFixture[str]) -> None:
    assert await run("-n", fake.address, "group", "inspect", "g1", "Nope") == EXIT_ERROR
    assert "no route info for topic 'Nope'" in capsys.readouterr().err


async def test_through_a_proxy_it_fails_before_asking_for_members(
    fake: Fake, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 5.x Proxy serves GET_CONSUMER_LIST_BY_GROUP from its own clients only and refuses
    GET_BROKER_CLUSTER_INFO and GET_CONSUMER_RUNNING_INFO (rocketmq-proxy ``RemotingProtocolServer``
    ``registerRemotingServer``; ``ConsumerManagerActivity.getConsumerListByGroup``): the command
    fails on the cluster table, which it asks for first, instead of reporting every member as not
    answering. Through a real Proxy: ``integration/test_proxy.py``."""
    fake.broker.refuse(RequestCode.GET_BROKER_CLUSTER_INFO)
    fake.broker.refuse(RequestCode.GET_CONSUMER_RUNNING_INFO)
    assert await run("-n", fake.address, "group", "inspect", "g1", "T") == EXIT_ERROR
    err = capsys.readouterr().err
    assert "UnsupportedByProxy" in err
    assert f"{fake.address} does not serve GET_BROKER_CLUSTER_INFO (request code 106)" in err
    assert fake.broker.requests(RequestCode.GET_CONSUMER_LIST_BY_GROUP) == []
