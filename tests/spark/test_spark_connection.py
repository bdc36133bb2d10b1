"""The reader's clients get the connection settings: TLS, the security token, the ``client.`` options.

Every reader client (planning and offset commits on the driver, pulls on the executors) opens its
connections with :func:`~spark_connector._metadata.connection_pool` and calls through
:func:`~spark_connector._metadata.reader_api`; these tests check the keyword arguments they build,
and then a read over TLS from an in-process broker that serves TLS with a certificate of a CA made
for the test (no JVM).
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import pytest
import trio

from rocketmq_py._transport._hooks import ACCESS_KEY, SECURITY_TOKEN, SIGNATURE, acl_signature
from rocketmq_py.errors import RocketMQError
from rocketmq_py.lowlevel import AclRPCHook, ConnectionPool
from rocketmq_py.protocol import Message, RemotingCommand, RequestCode, SerializeType
from rocketmq_py.testing._fake_broker import FakeBroker
from rocketmq_py.testing._tls import TlsFiles, make_tls_files
from spark_connector import SparkOptionError
from spark_connector._client_options import TlsOptions, build_ssl_context
from spark_connector._metadata import pool_keywords, queue_states, reader_api, run_with_api
from spark_connector._options import ReadOptions, parse_read_options
from spark_connector._planning import QueueRange, RocketMQPartition
from spark_connector._read import iter_partition

TOPIC = "tls-t"
SECRET = "sk-secret-1"
TOKEN = "sts-token-1"
SIGNED = {"accessKey": "ak-1", "secretKey": SECRET, "securityToken": TOKEN}


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command line tool to make a CA")
    return make_tls_files(tmp_path_factory.mktemp("tls"))


def server_context(files: TlsFiles) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(files.server_cert, files.server_key)
    return context


def read(namesrv: str = "127.0.0.1:9876", **options: str) -> ReadOptions:
    return parse_read_options({"namesrv": namesrv, "topic": TOPIC, **options}, streaming=False)


def assert_signed_with_the_token(request: RemotingCommand) -> None:
    fields = dict(request.ext_fields)
    assert (fields[ACCESS_KEY], fields[SECURITY_TOKEN]) == ("ak-1", TOKEN)
    assert fields.pop(SIGNATURE) == acl_signature(SECRET, fields, request.body)


def test_plain_options_give_a_plain_pool() -> None:
    assert pool_keywords(read()) == {"hooks": [], "ssl_context": None}
    assert pool_keywords(read(accessKey="ak-1", secretKey=SECRET))["hooks"][0].__class__ is AclRPCHook


def test_every_setting_reaches_the_pool_and_the_api(tls_files: TlsFiles) -> None:
    options = read(
        **SIGNED,
        tls="true",
        tlsCaFile=str(tls_files.ca_cert),
        pullTimeoutMs="2500",
        **{"client.serializeType": "rocketmq", "client.closeConnectionOnTimeout": "false"},
    )
    keywords = pool_keywords(options)
    assert set(keywords) == {"hooks", "ssl_context", "serialize_type", "close_on_timeout"}
    (hook,) = keywords["hooks"]
    assert_signed_with_the_token(
        hook.before_request(RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))
    )
    context = keywords["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert (context.verify_mode, context.check_hostname) == (ssl.CERT_REQUIRED, True)
    assert (keywords["serialize_type"], keywords["close_on_timeout"]) == (SerializeType.ROCKETMQ, False)
    api = reader_api(ConnectionPool(**keywords), options)
    assert (api.timeout, api.serialize_type) == (2.5, SerializeType.ROCKETMQ)


def test_the_context_follows_the_verify_options() -> None:
    unverified = build_ssl_context(TlsOptions(verify=False, check_hostname=False))
    assert (unverified.verify_mode, unverified.check_hostname) == (ssl.CERT_NONE, False)
    any_name = build_ssl_context(TlsOptions(check_hostname=False))
    assert (any_name.verify_mode, any_name.check_hostname) == (ssl.CERT_REQUIRED, False)


def _encrypted_key(files: TlsFiles, password: str) -> Path:
    out = files.server_key.with_name("encrypted.key")
    subprocess.run(
        [
            "openssl",
            "pkey",
            "-in",
            str(files.server_key),
            "-aes256",
            "-passout",
            f"pass:{password}",
            "-out",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    return out


def test_files_that_do_not_load_name_their_option(tls_files: TlsFiles, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    cert, key = str(tls_files.server_cert), str(tls_files.server_key)
    encrypted = str(_encrypted_key(tls_files, "key-pw-1"))
    cases = [
        (TlsOptions(ca_file=str(tmp_path / "missing.pem")), "tlsCaFile"),
        (TlsOptions(ca_file=str(garbage)), "tlsCaFile"),
        (TlsOptions(cert_file=str(tmp_path / "missing.pem")), "tlsCertFile"),
        (TlsOptions(cert_file=cert, key_file=str(tmp_path / "missing.key")), "tlsKeyFile"),
        (TlsOptions(cert_file=str(garbage), key_file=key), "tlsCertFile"),
        (TlsOptions(cert_file=cert, key_file=encrypted), "tlsKeyPassword"),  # no prompt
        (TlsOptions(cert_file=cert, key_file=encrypted, key_password="wrong-pw-1"), "tlsCertFile"),
    ]
    for tls, option in cases:
        with pytest.raises(SparkOptionError) as caught:
            build_ssl_context(tls)
        assert caught.value.option == option, (tls, caught.value)
        assert "pw-1" not in str(caught.value)
    build_ssl_context(TlsOptions(cert_file=cert, key_file=encrypted, key_password="key-pw-1"))
    build_ssl_context(TlsOptions(cert_file=cert, key_file=key))
    # Where the reader builds its pool, on the driver as on an executor.
    with pytest.raises(SparkOptionError, match="option 'tlsCaFile'"):
        pool_keywords(read(tls="true", tlsCaFile=str(garbage)))


async def test_planning_and_pulls_over_tls_signed_with_the_token(tls_files: TlsFiles) -> None:
    async with FakeBroker(ssl_context=server_context(tls_files)) as broker:
        broker.add_topic(TOPIC, queues=1)  # its route names the broker itself: namesrv and broker in one
        broker.put_messages(0, [Message(TOPIC, b"m%d" % i) for i in range(5)])
        options = read(broker.address, **SIGNED, tls="true", tlsCaFile=str(tls_files.ca_cert))
        states = await trio.to_thread.run_sync(
            lambda: run_with_api(options, lambda api: queue_states(api, options, [TOPIC]))
        )
        assert [(s.min_offset, s.max_offset) for s in states] == [(0, 5)]
        partition = RocketMQPartition(
            0, "spark-partition-0000", [QueueRange(TOPIC, broker.broker_name, 0, 0, 5)]
        )
        batches = await trio.to_thread.run_sync(lambda: list(iter_partition(partition, options)))
        assert [bytes(b) for batch in batches for b in batch.column("body").to_pylist()] == [
            b"m%d" % i for i in range(5)
        ]
        requests = broker.requests()
    assert {RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.PULL_MESSAGE} <= {r.code for r in requests}
    for request in requests:
        assert_signed_with_the_token(request)


async def test_servers_the_options_do_not_trust_are_refused(tls_files: TlsFiles) -> None:
    async with FakeBroker(ssl_context=server_context(tls_files)) as broker:
        broker.add_topic(TOPIC, queues=1)

        def plan(**options: str) -> object:
            chosen = read(broker.address, tls="true", pullTimeoutMs="5000", **options)
            return run_with_api(chosen, lambda api: queue_states(api, chosen, [TOPIC]))

        with pytest.raises(RocketMQError, match="certificate verify failed"):  # not a CA the system knows
            await trio.to_thread.run_sync(plan)
        await trio.to_thread.run_sync(lambda: plan(tlsVerify="false"))  # encrypted, trusting anyone
