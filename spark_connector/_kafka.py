"""Spark's Kafka source and sink options, and ours: one declaration, with no I/O.

:data:`KAFKA_OPTIONS` names every option of Spark's Kafka source (``reader``) and sink
(``writer``) and this connector's counterpart. Most keep Kafka's name here. Where ours has another
name, a query that passes Kafka's spelling fails with :class:`SparkOptionError` naming ours
(:func:`refuse_kafka_spellings`) instead of having it ignored, as an unknown option is; so do the
Kafka client settings under ``kafka.``. The Spark guide's table "Coming from Spark's Kafka source"
lists exactly these (``docs/hooks/spark_options.py`` checks it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from spark_connector._client_options import Side
from spark_connector._errors import SparkOptionError

__all__ = ["KAFKA_CLIENT_PREFIX", "KAFKA_OPTIONS", "KafkaOption", "refuse_kafka_spellings"]

#: Spark's Kafka source and sink hand options under this prefix to the Kafka clients.
KAFKA_CLIENT_PREFIX: Final = "kafka."


@dataclass(frozen=True, slots=True)
class KafkaOption:
    """One option of Spark's Kafka source or sink.

    Attributes:
        name: Kafka's name (``kafka.*`` stands for the Kafka client settings).
        side: ``reader`` (the source) or ``writer`` (the sink).
        ours: this connector's counterpart (``""``: none).
        refused: Kafka's spelling fails, naming :attr:`ours` (ours has another name).
    """

    name: str
    side: Side
    ours: str = ""
    refused: bool = False


#: Every option of Spark's Kafka source and sink (Spark 4.x), with ours.
KAFKA_OPTIONS: Final = (
    KafkaOption("assign", "reader", "assign"),
    KafkaOption("subscribe", "reader", "topic", refused=True),
    KafkaOption("subscribePattern", "reader", "topicPattern", refused=True),
    KafkaOption("kafka.bootstrap.servers", "reader", "namesrv", refused=True),
    KafkaOption("startingTimestamp", "reader", "startingTimestamp"),
    KafkaOption("startingOffsetsByTimestamp", "reader", "startingOffsetsByTimestamp"),
    KafkaOption("startingOffsets", "reader", "startingOffsets"),
    KafkaOption("endingTimestamp", "reader", "endingTimestamp"),
    KafkaOption("endingOffsetsByTimestamp", "reader", "endingOffsetsByTimestamp"),
    KafkaOption("endingOffsets", "reader", "endingOffsets"),
    KafkaOption("startingOffsetsByTimestampStrategy", "reader", "startingOffsetsByTimestampStrategy"),
    KafkaOption("failOnDataLoss", "reader", "failOnDataLoss"),
    KafkaOption("kafkaConsumer.pollTimeoutMs", "reader", "pullTimeoutMs", refused=True),
    KafkaOption("fetchOffset.numRetries", "reader", "fetchOffset.numRetries"),
    KafkaOption("fetchOffset.retryIntervalMs", "reader", "fetchOffset.retryIntervalMs"),
    KafkaOption("maxOffsetsPerTrigger", "reader", "maxRecordsPerBatch", refused=True),
    KafkaOption("minOffsetsPerTrigger", "reader", "minOffsetsPerTrigger"),
    KafkaOption("maxTriggerDelay", "reader", "maxTriggerDelay"),
    KafkaOption("minPartitions", "reader", "minPartitions"),
    KafkaOption("maxRecordsPerPartition", "reader", "maxRecordsPerPartition"),
    KafkaOption("groupIdPrefix", "reader"),
    KafkaOption("includeHeaders", "reader"),
    KafkaOption("kafka.*", "reader", "client.*", refused=True),
    KafkaOption("kafka.bootstrap.servers", "writer", "namesrv", refused=True),
    KafkaOption("topic", "writer", "topic"),
    KafkaOption("includeHeaders", "writer"),
    KafkaOption("kafka.*", "writer", "client.*", refused=True),
)

_SPELLINGS: Final = {
    side: {o.name.lower(): o for o in KAFKA_OPTIONS if o.side == side and o.refused and o.name != "kafka.*"}
    for side in ("reader", "writer")
}
_KIND: Final = {"reader": "source", "writer": "sink"}
_CLIENT_SETTINGS: Final = (
    "Kafka client settings do not apply: this source speaks RocketMQ's protocol (connections: "
    "namesrv, tls, accessKey / secretKey, securityToken and the client. options)"
)


def refuse_kafka_spellings(options: Mapping[str, str], side: Side) -> None:
    """Fail on an option of Spark's Kafka source or sink that has another name here.

    Args:
        options: the lower-cased options.
        side: whose options they are.

    Raises:
        SparkOptionError: naming Kafka's option and ours (or, for ``kafka.*``, the connection options).
    """
    for key in sorted(options):
        option = _SPELLINGS[side].get(key)
        if option is not None:
            raise SparkOptionError(
                option.name, f"is Spark's Kafka {_KIND[side]} option; this source's is {option.ours!r}"
            )
        if key.startswith(KAFKA_CLIENT_PREFIX):
            raise SparkOptionError(key, _CLIENT_SETTINGS)
