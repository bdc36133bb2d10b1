"""The sink's options, parsed with no I/O (see :mod:`spark_connector._sink` for what they do).

One rule with the reader's: a blank value is no value (the default applies); a bad one raises
:class:`SparkOptionError` naming the option as documented.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from rocketmq_py.errors import ClientError, InvalidMessage
from rocketmq_py.lowlevel import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_SEND_TIMEOUT,
    MAX_MESSAGE_SIZE,
    validate_producer_group,
    validate_topic,
)
from spark_connector._client_options import CACHE_TIMEOUT_MS, ClientSettings, parse_client_settings
from spark_connector._errors import SparkOptionError
from spark_connector._kafka import refuse_kafka_spellings
from spark_connector._option_values import (
    get_bool,
    get_int,
    get_text,
    parse_credentials,
    parse_namespace,
    parse_namesrv,
)

__all__ = ["DEFAULT_PRODUCER_GROUP", "SinkOptions", "parse_sink_options"]

#: Producer group of the sink's producers when option ``producerGroup`` is not given.
DEFAULT_PRODUCER_GROUP: Final = "spark-rocketmq-writer"


@dataclass(frozen=True, slots=True)
class SinkOptions:
    """The sink's options, parsed (see :mod:`spark_connector._sink`)."""

    namesrv: str
    topic: str | None = None
    producer_group: str = DEFAULT_PRODUCER_GROUP
    deterministic_keys: bool = False
    write_id: str | None = None
    send_timeout: float = DEFAULT_SEND_TIMEOUT
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    batch_size: int = DEFAULT_BATCH_SIZE
    max_message_size: int = MAX_MESSAGE_SIZE
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    #: The producers' namespace: topics (option and column) are plain, the brokers store them wrapped.
    namespace: str | None = None
    #: Write a trace record of every send (``enableTrace``), to ``trace_topic`` (``traceTopic``).
    enable_trace: bool = False
    trace_topic: str | None = None
    #: ``securityToken``, TLS and the ``client.`` options of the producers.
    client: ClientSettings = field(
        default_factory=lambda: ClientSettings(cache_timeout_ms=CACHE_TIMEOUT_MS["writer"])
    )


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Parse the writer options (keys case-insensitive, values strings; blank values are unset).

    Raises:
        SparkOptionError: ``namesrv`` is missing, or an option has a bad value (the error names it).
    """
    lowered = {key.lower(): value for key, value in options.items()}
    refuse_kafka_spellings(lowered, "writer")
    namesrv = ";".join(parse_namesrv(lowered))
    topic = get_text(lowered, "topic")
    if topic is not None:
        try:
            validate_topic(topic)
        except InvalidMessage as exc:
            raise SparkOptionError("topic", str(exc)) from None
    group = get_text(lowered, "producerGroup") or DEFAULT_PRODUCER_GROUP
    try:
        validate_producer_group(group)
    except ClientError as exc:
        raise SparkOptionError("producerGroup", str(exc)) from None
    access_key, secret_key = parse_credentials(lowered)
    timeout_ms = get_int(lowered, "sendTimeoutMs", minimum=1)
    return SinkOptions(
        namesrv=namesrv,
        topic=topic,
        producer_group=group,
        deterministic_keys=get_bool(lowered, "deterministicKeys", False),
        write_id=get_text(lowered, "writeId"),
        send_timeout=DEFAULT_SEND_TIMEOUT if timeout_ms is None else timeout_ms / 1000,
        max_in_flight=get_int(lowered, "maxInFlight", minimum=1) or DEFAULT_MAX_IN_FLIGHT,
        batch_size=get_int(lowered, "batchSize", minimum=1) or DEFAULT_BATCH_SIZE,
        max_message_size=get_int(lowered, "maxMessageSize", minimum=1) or MAX_MESSAGE_SIZE,
        access_key=access_key,
        secret_key=secret_key,
        namespace=parse_namespace(lowered),
        enable_trace=get_bool(lowered, "enableTrace", False),
        trace_topic=_trace_topic(lowered),
        client=parse_client_settings(lowered, "writer", signed=access_key is not None),
    )


def _trace_topic(options: Mapping[str, str]) -> str | None:
    topic = get_text(options, "traceTopic")
    if topic is not None:
        try:
            validate_topic(topic)
        except InvalidMessage as exc:
            raise SparkOptionError("traceTopic", str(exc)) from None
    return topic
