"""ReadWrite: a connection's reads and writes on the stdlib socket of a TCP stream, or on any stream."""

from __future__ import annotations

import os

import trio
import trio.testing

from rocketmq_py._transport._io import ReadWrite, raw_socket


async def _tcp_pair() -> tuple[trio.SocketStream, trio.SocketStream]:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    client = await trio.open_tcp_stream("127.0.0.1", port)
    server = await listeners[0].accept()
    await listeners[0].aclose()
    assert isinstance(server, trio.SocketStream)
    return client, server


async def test_a_tcp_stream_is_read_and_written_on_its_socket() -> None:
    client, server = await _tcp_pair()
    async with client, server:
        assert raw_socket(client) is not None  # this trio release keeps the socket where we look
        writer, reader = ReadWrite(client), ReadWrite(server)
        assert writer.direct
        assert reader.direct
        # More than a socket buffer holds: the first send is partial and trio writes the rest.
        data = os.urandom(8 * 1024 * 1024)
        received = bytearray()

        async def read_all() -> None:
            while len(received) < len(data):
                received.extend(await reader.receive(256 * 1024))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_all)
            await writer.send_all(data)
        assert bytes(received) == data
        await client.send_eof()
        assert await reader.receive(1024) == b""  # the end of the stream


async def test_other_streams_use_their_own_methods() -> None:
    left, right = trio.testing.memory_stream_pair()
    writer, reader = ReadWrite(left), ReadWrite(right)
    assert not writer.direct
    assert not reader.direct
    await writer.send_all(b"frame")
    assert await reader.receive(1024) == b"frame"
