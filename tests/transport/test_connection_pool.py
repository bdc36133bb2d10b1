"""ConnectionPool: one connect per address, replacement after a drop, shared failures."""

from __future__ import annotations

import functools
import ssl

import pytest
import trio
import trio.testing

from rocketmq_py._transport import Connection, ConnectionPool
from rocketmq_py.errors import ConnectionFailed, StateError
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.testing._fake_broker import FakeBroker

ECHO = 9001  # the fake_broker fixture echoes this code


async def test_concurrent_gets_connect_once(fake_broker: FakeBroker) -> None:
    got: list[Connection] = []
    async with ConnectionPool() as pool:

        async def get() -> None:
            got.append(await pool.get(fake_broker.address))

        async with trio.open_nursery() as nursery:
            for _ in range(20):
                nursery.start_soon(get)
        assert pool.statistics().connections == 1
        assert pool.statistics().connecting == 0
    assert len(got) == 20
    assert len({id(conn) for conn in got}) == 1
    assert fake_broker.accepted == 1


async def test_request_and_oneway_through_the_pool(fake_broker: FakeBroker) -> None:
    async with ConnectionPool() as pool:
        response = await pool.request(
            fake_broker.address, RemotingCommand.request(ECHO, {"k": "v"}), timeout=3
        )
        await pool.oneway(fake_broker.address, RemotingCommand.request(ECHO, {"k": "oneway"}))
        await fake_broker.wait_received(2)
    assert response.ext_fields["k"] == "v"
    assert [cmd.is_oneway for cmd in fake_broker.received] == [False, True]
    assert fake_broker.accepted == 1


async def test_dropped_connection_is_replaced_on_next_use(fake_broker: FakeBroker) -> None:
    async with ConnectionPool() as pool:
        first = await pool.get(fake_broker.address)
        await fake_broker.drop_clients()
        await trio.testing.wait_all_tasks_blocked()
        assert first.is_closed
        assert pool.statistics().connections == 0

        response = await pool.request(fake_broker.address, RemotingCommand.request(ECHO), timeout=3)
        assert response.code == 0
        second = await pool.get(fake_broker.address)
        assert second is not first
        assert not second.is_closed
    assert fake_broker.accepted == 2


async def test_one_pool_many_addresses() -> None:
    async with FakeBroker(defaults=False) as a, FakeBroker(defaults=False) as b, ConnectionPool() as pool:
        a.on_reply(ECHO, remark="a")
        b.on_reply(ECHO, remark="b")
        ra = await pool.request(a.address, RemotingCommand.request(ECHO), timeout=3)
        rb = await pool.request(b.address, RemotingCommand.request(ECHO), timeout=3)
        assert (ra.remark, rb.remark) == ("a", "b")
        assert pool.statistics().connections == 2
        assert len(list(pool.connections())) == 2


async def test_failed_connect_fails_every_waiter_once(autojump_clock: object) -> None:
    # A server that accepts TCP but never speaks: a TLS handshake with it can only time out.
    accepted = 0

    async def mute(stream: trio.SocketStream) -> None:
        nonlocal accepted
        accepted += 1
        await trio.sleep_forever()

    async with trio.open_nursery() as server_nursery:
        serve = functools.partial(trio.serve_tcp, mute, 0, host="127.0.0.1")
        listeners: list[trio.SocketListener] = await server_nursery.start(serve)
        port = listeners[0].socket.getsockname()[1]
        address = f"127.0.0.1:{port}"

        errors: list[ConnectionFailed] = []
        async with ConnectionPool(ssl_context=ssl.create_default_context(), connect_timeout=2) as pool:

            async def get() -> None:
                try:
                    await pool.get(address)
                except ConnectionFailed as exc:
                    errors.append(exc)

            start = trio.current_time()
            async with trio.open_nursery() as nursery:
                for _ in range(5):
                    nursery.start_soon(get)
            assert trio.current_time() - start == pytest.approx(2)
            assert pool.statistics().connecting == 0
        server_nursery.cancel_scope.cancel()

    assert len(errors) == 5
    assert all("timed out" in str(exc) for exc in errors)
    assert accepted == 1


async def test_failed_connect_is_retried_by_the_next_get() -> None:
    async with ConnectionPool() as pool:
        async with FakeBroker(defaults=False) as fb:
            address = fb.address
        with pytest.raises(ConnectionFailed):
            await pool.get(address)  # nobody listens any more
        with pytest.raises(ConnectionFailed):
            await pool.get(address)  # a new attempt, not a cached failure
        assert pool.statistics().connecting == 0


async def test_closed_pool_refuses_calls(fake_broker: FakeBroker) -> None:
    pool = ConnectionPool()
    with pytest.raises(StateError):
        await pool.get(fake_broker.address)  # not entered yet
    async with pool:
        conn = await pool.get(fake_broker.address)
    assert conn.is_closed
    assert pool.statistics().closed
    with pytest.raises(StateError):
        await pool.get(fake_broker.address)
    with pytest.raises(StateError):
        async with pool:
            pass


async def test_pool_passes_hooks_and_handlers(fake_broker: FakeBroker) -> None:
    from rocketmq_py._transport import AclRPCHook

    async def status(request: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response(request, 0, remark="fine")

    async with ConnectionPool(hooks=[AclRPCHook("ak", "sk")], handlers={221: status}) as pool:
        await pool.request(fake_broker.address, RemotingCommand.request(ECHO), timeout=3)
        reply = await fake_broker.send_to_client(RemotingCommand.request(221))
    assert fake_broker.received[0].ext_fields["AccessKey"] == "ak"
    assert reply is not None
    assert reply.remark == "fine"


async def test_body_error_leaves_the_pool_unwrapped(fake_broker: FakeBroker) -> None:
    async def use_pool() -> None:
        async with ConnectionPool() as pool:
            await pool.get(fake_broker.address)
            raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        await use_pool()


async def test_pool_repr_and_statistics(fake_broker: FakeBroker) -> None:
    async with ConnectionPool() as pool:
        await pool.get(fake_broker.address)
        assert "1 connections" in repr(pool)
        assert pool.statistics().pending_requests == 0
