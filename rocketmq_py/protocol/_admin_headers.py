"""Typed custom headers outside the data path: transactions, the name server, admin, queries.

Same conventions as :mod:`._headers` (one frozen, slotted, keyword-only dataclass per Java
``CommandCustomHeader``, ``REQUEST_CODE`` the request code that carries it, ``None`` on response
headers); the ``extFields`` mapping is :mod:`._ext_fields`. ``bname`` (field ``broker_name``) is
modelled where the Java client sets it, as in :mod:`._headers`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from rocketmq_py.protocol._codes import RequestCode
from rocketmq_py.protocol._ext_fields import Int32, Int64, extra_field, prepare_headers, wire_key

__all__ = [
    "CheckTransactionStateRequestHeader",
    "DeleteTopicRequestHeader",
    "EndTransactionRequestHeader",
    "GetConsumeStatsRequestHeader",
    "GetConsumerConnectionListRequestHeader",
    "GetRouteInfoRequestHeader",
    "GetTopicStatsInfoRequestHeader",
    "QueryMessageRequestHeader",
    "QueryMessageResponseHeader",
    "UpdateAndCreateTopicRequestHeader",
    "ViewMessageRequestHeader",
]


# --- transactions --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class EndTransactionRequestHeader:
    """END_TRANSACTION (oneway). ``commit_or_rollback``: 0 unknown, 8 commit, 12 rollback."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.END_TRANSACTION

    producer_group: str
    tran_state_table_offset: Int64
    commit_log_offset: Int64
    commit_or_rollback: Int32
    msg_id: str
    topic: str | None = None
    from_transaction_check: bool = False
    transaction_id: str | None = None
    broker_name: str | None = field(default=None, metadata=wire_key("bname"))
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckTransactionStateRequestHeader:
    """CHECK_TRANSACTION_STATE (broker -> client, oneway); body is the half message."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.CHECK_TRANSACTION_STATE

    tran_state_table_offset: Int64
    commit_log_offset: Int64
    topic: str | None = None
    msg_id: str | None = None
    transaction_id: str | None = None
    offset_msg_id: str | None = None
    broker_name: str | None = field(default=None, metadata=wire_key("bname"))
    extra: Mapping[str, str] = extra_field()


# --- name server, admin, queries -----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class GetRouteInfoRequestHeader:
    """GET_ROUTEINFO_BY_TOPIC (to the name server); the reply body is TopicRouteData.

    ``accept_standard_json_only=True`` asks for quoted map keys whatever our ``version``.
    """

    REQUEST_CODE: ClassVar[int | None] = RequestCode.GET_ROUTEINFO_BY_TOPIC

    topic: str
    accept_standard_json_only: bool | None = None
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateAndCreateTopicRequestHeader:
    """UPDATE_AND_CREATE_TOPIC (admin, to a broker); Java's CreateTopicRequestHeader."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.UPDATE_AND_CREATE_TOPIC

    topic: str
    default_topic: str
    read_queue_nums: Int32
    write_queue_nums: Int32
    perm: Int32
    topic_filter_type: str  # "SINGLE_TAG" or "MULTI_TAG"
    order: bool
    topic_sys_flag: Int32 | None = None
    attributes: str | None = None
    force: bool | None = None
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewMessageRequestHeader:
    """VIEW_MESSAGE_BY_ID: ``offset`` is the commit-log offset from an offset msgId."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.VIEW_MESSAGE_BY_ID

    offset: Int64
    topic: str | None = None
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryMessageRequestHeader:
    """QUERY_MESSAGE: look messages up by key in the broker's index."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.QUERY_MESSAGE

    topic: str
    key: str
    max_num: Int32
    begin_timestamp: Int64
    end_timestamp: Int64
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryMessageResponseHeader:
    """Reply to QUERY_MESSAGE."""

    REQUEST_CODE: ClassVar[int | None] = None

    index_last_update_timestamp: Int64
    index_last_update_phyoffset: Int64
    extra: Mapping[str, str] = extra_field()


# Build every plan at import: a malformed class fails here, and no first call pays for reflection.
prepare_headers(
    EndTransactionRequestHeader,
    CheckTransactionStateRequestHeader,
    GetRouteInfoRequestHeader,
    UpdateAndCreateTopicRequestHeader,
    ViewMessageRequestHeader,
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetTopicStatsInfoRequestHeader:
    """GET_TOPIC_STATS_INFO (admin, to a broker); the reply body is a ``TopicStatsTable``."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.GET_TOPIC_STATS_INFO

    topic: str
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumeStatsRequestHeader:
    """GET_CONSUME_STATS (admin, to a broker): a group's queues, of ``topic`` or of every topic."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.GET_CONSUME_STATS

    consumer_group: str
    topic: str | None = None
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumerConnectionListRequestHeader:
    """GET_CONSUMER_CONNECTION_LIST (admin, to a broker); the reply body is a ``ConsumerConnection``."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.GET_CONSUMER_CONNECTION_LIST

    consumer_group: str
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicRequestHeader:
    """DELETE_TOPIC_IN_BROKER and DELETE_TOPIC_IN_NAMESRV (admin): the same header for both."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.DELETE_TOPIC_IN_BROKER

    topic: str
    extra: Mapping[str, str] = extra_field()
