"""Reader options: parse Spark's case-insensitive string options into one typed value, with no I/O.

Every option value arrives as a string (Spark lower-cases the keys). A bad value raises
:class:`SparkOptionError` naming the option as the user spelled it in the documentation, e.g.
``numPartitions``. Options this module does not know are ignored (Spark adds its own, e.g. ``path``), but
for those of Spark's Kafka source that have another name here (``subscribe``, ``maxOffsetsPerTrigger``,
``kafka.*``, ...: :mod:`spark_connector._kafka`), which fail naming ours.

``namespace`` reads and writes the topics of a namespace as a client given ``namespace=`` does
(Java ``setNamespace``): topics, offset specifications, ``topicPattern`` and ``commitToGroup``
name plain topics and groups, the brokers see ``<namespace>%<name>``, and the ``topic`` column
holds the plain name again.

``accessKey`` / ``secretKey`` sign every request for a broker with ACL on (reader and writer; give
both or neither). The secret is kept out of reprs and error messages; Spark itself redacts option
values whose key contains "secret" in plans and its UI. ``securityToken``, the ``tls`` options and
the ``client.`` options are parsed by :mod:`spark_connector._client_options` into the
:class:`~spark_connector._client_options.ClientSettings` of every client the connector builds.

Offset specifications (``startingOffsets``, ``endingOffsets``) are ``earliest``, ``latest`` or JSON
``{"topic": {"broker": {"queueId": offset}}}``, where offset ``-2`` means earliest and ``-1``
latest, as in Spark's Kafka source.

The sink's options are parsed by :mod:`spark_connector._sink_options` (re-exported here), and what
both sides read the same way (``namesrv``, the credentials, ``namespace``) by
:mod:`spark_connector._option_values`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from rocketmq_py import get_strategy
from rocketmq_py.errors import ClientError, InvalidGroup, InvalidTopic
from rocketmq_py.lowlevel import validate_group
from rocketmq_py.protocol import build_subscription_data, wrap_name
from spark_connector._assign import Assignment, parse_assign, wrap_assignment
from spark_connector._client_options import (
    CACHE_TIMEOUT_MS,
    CLIENT_PREFIX,
    CONNECTION_OPTIONS,
    ClientSettings,
    parse_client_settings,
)
from spark_connector._errors import SparkOptionError
from spark_connector._kafka import refuse_kafka_spellings
from spark_connector._offset_spec import (
    EARLIEST,
    LATEST,
    OffsetSpec,
    SpecificOffsets,
    TimestampSpec,
    TimestampStrategy,
    parse_offset_spec,
    parse_window,
    wrap_window,
)
from spark_connector._option_values import (
    TOPIC_NAME,
    get_bool,
    get_duration_ms,
    get_int,
    get_text,
    or_default,
    parse_credentials,
    parse_namespace,
    parse_namesrv,
)
from spark_connector._sink_options import DEFAULT_PRODUCER_GROUP, SinkOptions, parse_sink_options

__all__ = [
    "DEFAULT_ALLOCATE_STRATEGY",
    "DEFAULT_MAX_TRIGGER_DELAY_MS",
    "DEFAULT_PRODUCER_GROUP",
    "DEFAULT_PULL_BATCH_SIZE",
    "DEFAULT_PULL_TIMEOUT_MS",
    "DEFAULT_RETRIES",
    "DEFAULT_RETRY_INTERVAL_MS",
    "EARLIEST",
    "LATEST",
    "MAX_PULL_BATCH_SIZE",
    "OffsetSpec",
    "ReadOptions",
    "SinkOptions",
    "SparkOptionError",
    "SpecificOffsets",
    "parse_credentials",
    "parse_namespace",
    "parse_offset_spec",
    "parse_read_options",
    "parse_sink_options",
]

#: Messages asked for per PULL_MESSAGE: as many as a broker may give (Java's consumers ask for 32,
#: a push consumer's ``pullBatchSize``). A broker caps a reply at ``maxTransferCountOnMessageInMemory``
#: (32 by default) and ``maxTransferBytesOnMessageInMemory`` (256 KiB), so asking for more costs it
#: nothing, and a broker configured higher answers with fewer, larger replies: ``read()`` of 1M
#: 128 B records in one process, 148,482 rows/s at 32 and 193,022 at 1024 with the default caps
#: (each range's pipelined segments are ``pullBatchSize`` offsets: fewer, longer segments and larger
#: batches), 300,864 with the caps raised to 1024 messages and 4 MiB.
DEFAULT_PULL_BATCH_SIZE: Final = 1024
#: Java ``DefaultLitePullConsumer`` accepts pullBatchSize up to 1024.
MAX_PULL_BATCH_SIZE: Final = 1024
#: Seconds-as-milliseconds for one pull or planning call (Java ``consumerPullTimeoutMillis`` = 10 s).
DEFAULT_PULL_TIMEOUT_MS: Final = 10_000
#: Planning calls retried after a transport failure (Spark's Kafka source: ``fetchOffset.numRetries``).
DEFAULT_RETRIES: Final = 3
#: Milliseconds between those attempts (the Kafka source's ``fetchOffset.retryIntervalMs``).
DEFAULT_RETRY_INTERVAL_MS: Final = 1_000
#: The consumer's default strategy (Java ``AllocateMessageQueueAveragely``).
DEFAULT_ALLOCATE_STRATEGY: Final = "AVG"
#: The longest a micro-batch waits for ``minOffsetsPerTrigger`` records (the Kafka source's
#: ``maxTriggerDelay`` default, 15 minutes).
DEFAULT_MAX_TRIGGER_DELAY_MS: Final = 15 * 60 * 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadOptions:
    """The reader's options, parsed. Picklable (it travels to executors inside the reader).

    Attributes:
        namesrv: NameServer addresses, ``host:port`` each.
        topics: the topics named by ``topic`` or ``assign`` (empty when ``topic_pattern`` is used).
        topic_pattern: a regular expression matched in full against the NameServer's topic list.
        assign: the queues named by ``assign``, ``{topic: {broker: (queue_id, ...)}}``; the read
            takes only those (``None``: every readable queue of the topics).
        starting: where reading starts (``startingOffsets``).
        ending: where a batch read ends (``endingOffsets``; always ``latest`` for streams).
        starting_timestamp, ending_timestamp: epoch ms resolved per queue by the broker
            (``startingTimestamp`` / ``endingTimestamp``); they win over the two below and over
            :attr:`starting` / :attr:`ending` (see :class:`~spark_connector._offset_spec.ReadWindow`).
        starting_by_timestamp, ending_by_timestamp: epoch ms per queue
            (``startingOffsetsByTimestamp`` / ``endingOffsetsByTimestamp``); a queue named here
            ignores :attr:`starting` / :attr:`ending`.
        timestamp_strategy: what a starting time no message of a queue matches does
            (``startingOffsetsByTimestampStrategy``): ``error`` or ``latest``.
        sub_expression: the TAG expression (``"*"`` for everything).
        num_partitions: Spark partitions, each one consumer id (``None``: one per queue).
        allocate_strategy: the allocation strategy's Java name (``AVG``, ``AVG_BY_CIRCLE``, ...).
        max_records_per_partition: split ranges so no partition reads more (``None``: no split).
        min_partitions: split the partitions by offset range until there are at least this many
            (``minPartitions``; ``None``: no split).
        max_records_per_batch: streaming admission control: the most records a micro-batch reads,
            split over the queues in proportion to their backlog (``None``: everything available).
        min_offsets_per_trigger: streaming: a micro-batch waits until this many records are new
            (``minOffsetsPerTrigger``), or until :attr:`max_trigger_delay_ms` passed since the last.
        max_trigger_delay_ms: the longest a micro-batch waits for :attr:`min_offsets_per_trigger`.
        fail_on_data_loss: raise when a requested offset is below the queue's minimum.
        pull_batch_size: messages asked for per pull.
        pull_timeout_ms: deadline of each pull and planning call.
        fetch_offset_retries: how often a planning step (routes and queue bounds, on the driver) is
            tried again after a transport failure, each time on a route read anew.
        fetch_offset_retry_interval_ms: the wait before each of those attempts.
        commit_to_group: streaming: write committed offsets to this consumer group.
        access_key, secret_key: ACL credentials (``accessKey`` / ``secretKey``); requests are signed
            when set. The secret is not in the repr.
        namespace: the topics' namespace (``None``: none); :attr:`topics`, the offset
            specifications and :attr:`commit_to_group` hold the wrapped names the brokers use.
        client: ``securityToken``, TLS and the ``client.`` options of every connection.
    """

    namesrv: tuple[str, ...]
    topics: tuple[str, ...] = ()
    topic_pattern: str | None = None
    assign: Assignment | None = None
    starting: OffsetSpec = "earliest"
    ending: OffsetSpec = "latest"
    starting_timestamp: int | None = None
    ending_timestamp: int | None = None
    starting_by_timestamp: TimestampSpec | None = None
    ending_by_timestamp: TimestampSpec | None = None
    timestamp_strategy: TimestampStrategy = "error"
    sub_expression: str = "*"
    num_partitions: int | None = None
    allocate_strategy: str = DEFAULT_ALLOCATE_STRATEGY
    max_records_per_partition: int | None = None
    min_partitions: int | None = None
    max_records_per_batch: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS
    fail_on_data_loss: bool = True
    pull_batch_size: int = DEFAULT_PULL_BATCH_SIZE
    pull_timeout_ms: int = DEFAULT_PULL_TIMEOUT_MS
    fetch_offset_retries: int = DEFAULT_RETRIES
    fetch_offset_retry_interval_ms: int = DEFAULT_RETRY_INTERVAL_MS
    commit_to_group: str | None = None
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    namespace: str | None = None
    client: ClientSettings = field(
        default_factory=lambda: ClientSettings(cache_timeout_ms=CACHE_TIMEOUT_MS["reader"])
    )
    extra: Mapping[str, str] = field(default_factory=dict)

    @property
    def pull_timeout(self) -> float:
        """:attr:`pull_timeout_ms` in seconds."""
        return self.pull_timeout_ms / 1000.0


# The documented spelling of each option, by the lower-case key Spark hands us.
_NAMES: Final = {
    name.lower(): name
    for name in (
        "namesrv",
        "topic",
        "topicPattern",
        "assign",
        "startingOffsets",
        "endingOffsets",
        "startingTimestamp",
        "endingTimestamp",
        "startingOffsetsByTimestamp",
        "endingOffsetsByTimestamp",
        "startingOffsetsByTimestampStrategy",
        "subExpression",
        "numPartitions",
        "allocateStrategy",
        "maxRecordsPerPartition",
        "minPartitions",
        "maxRecordsPerBatch",
        "minOffsetsPerTrigger",
        "maxTriggerDelay",
        "failOnDataLoss",
        "pullBatchSize",
        "pullTimeoutMs",
        "fetchOffset.numRetries",
        "fetchOffset.retryIntervalMs",
        "commitToGroup",
        "accessKey",
        "secretKey",
        "namespace",
        *CONNECTION_OPTIONS,
    )
}


def _topics(options: Mapping[str, str]) -> tuple[tuple[str, ...], str | None, Assignment | None]:
    """``(topics, topicPattern, assign)``: exactly one of the three options, as Kafka's source."""
    topic = get_text(options, "topic")
    pattern = get_text(options, "topicPattern")
    assign_text = get_text(options, "assign")
    given = [
        name
        for name, value in (("topic", topic), ("topicPattern", pattern), ("assign", assign_text))
        if value
    ]
    if len(given) != 1:
        raise SparkOptionError(
            "assign" if assign_text is not None else "topic",
            "give exactly one of 'topic' (a name or comma list), 'topicPattern' and 'assign'"
            + (f" (given: {', '.join(given)})" if given else ""),
        )
    if assign_text is not None:
        assign = parse_assign(assign_text)
        return tuple(assign), None, assign
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise SparkOptionError(
                "topicPattern", f"{pattern!r} is not a regular expression: {exc}"
            ) from None
        return (), pattern, None
    assert topic is not None
    names = tuple(dict.fromkeys(part.strip() for part in topic.split(",") if part.strip()))
    for name in names:
        if TOPIC_NAME.fullmatch(name) is None:
            raise SparkOptionError(
                "topic", f"{name!r} is not a valid topic name ([%|a-zA-Z0-9_-], 1-127 chars)"
            )
    if not names:
        raise SparkOptionError("topic", f"{topic!r} names no topic")
    return names, None, None


def _sub_expression(options: Mapping[str, str]) -> str:
    text = get_text(options, "subExpression") or "*"
    try:
        build_subscription_data("topic", text, sub_version=0)
    except ClientError as exc:
        raise SparkOptionError("subExpression", str(exc)) from None
    return text


def _admission(options: Mapping[str, str], *, streaming: bool) -> tuple[int | None, int | None, int | None]:
    """``(maxRecordsPerBatch, minOffsetsPerTrigger, maxTriggerDelay in ms)``: streaming only."""
    max_per_batch = get_int(options, "maxRecordsPerBatch", minimum=1)
    min_per_trigger = get_int(options, "minOffsetsPerTrigger", minimum=1)
    max_delay = get_duration_ms(options, "maxTriggerDelay")
    if not streaming:
        for name, given, why in (
            ("maxRecordsPerBatch", max_per_batch, " (see maxRecordsPerPartition)"),
            ("minOffsetsPerTrigger", min_per_trigger, ""),
            ("maxTriggerDelay", max_delay, ""),
        ):
            if given is not None:
                raise SparkOptionError(name, f"is for streaming reads only{why}")
    if max_delay is not None and min_per_trigger is None:
        raise SparkOptionError("maxTriggerDelay", "means nothing without minOffsetsPerTrigger")
    return max_per_batch, min_per_trigger, max_delay


def parse_read_options(options: Mapping[str, str], *, streaming: bool) -> ReadOptions:
    """Parse and check the reader's options.

    Args:
        options: Spark's options (lower-case keys, string values); any mapping works.
        streaming: for ``readStream`` (``startingOffsets`` then defaults to ``latest``, and
            the ending options are refused).

    Raises:
        SparkOptionError: a required option is missing or a value is bad; the message names it.
    """
    lowered = {str(k).lower(): str(v) for k, v in options.items()}
    refuse_kafka_spellings(lowered, "reader")
    namesrv = parse_namesrv(lowered)
    topics, pattern, assign = _topics(lowered)
    window = parse_window(lowered, streaming=streaming)
    strategy_text = get_text(lowered, "allocateStrategy") or DEFAULT_ALLOCATE_STRATEGY
    try:
        strategy = get_strategy(strategy_text).name
    except ClientError as exc:
        raise SparkOptionError("allocateStrategy", str(exc)) from None
    group = get_text(lowered, "commitToGroup")
    if group is not None:
        if not streaming:
            raise SparkOptionError("commitToGroup", "is for streaming reads only")
        try:
            validate_group(group)
        except (InvalidGroup, InvalidTopic) as exc:
            raise SparkOptionError("commitToGroup", str(exc)) from None
    max_per_batch, min_per_trigger, max_delay = _admission(lowered, streaming=streaming)
    extra = {k: v for k, v in lowered.items() if k not in _NAMES and not k.startswith(CLIENT_PREFIX)}
    access_key, secret_key = parse_credentials(lowered)
    namespace = parse_namespace(lowered)
    window = wrap_window(namespace, window)
    return ReadOptions(
        namesrv=namesrv,
        topics=tuple(wrap_name(namespace, t) for t in topics),
        topic_pattern=pattern,
        assign=None if assign is None else wrap_assignment(namespace, assign),
        starting=window.starting,
        ending=window.ending,
        starting_timestamp=window.starting_timestamp,
        ending_timestamp=window.ending_timestamp,
        starting_by_timestamp=window.starting_by_timestamp,
        ending_by_timestamp=window.ending_by_timestamp,
        timestamp_strategy=window.timestamp_strategy,
        sub_expression=_sub_expression(lowered),
        num_partitions=get_int(lowered, "numPartitions", minimum=1),
        allocate_strategy=strategy,
        max_records_per_partition=get_int(lowered, "maxRecordsPerPartition", minimum=1),
        min_partitions=get_int(lowered, "minPartitions", minimum=1),
        max_records_per_batch=max_per_batch,
        min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay_ms=or_default(max_delay, DEFAULT_MAX_TRIGGER_DELAY_MS),
        fail_on_data_loss=get_bool(lowered, "failOnDataLoss", True),
        pull_batch_size=get_int(lowered, "pullBatchSize", minimum=1, maximum=MAX_PULL_BATCH_SIZE)
        or DEFAULT_PULL_BATCH_SIZE,
        pull_timeout_ms=get_int(lowered, "pullTimeoutMs", minimum=1) or DEFAULT_PULL_TIMEOUT_MS,
        fetch_offset_retries=or_default(
            get_int(lowered, "fetchOffset.numRetries", minimum=0), DEFAULT_RETRIES
        ),
        fetch_offset_retry_interval_ms=or_default(
            get_int(lowered, "fetchOffset.retryIntervalMs", minimum=0), DEFAULT_RETRY_INTERVAL_MS
        ),
        commit_to_group=None if group is None else wrap_name(namespace, group),
        access_key=access_key,
        secret_key=secret_key,
        namespace=namespace,
        client=parse_client_settings(lowered, "reader", signed=access_key is not None),
        extra=extra,
    )
