"""TLS for a test cluster: a throw-away CA and a server certificate for 127.0.0.1, and the JVM settings.

The certificates come from the ``openssl`` command line tool (installed nearly everywhere; the SDK
takes no dependency for a test helper)::

    <dir>/ca.pem, ca.key          self-signed CA, valid for 2 days
    <dir>/server.pem, server.key  signed by the CA; SAN IP:127.0.0.1, DNS:localhost; PKCS#8 key

RocketMQ reads its TLS settings from system properties (``TlsSystemConfig``, the same keys in 4.9.x
and 5.x). A NameServer and a broker in ``enforcing`` mode close any connection whose first byte is
not a TLS handshake; the broker's own client (registration with the NameServer, a slave's calls to
its master) and the Java tools speak TLS because ``tls.enable`` is on, and they verify the server
against the CA (``tls.client.authServer``). Test mode (a fresh self-signed certificate per start,
trusted blindly by clients) is off, so every side checks what it talks to.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path

from rocketmq_py.errors import ClusterError

__all__ = ["TlsFiles", "make_tls_files"]

_DAYS = "2"
_SERVER_EXTENSIONS = """\
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
"""


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """The CA and server certificate of one test cluster."""

    ca_cert: Path
    server_cert: Path
    server_key: Path

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts this cluster's CA only and checks the host name (127.0.0.1)."""
        return ssl.create_default_context(cafile=str(self.ca_cert))

    def jvm_properties(self, config_file: Path) -> list[str]:
        """``-D`` flags that make a NameServer or broker enforce TLS with these files.

        ``config_file`` is a path that does not exist: RocketMQ otherwise reads
        ``/etc/rocketmq/tls.properties`` over these flags when that file is there.
        """
        return [
            f"-Dtls.config.file={config_file}",
            "-Dtls.server.mode=enforcing",
            "-Dtls.test.mode.enable=false",
            f"-Dtls.server.certPath={self.server_cert}",
            f"-Dtls.server.keyPath={self.server_key}",
            "-Dtls.server.need.client.auth=none",
            *self.tool_properties(config_file),
        ]

    def tool_properties(self, config_file: Path) -> list[str]:
        """``-D`` flags for a TLS client JVM (the broker's own client, mqadmin) that checks the server."""
        return [
            f"-Dtls.config.file={config_file}",
            "-Dtls.enable=true",
            "-Dtls.test.mode.enable=false",
            "-Dtls.client.authServer=true",
            f"-Dtls.client.trustCertPath={self.ca_cert}",
        ]


def _openssl(*args: str, cwd: Path) -> None:
    exe = shutil.which("openssl")
    if exe is None:
        raise ClusterError("a TLS test cluster needs the openssl command line tool; install openssl")
    done = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ClusterError(f"openssl {args[0]} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")


def make_tls_files(directory: Path) -> TlsFiles:
    """Create a CA and a server certificate for 127.0.0.1 in ``directory`` (created if missing).

    Raises:
        ClusterError: ``openssl`` is missing or failed.
    """
    directory.mkdir(parents=True, exist_ok=True)
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", _DAYS,
        "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=rocketmq-py test CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=directory,
    )  # fmt: skip
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
        "-subj", "/CN=127.0.0.1",
        cwd=directory,
    )  # fmt: skip
    (directory / "server.ext").write_text(_SERVER_EXTENSIONS)
    _openssl(
        "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-days", _DAYS, "-out", "server.pem", "-extfile", "server.ext",
        cwd=directory,
    )  # fmt: skip
    files = TlsFiles(directory / "ca.pem", directory / "server.pem", directory / "server.key")
    if "BEGIN PRIVATE KEY" not in files.server_key.read_text():
        raise ClusterError("openssl wrote a key that is not PKCS#8 PEM; RocketMQ (netty) cannot read it")
    return files
