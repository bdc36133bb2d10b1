"""Connection: requests the broker sends to the client (handler registry)."""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing

from rocketmq_py._transport import RequestHandler, open_connection
from rocketmq_py.protocol._codes import FLAG_RESPONSE, RequestCode, ResponseCode
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.testing._fake_broker import FakeBroker

ECHO = 9001  # the fake_broker fixture echoes this code


async def test_oneway_request_is_handled_and_not_answered(fake_broker: FakeBroker) -> None:
    handled: list[RemotingCommand] = []
    done = trio.Event()

    async def on_ids_changed(request: RemotingCommand) -> RemotingCommand | None:
        handled.append(request)
        done.set()
        return None

    handlers: dict[int, RequestHandler] = {RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: on_ids_changed}
    async with open_connection(fake_broker.address, handlers=handlers) as conn:
        await conn.request(RemotingCommand.request(ECHO), timeout=3)  # connected and registered
        notify = RemotingCommand.request(
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "g"}, oneway=True
        )
        assert await fake_broker.send_to_client(notify, expect_reply=False) is None
        await done.wait()
        await trio.testing.wait_all_tasks_blocked()
        # A round trip after the handler finished: any answer to the oneway would be in by now.
        await conn.request(RemotingCommand.request(ECHO), timeout=3)

    assert [cmd.ext_fields["consumerGroup"] for cmd in handled] == ["g"]
    assert handled[0].is_oneway
    assert [cmd.is_response for cmd in fake_broker.received] == [False, False]


async def test_sync_request_is_answered_with_its_opaque(fake_broker: FakeBroker) -> None:
    async def running_info(request: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response(request, ResponseCode.SUCCESS, body=b'{"running":true}')

    handlers: dict[int, RequestHandler] = {RequestCode.GET_CONSUMER_RUNNING_INFO: running_info}
    async with open_connection(fake_broker.address, handlers=handlers) as conn:
        await conn.request(RemotingCommand.request(ECHO), timeout=3)
        for _ in range(3):  # several, so that the opaques differ
            reply = await fake_broker.send_to_client(
                RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "g"})
            )
            assert reply is not None
            assert reply.opaque == fake_broker.sent[-1].opaque
            assert reply.flag & FLAG_RESPONSE
            assert reply.code == ResponseCode.SUCCESS
            assert reply.body == b'{"running":true}'
    assert [cmd.opaque for cmd in fake_broker.sent] == [0, 1, 2]


async def test_handler_reply_gets_opaque_and_flag_filled_in(fake_broker: FakeBroker) -> None:
    async def careless(request: RemotingCommand) -> RemotingCommand:
        return RemotingCommand(ResponseCode.SUCCESS, body=b"x")  # opaque 0, no RESPONSE flag

    async with open_connection(fake_broker.address, handlers={309: careless}) as conn:
        await conn.request(RemotingCommand.request(ECHO), timeout=3)
        await fake_broker.send_to_client(RemotingCommand.request(ECHO, {"warm": "up"}), expect_reply=True)
        reply = await fake_broker.send_to_client(RemotingCommand.request(309))
    assert reply is not None
    assert reply.opaque == fake_broker.sent[-1].opaque == 1
    assert reply.is_response
    assert reply.body == b"x"


async def test_unknown_code_is_answered_request_code_not_supported(fake_broker: FakeBroker) -> None:
    async with open_connection(fake_broker.address) as conn:
        await conn.request(RemotingCommand.request(ECHO), timeout=3)
        reply = await fake_broker.send_to_client(RemotingCommand.request(4242))
    assert reply is not None
    assert reply.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert reply.code == 3
    assert reply.is_response
    assert reply.remark is not None
    assert "4242" in reply.remark


async def test_unknown_oneway_code_gets_no_answer(fake_broker: FakeBroker) -> None:
    async with open_connection(fake_broker.address) as conn:
        await conn.request(RemotingCommand.request(ECHO), timeout=3)
        await fake_broker.send_to_client(RemotingCommand.request(4242, oneway=True), expect_reply=False)
        await trio.testing.wait_all_tasks_blocked()
        await conn.request(RemotingCommand.request(ECHO), timeout=3)
    assert not any(cmd.is_response for cmd in fake_broker.received)


async def test_handler_error_answers_system_error(
    fake_broker: FakeBroker, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(request: RemotingCommand) -> RemotingCommand:
        raise RuntimeError("listener exploded")

    async with open_connection(fake_broker.address, handlers={309: broken, 39: broken}) as conn:
        await conn.request(RemotingCommand.request(ECHO), timeout=3)
        with caplog.at_level(logging.ERROR, logger="rocketmq_py.transport"):
            reply = await fake_broker.send_to_client(RemotingCommand.request(309))
            # The same failure on a oneway request is only logged.
            await fake_broker.send_to_client(RemotingCommand.request(39, oneway=True), expect_reply=False)
            await trio.testing.wait_all_tasks_blocked()
        assert not conn.is_closed
        await conn.request(RemotingCommand.request(ECHO), timeout=3)
    assert reply is not None
    assert reply.code == ResponseCode.SYSTEM_ERROR
    assert reply.remark is not None
    assert "listener exploded" in reply.remark
    assert len([r for r in caplog.records if r.exc_info]) == 2
    assert sum(cmd.is_response for cmd in fake_broker.received) == 1


async def test_handler_returning_none_for_a_sync_request_answers_system_error(
    fake_broker: FakeBroker,
) -> None:
    async def silent(request: RemotingCommand) -> None:
        return None

    async with open_connection(fake_broker.address, handlers={221: silent}) as conn:
        await conn.request(RemotingCommand.request(ECHO), timeout=3)
        reply = await fake_broker.send_to_client(RemotingCommand.request(221))
    assert reply is not None
    assert reply.code == ResponseCode.SYSTEM_ERROR


async def test_slow_handler_does_not_block_the_reader(
    fake_broker: FakeBroker, autojump_clock: object
) -> None:
    release = trio.Event()

    async def slow(request: RemotingCommand) -> RemotingCommand:
        await release.wait()
        return RemotingCommand.response(request, ResponseCode.SUCCESS)

    async with open_connection(fake_broker.address, handlers={307: slow}) as conn:
        await conn.request(RemotingCommand.request(ECHO), timeout=3)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(fake_broker.send_to_client, RemotingCommand.request(307))
            await trio.testing.wait_all_tasks_blocked()
            assert conn.statistics().running_handlers == 1
            start = trio.current_time()
            response = await conn.request(RemotingCommand.request(ECHO, {"while": "busy"}), timeout=3)
            assert response.ext_fields["while"] == "busy"
            assert trio.current_time() == start
            release.set()
        assert conn.statistics().running_handlers == 0
    replies = [cmd for cmd in fake_broker.received if cmd.is_response]
    assert [cmd.code for cmd in replies] == [ResponseCode.SUCCESS]


async def test_handlers_mapping_is_read_per_request(fake_broker: FakeBroker) -> None:
    handlers: dict[int, RequestHandler] = {}
    async with open_connection(fake_broker.address, handlers=handlers) as conn:
        await conn.request(RemotingCommand.request(ECHO), timeout=3)
        first = await fake_broker.send_to_client(RemotingCommand.request(326))

        async def late(request: RemotingCommand) -> RemotingCommand:
            return RemotingCommand.response(request, ResponseCode.SUCCESS)

        handlers[326] = late
        second = await fake_broker.send_to_client(RemotingCommand.request(326))
    assert first is not None
    assert first.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert second is not None
    assert second.code == ResponseCode.SUCCESS
