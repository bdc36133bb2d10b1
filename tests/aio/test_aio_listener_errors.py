"""An asyncio listener that raises ``asyncio.CancelledError`` on its own fails its call, as any
exception does (Java: any Throwable from a listener is RECONSUME_LATER), and every client on the
loop lives on; only a cancel of the call itself, or the loop closing, is a cancel."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio

from rocketmq_py.aio import Message, Producer, PushConsumer, SendStatus
from rocketmq_py.errors import ListenerCancelled
from rocketmq_py.hooks import ConsumeContext, Hook
from rocketmq_py.protocol import MessageExt, RequestCode
from rocketmq_py.testing import FakeBroker

TOPIC = "AioTopic"
GROUP = "cg-aio-errors"


@pytest.fixture
async def broker() -> AsyncIterator[FakeBroker]:
    async with FakeBroker(broker_name="broker-a") as fb:
        fb.add_topic(TOPIC, queues=1)
        yield fb


class Afters(Hook):
    def __init__(self) -> None:
        self.contexts: list[ConsumeContext] = []

    def after_consume(self, ctx: ConsumeContext) -> None:
        self.contexts.append(ctx)


@pytest.mark.parametrize("waits_first", [False, True], ids=["in-its-first-step", "after-waiting"])
async def test_a_listener_raising_cancelled_error_fails_its_call_and_the_clients_live_on(
    broker: FakeBroker, waits_first: bool
) -> None:
    """A listener that awaits a future another task cancelled: its first delivery fails (the message
    comes back, reconsume times 1, and succeeds), a producer on the same loop still sends. We took
    any CancelledError for the loop closing: the trio run died and every client on the loop raised
    StateError('the client is not open')."""
    broker.put_messages(0, [Message(TOPIC, b"x")])
    hook = Afters()

    async def main() -> tuple[list[int], Any]:
        seen: list[int] = []
        twice = asyncio.Event()

        async def listener(msgs: list[MessageExt]) -> None:
            if msgs[0].body != b"x":
                return
            seen.append(msgs[0].reconsume_times)
            if len(seen) == 2:
                twice.set()
            if msgs[0].reconsume_times == 0:
                if waits_first:
                    await asyncio.sleep(0)
                cancelled = asyncio.get_running_loop().create_future()
                cancelled.cancel()  # as another task cancels what this one waits on
                await cancelled

        consumer = PushConsumer(
            GROUP,
            namesrv=broker.address,
            listener=listener,
            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
            hooks=[hook],
        )
        consumer.subscribe(TOPIC)
        async with Producer("pg-aio-errors", namesrv=broker.address) as producer, consumer:
            async with asyncio.timeout(60):
                await twice.wait()
            sent = await producer.send(Message(TOPIC, b"after"))
        return seen, sent.status

    seen, status = await trio.to_thread.run_sync(asyncio.run, main())
    assert seen == [0, 1]
    assert status is SendStatus.SEND_OK
    failed = hook.contexts[0]
    assert (failed.success, failed.status) == (False, "RECONSUME_LATER")
    assert isinstance(failed.exception, ListenerCancelled)
    assert isinstance(failed.exception.__cause__, asyncio.CancelledError)
    assert hook.contexts[1].success


async def test_a_client_left_open_when_asyncio_run_ends_is_closed_and_named(broker: FakeBroker) -> None:
    """``asyncio.run`` ending with a consumer still open: the loop's shutdown closes it as
    ``async with`` would have (offsets committed, UNREGISTER_CLIENT sent), with a ResourceWarning
    naming it; nothing fails on a closed loop. We printed trio's "Event loop is closed" and an
    abandoned-guest warning, and sent nothing: the group kept a dead member until the broker's
    channel timeout, and the last offsets were lost."""
    broker.put_messages(0, [Message(TOPIC, b"a"), Message(TOPIC, b"b")])
    problems: list[dict[str, Any]] = []

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _, context: problems.append(context))
        got = asyncio.Event()

        async def listener(msgs: list[MessageExt]) -> None:
            if msgs[-1].body == b"b":
                got.set()

        consumer = PushConsumer(
            GROUP, namesrv=broker.address, listener=listener, consume_from_where="CONSUME_FROM_FIRST_OFFSET"
        )
        consumer.subscribe(TOPIC)
        await consumer.open()  # and never closed
        await asyncio.wait_for(got.wait(), 60)

    with pytest.warns(ResourceWarning, match=r"PushConsumer.*cg-aio-errors.*left open"):
        await trio.to_thread.run_sync(asyncio.run, main())
    assert problems == []
    assert broker.requests(RequestCode.UNREGISTER_CLIENT)
    assert broker.consumer_offsets.get((GROUP, TOPIC, 0)) == 2
