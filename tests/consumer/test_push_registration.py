"""A push member whose registration a broker lost (a restarted broker or 5.x Proxy) registers again at once."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from rocketmq_py.consumer._push import PushConsumer
from rocketmq_py.errors import broker_error_for
from rocketmq_py.protocol import RemotingCommand, RequestCode, ResponseCode

if TYPE_CHECKING:
    from conftest import Cluster, Recorder

MakeConsumer = Callable[..., PushConsumer]


@pytest.mark.parametrize(
    ("code", "remark"),
    [
        (ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest"),
        (ResponseCode.SUBSCRIPTION_NOT_EXIST, "the consumer's group info not exist"),
    ],
)
async def test_a_pull_refused_for_a_lost_registration_brings_a_heartbeat_at_once(
    cluster: Cluster,
    make_consumer: MakeConsumer,
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
    code: int,
    remark: str,
) -> None:
    """A push member's pulls carry no subscription: the broker reads the one its heartbeat registered
    (``PullMessageProcessor.processRequest``: no ``ConsumerGroupInfo`` or no subscription data for the
    topic answers SUBSCRIPTION_NOT_EXIST, an older subscription version SUBSCRIPTION_NOT_LATEST). A
    restarted broker, or a restarted 5.x Proxy, knows nothing until the member's next heartbeat, up
    to 30 s later: the member sends one at once instead. The real twin is the Proxy phase of
    ``integration/test_chaos.py`` (a Proxy restart answered every pull SUBSCRIPTION_NOT_LATEST until
    the next heartbeat: 19 s of nothing delivered, before this)."""
    a0 = cluster.queues()[0]
    pull = cluster.a._handlers[RequestCode.PULL_MESSAGE]
    heartbeat = cluster.a._handlers[RequestCode.HEART_BEAT]
    registered = True

    async def on_pull(request: RemotingCommand) -> RemotingCommand | None:
        if not registered:
            raise broker_error_for(code, remark)
        return await pull(request)

    async def on_heartbeat(request: RemotingCommand) -> RemotingCommand | None:
        nonlocal registered
        registered = True
        return await heartbeat(request)

    cluster.a.on(RequestCode.PULL_MESSAGE, on_pull)
    cluster.a.on(RequestCode.HEART_BEAT, on_heartbeat)
    async with make_consumer():
        cluster.put(a0, 1)
        await cluster.wait_until(lambda: len(recorder.messages) == 1)
        heartbeats = len(cluster.a.requests(RequestCode.HEART_BEAT))
        registered = False  # the broker restarted: it forgot the member
        lost_at = trio.current_time()
        cluster.put(a0, 1)  # the pull it held answers this one; the next is refused
        cluster.put(a0, 1)
        await cluster.wait_until(lambda: len(recorder.messages) == 3)
        # One refused pull, a heartbeat, the retry after Java's 3-s delay on a failed pull.
        assert len(cluster.a.requests(RequestCode.HEART_BEAT)) == heartbeats + 1
        assert trio.current_time() - lost_at < 10  # the clock is virtual: the timer would take 30 s
