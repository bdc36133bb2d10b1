"""Connection: our requests and oneways against a FakeBroker over TCP."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from rocketmq_py._transport import open_connection
from rocketmq_py.errors import ClientError, RequestTimeout
from rocketmq_py.protocol._codes import FLAG_ONEWAY, RequestCode, SerializeType
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.testing._fake_broker import FakeBroker

ECHO = 9001  # the fake_broker fixture echoes this code


async def test_request_gets_its_response(fake_broker: FakeBroker) -> None:
    async with open_connection(fake_broker.address) as conn:
        request = RemotingCommand.request(ECHO, {"k": "v"}, b"payload")
        response = await conn.request(request, timeout=3)
    assert response.is_response
    assert response.code == 0
    assert dict(response.ext_fields) == {"k": "v"}
    assert response.body == b"payload"
    (received,) = fake_broker.received
    assert received.code == ECHO
    assert received.opaque == response.opaque
    assert not received.is_response


async def test_concurrent_requests_answered_out_of_order(
    fake_broker: FakeBroker, autojump_clock: object
) -> None:
    count = 30

    async def slow_echo(request: RemotingCommand) -> RemotingCommand:
        # Request n is answered after (count - n) seconds: the last sent comes back first.
        await trio.sleep(count - int(request.ext_fields["n"]))
        return RemotingCommand.response(request, 0, ext_fields=request.ext_fields)

    fake_broker.on(ECHO, slow_echo)
    answers: dict[int, str] = {}
    order: list[int] = []

    async with open_connection(fake_broker.address) as conn:

        async def call(n: int) -> None:
            response = await conn.request(RemotingCommand.request(ECHO, {"n": str(n)}), timeout=100)
            answers[n] = response.ext_fields["n"]
            order.append(n)

        async with trio.open_nursery() as nursery:
            for n in range(count):
                nursery.start_soon(call, n)
        assert conn.statistics().pending_requests == 0

    assert answers == {n: str(n) for n in range(count)}
    assert order == sorted(order, reverse=True)  # really answered out of order
    opaques = [cmd.opaque for cmd in fake_broker.received]
    assert len(set(opaques)) == count


async def test_timeout_raises_and_late_response_is_dropped(
    fake_broker: FakeBroker, autojump_clock: object
) -> None:
    fake_broker.delay(ECHO, 5)
    # Kept open after the timeout (by default a timeout on a silent connection closes it:
    # test_close_on_timeout.py), so the late response arrives and must be dropped.
    async with open_connection(fake_broker.address, close_on_timeout=False) as conn:
        start = trio.current_time()
        with pytest.raises(RequestTimeout) as info:
            await conn.request(RemotingCommand.request(ECHO, {"n": "late"}), timeout=1.5)
        assert trio.current_time() - start == pytest.approx(1.5)
        message = str(info.value)
        assert str(ECHO) in message
        assert fake_broker.address in message
        assert "1.5" in message
        assert conn.statistics().pending_requests == 0

        # The late response arrives at t=5 and is dropped; the connection stays usable.
        await trio.sleep(10)
        fake_broker.clear_faults()
        response = await conn.request(RemotingCommand.request(ECHO, {"n": "next"}), timeout=1)
        assert response.ext_fields["n"] == "next"
        assert not conn.is_closed


async def test_timeout_names_a_known_request_code(fake_broker: FakeBroker, autojump_clock: object) -> None:
    fake_broker.never_reply(RequestCode.HEART_BEAT)
    fake_broker.on_reply(RequestCode.HEART_BEAT)
    async with open_connection(fake_broker.address) as conn:
        with pytest.raises(RequestTimeout, match="HEART_BEAT"):
            await conn.request(RemotingCommand.request(RequestCode.HEART_BEAT), timeout=2)


async def test_oneway_is_sent_with_the_oneway_flag_and_no_answer(fake_broker: FakeBroker) -> None:
    async with open_connection(fake_broker.address) as conn:
        await conn.oneway(RemotingCommand.request(ECHO, {"a": "1"}))
        # A request after it: the broker answers it, and never answered the oneway.
        await conn.request(RemotingCommand.request(ECHO, {"a": "2"}), timeout=3)
        stats = conn.statistics()
    oneway, request = fake_broker.received
    assert oneway.flag & FLAG_ONEWAY
    assert oneway.ext_fields["a"] == "1"
    assert not request.is_oneway
    assert stats.frames_sent == 2
    assert stats.frames_received == 1


async def test_send_many_writes_every_frame_in_order(fake_broker: FakeBroker) -> None:
    async with open_connection(fake_broker.address) as conn:
        await conn.send_many(RemotingCommand.request(ECHO, {"i": str(i)}) for i in range(5))
        await conn.send_many([])
        await fake_broker.wait_received(5)
    assert [cmd.ext_fields["i"] for cmd in fake_broker.received] == ["0", "1", "2", "3", "4"]
    assert all(cmd.is_oneway for cmd in fake_broker.received)
    assert len({cmd.opaque for cmd in fake_broker.received}) == 5


async def test_request_refuses_a_oneway_command(fake_broker: FakeBroker) -> None:
    async with open_connection(fake_broker.address) as conn:
        with pytest.raises(ClientError, match="oneway"):
            await conn.request(RemotingCommand.request(ECHO, oneway=True), timeout=1)


async def test_binary_serialize_type_is_used_for_what_we_send(fake_broker: FakeBroker) -> None:
    async with open_connection(fake_broker.address, serialize_type=SerializeType.ROCKETMQ) as conn:
        response = await conn.request(RemotingCommand.request(ECHO, {"k": "v"}), timeout=3)
    assert fake_broker.received[0].serialize_type == SerializeType.ROCKETMQ
    # The broker answers in its own type (JSON), which we decode as well.
    assert response.serialize_type == SerializeType.JSON
    assert response.ext_fields["k"] == "v"


async def test_hooks_see_and_change_requests(fake_broker: FakeBroker) -> None:
    seen: list[tuple[int, int]] = []

    class Stamp:
        def before_request(self, request: RemotingCommand) -> RemotingCommand:
            return RemotingCommand.request(
                request.code, {**request.ext_fields, "stamp": "yes"}, request.body, oneway=request.is_oneway
            ).with_opaque(request.opaque)

        def after_response(self, request: RemotingCommand, response: RemotingCommand) -> None:
            seen.append((request.opaque, response.opaque))

    async with open_connection(fake_broker.address, hooks=[Stamp()]) as conn:
        await conn.request(RemotingCommand.request(ECHO), timeout=3)
        await conn.oneway(RemotingCommand.request(ECHO))
        await fake_broker.wait_received(2)
    assert [cmd.ext_fields.get("stamp") for cmd in fake_broker.received] == ["yes", "yes"]
    assert seen == [(fake_broker.received[0].opaque, fake_broker.received[0].opaque)]


async def test_opaques_wrap_within_int32(fake_broker: FakeBroker) -> None:
    async with open_connection(fake_broker.address) as conn:
        conn._next_opaque = 2**31 - 1  # white-box: jump to the wrap point
        await conn.request(RemotingCommand.request(ECHO), timeout=3)
        await conn.request(RemotingCommand.request(ECHO), timeout=3)
    assert [cmd.opaque for cmd in fake_broker.received] == [2**31 - 1, 0]


class _CountingStream(trio.abc.Stream):
    """A memory stream that counts send_all calls."""

    def __init__(self, inner: trio.abc.Stream) -> None:
        self.inner = inner
        self.send_calls = 0

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        self.send_calls += 1
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        return await self.inner.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_concurrent_writes_are_coalesced() -> None:
    from rocketmq_py._transport import Connection
    from rocketmq_py.protocol._frame import FrameBuffer

    client_side, server_side = trio.testing.memory_stream_pair()
    stream = _CountingStream(client_side)
    conn = Connection(stream, "memory:1")
    async with trio.open_nursery() as nursery:
        await nursery.start(conn.serve)
        async with trio.open_nursery() as senders:
            for i in range(50):
                senders.start_soon(conn.oneway, RemotingCommand.request(ECHO, {"i": str(i)}))
        frames = FrameBuffer()
        commands: list[RemotingCommand] = []
        while len(commands) < 50:
            commands += frames.feed(await server_side.receive_some())
        await conn.aclose()
    assert sorted(int(cmd.ext_fields["i"]) for cmd in commands) == list(range(50))
    assert [cmd.opaque for cmd in commands] == sorted(cmd.opaque for cmd in commands)
    assert stream.send_calls < 50
    assert conn.statistics().frames_sent == 50
