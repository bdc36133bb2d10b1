"""The protocol's numeric constants: values from the reference, no duplicates, errors in step."""

from __future__ import annotations

from enum import IntEnum

import pytest

from rocketmq_py.errors import BrokerError, broker_error_class
from rocketmq_py.protocol._codes import (
    DEFAULT_VERSION,
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    LanguageCode,
    RequestCode,
    ResponseCode,
    SerializeType,
)


@pytest.mark.parametrize("enum", [RequestCode, ResponseCode, LanguageCode, SerializeType])
def test_no_aliases(enum: type[IntEnum]) -> None:
    # An alias would make two names share a number and hide one of them from iteration.
    assert len(enum.__members__) == len(list(enum))


def test_language_codes_are_the_wire_bytes() -> None:
    assert [(m.name, m.value) for m in LanguageCode] == [
        ("JAVA", 0),
        ("CPP", 1),
        ("DOTNET", 2),
        ("PYTHON", 3),
        ("DELPHI", 4),
        ("ERLANG", 5),
        ("RUBY", 6),
        ("OTHER", 7),
        ("HTTP", 8),
        ("GO", 9),
        ("PHP", 10),
        ("OMS", 11),
        ("RUST", 12),
        ("NODE_JS", 13),
    ]


def test_serialize_types_flags_and_version() -> None:
    assert (SerializeType.JSON, SerializeType.ROCKETMQ) == (0, 1)
    assert (FLAG_RESPONSE, FLAG_ONEWAY) == (1, 2)
    assert DEFAULT_VERSION == 479


@pytest.mark.parametrize(
    ("member", "value"),
    [
        (RequestCode.SEND_MESSAGE, 10),
        (RequestCode.PULL_MESSAGE, 11),
        (RequestCode.UPDATE_CONSUMER_OFFSET, 15),
        (RequestCode.UPDATE_BROKER_CONFIG, 25),
        (RequestCode.GET_BROKER_CONFIG, 26),
        (RequestCode.HEART_BEAT, 34),
        (RequestCode.CHECK_TRANSACTION_STATE, 39),
        (RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, 40),
        (RequestCode.GET_ALL_CONSUMER_OFFSET, 43),
        (RequestCode.PUT_KV_CONFIG, 100),
        (RequestCode.GET_ROUTEINFO_BY_TOPIC, 105),
        (RequestCode.GET_BROKER_CLUSTER_INFO, 106),
        (RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, 206),
        (RequestCode.RESET_CONSUMER_CLIENT_OFFSET, 220),
        (RequestCode.GET_TOPICS_BY_CLUSTER, 224),
        (RequestCode.GET_CONSUMER_RUNNING_INFO, 307),
        (RequestCode.SEND_MESSAGE_V2, 310),
        (RequestCode.SEND_BATCH_MESSAGE, 320),
        (RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, 326),
        (RequestCode.LITE_PULL_MESSAGE, 361),
        (RequestCode.QUERY_ASSIGNMENT, 400),
        (RequestCode.POP_MESSAGE, 200050),
        (RequestCode.ACK_MESSAGE, 200051),
        (ResponseCode.SUCCESS, 0),
        (ResponseCode.PULL_NOT_FOUND, 19),
        (ResponseCode.PULL_RETRY_IMMEDIATELY, 20),
        (ResponseCode.PULL_OFFSET_MOVED, 21),
        (ResponseCode.QUERY_NOT_FOUND, 22),
        (ResponseCode.TRANSACTION_STATE_UNKNOWN, 202),
        (ResponseCode.FLOW_CONTROL, 215),
        (ResponseCode.GO_AWAY, 1500),
        (ResponseCode.RPC_TIME_OUT, -1006),
    ],
)
def test_code_values(member: IntEnum, value: int) -> None:
    assert member == value
    assert type(member)(value) is member


def test_every_error_response_code_has_its_broker_error() -> None:
    server_codes = [code for code in ResponseCode if code > 0]
    assert len(server_codes) == 41
    for code in server_codes:
        cls = broker_error_class(code)
        assert cls is not BrokerError, code.name
        assert cls.response_code == code
