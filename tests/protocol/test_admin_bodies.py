"""Admin reply bodies: a broker's subscription groups (GET_ALL_SUBSCRIPTIONGROUP_CONFIG).

The JSON is shaped as a 5.x broker writes ``SubscriptionGroupWrapper`` (fastjson, keys sorted; the
5.x fields ``groupRetryPolicy``, ``attributes``, ``forbiddenTable`` and ``dataVersion`` present and
ignored); integration/test_admin.py reads the real one.
"""

from __future__ import annotations

import pytest

from rocketmq_py.errors import MalformedBody
from rocketmq_py.protocol import SubscriptionGroupConfig, SubscriptionGroupWrapper, decode_body

_WRAPPER_5X = (
    b'{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1764633600000},"forbiddenTable":{},'
    b'"subscriptionGroupTable":{"TOOLS_CONSUMER":{"attributes":{},"brokerId":0,"consumeBroadcastEnable":true,'
    b'"consumeEnable":true,"consumeFromMinEnable":true,"consumeMessageOrderly":false,"consumeTimeoutMinute":15,'
    b'"groupName":"TOOLS_CONSUMER","groupRetryPolicy":{"type":"CUSTOMIZED"},"groupSysFlag":0,'
    b'"notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,"retryQueueNums":1,'
    b'"whichBrokerWhenConsumeSlowly":1},"orders":{"attributes":{},"brokerId":0,"consumeBroadcastEnable":false,'
    b'"consumeEnable":true,"consumeFromMinEnable":true,"consumeMessageOrderly":true,"consumeTimeoutMinute":15,'
    b'"groupName":"orders","groupSysFlag":0,"notifyConsumerIdsChangedEnable":true,"retryMaxTimes":3,'
    b'"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1}}}'
)


def test_a_5x_wrapper_decodes_to_its_groups() -> None:
    wrapper = decode_body(SubscriptionGroupWrapper, _WRAPPER_5X)
    assert sorted(wrapper.subscription_group_table) == ["TOOLS_CONSUMER", "orders"]
    orders = wrapper.subscription_group_table["orders"]
    assert orders == SubscriptionGroupConfig(
        group_name="orders", consume_broadcast_enable=False, consume_message_orderly=True, retry_max_times=3
    )


def test_a_4x_wrapper_without_the_5x_fields_decodes() -> None:
    body = b'{"subscriptionGroupTable":{"g":{"groupName":"g","retryMaxTimes":16}}}'
    assert decode_body(SubscriptionGroupWrapper, body).subscription_group_table == {
        "g": SubscriptionGroupConfig(group_name="g")
    }


def test_a_wrong_type_is_malformed() -> None:
    with pytest.raises(MalformedBody):
        decode_body(SubscriptionGroupWrapper, b'{"subscriptionGroupTable":{"g":{"retryMaxTimes":"x"}}}')
