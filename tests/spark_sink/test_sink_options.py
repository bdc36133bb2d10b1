"""Option parsing of the rocketmq sink: defaults, case-insensitive keys, errors naming the option."""

from __future__ import annotations

import pytest

from spark_connector._errors import SparkOptionError
from spark_connector._options import (
    DEFAULT_PRODUCER_GROUP,
    SinkOptions,
    parse_read_options,
    parse_sink_options,
)
from spark_connector._sink import effective_batch_size


def test_defaults_mirror_the_java_producer() -> None:
    opts = parse_sink_options({"namesrv": "127.0.0.1:9876"})
    assert opts == SinkOptions(namesrv="127.0.0.1:9876")
    assert opts.producer_group == DEFAULT_PRODUCER_GROUP
    assert opts.send_timeout == 3.0  # Java sendMsgTimeout
    assert opts.max_message_size == 4 * 1024 * 1024  # Java maxMessageSize
    assert opts.deterministic_keys is False
    assert opts.topic is None


def test_every_option_parsed_with_any_key_case() -> None:
    opts = parse_sink_options(
        {
            "NAMESRV": "h1:9876;h2:9876",
            "Topic": "Orders",
            "producerGroup": "pg-orders",
            "deterministicKeys": "TRUE",
            "writeId": "nightly-2026-11-22",
            "SENDTIMEOUTMS": "2500",
            "maxinflight": "4",
            "batchSize": "1",
            "maxMessageSize": "8388608",
        }
    )
    assert opts == SinkOptions(
        namesrv="h1:9876;h2:9876",
        topic="Orders",
        producer_group="pg-orders",
        deterministic_keys=True,
        write_id="nightly-2026-11-22",
        send_timeout=2.5,
        max_in_flight=4,
        batch_size=1,
        max_message_size=8388608,
    )


def test_namespace() -> None:
    opts = parse_sink_options({"namesrv": "h:1", "topic": "Orders", "namespace": "ns1"})
    assert (opts.topic, opts.namespace) == ("Orders", "ns1")  # the producer wraps: ns1%Orders
    with pytest.raises(SparkOptionError, match="option 'namespace': namespace 'a b' may hold only"):
        parse_sink_options({"namesrv": "h:1", "namespace": "a b"})


def test_trace_options() -> None:
    assert parse_sink_options({"namesrv": "h:1"}).enable_trace is False
    opts = parse_sink_options({"namesrv": "h:1", "EnableTrace": "true", "traceTopic": "my_trace"})
    assert (opts.enable_trace, opts.trace_topic) == (True, "my_trace")
    with pytest.raises(SparkOptionError, match="option 'enableTrace'"):
        parse_sink_options({"namesrv": "h:1", "enableTrace": "yes"})
    with pytest.raises(SparkOptionError, match="option 'traceTopic'"):
        parse_sink_options({"namesrv": "h:1", "traceTopic": "bad topic"})


def test_namesrv_is_required() -> None:
    with pytest.raises(SparkOptionError, match="option 'namesrv': is required"):
        parse_sink_options({"topic": "T"})
    with pytest.raises(SparkOptionError, match="option 'namesrv': is required"):
        parse_sink_options({"namesrv": "  "})
    with pytest.raises(SparkOptionError, match="option 'namesrv': 'nowhere' is not 'host:port'"):
        parse_sink_options({"namesrv": "nowhere"})


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("deterministicKeys", "yes", "option 'deterministicKeys': 'yes' is not 'true' or 'false'"),
        ("sendTimeoutMs", "3s", "option 'sendTimeoutMs': '3s' is not an integer"),
        ("maxInFlight", "0", "option 'maxInFlight': 0 is out of range: it must be >= 1"),
        ("batchSize", "-5", "option 'batchSize': -5 is out of range: it must be >= 1"),
        ("maxMessageSize", "big", "option 'maxMessageSize': 'big' is not an integer"),
        ("topic", "bad topic!", "option 'topic': invalid topic 'bad topic!'"),
        ("topic", "TBW102", "option 'topic': invalid topic 'TBW102': sending to a system topic"),
        ("producerGroup", "DEFAULT_PRODUCER", "option 'producerGroup': invalid group"),
    ],
)
def test_bad_values_name_the_option(key: str, value: str, message: str) -> None:
    with pytest.raises(SparkOptionError) as info:
        parse_sink_options({"namesrv": "127.0.0.1:9876", key.lower(): value})
    assert str(info.value).startswith(message)
    assert info.value.option == key


def test_deterministic_keys_keep_batching() -> None:
    # The producer puts no UNIQ_KEY on a batch itself, so each row's own key survives batching.
    assert effective_batch_size(parse_sink_options({"namesrv": "n:1", "batchsize": "50"})) == 50
    keyed = parse_sink_options({"namesrv": "n:1", "batchsize": "50", "deterministickeys": "true"})
    assert effective_batch_size(keyed) == 50


@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_value_means_unset_for_the_writer_as_for_the_reader(blank: str) -> None:
    # The reader always took a blank value as unset (its default applies); the writer refused
    # a blank sendTimeoutMs / batchSize / deterministicKeys and a blank topic. One rule now.
    common = {"namesrv": "127.0.0.1:9876", "topic": "T"}
    reader = parse_read_options({**common, "pullBatchSize": blank, "failOnDataLoss": blank}, streaming=False)
    assert (reader.pull_batch_size, reader.fail_on_data_loss) == (1024, True)
    writer = parse_sink_options(
        {
            "namesrv": "127.0.0.1:9876",
            "topic": blank,
            "producerGroup": blank,
            "writeId": blank,
            "sendTimeoutMs": blank,
            "batchSize": blank,
            "maxInFlight": blank,
            "maxMessageSize": blank,
            "deterministicKeys": blank,
        }
    )
    assert writer == SinkOptions(namesrv="127.0.0.1:9876")
