"""``rocketmq_py.testing._netfault``: a blocked loopback port swallows connects and traffic both ways
until unblocked, and the iptables rules are exactly the ones added, removed again."""

from __future__ import annotations

import subprocess

import pytest
import trio

from rocketmq_py.testing._netfault import COMMENT_PREFIX, block_ports, rule_specs, unblock


def test_rule_specs_drop_both_directions_on_loopback() -> None:
    specs = rule_specs([10909, 10911], "c1/broker-a")
    assert [spec[4:6] for spec in specs] == [
        ["--dport", "10909"],
        ["--sport", "10909"],
        ["--dport", "10911"],
        ["--sport", "10911"],
    ]
    for spec in specs:
        assert spec[:4] == ["-i", "lo", "-p", "tcp"]
        assert spec[-2:] == ["-j", "DROP"]
        assert f"{COMMENT_PREFIX}c1/broker-a" in spec


def _our_rules(tag: str) -> list[str]:
    listing = subprocess.run(["iptables", "-w", "-S", "INPUT"], capture_output=True, text=True, check=True)
    return [line for line in listing.stdout.splitlines() if f"{COMMENT_PREFIX}{tag}" in line]


async def test_a_blocked_port_black_holes_connects_and_open_connections() -> None:
    received: list[bytes] = []

    async def serve(stream: trio.SocketStream) -> None:
        async for data in stream:
            received.append(data)
            await stream.send_all(data)

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(trio.serve_tcp, serve, 0)
        port = listeners[0].socket.getsockname()[1]
        tag = f"test-{port}"
        client = await trio.open_tcp_stream("127.0.0.1", port)
        await client.send_all(b"before")
        assert await client.receive_some() == b"before"

        block_ports([port], tag)
        try:
            assert len(_our_rules(tag)) == 2
            await client.send_all(b"during")
            with trio.move_on_after(0.5):  # loopback answers in microseconds when not blocked
                await client.receive_some()
                pytest.fail("an open connection got an answer through the block")
            with trio.move_on_after(0.5):
                await trio.open_tcp_stream("127.0.0.1", port)
                pytest.fail("a connect got through the block")
        finally:
            unblock(tag)
        assert _our_rules(tag) == []
        # TCP retransmits the segment sent during the block; the answer follows.
        with trio.fail_after(10):
            assert await client.receive_some() == b"during"
        assert received == [b"before", b"during"]
        await client.aclose()
        nursery.cancel_scope.cancel()
