"""``pull_once`` alone: one pull of one queue against a fake API and route table, each answer code
mapped to its result (the loops built on it are tested on the FakeBroker)."""

from __future__ import annotations

import ast
import logging
from pathlib import Path
from typing import Any, cast

import pytest
import trio
import trio.testing

import rocketmq_py.consumer
from rocketmq_py._client._api import RemotingApi
from rocketmq_py._client._route import FoundBroker
from rocketmq_py._client._route_service import RouteService
from rocketmq_py.consumer._filter import MessageFilter
from rocketmq_py.consumer._flow import (
    OFFSET_ILLEGAL_FIX_DELAY_MS,
    PULL_INTERVAL_MS,
    PULL_TIME_DELAY_WHEN_BROKER_FLOW_CONTROL_MS,
    PULL_TIME_DELAY_WHEN_EXCEPTION_MS,
)
from rocketmq_py.consumer._offset_store import RemoteOffsetStore
from rocketmq_py.consumer._process_queue import ProcessQueue
from rocketmq_py.consumer._pull_once import PullOnce, pull_once
from rocketmq_py.consumer._pull_result import PullStatus
from rocketmq_py.errors import RequestTimeout
from rocketmq_py.protocol import (
    MessageExt,
    MessageQueue,
    PullMessageRequestHeader,
    RemotingCommand,
    ResponseCode,
    SubscriptionData,
    build_subscription_data,
    encode_stored_message,
)

MQ = MessageQueue("T", "broker-a", 2)
SUB = build_subscription_data("T", "TagA", sub_version=7)
LOG = logging.getLogger("test.pull_once")


class FakeRoutes:
    def __init__(self, brokers: dict[int, str]) -> None:
        self.brokers = brokers
        self.refreshed: list[str] = []
        self.rechecked: list[str] = []

    def find_broker(self, broker_name: str, broker_id: int = 0) -> FoundBroker | None:
        assert broker_name == MQ.broker_name
        if broker_id in self.brokers:
            return FoundBroker(self.brokers[broker_id], broker_id)
        if self.brokers:
            low = min(self.brokers)
            return FoundBroker(self.brokers[low], low)
        return None

    async def update(self, topic: str) -> None:
        self.refreshed.append(topic)

    async def recheck(self, topic: str) -> None:
        self.rechecked.append(topic)


class FakeApi:
    def __init__(self, reply: RemotingCommand | Exception) -> None:
        self.reply = reply
        self.calls: list[tuple[str, PullMessageRequestHeader, float]] = []

    async def pull_message(
        self,
        address: str,
        header: PullMessageRequestHeader,
        *,
        timeout: float,  # noqa: ASYNC109 - the signature of RemotingApi.pull_message
    ) -> RemotingCommand:
        self.calls.append((address, header, timeout))
        await trio.sleep(1)
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply


def answer(
    code: int, *, next_begin: int = 15, suggest: int = 0, body: bytes = b"", remark: str | None = None
) -> RemotingCommand:
    fields = {
        "nextBeginOffset": str(next_begin),
        "minOffset": "0",
        "maxOffset": "40",
        "suggestWhichBrokerId": str(suggest),
    }
    return RemotingCommand(code, ext_fields=fields, body=body, remark=remark)


def stored(*tagged: tuple[int, str]) -> bytes:
    return b"".join(
        encode_stored_message(
            MessageExt(
                "T", b"x", tags=tag, queue_id=MQ.queue_id, queue_offset=offset, store_host="127.0.0.1:10911"
            )
        )
        for offset, tag in tagged
    )


async def pull(
    api: FakeApi,
    routes: FakeRoutes | None = None,
    *,
    pq: ProcessQueue | None = None,
    broker_id: int = 0,
    subscriptions: dict[str, SubscriptionData] | None = None,
    send_subscription: bool = False,
    commit_from: RemoteOffsetStore | None = None,
) -> PullOnce:
    subs = {"T": SUB} if subscriptions is None else subscriptions
    return await pull_once(
        cast(RemotingApi, api),
        cast(RouteService, routes or FakeRoutes({0: "master:10911", 1: "slave:10911"})),
        group="g",
        mq=MQ,
        pq=pq or ProcessQueue(clock=trio.current_time),
        offset=10,
        broker_id=broker_id,
        batch_size=32,
        subscriptions=subs,
        filters={topic: MessageFilter(sub) for topic, sub in subs.items()},
        suspend_ms=15000,
        timeout_ms=30000,
        send_subscription=send_subscription,
        commit_from=commit_from,
        log=LOG,
    )


async def test_found_keeps_the_messages_of_the_subscribed_tags(
    autojump_clock: trio.testing.MockClock,
) -> None:
    api = FakeApi(
        answer(ResponseCode.SUCCESS, next_begin=13, body=stored((10, "TagA"), (11, "TagB"), (12, "TagA")))
    )
    got = await pull(api)
    assert got.result is not None
    assert got.result.status is PullStatus.FOUND
    assert [m.queue_offset for m in got.msgs] == [10, 12]
    assert all(m.broker_name == "broker-a" and m.queue_id == 2 for m in got.msgs)
    assert got.action is not None
    assert got.action.dispatch
    assert (got.action.next_offset, got.action.delay_ms) == (13, PULL_INTERVAL_MS)
    assert got.started == 0  # the request left at once; the answer came 1 s later


async def test_found_with_everything_filtered_out_pulls_again_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    got = await pull(FakeApi(answer(ResponseCode.SUCCESS, next_begin=11, body=stored((10, "TagB")))))
    assert got.msgs == []
    assert got.action is not None
    assert not got.action.dispatch
    assert (got.action.next_offset, got.action.delay_ms) == (11, 0)


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (ResponseCode.PULL_NOT_FOUND, PullStatus.NO_NEW_MSG),
        (ResponseCode.PULL_RETRY_IMMEDIATELY, PullStatus.NO_MATCHED_MSG),
    ],
)
@pytest.mark.parametrize("cached", [False, True])
async def test_nothing_new_corrects_the_offset_only_when_nothing_is_cached(
    code: int, status: PullStatus, cached: bool, autojump_clock: trio.testing.MockClock
) -> None:
    pq = ProcessQueue(clock=trio.current_time)
    if cached:
        pq.add_messages([MessageExt("T", b"x", queue_id=2, queue_offset=3)])
    got = await pull(FakeApi(answer(code, next_begin=15, suggest=1)), pq=pq)
    assert got.result is not None
    assert got.result.status is status
    assert got.action is not None
    assert (got.action.next_offset, got.action.correct_offset, got.action.dispatch) == (15, not cached, False)
    assert got.broker_id == 1  # the broker suggested next


async def test_offset_illegal_says_drop_the_queue(autojump_clock: trio.testing.MockClock) -> None:
    got = await pull(FakeApi(answer(ResponseCode.PULL_OFFSET_MOVED, next_begin=40)))
    assert got.result is not None
    assert got.result.status is PullStatus.OFFSET_ILLEGAL
    assert got.action is not None
    assert got.action.drop_queue
    assert (got.action.next_offset, got.action.delay_ms) == (40, OFFSET_ILLEGAL_FIX_DELAY_MS)


@pytest.mark.parametrize(
    ("reply", "delay"),
    [
        (answer(ResponseCode.FLOW_CONTROL, remark="busy"), PULL_TIME_DELAY_WHEN_BROKER_FLOW_CONTROL_MS),
        (answer(ResponseCode.SYSTEM_ERROR, remark="boom"), PULL_TIME_DELAY_WHEN_EXCEPTION_MS),
        (RequestTimeout("gone"), PULL_TIME_DELAY_WHEN_EXCEPTION_MS),
    ],
)
async def test_an_error_is_logged_and_retried_from_the_same_broker(
    reply: Any, delay: int, caplog: pytest.LogCaptureFixture, autojump_clock: trio.testing.MockClock
) -> None:
    routes = FakeRoutes({0: "master:10911", 1: "slave:10911"})
    with caplog.at_level(logging.INFO, "test.pull_once"):
        got = await pull(FakeApi(reply), routes, broker_id=1)
    assert (got.action, got.result, got.msgs, got.retry_delay_ms, got.broker_id) == (None, None, [], delay, 1)
    assert "pull of" in caplog.text
    assert "slave:10911" in caplog.text
    # A broker that could not be reached may have been replaced under its name (controller mode):
    # the route is asked again (the route service limits that to once a second); a broker's
    # answer names no such change.
    assert routes.rechecked == (["T"] if isinstance(reply, Exception) else [])


@pytest.mark.parametrize("case", ["no subscription", "no broker"])
async def test_without_subscription_or_broker_the_route_is_refreshed(
    case: str, autojump_clock: trio.testing.MockClock
) -> None:
    routes = FakeRoutes({} if case == "no broker" else {0: "master:10911"})
    api = FakeApi(answer(ResponseCode.PULL_NOT_FOUND))
    got = await pull(api, routes, subscriptions={} if case == "no subscription" else None, broker_id=1)
    assert (got.action, got.retry_delay_ms, got.broker_id) == (None, PULL_TIME_DELAY_WHEN_EXCEPTION_MS, 1)
    assert routes.refreshed == ["T"]
    assert api.calls == []


async def test_the_request_push_and_lite_style(autojump_clock: trio.testing.MockClock) -> None:
    offsets = RemoteOffsetStore(cast(RemotingApi, None), cast(RouteService, None), "g")
    offsets.update(MQ, 8)
    api = FakeApi(answer(ResponseCode.PULL_NOT_FOUND))
    await pull(api, commit_from=offsets)  # push, CLUSTERING, from the master
    await pull(api, commit_from=offsets, broker_id=1)  # push from a slave: commits nothing
    await pull(api, send_subscription=True)  # lite
    (master, push, timeout), (slave, from_slave, _), (_, lite, _) = api.calls
    assert (master, slave, timeout) == ("master:10911", "slave:10911", 30.0)
    assert (push.commit_offset, push.subscription, push.sub_version, push.queue_offset) == (8, None, 7, 10)
    assert (push.max_msg_nums, push.suspend_timeout_millis, push.consumer_group) == (32, 15000, "g")
    assert from_slave.commit_offset == 0
    assert (lite.commit_offset, lite.subscription) == (0, "TagA")
    assert lite.sys_flag != push.sys_flag


def test_pull_once_never_imports_a_consumer() -> None:
    source = Path(rocketmq_py.consumer.__file__).with_name("_pull_once.py").read_text()
    imported = {
        node.module
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module
    }
    owners = {"_push", "_lite_pull", "_member", "_pull_loop", "_lite_pull_loop", "_runtime"}
    assert not {f"rocketmq_py.consumer.{name}" for name in owners} & imported
