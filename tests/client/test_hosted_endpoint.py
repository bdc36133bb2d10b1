"""Hosted endpoints (``http://MQ_INST_<id>_<x>.<region>...:8080``) given as the NameServer.

As Java's ``ClientConfig`` (``getNamesrvAddr``, ``getNamespace``) and ``NameServerAddressUtils``
(``INST_ENDPOINT_PATTERN``, ``parseInstanceIdFromEndpoint``): the ``http://`` is dropped and a
client given no namespace takes the instance id as its namespace. Here too an explicit namespace
wins, and ``""`` asks for none. The same in the CLI and the Spark options.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py import ClientConfig, Producer
from rocketmq_py.cli._parser import parse_command
from rocketmq_py.consumer._inner_producer import inner_producer
from rocketmq_py.errors import InvalidOption
from rocketmq_py.lowlevel import namespace_of_endpoint, parse_namesrv_addrs, strip_endpoint_scheme
from spark_connector._options import parse_read_options, parse_sink_options

HOST = "MQ_INST_1234567_BXkqVbAb.cn-hangzhou.mq-internal.aliyuncs.com:8080"
ENDPOINT = f"http://{HOST}"
INSTANCE = "MQ_INST_1234567_BXkqVbAb"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (ENDPOINT, INSTANCE),
        (HOST, INSTANCE),  # without the scheme too, as Java's pattern allows
        (f"  {ENDPOINT} ", INSTANCE),
        ("127.0.0.1:9876", None),
        ("mq.example.com:9876", None),
        ("http://mq.example.com:8080", None),
        ("MQ_INST_only.example.com:8080", None),  # no "_<suffix>": not an instance id
        ("http://MQ_INST_1_a:8080", None),  # no dot after the id
        ("", None),
        (None, None),
    ],
)
def test_the_instance_id_of_an_endpoint(text: str | None, expected: str | None) -> None:
    assert namespace_of_endpoint(text) == expected


@given(
    id_=st.from_regex(r"[A-Za-z0-9]{1,12}", fullmatch=True),
    suffix=st.from_regex(r"[A-Za-z0-9]{1,12}", fullmatch=True),
    port=st.integers(1, 65535),
    scheme=st.sampled_from(["", "http://"]),
)
def test_any_instance_endpoint_names_its_id_and_its_address(
    id_: str, suffix: str, port: int, scheme: str
) -> None:
    host = f"MQ_INST_{id_}_{suffix}.region.example.com:{port}"
    assert namespace_of_endpoint(scheme + host) == f"MQ_INST_{id_}_{suffix}"
    assert parse_namesrv_addrs(scheme + host) == [host]
    assert strip_endpoint_scheme(scheme + host) == host


def test_the_scheme_goes_from_every_address() -> None:
    assert parse_namesrv_addrs(f"{ENDPOINT};http://10.0.0.2:8080") == [HOST, "10.0.0.2:8080"]
    assert ClientConfig(namesrv=ENDPOINT).namesrv_addrs() == [HOST]


@pytest.mark.parametrize("text", ["https://mq.example.com:8080", "tcp://10.0.0.1:9876", "http://h:1/path:2"])
def test_another_scheme_is_a_typed_error_naming_the_address(text: str) -> None:
    with pytest.raises(InvalidOption, match="is not host:port \\(an endpoint may start with http://"):
        parse_namesrv_addrs(text)


def test_a_client_given_no_namespace_takes_the_instance_id() -> None:
    assert ClientConfig(namesrv=ENDPOINT).checked_namespace() == INSTANCE
    assert ClientConfig(namesrv=ENDPOINT, namespace="mine").checked_namespace() == "mine"
    assert ClientConfig(namesrv=ENDPOINT, namespace="").checked_namespace() is None
    assert ClientConfig(namesrv="127.0.0.1:9876").checked_namespace() is None
    producer = Producer("orders-app", namesrv=ENDPOINT)
    assert (producer.namespace, producer.group) == (INSTANCE, f"{INSTANCE}%orders-app")


def test_the_environment_endpoint_counts_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCKETMQ_NAMESRV", ENDPOINT)
    config = ClientConfig()
    assert (config.namesrv_addrs(), config.checked_namespace()) == ([HOST], INSTANCE)


def test_the_inner_producer_wraps_nothing_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The consumer's send-back producer sends names wrapped already (``%RETRY%<ns>%<group>``)."""
    consumer_side = Producer("g", namesrv=ENDPOINT)
    monkeypatch.setattr(Producer, "_attach", lambda self, instance: None)
    monkeypatch.setattr(Producer, "_detach", lambda self: None)
    instance = SimpleNamespace(config=consumer_side.config)
    with inner_producer(instance) as producer:  # type: ignore[arg-type]
        assert (producer.namespace, producer.config.namesrv) == (None, ENDPOINT)


def test_the_cli_reads_it_the_same_way() -> None:
    common = parse_command(["-n", ENDPOINT, "route", "T"], {}).common
    assert (common.namesrv, common.namespace, common.wire("T")) == ((HOST,), INSTANCE, f"{INSTANCE}%T")
    explicit = parse_command(["-n", ENDPOINT, "--namespace", "ns", "route", "T"], {}).common
    assert explicit.namespace == "ns"
    none = parse_command(["-n", ENDPOINT, "--namespace", "", "route", "T"], {}).common
    assert none.namespace is None
    from_env = parse_command(["route", "T"], {"ROCKETMQ_NAMESRV": ENDPOINT}).common
    assert (from_env.namesrv, from_env.namespace) == ((HOST,), INSTANCE)


def test_the_spark_options_read_it_the_same_way() -> None:
    read = parse_read_options({"namesrv": ENDPOINT, "topic": "t1", "commitToGroup": "g"}, streaming=True)
    assert (read.namesrv, read.namespace, read.topics, read.commit_to_group) == (
        (HOST,),
        INSTANCE,
        (f"{INSTANCE}%t1",),
        f"{INSTANCE}%g",
    )
    assert (
        parse_read_options({"namesrv": ENDPOINT, "topic": "t1", "namespace": "ns"}, streaming=False).namespace
        == "ns"
    )
    sink = parse_sink_options({"namesrv": ENDPOINT, "topic": "Orders"})
    assert (sink.namesrv, sink.namespace) == (HOST, INSTANCE)
