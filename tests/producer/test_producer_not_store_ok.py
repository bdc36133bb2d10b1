"""``retry_another_broker_when_not_store_ok``: a message a broker stored with a flush/slave warning
(FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE) is tried again on another broker, and
when every later attempt fails the send returns the stored result, as Java's ``sendDefaultImpl``
does (``if (sendResult != null) return sendResult``), instead of reporting a stored message failed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from rocketmq_py.errors import MessageIllegal, SystemBusy
from rocketmq_py.producer._producer import Producer
from rocketmq_py.producer._types import SendStatus
from rocketmq_py.protocol import RemotingCommand, RequestCode, ResponseCode

if TYPE_CHECKING:
    from conftest import Cluster

MakeProducer = Callable[..., Producer]
Handler = Callable[[RemotingCommand], Awaitable[RemotingCommand | None]]
SEND = RequestCode.SEND_MESSAGE_V2


def first_stored_with(cluster: Cluster, code: int, fail: Handler) -> None:
    """The first send (to whichever broker) is stored and answered ``code``; every later one ``fail``s."""
    seen = 0

    for fb in cluster.brokers:
        store = fb._messages.send_message

        async def handler(request: RemotingCommand, store: Handler = store) -> RemotingCommand | None:
            nonlocal seen
            seen += 1
            if seen > 1:
                return await fail(request)
            reply = await store(request)
            assert reply is not None
            return RemotingCommand.response(request, code, "store warning", reply.ext_fields)

        fb.on(SEND, handler)


async def busy(request: RemotingCommand) -> RemotingCommand | None:
    raise SystemBusy(ResponseCode.SYSTEM_BUSY, "busy")


async def illegal(request: RemotingCommand) -> RemotingCommand | None:
    raise MessageIllegal(ResponseCode.MESSAGE_ILLEGAL, "illegal")


async def silent(request: RemotingCommand) -> RemotingCommand | None:
    await trio.sleep_forever()
    raise AssertionError("unreachable")


@pytest.mark.parametrize(
    "code",
    [ResponseCode.FLUSH_DISK_TIMEOUT, ResponseCode.FLUSH_SLAVE_TIMEOUT, ResponseCode.SLAVE_NOT_AVAILABLE],
)
@pytest.mark.parametrize(
    "later",
    [
        pytest.param(busy, id="retriable-error"),
        pytest.param(illegal, id="non-retriable-error"),
        pytest.param(silent, id="deadline"),
    ],
)
async def test_a_stored_message_is_not_reported_failed(
    cluster: Cluster,
    make_producer: MakeProducer,
    autojump_clock: trio.testing.MockClock,
    code: int,
    later: Handler,
) -> None:
    first_stored_with(cluster, code, later)
    async with make_producer(retry_another_broker_when_not_store_ok=True) as producer:
        result = await producer.send(cluster.message())
        stats = producer.statistics()
    assert result.status is SendStatus(code)
    stored = cluster.broker(result.queue.broker_name).messages(cluster.topic, result.queue.queue_id)
    assert [m.uniq_key for m in stored] == [result.msg_id]
    assert result.queue_offset == 0
    assert (stats.sent, stats.failed) == (1, 0)
    assert stats.attempts >= 2  # it did try another broker


async def test_a_dropped_connection_after_a_stored_attempt_returns_it(
    cluster: Cluster, make_producer: MakeProducer, autojump_clock: trio.testing.MockClock
) -> None:
    async def dropped(request: RemotingCommand) -> RemotingCommand | None:
        for fb in cluster.brokers:
            await fb.drop_clients()
        return None

    first_stored_with(cluster, ResponseCode.FLUSH_DISK_TIMEOUT, dropped)
    async with make_producer(retry_another_broker_when_not_store_ok=True) as producer:
        result = await producer.send(cluster.message())
    assert result.status is SendStatus.FLUSH_DISK_TIMEOUT


async def test_a_later_ok_wins(cluster: Cluster, make_producer: MakeProducer) -> None:
    async def ok(request: RemotingCommand) -> RemotingCommand | None:
        broker = next(fb for fb in cluster.brokers if fb.broker_name == request.ext_fields["n"])
        return await broker._messages.send_message(request)

    first_stored_with(cluster, ResponseCode.FLUSH_DISK_TIMEOUT, ok)
    async with make_producer(retry_another_broker_when_not_store_ok=True) as producer:
        result = await producer.send(cluster.message())
    assert result.status is SendStatus.SEND_OK
