"""TLS: a round trip over trio.SSLStream, and a refused certificate.

Neither trustme nor cryptography is installed, so the self-signed certificate comes from the
``openssl`` command line tool.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from rocketmq_py._transport import ConnectionPool, open_connection
from rocketmq_py.errors import ConnectionFailed
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


async def test_plain_client_against_a_tls_broker_fails(certificate: tuple[Path, Path]) -> None:
    cert, key = certificate
    async with (
        FakeBroker(defaults=False, ssl_context=_server_context(cert, key)) as fb,
        open_connection(fb.address) as conn,
    ):
        with pytest.raises(ConnectionFailed):
            await conn.request(RemotingCommand.request(ECHO), timeout=5)
