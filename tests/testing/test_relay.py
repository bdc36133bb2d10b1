"""``rocketmq_py.testing._relay``: the userspace relay forwards both ways, and a blocked route swallows
connects and traffic both ways until unblocked, losing nothing, with no root and no system tool.

Real sockets on loopback, real time: the relay runs in a thread of its own, and a hanging connect is
the kernel's doing (the SYN retransmits after 1 s), which no fake clock controls. Each wait for
silence is 0.5 s: loopback answers in microseconds when nothing is blocked.
"""

from __future__ import annotations

import functools
import gc
import socket
import threading
from collections.abc import AsyncIterator, Iterator

import pytest
import trio

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._relay import TcpRelay

SILENCE = 0.5


class EchoServer:
    """A trio TCP server that answers every chunk with the same bytes; counts its connections."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self.connections = 0
        self.port = 0

    async def serve(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        async for data in stream:
            self.received.append(data)
            await stream.send_all(data)


@pytest.fixture
async def echo() -> AsyncIterator[EchoServer]:
    server = EchoServer()
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(functools.partial(trio.serve_tcp, server.serve, 0, host="127.0.0.1"))
        server.port = listeners[0].socket.getsockname()[1]
        yield server
        nursery.cancel_scope.cancel()


@pytest.fixture
def relay() -> Iterator[TcpRelay]:
    with TcpRelay("test-relay") as started:
        yield started


def _forward(relay: TcpRelay, echo: EchoServer, route: str = "echo") -> int:
    return relay.forward(route, ("127.0.0.1", 0), ("127.0.0.1", echo.port))[1]


async def _silent(stream: trio.SocketStream) -> bool:
    """Whether ``stream`` gets no byte for :data:`SILENCE` seconds."""
    with trio.move_on_after(SILENCE):
        await stream.receive_some()
        return False
    return True


async def _connect_hangs(port: int) -> bool:
    """Whether a connect to ``port`` does not complete in :data:`SILENCE` seconds."""
    with trio.move_on_after(SILENCE):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        await stream.aclose()
        return False
    return True


async def _echoes(port: int, data: bytes) -> bool:
    """Whether a new connection to ``port`` echoes ``data``."""
    with trio.fail_after(5):
        async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
            await stream.send_all(data)
            return await stream.receive_some() == data


async def test_bytes_flow_both_ways_and_an_end_of_stream_passes_on(relay: TcpRelay, echo: EchoServer) -> None:
    port = _forward(relay, echo)
    big = bytes(range(256)) * 4096  # 1 MiB: more than one chunk, more than the socket buffers
    async with await trio.open_tcp_stream("127.0.0.1", port) as client:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.send_all, big)
            got = bytearray()
            while len(got) < len(big):
                got += await client.receive_some()
        assert bytes(got) == big
        await client.send_eof()  # the echo server sees the end, closes, and so does the relay
        with trio.fail_after(5):
            assert await client.receive_some() == b""
    assert echo.connections == 1


async def test_a_blocked_route_black_holes_connects_and_open_connections(
    relay: TcpRelay, echo: EchoServer
) -> None:
    port = _forward(relay, echo)
    async with await trio.open_tcp_stream("127.0.0.1", port) as client:
        await client.send_all(b"before")
        assert await client.receive_some() == b"before"

        relay.block("echo")
        assert relay.blocked("echo")
        await client.send_all(b"during")
        assert await _silent(client), "an open connection got an answer through the block"
        assert await _connect_hangs(port), "a connect got through the block"
        assert echo.received == [b"before"]

        relay.unblock("echo")
        assert not relay.blocked("echo")
        with trio.fail_after(5):  # the bytes held during the block flow on
            assert await client.receive_some() == b"during"
        assert echo.received == [b"before", b"during"]
        assert await _echoes(port, b"after")
    # The relay's own queue filler never reached the target: the two clients did.
    assert echo.connections == 2


async def test_a_connect_waiting_on_a_block_completes_when_it_lifts(
    relay: TcpRelay, echo: EchoServer
) -> None:
    port = _forward(relay, echo)
    relay.block("echo")
    connected: list[trio.SocketStream] = []
    done = trio.Event()

    async def connect() -> None:
        connected.append(await trio.open_tcp_stream("127.0.0.1", port))
        done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(connect)
        await trio.sleep(SILENCE)
        assert connected == []
        relay.unblock("echo")
        with trio.fail_after(10):  # its SYN is sent again 1 s, then 3 s after the first
            await done.wait()
    async with connected[0] as late:
        await late.send_all(b"late")
        with trio.fail_after(5):
            assert await late.receive_some() == b"late"


async def test_blocks_repeat_and_both_listeners_of_a_route_go_dark(relay: TcpRelay, echo: EchoServer) -> None:
    """A broker's route has two listeners (listenPort and its VIP channel): a block cuts both."""
    first = _forward(relay, echo, "broker-a")
    second = _forward(relay, echo, "broker-a")
    other = _forward(relay, echo, "broker-b")
    for _ in range(2):
        relay.block("broker-a")
        relay.block("broker-a")  # idempotent
        for port in (first, second):
            assert await _connect_hangs(port)
        assert await _echoes(other, b"y")  # another route flows on
        relay.unblock("broker-a")
        relay.unblock("broker-a")
        for port in (first, second):
            assert await _echoes(port, b"x")
    assert relay.routes().keys() == {"broker-a", "broker-b"}
    assert echo.connections == 2 * 3  # per round: both listeners once, broker-b once; no filler


async def test_a_target_that_is_down_resets_the_client(relay: TcpRelay) -> None:
    """As a stopped broker: the relay accepts, its connect is refused, the client reads a reset."""
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        dead_port = unused.getsockname()[1]  # nothing listens there once the socket is closed
    port = relay.forward("down", ("127.0.0.1", 0), ("127.0.0.1", dead_port))[1]

    async def connect_and_read() -> None:
        # The reset may come before connect() returns (it fails) or after (the read fails).
        async with await trio.open_tcp_stream("127.0.0.1", port) as client:
            await client.receive_some()

    with trio.fail_after(5), pytest.raises((OSError, trio.BrokenResourceError)) as caught:
        await connect_and_read()
    assert _resets(caught.value), caught.value


def _resets(error: BaseException | None) -> bool:
    """Whether ``error``, its cause or a member of a group among them is a connection reset."""
    if error is None:
        return False
    if isinstance(error, ConnectionResetError):
        return True
    members = error.exceptions if isinstance(error, BaseExceptionGroup) else ()
    return _resets(error.__cause__) or any(_resets(member) for member in members)


async def test_a_reset_from_the_target_reaches_the_client_as_a_reset(relay: TcpRelay) -> None:
    async def reset_at_once(stream: trio.SocketStream) -> None:
        await stream.receive_some()
        stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        stream.socket.close()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(functools.partial(trio.serve_tcp, reset_at_once, 0, host="127.0.0.1"))
        target = listeners[0].socket.getsockname()[1]
        port = relay.forward("rst", ("127.0.0.1", 0), ("127.0.0.1", target))[1]
        async with await trio.open_tcp_stream("127.0.0.1", port) as client:
            await client.send_all(b"hello")
            with trio.fail_after(5), pytest.raises(trio.BrokenResourceError) as caught:
                await client.receive_some()
        assert _resets(caught.value)
        nursery.cancel_scope.cancel()


async def test_close_closes_every_socket_and_ends_the_thread(echo: EchoServer) -> None:
    relay = TcpRelay("closing").start()
    port = _forward(relay, echo)
    async with await trio.open_tcp_stream("127.0.0.1", port) as client:
        await client.send_all(b"x")
        assert await client.receive_some() == b"x"
        relay.block("echo")  # a filler socket open as well
        relay.close()
        relay.close()  # idempotent
        assert not any(t.name == "closing" for t in threading.enumerate())
        with trio.fail_after(5):
            assert await client.receive_some() == b""  # the relay closed its side
    with pytest.raises(OSError, match="all attempts to connect"):
        await trio.open_tcp_stream("127.0.0.1", port)  # nothing listens any more
    gc.collect()  # an unclosed socket of the relay would warn here (warnings are errors)
    with pytest.raises(ClusterError, match="not running"):
        relay.block("echo")


def test_bad_routes_and_addresses_are_clear_errors() -> None:
    with TcpRelay("errors") as relay:
        with pytest.raises(ClusterError, match="no route 'nope'"):
            relay.block("nope")
        port = relay.forward("a", ("127.0.0.1", 0), ("127.0.0.1", 9))[1]
        with pytest.raises(ClusterError, match=r"cannot listen on 127\.0\.0\.1"):
            relay.forward("b", ("127.0.0.1", port), ("127.0.0.1", 9))
        assert list(relay.routes()) == ["a"]
