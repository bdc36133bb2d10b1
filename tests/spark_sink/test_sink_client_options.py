"""The sink's producers get the connection settings: TLS, the security token, the ``client.`` options.

Every task builds its producer as ``Producer(producerGroup, **producer_keywords(options))``; these
tests check those keyword arguments on a real (unstarted) Producer, then a write over TLS to an
in-process broker that serves TLS with a certificate of a CA made for the test (no JVM, no Spark
session: the writer's task function runs on its own).
"""

from __future__ import annotations

import shutil
import ssl
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import trio
from pyspark.sql.types import BinaryType, StringType, StructField, StructType

from rocketmq_py import Producer
from rocketmq_py._client._instance import ClientInstance
from rocketmq_py._transport._hooks import ACCESS_KEY, SECURITY_TOKEN, SIGNATURE, acl_signature
from rocketmq_py.lowlevel import DEFAULT_SEND_TIMEOUT, MAX_MESSAGE_SIZE
from rocketmq_py.protocol import CompressionType, RemotingCommand, RequestCode, SerializeType
from rocketmq_py.testing._fake_broker import FakeBroker
from rocketmq_py.testing._tls import TlsFiles, make_tls_files
from spark_connector import SparkOptionError
from spark_connector._options import parse_sink_options
from spark_connector._sink import RocketMQWriter, producer_keywords

TOPIC = "tls-sink"
SECRET = "sk-secret-1"
TOKEN = "sts-token-1"
SIGNED = {"accessKey": "ak-1", "secretKey": SECRET, "securityToken": TOKEN}


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command line tool to make a CA")
    return make_tls_files(tmp_path_factory.mktemp("tls"))


def assert_signed_with_the_token(request: RemotingCommand) -> None:
    fields = dict(request.ext_fields)
    assert (fields[ACCESS_KEY], fields[SECURITY_TOKEN]) == ("ak-1", TOKEN)
    assert fields.pop(SIGNATURE) == acl_signature(SECRET, fields, request.body)


def test_plain_options_give_the_producer_its_defaults() -> None:
    keywords = producer_keywords(parse_sink_options({"namesrv": "127.0.0.1:9876"}))
    assert keywords == {
        "namesrv": "127.0.0.1:9876",
        "send_timeout": DEFAULT_SEND_TIMEOUT,
        "max_message_size": MAX_MESSAGE_SIZE,
        "access_key": None,
        "secret_key": None,
        "security_token": None,
        "ssl_context": None,
        "namespace": None,
        "enable_trace": False,
        "trace_topic": None,
    }
    producer = Producer("g", **keywords)
    assert (producer.config.ssl_context, producer.config.security_token) == (None, None)


def test_every_setting_reaches_the_producer(tls_files: TlsFiles) -> None:
    options = parse_sink_options(
        {
            "namesrv": "127.0.0.1:9876",
            **SIGNED,
            "tls": "true",
            "tlsCaFile": str(tls_files.ca_cert),
            "tlsCheckHostname": "false",
            "client.serializeType": "ROCKETMQ",
            "client.closeConnectionOnTimeout": "false",
            "client.requestTimeout": "1.5",
            "client.attemptTimeout": "none",
            "client.retryTimes": "4",
            "client.retryAnotherBrokerWhenNotStoreOk": "true",
            "client.compressOver": "128",
            "client.compressType": "ZSTD",
            "client.compressLevel": "9",
            "client.autoCreateTopic": "false",
            "client.defaultTopicQueueNums": "2",
        }
    )
    producer = Producer("g", **producer_keywords(options))
    config = producer.config
    assert isinstance(config.ssl_context, ssl.SSLContext)
    assert (config.ssl_context.verify_mode, config.ssl_context.check_hostname) == (ssl.CERT_REQUIRED, False)
    assert (config.access_key, config.secret_key, config.security_token) == ("ak-1", SECRET, TOKEN)
    assert (config.serialize_type, config.close_connection_on_timeout) == (SerializeType.ROCKETMQ, False)
    assert config.request_timeout == 1.5
    assert (
        producer.attempt_timeout,
        producer.retry_times,
        producer.retry_another_broker_when_not_store_ok,
    ) == (
        None,
        4,
        True,
    )
    assert (producer.compress_over, producer.compress_type, producer.compress_level) == (
        128,
        CompressionType.ZSTD,
        9,
    )
    assert (producer.auto_create_topic, producer.default_topic_queue_nums) == (False, 2)
    # The instance a started producer opens signs with the token (its connections use the context).
    (hook,) = ClientInstance(config)._hooks()
    assert_signed_with_the_token(hook.before_request(RemotingCommand.request(RequestCode.HEART_BEAT)))


def test_a_tls_file_that_does_not_load_fails_where_the_producer_is_built() -> None:
    options = parse_sink_options(
        {"namesrv": "127.0.0.1:9876", "tls": "true", "tlsCaFile": "/nonexistent/ca.pem"}
    )
    with pytest.raises(SparkOptionError, match=r"option 'tlsCaFile': '/nonexistent/ca\.pem' does not load"):
        producer_keywords(options)


async def test_a_task_writes_over_tls_signed_with_the_token(
    tls_files: TlsFiles, spark_batches: Callable[..., Iterator[Any]]
) -> None:
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(tls_files.server_cert, tls_files.server_key)
    schema = StructType([StructField("body", BinaryType()), StructField("tags", StringType())])
    async with FakeBroker(ssl_context=server) as broker:
        broker.add_topic(TOPIC, queues=1)  # its route names the broker itself: namesrv and broker in one
        writer = RocketMQWriter(
            {
                "namesrv": broker.address,
                "topic": TOPIC,
                **SIGNED,
                "tls": "true",
                "tlsCaFile": str(tls_files.ca_cert),
                "client.retryTimes": "0",
            },
            schema,
            overwrite=False,
        )
        rows = [(b"r%d" % i, "T") for i in range(3)]
        report = await trio.to_thread.run_sync(lambda: writer.write(spark_batches(schema, rows)))
        stored = broker.messages(TOPIC, 0)
        requests = broker.requests()
    assert report.rows == 3
    assert [m.body for m in stored] == [b"r0", b"r1", b"r2"]
    assert RequestCode.SEND_BATCH_MESSAGE in {r.code for r in requests}
    for request in requests:
        assert_signed_with_the_token(request)
