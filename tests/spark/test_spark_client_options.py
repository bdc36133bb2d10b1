"""``tls*``, ``securityToken`` and ``client.*`` options of the reader and the writer: parsing and errors.

The ``client.`` options are checked against the clients themselves: every keyword argument of
``Producer`` (writer), ``LitePullConsumer`` (reader) and ``ClientConfig`` (both) is either offered,
under its own name in camelCase, or refused with a reason; and against the guide's tables, through
the documentation build's own check (``docs/hooks/spark_options.py``).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import pickle
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py import ClientConfig, LitePullConsumer, Producer
from rocketmq_py.protocol import CompressionType, SerializeType
from spark_connector import SparkOptionError
from spark_connector._client_options import (
    CACHE_TIMEOUT_MS,
    OFFERED,
    REFUSED,
    ClientSettings,
    Side,
    TlsOptions,
    client_option_names,
    parse_client_keywords,
)
from spark_connector._options import parse_read_options, parse_sink_options

ROOT = Path(__file__).resolve().parents[2]
NAMESRV = "127.0.0.1:9876"
ACL = {"accessKey": "ak-1", "secretKey": "sk-secret-1"}
SIDES: tuple[Side, Side] = ("reader", "writer")


def parse(side: Side, options: dict[str, str]) -> ClientSettings:
    """The client settings ``side`` parses from ``options`` (besides namesrv and topic)."""
    if side == "reader":
        return parse_read_options({"namesrv": NAMESRV, "topic": "t", **options}, streaming=False).client
    return parse_sink_options({"namesrv": NAMESRV, **options}).client


def refused(side: Side, options: dict[str, str]) -> SparkOptionError:
    """The error ``side`` raises for ``options``."""
    with pytest.raises(SparkOptionError) as caught:
        parse(side, options)
    return caught.value


# --- TLS --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("side", SIDES)
def test_nothing_given_is_plaintext_unsigned_and_no_keywords(side: Side) -> None:
    settings = parse(side, {})
    assert settings == ClientSettings(cache_timeout_ms=CACHE_TIMEOUT_MS[side])
    assert settings.tls is None
    assert settings.ssl_context() is None


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize(("text", "ms"), [("0", 0), ("90s", 90_000), ("2500", 2500), (" 1m ", 60_000)])
def test_client_cache_timeout(side: Side, text: str, ms: int) -> None:
    settings = parse(side, {"CLIENTCACHETIMEOUT": text})
    assert settings.cache_timeout_ms == ms
    assert settings.cache_timeout == ms / 1000
    # not part of what tells clients apart: the same connection settings share one client
    assert settings.key() == parse(side, {}).key()


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("text", ["-1", "soon", "5 minutes", "1.5s"])
def test_a_bad_client_cache_timeout_names_the_option(side: Side, text: str) -> None:
    assert refused(side, {"clientCacheTimeout": text}).option == "clientCacheTimeout"


@pytest.mark.parametrize("side", SIDES)
def test_the_client_key_tells_connection_settings_apart(side: Side) -> None:
    plain = parse(side, {}).key()
    assert parse(side, {"tls": "true"}).key() != plain
    assert parse(side, {**ACL, "securityToken": "tok"}).key() != parse(side, {**ACL}).key()
    assert parse(side, {"client.serializeType": "ROCKETMQ"}).key() != plain
    assert (
        parse(side, {"tls": "true", "tlsVerify": "false"}).key()
        == parse(side, {"tls": "true", "tlsverify": "FALSE"}).key()
    )
    hash(plain)


@pytest.mark.parametrize("side", SIDES)
def test_tls_options_with_any_key_case(side: Side) -> None:
    settings = parse(
        side,
        {
            "TLS": "True",
            "tlscafile": " /etc/rocketmq/ca.pem ",
            "tlsCertFile": "client.pem",
            "TLSKEYFILE": "client.key",
            "tlsKeyPassword": "key-pw-1",
            "tlsCheckHostname": "FALSE",
        },
    )
    assert settings.tls == TlsOptions(
        ca_file="/etc/rocketmq/ca.pem",
        check_hostname=False,
        cert_file="client.pem",
        key_file="client.key",
        key_password="key-pw-1",
    )
    assert "key-pw-1" not in repr(settings)
    assert parse(side, {"tls": "true"}).tls == TlsOptions()
    assert parse(side, {"tls": "false", "tlsCaFile": " "}).tls is None  # blank is not given


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize(
    ("options", "option", "problem"),
    [
        ({"tls": "yes"}, "tls", "'yes' is not 'true' or 'false'"),
        ({"tlsCaFile": "ca.pem"}, "tlsCaFile", "needs tls=true"),
        ({"tls": "false", "tlsVerify": "false"}, "tlsVerify", "needs tls=true"),
        ({"tlsKeyPassword": "pw-1"}, "tlsKeyPassword", "needs tls=true"),
        ({"tls": "true", "tlsVerify": "no"}, "tlsVerify", "is not 'true' or 'false'"),
        ({"tls": "true", "tlsVerify": "false", "tlsCaFile": "ca.pem"}, "tlsCaFile", "tlsVerify=false"),
        ({"tls": "true", "tlsVerify": "false", "tlsCheckHostname": "true"}, "tlsCheckHostname", "tlsVerify"),
        ({"tls": "true", "tlsKeyFile": "k.pem"}, "tlsKeyFile", "needs tlsCertFile"),
        ({"tls": "true", "tlsKeyPassword": "pw-1"}, "tlsKeyPassword", "needs tlsCertFile"),
    ],
)
def test_tls_refusals_name_the_option(side: Side, options: dict[str, str], option: str, problem: str) -> None:
    error = refused(side, options)
    assert error.option == option
    assert problem in error.problem
    assert "pw-1" not in str(error)


def test_tls_verify_false_turns_the_host_name_check_off_too() -> None:
    assert parse("reader", {"tls": "true", "tlsVerify": "false"}).tls == TlsOptions(
        verify=False, check_hostname=False
    )


# --- security token -------------------------------------------------------------------------------------


@pytest.mark.parametrize("side", SIDES)
def test_security_token_goes_with_the_keys_and_stays_hidden(side: Side) -> None:
    settings = parse(side, {**ACL, "SecurityToken": "sts-token-1"})
    assert settings.security_token == "sts-token-1"
    assert "sts-token-1" not in repr(settings)
    error = refused(side, {"securityToken": "sts-token-1"})
    assert (error.option, "sts-token-1" in str(error)) == ("securityToken", False)
    assert "needs accessKey and secretKey" in error.problem
    # One key alone is the keys' own error, before the token's.
    assert refused(side, {"accessKey": "ak-1", "securityToken": "sts-token-1"}).option == "secretKey"


def test_the_options_hide_the_token_and_the_key_password_in_their_repr() -> None:
    secrets = {**ACL, "securityToken": "sts-token-1", "tls": "true", "tlsCertFile": "c.pem"}
    secrets["tlsKeyPassword"] = "key-pw-1"
    shown = repr(parse_read_options({"namesrv": NAMESRV, "topic": "t", **secrets}, streaming=True))
    shown += repr(parse_sink_options({"namesrv": NAMESRV, **secrets}))
    for secret in ("sts-token-1", "key-pw-1", "sk-secret-1"):
        assert secret not in shown


# --- client.* ----------------------------------------------------------------------------------------------


def test_reader_client_keywords() -> None:
    settings = parse(
        "reader", {"client.serializeType": "rocketmq", "CLIENT.closeConnectionOnTimeout": "False"}
    )
    assert settings.keywords == {
        "serialize_type": SerializeType.ROCKETMQ,
        "close_connection_on_timeout": False,
    }


def test_writer_client_keywords() -> None:
    settings = parse(
        "writer",
        {
            "client.serializeType": "JSON",
            "client.closeconnectionontimeout": "true",
            "client.requestTimeout": "2.5",
            "client.attemptTimeout": "None",
            "client.retryTimes": "0",
            "client.retryAnotherBrokerWhenNotStoreOk": "true",
            "client.compressOver": "1024",
            "client.compressType": "zstd",
            "client.compressLevel": "19",
            "client.autoCreateTopic": "false",
            "client.defaultTopicQueueNums": "8",
            "client.maxMessageSize": " ",  # blank: not given, so not refused either
        },
    )
    assert settings.keywords == {
        "serialize_type": SerializeType.JSON,
        "close_connection_on_timeout": True,
        "request_timeout": 2.5,
        "attempt_timeout": None,
        "retry_times": 0,
        "retry_another_broker_when_not_store_ok": True,
        "compress_over": 1024,
        "compress_type": CompressionType.ZSTD,
        "compress_level": 19,
        "auto_create_topic": False,
        "default_topic_queue_nums": 8,
    }


@pytest.mark.parametrize(
    ("side", "key", "option", "problem"),
    [
        ("reader", "client.requestTimeout", "client.requestTimeout", "'pullTimeoutMs' sets it"),
        ("reader", "client.pullBatchSize", "client.pullBatchSize", "'pullBatchSize' sets it"),
        ("reader", "client.autoCommit", "client.autoCommit", "joins no consumer group"),
        ("reader", "client.retryTimes", "client.retryTimes", "is for the writer only; the reader takes "),
        ("writer", "client.sendTimeout", "client.sendTimeout", "'sendTimeoutMs' sets it"),
        ("writer", "client.group", "client.group", "'producerGroup' sets it"),
        ("writer", "client.sslContext", "client.sslContext", "'tls' sets it"),
        ("writer", "client.accessKey", "client.accessKey", "'accessKey' sets it"),
        ("writer", "client.instanceName", "client.instanceName", "an id of its own"),
        ("writer", "client.fault", "client.fault", "a Python object"),
        ("writer", "client.pullBatchSize", "client.pullbatchsize", "is not a client option the writer takes"),
        ("reader", "client.nope", "client.nope", "is not a client option the reader takes"),
        ("writer", "client.", "client.", "is not a client option the writer takes"),
    ],
)
def test_client_keys_refused_with_the_reason(side: Side, key: str, option: str, problem: str) -> None:
    error = refused(side, {key: "1"})
    assert error.option == option
    assert problem in error.problem
    if "takes" in problem:  # the options the side does take are listed
        assert ", ".join(client_option_names(side)) in error.problem


@pytest.mark.parametrize(
    ("options", "option", "problem"),
    [
        ({"client.requestTimeout": "0"}, "client.requestTimeout", "it must be seconds > 0"),
        ({"client.requestTimeout": "-1.5"}, "client.requestTimeout", "it must be seconds > 0"),
        ({"client.requestTimeout": "nan"}, "client.requestTimeout", "it must be seconds > 0"),
        ({"client.attemptTimeout": "inf"}, "client.attemptTimeout", "it must be seconds > 0"),
        ({"client.attemptTimeout": "3s"}, "client.attemptTimeout", "is not a number of seconds"),
        ({"client.retryTimes": "-1"}, "client.retryTimes", "it must be >= 0"),
        ({"client.retryTimes": "1.5"}, "client.retryTimes", "is not an integer"),
        ({"client.defaultTopicQueueNums": "0"}, "client.defaultTopicQueueNums", "it must be >= 1"),
        ({"client.autoCreateTopic": "1"}, "client.autoCreateTopic", "is not 'true' or 'false'"),
        ({"client.serializeType": "xml"}, "client.serializeType", "is not one of JSON, ROCKETMQ"),
        ({"client.compressType": "gzip"}, "client.compressType", "is not one of LZ4, ZSTD, ZLIB"),
        ({"client.compressLevel": "10"}, "client.compressLevel", "ZLIB takes -1 to 9"),
        ({"client.compressLevel": "-2"}, "client.compressLevel", "it must be >= -1"),
        (
            {"client.compressLevel": "23", "client.compressType": "ZSTD"},
            "client.compressLevel",
            "ZSTD takes 1 to 22",
        ),
        (
            {"client.compressLevel": "3", "client.compressType": "lz4"},
            "client.compressLevel",
            "takes no level",
        ),
    ],
)
def test_bad_client_values_name_the_option(options: dict[str, str], option: str, problem: str) -> None:
    error = refused("writer", options)
    assert error.option == option
    assert problem in error.problem


def test_client_options_are_not_extra_reader_options() -> None:
    options = parse_read_options(
        {"namesrv": NAMESRV, "topic": "t", "tls": "true", "client.serializeType": "json", "path": "p"},
        streaming=False,
    )
    assert options.extra == {"path": "p"}


# --- pure parsers, any input -------------------------------------------------------------------------------

_NAMES = [option.name for option in OFFERED]


@given(
    side=st.sampled_from(SIDES),
    name=st.sampled_from(_NAMES + [option.name for option in REFUSED] + ["client.x"]),
    text=st.text(max_size=12),
)
def test_any_value_is_taken_or_refused_naming_the_option(side: Side, name: str, text: str) -> None:
    try:
        keywords = parse_client_keywords({name.lower(): text}, side)
    except SparkOptionError as error:
        named = error.option
    else:
        assert len(keywords) <= 1
        assert not keywords or text.strip()
        return
    assert named in (name, name.lower())  # the documented spelling, or the unknown key as given


@given(seconds=st.floats(min_value=1e-6, max_value=1e9, allow_nan=False, allow_infinity=False))
def test_seconds_round_trip(seconds: float) -> None:
    keywords = parse_client_keywords({"client.requesttimeout": repr(seconds)}, "writer")
    assert keywords == {"request_timeout": seconds}


@given(value=st.integers(min_value=-(10**6), max_value=10**6))
def test_integers_are_taken_from_their_minimum(value: int) -> None:
    for key, keyword, minimum in (
        ("retrytimes", "retry_times", 0),
        ("defaulttopicqueuenums", "default_topic_queue_nums", 1),
    ):
        options = {f"client.{key}": f" {value} "}
        if value >= minimum:
            assert parse_client_keywords(options, "writer") == {keyword: value}
        else:
            with pytest.raises(SparkOptionError, match=rf"{value} is out of range: it must be >= {minimum}"):
                parse_client_keywords(options, "writer")


@given(name=st.sampled_from(_NAMES), case=st.sampled_from([str.lower, str.upper, str.title]))
def test_booleans_and_choices_with_any_case(name: str, case: Any) -> None:
    option = next(o for o in OFFERED if o.name == name)
    samples = {"true": True, "false": False, "json": SerializeType.JSON, "zlib": CompressionType.ZLIB}
    for text, value in samples.items():
        try:
            parsed = option.parse(name, case(text))
        except SparkOptionError:
            continue
        assert parsed == value
        assert type(parsed) is type(value)


# --- picklable -----------------------------------------------------------------------------------------------


def test_options_with_every_connection_setting_pickle() -> None:
    common = {**ACL, "securityToken": "sts", "tls": "true", "tlsCaFile": "ca.pem", "tlsCertFile": "c.pem"}
    read = parse_read_options(
        {"namesrv": NAMESRV, "topic": "t", **common, "client.serializeType": "rocketmq"}, streaming=True
    )
    sink = parse_sink_options(
        {"namesrv": NAMESRV, **common, "client.compressType": "lz4", "client.attemptTimeout": "none"}
    )
    for options in (read, sink):
        copy = pickle.loads(pickle.dumps(options))
        assert copy == options
        assert copy.client.security_token == "sts"
        assert dataclasses.asdict(copy.client.tls) == dataclasses.asdict(options.client.tls)  # type: ignore[arg-type]


# --- checked against the clients and the guide -----------------------------------------------------------------


def _snake(camel: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", camel).lower()


def _client_keywords(side: Side) -> set[str]:
    """Every keyword a user of the side's client can give (the ``**client_options`` are ClientConfig's)."""
    client = LitePullConsumer if side == "reader" else Producer
    own = set(inspect.signature(client.__init__).parameters) - {"self", "client_options"}
    return own | {f.name for f in dataclasses.fields(ClientConfig)}


@pytest.mark.parametrize("side", SIDES)
def test_every_client_keyword_is_offered_or_refused(side: Side) -> None:
    offered = {o.keyword for o in OFFERED if getattr(o, side)}
    not_offered = {_snake(r.name.removeprefix("client.")) for r in REFUSED if getattr(r, side) is not None}
    assert not offered & not_offered
    assert offered | not_offered == _client_keywords(side)


def test_offered_names_are_the_client_keywords_in_camel_case() -> None:
    for option in OFFERED:
        assert option.name.startswith("client.")
        assert _snake(option.name.removeprefix("client.")) == option.keyword
    for declared in (OFFERED, REFUSED):
        names = [o.name.lower() for o in declared]
        assert len(names) == len(set(names))


@pytest.mark.parametrize("side", SIDES)
def test_the_clients_accept_the_parsed_keywords(side: Side) -> None:
    keywords = parse_client_keywords(
        {o.name.lower(): _sample(o.keyword) for o in OFFERED if getattr(o, side)}, side
    )
    assert set(keywords) == {o.keyword for o in OFFERED if getattr(o, side)}
    if side == "writer":
        producer = Producer("g", namesrv=NAMESRV, **keywords)
        for keyword, value in keywords.items():
            target = producer.config if hasattr(producer.config, keyword) else producer
            assert getattr(target, keyword) == value
    else:
        config = ClientConfig(namesrv=NAMESRV, **keywords)
        assert all(getattr(config, k) == v for k, v in keywords.items())


def _sample(keyword: str) -> str:
    """A valid, non-default value for each offered keyword."""
    return {
        "serialize_type": "ROCKETMQ",
        "close_connection_on_timeout": "false",
        "request_timeout": "4.5",
        "attempt_timeout": "0.25",
        "retry_times": "5",
        "retry_another_broker_when_not_store_ok": "true",
        "compress_over": "100",
        "compress_type": "ZSTD",
        "compress_level": "3",
        "auto_create_topic": "false",
        "default_topic_queue_nums": "2",
    }[keyword]


def _docs_hook() -> ModuleType:
    pytest.importorskip("mkdocs")
    spec = importlib.util.spec_from_file_location(
        "spark_options_hook", ROOT / "docs" / "hooks" / "spark_options.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_guide_lists_the_options_the_code_reads() -> None:
    hook = _docs_hook()
    guide = (ROOT / "docs" / "spark.md").read_text()
    hook.check_tables(guide, "docs/spark.md")  # what `make docs` checks
    for table in ("reader", "writer"):
        assert {"tls", "tlsCaFile", "securityToken"} <= hook.options_read_by(hook.PARSERS[table])
    assert hook.client_options() == {o.name: (o.keyword, o.reader, o.writer) for o in OFFERED}
    assert hook.refused_options() == {r.name: (r.reader is not None, r.writer is not None) for r in REFUSED}


@pytest.mark.parametrize(
    ("old", "new", "complaint"),
    [
        ("| `tlsCaFile` |", "| `tlsCAFile` |", "options table is out of date"),
        (
            "| `client.retryTimes` | | yes |",
            "| `client.retryTimes` | yes | yes |",
            "differing: ['client.retryTimes']",
        ),
        ("`retry_times` |", "`retries` |", "differing: ['client.retryTimes']"),
        ("| `client.fault` |", "| `client.faults` |", "missing: ['client.fault']"),
        ("| `client.strategy` | `allocateStrategy` | |", "| `client.strategy` | | |", "differing"),
    ],
)
def test_the_check_fails_on_a_stale_table(old: str, new: str, complaint: str) -> None:
    hook = _docs_hook()
    guide = (ROOT / "docs" / "spark.md").read_text()
    assert old in guide
    with pytest.raises(hook.PluginError, match=re.escape(complaint)):
        hook.check_tables(guide.replace(old, new), "docs/spark.md")
