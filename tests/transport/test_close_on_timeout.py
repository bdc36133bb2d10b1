"""Close on timeout (issue 11, defect 7) and TCP keepalive on client sockets.

A call that times out while nothing at all arrives on its connection closes the connection (Java
``clientCloseSocketIfTimeout``): the other pending calls fail with ConnectionFailed at once and the
pool reconnects on next use. A connection that keeps delivering other responses stays open.
"""

from __future__ import annotations

import math
import socket

import pytest
import trio
import trio.testing

from rocketmq_py._transport import ConnectionPool, open_connection
from rocketmq_py._transport._open import (
    DEFAULT_CONNECT_TIMEOUT,
    KEEPALIVE_COUNT,
    KEEPALIVE_IDLE,
    KEEPALIVE_INTERVAL,
    open_stream,
)
from rocketmq_py.errors import ConnectionFailed, RequestTimeout
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.testing._fake_broker import FakeBroker

ECHO = 9001  # the fake_broker fixture echoes this code
STUCK = 9002  # a code the tests make the broker never answer


async def test_a_call_timing_out_on_a_silent_connection_closes_it(
    fake_broker: FakeBroker, autojump_clock: object
) -> None:
    fake_broker.on_reply(STUCK)
    fake_broker.never_reply(STUCK)
    outcomes: list[tuple[str, BaseException, float]] = []

    async def call(name: str, timeout: float) -> None:  # noqa: ASYNC109 - the call's RPC deadline
        try:
            await conn.request(RemotingCommand.request(STUCK, {"n": name}), timeout=timeout)
        except Exception as exc:
            outcomes.append((name, exc, trio.current_time()))

    async with open_connection(fake_broker.address) as conn:
        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call, "short", 2.0)
            nursery.start_soon(call, "long", 30.0)  # a long poll, say
        assert conn.is_closed

    by_name = {name: (exc, when - start) for name, exc, when in outcomes}
    short_error, short_at = by_name["short"]
    long_error, long_at = by_name["long"]
    assert type(short_error) is RequestTimeout
    assert "connection was closed" in str(short_error)
    # The long call did not wait out its 30 s: it failed with the connection, at the timeout.
    assert type(long_error) is ConnectionFailed
    assert short_at == long_at == pytest.approx(2.0)
    assert fake_broker.address in str(long_error)
    assert "no response to 9002" in str(long_error)


async def test_the_pool_reconnects_after_a_close_on_timeout(
    fake_broker: FakeBroker, autojump_clock: object
) -> None:
    fake_broker.on_reply(STUCK)
    fake_broker.never_reply(STUCK)
    async with ConnectionPool() as pool:
        first = await pool.get(fake_broker.address)
        with pytest.raises(RequestTimeout):
            await pool.request(fake_broker.address, RemotingCommand.request(STUCK), timeout=1)
        assert first.is_closed
        response = await pool.request(fake_broker.address, RemotingCommand.request(ECHO), timeout=1)
        assert response.code == 0
        assert await pool.get(fake_broker.address) is not first
    assert fake_broker.accepted == 2


async def test_a_connection_that_answers_other_calls_stays_open(
    fake_broker: FakeBroker, autojump_clock: object
) -> None:
    # The peer is alive, only slow on this one request: closing would fail the others for nothing.
    fake_broker.on_reply(STUCK)
    fake_broker.never_reply(STUCK)
    answered = 0
    async with open_connection(fake_broker.address) as conn:

        async def keep_talking() -> None:
            nonlocal answered
            while True:
                await conn.request(RemotingCommand.request(ECHO), timeout=1)
                answered += 1
                await trio.sleep(0.5)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(keep_talking)
            await trio.sleep(0.1)
            with pytest.raises(RequestTimeout) as info:
                await conn.request(RemotingCommand.request(STUCK), timeout=2)
            nursery.cancel_scope.cancel()
        assert not conn.is_closed
        assert "closed" not in str(info.value)
        assert answered >= 4
        assert (await conn.request(RemotingCommand.request(ECHO), timeout=1)).code == 0


async def test_close_on_timeout_can_be_turned_off(fake_broker: FakeBroker, autojump_clock: object) -> None:
    fake_broker.on_reply(STUCK)
    fake_broker.never_reply(STUCK)
    async with ConnectionPool(close_on_timeout=False) as pool:
        first = await pool.get(fake_broker.address)
        with pytest.raises(RequestTimeout):
            await pool.request(fake_broker.address, RemotingCommand.request(STUCK), timeout=1)
        assert not first.is_closed
        await pool.request(fake_broker.address, RemotingCommand.request(ECHO), timeout=1)
    assert fake_broker.accepted == 1


async def test_a_wait_shorter_than_the_minimum_closes_nothing(
    fake_broker: FakeBroker, autojump_clock: object
) -> None:
    # Java's MIN_CLOSE_TIMEOUT_MILLIS: a short wait (connecting ate the deadline) says nothing.
    fake_broker.on_reply(STUCK)
    fake_broker.never_reply(STUCK)
    async with open_connection(fake_broker.address) as conn:
        with pytest.raises(RequestTimeout):
            await conn.request(RemotingCommand.request(STUCK), timeout=0.05)
        assert not conn.is_closed


async def test_a_call_without_a_deadline_never_closes(
    fake_broker: FakeBroker, autojump_clock: object
) -> None:
    fake_broker.on_reply(STUCK)
    fake_broker.never_reply(STUCK)
    async with open_connection(fake_broker.address) as conn:
        with trio.move_on_after(100):  # the caller's own cancel: not a call timeout
            await conn.request(RemotingCommand.request(STUCK), timeout=math.inf)
        assert not conn.is_closed


async def test_client_sockets_have_keepalive_with_short_probes(fake_broker: FakeBroker) -> None:
    stream = await open_stream(fake_broker.address, None, DEFAULT_CONNECT_TIMEOUT)
    try:
        assert isinstance(stream, trio.SocketStream)
        sock = stream.socket
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        if hasattr(socket, "TCP_KEEPIDLE"):
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == KEEPALIVE_IDLE
        if hasattr(socket, "TCP_KEEPINTVL"):
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == KEEPALIVE_INTERVAL
        if hasattr(socket, "TCP_KEEPCNT"):
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == KEEPALIVE_COUNT
    finally:
        await stream.aclose()
    # A silent peer is given up on within a minute of idleness (Linux's default is over two hours).
    assert KEEPALIVE_IDLE + KEEPALIVE_COUNT * KEEPALIVE_INTERVAL <= 60
