"""Numeric constants of the remoting protocol: request/response codes, languages, serialize types.

Everything here is a name for a number that travels in a RemotingCommand header:

- ``code``: a :class:`RequestCode` on requests, a :class:`ResponseCode` on responses;
- ``language``: a :class:`LanguageCode` (one byte in binary headers, the member *name* in JSON);
- the serialize-type byte, the high byte of the header-length word: a :class:`SerializeType`;
- ``flag``: a bit set of :data:`FLAG_RESPONSE` and :data:`FLAG_ONEWAY`;
- ``version``: :data:`DEFAULT_VERSION`, the version ordinal we announce.

The enums only give numbers names. Decoders keep codes that are not listed here as plain ``int``
(newer brokers add codes), and an ``IntEnum`` member compares equal to its ``int`` value.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final

__all__ = [
    "DEFAULT_VERSION",
    "FLAG_ONEWAY",
    "FLAG_RESPONSE",
    "LanguageCode",
    "RequestCode",
    "ResponseCode",
    "SerializeType",
]

#: ``flag`` bit 0: the command is a response (it answers the request with the same ``opaque``).
FLAG_RESPONSE: Final = 1
#: ``flag`` bit 1: the request expects no response.
FLAG_ONEWAY: Final = 2

#: The ``version`` we send: the ordinal of ``MQVersion.Version.V5_3_3``, the Java 5.3.3 client's
#: ``CURRENT_VERSION``. Servers switch behaviour on it (standard JSON route data from 401 on,
#: GO_AWAY answers above 475), so we announce a current client.
DEFAULT_VERSION: Final = 479


class SerializeType(IntEnum):
    """How the header is encoded: the high byte of the header-length word."""

    JSON = 0
    ROCKETMQ = 1


class LanguageCode(IntEnum):
    """The client's implementation language. The broker only records it."""

    JAVA = 0
    CPP = 1
    DOTNET = 2
    PYTHON = 3
    DELPHI = 4
    ERLANG = 5
    RUBY = 6
    OTHER = 7
    HTTP = 8
    GO = 9
    PHP = 10
    OMS = 11
    RUST = 12
    NODE_JS = 13


class RequestCode(IntEnum):
    """Request codes. "broker->client" ones arrive on our connection and may need an answer."""

    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    QUERY_MESSAGE = 12
    QUERY_BROKER_OFFSET = 13
    QUERY_CONSUMER_OFFSET = 14
    UPDATE_CONSUMER_OFFSET = 15
    UPDATE_AND_CREATE_TOPIC = 17
    UPDATE_BROKER_CONFIG = 25
    GET_BROKER_CONFIG = 26
    SEARCH_OFFSET_BY_TIMESTAMP = 29
    GET_MAX_OFFSET = 30
    GET_MIN_OFFSET = 31
    GET_EARLIEST_MSG_STORETIME = 32
    VIEW_MESSAGE_BY_ID = 33
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    CONSUMER_SEND_MSG_BACK = 36
    END_TRANSACTION = 37
    GET_CONSUMER_LIST_BY_GROUP = 38
    CHECK_TRANSACTION_STATE = 39  # broker->client, oneway
    NOTIFY_CONSUMER_IDS_CHANGED = 40  # broker->client, oneway
    LOCK_BATCH_MQ = 41
    UNLOCK_BATCH_MQ = 42
    GET_ALL_CONSUMER_OFFSET = 43
    PUT_KV_CONFIG = 100
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
    GET_TOPIC_STATS_INFO = 202
    GET_CONSUMER_CONNECTION_LIST = 203
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    GET_CONSUME_STATS = 208
    DELETE_TOPIC_IN_BROKER = 215
    DELETE_TOPIC_IN_NAMESRV = 216
    RESET_CONSUMER_CLIENT_OFFSET = 220  # broker->client, oneway
    GET_CONSUMER_STATUS_FROM_CLIENT = 221  # broker->client, needs a reply
    INVOKE_BROKER_TO_RESET_OFFSET = 222
    GET_TOPICS_BY_CLUSTER = 224
    GET_CONSUMER_RUNNING_INFO = 307  # broker->client, needs a reply
    CONSUME_MESSAGE_DIRECTLY = 309  # broker->client, needs a reply
    SEND_MESSAGE_V2 = 310
    SEND_BATCH_MESSAGE = 320
    SEND_REPLY_MESSAGE = 324
    SEND_REPLY_MESSAGE_V2 = 325
    PUSH_REPLY_MESSAGE_TO_CLIENT = 326  # broker->client, needs a reply
    LITE_PULL_MESSAGE = 361
    RECALL_MESSAGE = 370  # 5.3.2+
    QUERY_ASSIGNMENT = 400
    SET_MESSAGE_REQUEST_MODE = 401  # 5.x: a group's mode (POP or PULL) for a topic; mqadmin setConsumeMode
    # 5.x pop mode; above int16, so these only fit a JSON header.
    POP_MESSAGE = 200050
    ACK_MESSAGE = 200051
    CHANGE_MESSAGE_INVISIBLETIME = 200053
    BATCH_ACK_MESSAGE = 200151


class ResponseCode(IntEnum):
    """Response codes (Java's RemotingSysResponseCode and ResponseCode together)."""

    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    TRANSACTION_FAILED = 4
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    VERSION_NOT_SUPPORTED = 15
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    TOPIC_EXIST_ALREADY = 18
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_NOT_LATEST = 25
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    FILTER_DATA_NOT_EXIST = 27
    FILTER_DATA_NOT_LATEST = 28
    INVALID_PARAMETER = 29
    TRANSACTION_SHOULD_COMMIT = 200
    TRANSACTION_SHOULD_ROLLBACK = 201
    TRANSACTION_STATE_UNKNOWN = 202  # Java spells it TRANSACTION_STATE_UNKNOW
    TRANSACTION_STATE_GROUP_WRONG = 203
    NO_BUYER_ID = 204
    NOT_IN_CURRENT_UNIT = 205
    CONSUMER_NOT_ONLINE = 206
    CONSUME_MSG_TIMEOUT = 207
    NO_MESSAGE = 208
    POLLING_FULL = 209
    POLLING_TIMEOUT = 210
    BROKER_NOT_EXIST = 211
    BROKER_DISPATCH_NOT_COMPLETE = 212
    FLOW_CONTROL = 215
    NOT_LEADER_FOR_QUEUE = 501
    ILLEGAL_OPERATION = 604
    GO_AWAY = 1500
    # Java client-internal codes: never sent by a server, listed so logs can name them.
    RPC_UNKNOWN = -1000
    RPC_ADDR_IS_NULL = -1002
    RPC_SEND_TO_CHANNEL_FAILED = -1004
    RPC_TIME_OUT = -1006
