"""JSON bodies of the admin replies: topic stats, a group's consume stats and connections, the topic
list, a broker's subscription groups.

Same mapping as :mod:`._bodies` (:class:`~rocketmq_py.protocol._json_body.JsonBody`); the tables
keyed by :class:`MessageQueue` come in fastjson's object-as-key form. Java's names are given per
class; a field the Java side adds later is ignored on decode.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from rocketmq_py.protocol._bodies import MessageQueue, SubscriptionData
from rocketmq_py.protocol._json_body import JsonBody

__all__ = [
    "ClientConnection",
    "ConsumeStats",
    "ConsumerConnection",
    "OffsetWrapper",
    "SubscriptionGroupConfig",
    "SubscriptionGroupWrapper",
    "TopicList",
    "TopicOffset",
    "TopicStatsTable",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicOffset(JsonBody):
    """One queue's bounds on its broker (Java ``TopicOffset``): ``max_offset`` is the next write's."""

    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicStatsTable(JsonBody):
    """GET_TOPIC_STATS_INFO reply: each queue of the topic on the asked broker (Java ``TopicStatsTable``)."""

    _OBJECT_KEYS: ClassVar[bool] = True

    offset_table: Mapping[MessageQueue, TopicOffset] = field(default_factory=dict, hash=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetWrapper(JsonBody):
    """One queue of a group (Java ``OffsetWrapper``): the broker's max offset, the group's committed
    offset, (5.x) its pull offset, and the store time of the last message consumed."""

    broker_offset: int = 0
    consumer_offset: int = 0
    pull_offset: int = 0
    last_timestamp: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumeStats(JsonBody):
    """GET_CONSUME_STATS reply: the group's queues on the asked broker and its consume rate there
    (Java ``ConsumeStats``)."""

    _OBJECT_KEYS: ClassVar[bool] = True

    offset_table: Mapping[MessageQueue, OffsetWrapper] = field(default_factory=dict, hash=False)
    consume_tps: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientConnection(JsonBody):
    """One client connected to a broker (Java ``Connection``): its id, address, language and the
    ``MQVersion`` ordinal it reports."""

    client_id: str = ""
    client_addr: str = ""
    language: str = ""
    version: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerConnection(JsonBody):
    """GET_CONSUMER_CONNECTION_LIST reply: a group's members on the asked broker and what they
    subscribe (Java ``ConsumerConnection``)."""

    connection_set: tuple[ClientConnection, ...] = ()
    subscription_table: Mapping[str, SubscriptionData] = field(default_factory=dict, hash=False)
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicList(JsonBody):
    """GET_ALL_TOPIC_LIST_FROM_NAMESERVER reply (Java ``TopicList``)."""

    topic_list: tuple[str, ...] = ()
    broker_addr: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SubscriptionGroupConfig(JsonBody):
    """One consumer group as a broker keeps it (Java ``SubscriptionGroupConfig``; the fields an
    operator reads: 5.x adds retry policies, attributes and subscriptions, ignored here)."""

    group_name: str = ""
    consume_enable: bool = True
    consume_broadcast_enable: bool = True
    consume_message_orderly: bool = False
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    group_sys_flag: int = 0
    consume_timeout_minute: int = 15


@dataclass(frozen=True, slots=True, kw_only=True)
class SubscriptionGroupWrapper(JsonBody):
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG reply: every group the asked broker knows, by name (Java
    ``SubscriptionGroupWrapper``; its data version and 5.x forbidden table are ignored)."""

    subscription_group_table: Mapping[str, SubscriptionGroupConfig] = field(default_factory=dict, hash=False)
