"""Reader options: defaults, case-insensitive keys, offset specifications and errors naming the option."""

from __future__ import annotations

import pickle

import pytest

from spark_connector import SparkOptionError
from spark_connector._options import EARLIEST, LATEST, parse_offset_spec, parse_read_options

BASE = {"namesrv": "127.0.0.1:9876", "topic": "t1"}


def test_batch_defaults() -> None:
    o = parse_read_options(BASE, streaming=False)
    assert o.namesrv == ("127.0.0.1:9876",)
    assert o.topics == ("t1",)
    assert o.topic_pattern is None
    assert o.starting == "earliest"
    assert o.ending == "latest"
    assert o.sub_expression == "*"
    assert o.num_partitions is None
    assert o.allocate_strategy == "AVG"
    assert o.max_records_per_partition is None
    assert o.fail_on_data_loss is True
    assert o.pull_batch_size == 1024
    assert o.pull_timeout_ms == 10_000
    assert o.pull_timeout == 10.0
    assert (o.fetch_offset_retries, o.fetch_offset_retry_interval_ms) == (3, 1000)


def test_stream_defaults_to_latest() -> None:
    assert parse_read_options(BASE, streaming=True).starting == "latest"


def test_keys_are_case_insensitive_and_values_parsed() -> None:
    o = parse_read_options(
        {
            "NAMESRV": "a:1;b:2",
            "Topic": "t1, t2,t1",
            "STARTINGOFFSETS": "LATEST",
            "numpartitions": "3",
            "AllocateStrategy": "averagely_by_circle",
            "maxRecordsPerPartition": "100",
            "failOnDataLoss": "False",
            "pullBatchSize": "64",
            "pullTimeoutMs": "2500",
            "FETCHOFFSET.NUMRETRIES": "0",
            "fetchOffset.retryIntervalMs": "0",
            "subExpression": "A || B",
            "path": "ignored",
        },
        streaming=False,
    )
    assert o.namesrv == ("a:1", "b:2")
    assert o.topics == ("t1", "t2")
    assert o.starting == "latest"
    assert o.num_partitions == 3
    assert o.allocate_strategy == "AVG_BY_CIRCLE"
    assert o.max_records_per_partition == 100
    assert o.fail_on_data_loss is False
    assert o.pull_batch_size == 64
    assert o.pull_timeout == 2.5
    assert (o.fetch_offset_retries, o.fetch_offset_retry_interval_ms) == (0, 0)
    assert o.sub_expression == "A || B"
    assert o.extra == {"path": "ignored"}


def test_offsets_json() -> None:
    spec = parse_offset_spec(
        "startingOffsets", '{"t1": {"broker-a": {"0": 5, "1": -2}, "broker-b": {"3": -1}}}'
    )
    assert spec == {"t1": {"broker-a": {0: 5, 1: EARLIEST}, "broker-b": {3: LATEST}}}


def test_stream_options() -> None:
    o = parse_read_options(
        {**BASE, "maxRecordsPerBatch": "7", "commitToGroup": "cg-1", "startingTimestamp": "1000"},
        streaming=True,
    )
    assert o.max_records_per_batch == 7
    assert o.commit_to_group == "cg-1"
    assert o.starting_timestamp == 1000


def test_offsets_by_timestamp() -> None:
    o = parse_read_options(
        {
            **BASE,
            "startingOffsetsByTimestamp": '{"t1": {"broker-a": {"0": 1000, "3": 2000}}}',
            "endingOffsetsByTimestamp": '{"t1": {"broker-b": {"1": 500}}}',
            "startingOffsets": "latest",
            "STARTINGOFFSETSBYTIMESTAMPSTRATEGY": "Error",
        },
        streaming=False,
    )
    assert o.starting_by_timestamp == {"t1": {"broker-a": {0: 1000, 3: 2000}}}
    assert o.ending_by_timestamp == {"t1": {"broker-b": {1: 500}}}
    assert o.starting == "latest"  # for the queues the timestamps do not name
    assert o.timestamp_strategy == "error"
    # Not Kafka's default (error): the broker's own answer, the queue's end (an empty queue matches no time).
    assert parse_read_options(BASE, streaming=True).timestamp_strategy == "latest"


def test_a_global_time_shadows_the_per_queue_times_as_in_kafka() -> None:
    """Kafka's precedence: startingTimestamp, then startingOffsetsByTimestamp, then startingOffsets."""
    o = parse_read_options(
        {
            **BASE,
            "startingTimestamp": "7",
            "startingOffsetsByTimestamp": '{"t1": {"b": {"0": 1}}}',
            "startingOffsets": "earliest",
            "endingTimestamp": "9",
            "endingOffsetsByTimestamp": '{"t1": {"b": {"0": 2}}}',  # before 7, but shadowed: no error
            "endingOffsets": "latest",
        },
        streaming=False,
    )
    assert (o.starting_timestamp, o.starting_by_timestamp) == (7, None)
    assert (o.ending_timestamp, o.ending_by_timestamp) == (9, None)


def test_times_of_a_namespace_name_the_wrapped_topics() -> None:
    o = parse_read_options(
        {**BASE, "namespace": "ns1", "startingOffsetsByTimestamp": '{"t1": {"b": {"0": 1}}}'}, streaming=True
    )
    assert o.starting_by_timestamp == {"ns1%t1": {"b": {0: 1}}}


def test_trigger_options() -> None:
    o = parse_read_options({**BASE, "minOffsetsPerTrigger": "100", "maxTriggerDelay": "30s"}, streaming=True)
    assert (o.min_offsets_per_trigger, o.max_trigger_delay_ms) == (100, 30_000)
    assert parse_read_options(BASE, streaming=True).max_trigger_delay_ms == 15 * 60_000  # Kafka's 15m


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("250", 250),
        ("250ms", 250),
        ("2s", 2000),
        ("2 sec", 2000),
        ("15m", 900_000),
        ("1min", 60_000),
        ("2h", 7_200_000),
        ("1d", 86_400_000),
        ("0", 0),
    ],
)
def test_durations(text: str, ms: int) -> None:
    options = {**BASE, "minOffsetsPerTrigger": "1", "maxTriggerDelay": text}
    assert parse_read_options(options, streaming=True).max_trigger_delay_ms == ms


def test_assign_names_the_topics_and_queues() -> None:
    o = parse_read_options(
        {
            "namesrv": "h:1",
            "assign": '{"t1": {"broker-a": [0, 1]}, "t2": {"broker-b": [3]}}',
            "namespace": "ns",
        },
        streaming=False,
    )
    assert o.topics == ("ns%t1", "ns%t2")
    assert o.assign == {"ns%t1": {"broker-a": (0, 1)}, "ns%t2": {"broker-b": (3,)}}
    assert (o.topic_pattern, parse_read_options(BASE, streaming=False).assign) == (None, None)


def test_min_partitions() -> None:
    assert parse_read_options({**BASE, "minPartitions": "12"}, streaming=True).min_partitions == 12
    assert parse_read_options(BASE, streaming=False).min_partitions is None


def test_topic_pattern() -> None:
    o = parse_read_options({"namesrv": "h:1", "topicPattern": "it-.*"}, streaming=False)
    assert o.topics == ()
    assert o.topic_pattern == "it-.*"


def test_namespace_wraps_the_topics_offsets_and_group() -> None:
    o = parse_read_options(
        {
            "namesrv": "h:1",
            "topic": "t1,ns1%t2",  # a name already in the namespace stays as it is
            "startingOffsets": '{"t1": {"b": {"0": 3}}}',
            "commitToGroup": "g",
            "Namespace": "ns1",
        },
        streaming=True,
    )
    assert (o.namespace, o.topics, o.commit_to_group) == ("ns1", ("ns1%t1", "ns1%t2"), "ns1%g")
    assert o.starting == {"ns1%t1": {"b": {0: 3}}}
    plain = parse_read_options({**BASE, "namespace": " "}, streaming=False)
    assert (plain.namespace, plain.topics) == (None, ("t1",))


def test_options_pickle() -> None:
    o = parse_read_options({**BASE, "startingOffsets": '{"t1": {"b": {"0": 1}}}'}, streaming=False)
    assert pickle.loads(pickle.dumps(o)) == o


@pytest.mark.parametrize(
    ("options", "streaming", "option"),
    [
        ({"topic": "t"}, False, "namesrv"),
        ({"namesrv": "nohost", "topic": "t"}, False, "namesrv"),
        ({"namesrv": "h:1"}, False, "topic"),
        ({"namesrv": "h:1", "topic": "t", "topicPattern": "x"}, False, "topic"),
        ({"namesrv": "h:1", "topic": "bad topic!"}, False, "topic"),
        ({"namesrv": "h:1", "topicPattern": "("}, False, "topicPattern"),
        ({**BASE, "assign": '{"t1": {"b": [0]}}'}, False, "assign"),
        ({"namesrv": "h:1", "topicPattern": "x", "assign": '{"t1": {"b": [0]}}'}, True, "assign"),
        ({"namesrv": "h:1", "assign": '{"t1": [0]}'}, False, "assign"),
        ({**BASE, "minPartitions": "0"}, False, "minPartitions"),
        ({**BASE, "startingOffsets": "soon"}, False, "startingOffsets"),
        ({**BASE, "startingOffsets": '{"t1": {"b": {"x": 1}}}'}, False, "startingOffsets"),
        ({**BASE, "startingOffsets": '{"t1": {"b": {"0": -3}}}'}, False, "startingOffsets"),
        ({**BASE, "startingOffsets": '{"t1": [1]}'}, False, "startingOffsets"),
        ({**BASE, "endingOffsets": "earliest"}, False, "endingOffsets"),
        ({**BASE, "endingOffsets": '{"t1": {"b": {"0": -2}}}'}, False, "endingOffsets"),
        ({**BASE, "endingOffsets": "latest"}, True, "endingOffsets"),
        ({**BASE, "startingTimestamp": "yesterday"}, False, "startingTimestamp"),
        ({**BASE, "startingTimestamp": "-5"}, False, "startingTimestamp"),
        ({**BASE, "startingOffsetsByTimestamp": "yesterday"}, False, "startingOffsetsByTimestamp"),
        (
            {**BASE, "startingOffsetsByTimestamp": '{"t1": {"b": {"0": -1}}}'},
            False,
            "startingOffsetsByTimestamp",
        ),
        (
            {**BASE, "startingOffsetsByTimestamp": '{"t1": {"b": {"-1": 5}}}'},
            False,
            "startingOffsetsByTimestamp",
        ),
        (
            {**BASE, "startingOffsetsByTimestamp": '{"t1": {"b": {"0": true}}}'},
            False,
            "startingOffsetsByTimestamp",
        ),
        ({**BASE, "startingOffsetsByTimestamp": '{"t1": {}}'}, False, "startingOffsetsByTimestamp"),
        ({**BASE, "endingOffsetsByTimestamp": '{"t1": {"b": {"0": 5}}}'}, True, "endingOffsetsByTimestamp"),
        (
            {**BASE, "startingOffsetsByTimestampStrategy": "earliest"},
            False,
            "startingOffsetsByTimestampStrategy",
        ),
        (
            {**BASE, "startingOffsetsByTimestamp": '{"t1": {"b": {"0": 9}}}', "endingTimestamp": "5"},
            False,
            "endingTimestamp",
        ),
        (
            {
                **BASE,
                "startingOffsetsByTimestamp": '{"t1": {"b": {"0": 9}}}',
                "endingOffsetsByTimestamp": '{"t1": {"b": {"0": 5, "1": 1}}}',
            },
            False,
            "endingOffsetsByTimestamp",
        ),
        ({**BASE, "startingTimestamp": "9", "endingTimestamp": "5"}, False, "endingTimestamp"),
        ({**BASE, "endingTimestamp": "5"}, True, "endingTimestamp"),
        ({**BASE, "numPartitions": "0"}, False, "numPartitions"),
        ({**BASE, "numPartitions": "two"}, False, "numPartitions"),
        ({**BASE, "allocateStrategy": "random"}, False, "allocateStrategy"),
        ({**BASE, "allocateStrategy": "CONFIG"}, False, "allocateStrategy"),
        ({**BASE, "maxRecordsPerPartition": "0"}, False, "maxRecordsPerPartition"),
        ({**BASE, "maxRecordsPerBatch": "10"}, False, "maxRecordsPerBatch"),
        ({**BASE, "maxRecordsPerBatch": "0"}, True, "maxRecordsPerBatch"),
        ({**BASE, "minOffsetsPerTrigger": "10"}, False, "minOffsetsPerTrigger"),
        ({**BASE, "minOffsetsPerTrigger": "0"}, True, "minOffsetsPerTrigger"),
        ({**BASE, "minOffsetsPerTrigger": "1", "maxTriggerDelay": "5"}, False, "minOffsetsPerTrigger"),
        ({**BASE, "maxTriggerDelay": "5s"}, True, "maxTriggerDelay"),
        ({**BASE, "minOffsetsPerTrigger": "1", "maxTriggerDelay": "soon"}, True, "maxTriggerDelay"),
        ({**BASE, "minOffsetsPerTrigger": "1", "maxTriggerDelay": "5 weeks"}, True, "maxTriggerDelay"),
        ({**BASE, "minOffsetsPerTrigger": "1", "maxTriggerDelay": "-5s"}, True, "maxTriggerDelay"),
        ({**BASE, "failOnDataLoss": "maybe"}, False, "failOnDataLoss"),
        ({**BASE, "pullBatchSize": "5000"}, False, "pullBatchSize"),
        ({**BASE, "pullTimeoutMs": "0"}, False, "pullTimeoutMs"),
        ({**BASE, "fetchOffset.numRetries": "-1"}, False, "fetchOffset.numRetries"),
        ({**BASE, "fetchOffset.retryIntervalMs": "soon"}, True, "fetchOffset.retryIntervalMs"),
        ({**BASE, "subExpression": "||"}, False, "subExpression"),
        ({**BASE, "commitToGroup": "g"}, False, "commitToGroup"),
        ({**BASE, "commitToGroup": "bad group"}, True, "commitToGroup"),
        ({**BASE, "namespace": "a%b"}, False, "namespace"),
    ],
)
def test_bad_option_names_itself(options: dict[str, str], streaming: bool, option: str) -> None:
    with pytest.raises(SparkOptionError) as info:
        parse_read_options(options, streaming=streaming)
    assert info.value.option == option
    assert repr(option) in str(info.value)
