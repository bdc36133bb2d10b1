"""Connection: drops, garbage, refused connects, cancelled writes, closing."""

from __future__ import annotations

import socket

import pytest
import trio
import trio.testing

from rocketmq_py._transport import Connection, open_connection, parse_address
from rocketmq_py.errors import (
    ClientError,
    ConnectionFailed,
    MalformedFrame,
    ProtocolError,
    RequestTimeout,
    StateError,
    UnknownSerializeType,
)
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.protocol._frame import FrameBuffer
from rocketmq_py.testing._fake_broker import FakeBroker

ECHO = 9001  # the fake_broker fixture echoes this code
STUCK = 9002  # a code the tests make the broker never answer


async def _call_all(conn: Connection, count: int) -> list[tuple[BaseException, float]]:
    """Run ``count`` requests that will not be answered; return each one's error and when it came."""
    outcomes: list[tuple[BaseException, float]] = []

    async def call(n: int) -> None:
        try:
            await conn.request(RemotingCommand.request(STUCK, {"n": str(n)}), timeout=100)
        except Exception as exc:
            outcomes.append((exc, trio.current_time()))

    async with trio.open_nursery() as nursery:
        for n in range(count):
            nursery.start_soon(call, n)
    return outcomes


async def test_drop_fails_every_pending_call_at_once(fake_broker: FakeBroker, autojump_clock: object) -> None:
    fake_broker.on_reply(STUCK)
    fake_broker.never_reply(STUCK)
    async with open_connection(fake_broker.address) as conn:
        async with trio.open_nursery() as nursery:

            async def drop_when_all_arrived() -> None:
                await fake_broker.wait_received(5)
                await trio.sleep(7)
                await fake_broker.drop_clients()

            nursery.start_soon(drop_when_all_arrived)
            outcomes = await _call_all(conn, 5)

        assert len(outcomes) == 5
        assert all(type(exc) is ConnectionFailed for exc, _ in outcomes)
        times = {when for _, when in outcomes}
        assert len(times) == 1  # all together
        assert times.pop() == pytest.approx(7)  # when the broker dropped, long before the timeout
        assert "closed by the peer" in str(outcomes[0][0])
        assert conn.is_closed
        assert conn.statistics().pending_requests == 0

        # Later calls fail at once, without I/O.
        start = trio.current_time()
        with pytest.raises(ConnectionFailed):
            await conn.request(RemotingCommand.request(ECHO), timeout=5)
        with pytest.raises(ConnectionFailed):
            await conn.oneway(RemotingCommand.request(ECHO))
        assert trio.current_time() == start
    assert len(fake_broker.received) == 5


async def test_drop_on_code_fails_the_request_mid_flight(fake_broker: FakeBroker) -> None:
    fake_broker.drop_on(STUCK)
    async with open_connection(fake_broker.address) as conn:
        assert (await conn.request(RemotingCommand.request(ECHO), timeout=3)).code == 0
        with pytest.raises(ConnectionFailed):
            await conn.request(RemotingCommand.request(STUCK), timeout=3)
    assert [cmd.code for cmd in fake_broker.received] == [ECHO, STUCK]


async def test_drop_after_n_frames(fake_broker: FakeBroker) -> None:
    fake_broker.drop_after(3)
    async with open_connection(fake_broker.address) as conn:
        for _ in range(2):
            await conn.request(RemotingCommand.request(ECHO), timeout=3)
        with pytest.raises(ConnectionFailed):
            await conn.request(RemotingCommand.request(ECHO), timeout=3)
    assert len(fake_broker.received) == 3


async def test_garbage_fails_the_connection_with_a_protocol_error_cause(
    fake_broker: FakeBroker, autojump_clock: object
) -> None:
    fake_broker.on_reply(STUCK)
    fake_broker.never_reply(STUCK)
    async with open_connection(fake_broker.address) as conn:
        async with trio.open_nursery() as nursery:

            async def garbage_when_all_arrived() -> None:
                await fake_broker.wait_received(3)
                await fake_broker.send_garbage()

            nursery.start_soon(garbage_when_all_arrived)
            outcomes = await _call_all(conn, 3)

        assert len(outcomes) == 3
        for exc, _ in outcomes:
            assert isinstance(exc, ConnectionFailed)
            assert isinstance(exc.__cause__, ProtocolError)
        assert len({id(exc) for exc, _ in outcomes}) == 3  # each caller has its own exception
        with pytest.raises(ConnectionFailed) as later:
            await conn.request(RemotingCommand.request(ECHO), timeout=3)
        assert isinstance(later.value.__cause__, MalformedFrame)


async def test_unknown_serialize_type_is_a_protocol_error(fake_broker: FakeBroker) -> None:
    async with open_connection(fake_broker.address) as conn:
        await conn.request(RemotingCommand.request(ECHO), timeout=3)
        # A frame of 8 bytes whose header-length word claims serialize type 7.
        await fake_broker.send_garbage(b"\x00\x00\x00\x08\x07\x00\x00\x04abcd")
        with pytest.raises(ConnectionFailed) as info:
            await conn.request(RemotingCommand.request(STUCK), timeout=3)
    assert isinstance(info.value.__cause__, UnknownSerializeType)


async def test_eof_inside_a_frame_is_a_protocol_error(fake_broker: FakeBroker) -> None:
    async with open_connection(fake_broker.address) as conn:
        await conn.request(RemotingCommand.request(ECHO), timeout=3)
        await fake_broker.send_garbage(b"\x00\x00\x00\x40partial")  # 64 bytes announced, 7 sent
        await trio.testing.wait_all_tasks_blocked()
        assert not conn.is_closed  # still waiting for the rest of the frame
        await fake_broker.drop_clients()
        with pytest.raises(ConnectionFailed) as info:
            await conn.request(RemotingCommand.request(ECHO), timeout=3)
    assert isinstance(info.value.__cause__, MalformedFrame)


async def test_frame_above_max_frame_size_is_refused(fake_broker: FakeBroker) -> None:
    async with open_connection(fake_broker.address, max_frame_size=64) as conn:
        with pytest.raises(ConnectionFailed) as info:
            await conn.request(RemotingCommand.request(ECHO, body=b"x" * 100), timeout=3)
    assert isinstance(info.value.__cause__, ProtocolError)


def _unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_connect_refused_is_connection_failed() -> None:
    address = f"127.0.0.1:{_unused_port()}"
    with pytest.raises(ConnectionFailed, match=address) as info:
        async with open_connection(address):
            pytest.fail("connected to a closed port")
    assert isinstance(info.value.__cause__, OSError)


@pytest.mark.parametrize("address", ["nohost", "host:", ":10911", "host:port", "host:0", "host:70000"])
async def test_bad_address_is_client_error(address: str) -> None:
    with pytest.raises(ClientError):
        async with open_connection(address):
            pytest.fail("connected to a bad address")


def test_parse_address() -> None:
    assert parse_address("127.0.0.1:10911") == ("127.0.0.1", 10911)
    assert parse_address("broker-a.example:9876") == ("broker-a.example", 9876)
    assert parse_address("[::1]:10911") == ("::1", 10911)


async def test_aclose_fails_pending_calls_and_later_calls(
    fake_broker: FakeBroker, autojump_clock: object
) -> None:
    fake_broker.on_reply(STUCK)
    fake_broker.never_reply(STUCK)
    async with open_connection(fake_broker.address) as conn:
        async with trio.open_nursery() as nursery:

            async def close_when_all_arrived() -> None:
                await fake_broker.wait_received(2)
                await conn.aclose()

            nursery.start_soon(close_when_all_arrived)
            outcomes = await _call_all(conn, 2)
        assert [type(exc) for exc, _ in outcomes] == [ConnectionFailed, ConnectionFailed]
        assert "closed by the client" in str(outcomes[0][0])
        await conn.aclose()  # idempotent
        # Using a connection after closing it is a misuse, not a network failure.
        with pytest.raises(StateError, match="closed by the client"):
            await conn.oneway(RemotingCommand.request(ECHO))
        with pytest.raises(StateError):
            await conn.request(RemotingCommand.request(ECHO), timeout=1)
    await fake_broker.wait_accepted(1)
    await trio.testing.wait_all_tasks_blocked()
    assert fake_broker.clients == []  # the broker saw the connection end


async def test_a_stuck_write_times_out_the_call_but_never_cuts_a_frame(autojump_clock: object) -> None:
    # lockstep streams: send_all blocks until the other side reads.
    client_side, server_side = trio.testing.lockstep_stream_pair()
    # Not closed on the timeout (the default closes a silent connection), to read the frame.
    conn = Connection(client_side, "memory:1", close_on_timeout=False)
    async with trio.open_nursery() as nursery:
        await nursery.start(conn.serve)
        with pytest.raises(RequestTimeout):
            await conn.request(RemotingCommand.request(ECHO, {"n": "first"}), timeout=2)
        # The writer task owns the write: the caller's timeout did not cut the frame in half,
        # so the connection is still usable once the peer reads.
        assert not conn.is_closed
        data = await server_side.receive_some()
        buffer = FrameBuffer()
        frames = buffer.feed(data)
        while not frames:
            frames = buffer.feed(await server_side.receive_some())
        assert frames[0].ext_fields["n"] == "first"
        await conn.aclose()


async def test_queued_write_cancelled_before_sending_is_withdrawn(autojump_clock: object) -> None:
    client_side, server_side = trio.testing.lockstep_stream_pair()
    conn = Connection(client_side, "memory:1")
    async with trio.open_nursery() as nursery:
        await nursery.start(conn.serve)
        nursery.start_soon(conn.oneway, RemotingCommand.request(ECHO, {"n": "first"}))
        await trio.testing.wait_all_tasks_blocked()  # the first write holds the lock, blocked
        with trio.move_on_after(1):
            await conn.oneway(RemotingCommand.request(ECHO, {"n": "second"}))  # queued, then cancelled
        assert conn._writer._outbox == []  # withdrawn from the writer's outbox
        assert not conn.is_closed
        # Let the first write through: only its frame is on the wire.
        data = await server_side.receive_some()
        await trio.testing.wait_all_tasks_blocked()  # the first oneway returns
        assert conn.statistics().frames_sent == 1
        await conn.aclose()
    assert b"first" in data
    assert b"second" not in data
