"""TLS: a round trip over trio.SSLStream, a refused certificate, and TLS/plaintext mismatches.

A mismatch gives :class:`TlsMismatch` naming the address and what probably happened, never a hang
(the ``fail_after`` guards turn a hang into a failure instead of a stuck test).

Neither trustme nor cryptography is installed, so the self-signed certificate comes from the
``openssl`` command line tool.
"""

from __future__ import annotations

import functools
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest
import trio
import trio.testing

from rocketmq_py._transport import Connection, ConnectionPool, open_connection
from rocketmq_py.errors import ConnectionFailed, TlsMismatch
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.testing._fake_broker import FakeBroker

ECHO = 9001


async def _echo(request: RemotingCommand) -> RemotingCommand | None:
    if request.is_oneway:
        return None
    return RemotingCommand.response(request, 0, ext_fields=request.ext_fields, body=request.body)


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed EC certificate for 127.0.0.1 / localhost, and its key."""
    openssl = shutil.which("openssl")
    assert openssl is not None, "the openssl tool is needed to make a test certificate"
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *(openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"),
            *("-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost"),
            *("-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def _server_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


async def test_tls_round_trip(certificate: tuple[Path, Path]) -> None:
    cert, key = certificate
    client_context = ssl.create_default_context(cafile=str(cert))
    async with FakeBroker(defaults=False, ssl_context=_server_context(cert, key)) as fb:
        fb.on(ECHO, _echo)
        async with open_connection(fb.address, ssl_context=client_context) as conn:
            response = await conn.request(
                RemotingCommand.request(ECHO, {"k": "v"}, b"x" * 100_000), timeout=5
            )
            reply = await fb.send_to_client(RemotingCommand.request(4242))
        async with ConnectionPool(ssl_context=client_context) as pool:
            await pool.request(fb.address, RemotingCommand.request(ECHO), timeout=5)
    assert response.ext_fields["k"] == "v"
    assert response.body == b"x" * 100_000
    assert reply is not None
    assert reply.code == 3
    assert fb.accepted == 2


async def test_untrusted_certificate_is_connection_failed(certificate: tuple[Path, Path]) -> None:
    cert, key = certificate
    async with FakeBroker(defaults=False, ssl_context=_server_context(cert, key)) as fb:
        with pytest.raises(ConnectionFailed, match="TLS handshake") as info:
            # The default context trusts the system CAs only, not our self-signed certificate.
            async with open_connection(fb.address, ssl_context=ssl.create_default_context()):
                pytest.fail("the handshake should not succeed")
    assert info.value.__cause__ is not None
    # A TLS server with a certificate we refuse is not a mismatch, and the message says why.
    assert type(info.value) is ConnectionFailed
    assert "certificate verify failed" in str(info.value)
    assert fb.address in str(info.value)


async def test_plain_client_against_a_tls_broker_is_a_tls_mismatch(certificate: tuple[Path, Path]) -> None:
    # A TLS-only broker closes a plaintext connection at its first bytes, without a word.
    cert, key = certificate
    async with (
        FakeBroker(defaults=False, ssl_context=_server_context(cert, key)) as fb,
        open_connection(fb.address) as conn,
    ):
        with trio.fail_after(5), pytest.raises(TlsMismatch) as info:
            await conn.request(RemotingCommand.request(ECHO), timeout=30)
        # Later calls on the connection say the same.
        with pytest.raises(TlsMismatch):
            await conn.request(RemotingCommand.request(ECHO), timeout=30)
    message = str(info.value)
    assert fb.address in message
    assert "closed during the first request" in message
    assert "does the server require TLS?" in message


async def test_tls_client_against_a_plaintext_broker_is_a_tls_mismatch(
    certificate: tuple[Path, Path],
) -> None:
    # A plaintext broker reads the ClientHello as a frame length far above its maximum and closes.
    cert, _ = certificate
    client_context = ssl.create_default_context(cafile=str(cert))
    async with FakeBroker(defaults=False) as fb:
        with trio.fail_after(5), pytest.raises(TlsMismatch) as info:
            async with open_connection(fb.address, ssl_context=client_context):
                pytest.fail("the handshake should not succeed")
        message = str(info.value)
        assert fb.address in message
        assert "TLS handshake" in message
        assert "is the server plaintext?" in message
        assert isinstance(info.value.__cause__, ssl.SSLError)

        # Through a pool, every task waiting for that connect gets the same class of error.
        outcomes: list[BaseException] = []
        async with ConnectionPool(ssl_context=client_context) as pool:

            async def call() -> None:
                try:
                    await pool.request(fb.address, RemotingCommand.request(ECHO), timeout=30)
                except ConnectionFailed as exc:
                    outcomes.append(exc)

            with trio.fail_after(5):
                async with trio.open_nursery() as nursery:
                    for _ in range(3):
                        nursery.start_soon(call)
        assert [type(exc) for exc in outcomes] == [TlsMismatch] * 3


async def test_plain_client_answered_with_tls_records_is_a_tls_mismatch() -> None:
    # A TLS server that answers our frame with an alert record (0x15, version 3.3) instead of closing.
    client_side, server_side = trio.testing.memory_stream_pair()
    conn = Connection(client_side, "tls-server:1")
    async with trio.open_nursery() as nursery:
        await nursery.start(conn.serve)

        async def answer_with_an_alert() -> None:
            await server_side.receive_some()
            await server_side.send_all(b"\x15\x03\x03\x00\x02\x02\x46")

        nursery.start_soon(answer_with_an_alert)
        with trio.fail_after(5), pytest.raises(TlsMismatch, match="answered with TLS records") as info:
            await conn.request(RemotingCommand.request(ECHO), timeout=30)
    assert "tls-server:1" in str(info.value)
    assert "does the server require TLS?" in str(info.value)


async def test_a_silent_server_times_the_handshake_out_with_a_hint(autojump_clock: object) -> None:
    async def accept_and_say_nothing(stream: trio.SocketStream) -> None:
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, accept_and_say_nothing, 0, host="127.0.0.1")
        )
        host, port = listeners[0].socket.getsockname()[:2]
        address = f"{host}:{port}"
        with pytest.raises(ConnectionFailed) as info:
            async with open_connection(address, ssl_context=ssl.create_default_context()):
                pytest.fail("the handshake should not succeed")
        nursery.cancel_scope.cancel()
    assert type(info.value) is ConnectionFailed  # a stalled TLS server looks the same: no claim
    assert f"TLS handshake with {address} timed out after 3 s" in str(info.value)
