"""ACL answers: rejected credentials become AuthenticationFailed on 4.x and 5.x; secrets stay out of reprs.

The remarks are the brokers' own texts (4.9.7 ``PlainPermissionManager`` through
``RemotingHelper.exceptionSimpleDesc``; 5.3.3 ``DefaultAuthenticationHandler``), as the real brokers
answered them in ``integration/test_acl.py``.
"""

from __future__ import annotations

import pytest

from rocketmq_py import ClientConfig, Producer
from rocketmq_py._transport import AclRPCHook
from rocketmq_py.errors import (
    AuthenticationFailed,
    BrokerError,
    BrokerSystemError,
    NoPermission,
    broker_error_for,
)

_AT = ", org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:683)"


@pytest.mark.parametrize(
    ("code", "remark"),
    [
        (16, "check signature failed."),
        (16, "User:nobody is not found."),
        (16, "User:alice is disabled."),
        (16, "username cannot be null."),
        (16, "Authentication failed. Please verify the credentials and try again."),
        (1, "org.apache.rocketmq.acl.common.AclException: Check signature failed for accessKey=ak" + _AT),
        (1, "org.apache.rocketmq.acl.common.AclException: No acl config for nobody" + _AT),
        (1, "org.apache.rocketmq.acl.common.AclException: No accessKey is configured" + _AT),
    ],
)
def test_rejected_credentials_are_authentication_failed(code: int, remark: str) -> None:
    error = broker_error_for(code, remark)
    assert type(error) is AuthenticationFailed
    assert isinstance(error, NoPermission)
    assert error.code == code
    assert error.remark == remark
    assert not error.retriable  # the next attempt would sign with the same keys
    assert not error.refresh_route


@pytest.mark.parametrize(
    ("code", "remark", "expected"),
    [
        # 5.x: a known user without the right keeps the plain (retriable) NO_PERMISSION, as Java.
        (16, "alice has no permission to access Topic:t from 127.0.0.1, DENY", NoPermission),
        (16, "the topic[t] sending is forbidden", NoPermission),
        # 4.x answers a denial as SYSTEM_ERROR; it is a permission error all the same.
        (
            1,
            "org.apache.rocketmq.acl.common.AclException: No default permission for Topic:t" + _AT,
            NoPermission,
        ),
        (
            1,
            "org.apache.rocketmq.acl.common.AclException: Need admin permission for request code=17",
            NoPermission,
        ),
        (1, "java.lang.NullPointerException, Foo.bar(Foo.java:1)", BrokerSystemError),
        (1, None, BrokerSystemError),
        (16, None, NoPermission),
        (99999, "check signature failed.", BrokerError),
    ],
)
def test_other_answers_keep_their_code_class(
    code: int, remark: str | None, expected: type[BrokerError]
) -> None:
    error = broker_error_for(code, remark)
    assert type(error) is expected
    assert error.code == code


def test_no_secret_in_config_client_or_hook_reprs() -> None:
    config = ClientConfig(
        namesrv="127.0.0.1:9876", access_key="ak", secret_key="s3cr3t-x", security_token="tok-y"
    )
    producer = Producer("g", config=config)
    hook = AclRPCHook("ak", "s3cr3t-x", "tok-y")
    for text in (repr(config), str(config), repr(producer), repr(hook)):
        assert "s3cr3t-x" not in text
        assert "tok-y" not in text
    assert "ak" in repr(config)
