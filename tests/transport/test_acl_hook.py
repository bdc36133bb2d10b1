"""AclRPCHook: the ACL signature, against vectors computed by hand with hmac/hashlib."""

from __future__ import annotations

import base64
import hashlib
import hmac

from rocketmq_py._transport import AclRPCHook, acl_signature, open_connection
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.testing._fake_broker import FakeBroker

ECHO = 9001  # the fake_broker fixture echoes this code

FIELDS = {"topic": "TopicTest", "queueId": "1", "consumerGroup": "please_rename_unique_group_name"}
BODY = b"Hello RocketMQ"


def _expected(secret: str, content: bytes) -> str:
    return base64.b64encode(hmac.new(secret.encode(), content, hashlib.sha1).digest()).decode()


def test_signature_vector_without_token() -> None:
    hook = AclRPCHook("rocketmq2", "12345678")
    signed = hook.before_request(RemotingCommand.request(11, FIELDS, BODY))
    # Keys in Java TreeMap order: AccessKey < consumerGroup < queueId < topic (upper case first).
    content = b"rocketmq2" + b"please_rename_unique_group_name" + b"1" + b"TopicTest" + BODY
    assert signed.ext_fields["Signature"] == _expected("12345678", content)
    assert signed.ext_fields["Signature"] == "07mJNh533XShzYIIE0K+mIKSuCI="  # frozen golden value
    assert signed.ext_fields["AccessKey"] == "rocketmq2"
    assert "SecurityToken" not in signed.ext_fields
    assert {k: signed.ext_fields[k] for k in FIELDS} == FIELDS
    assert signed.body == BODY
    assert signed.code == 11


def test_signature_vector_with_security_token() -> None:
    hook = AclRPCHook("rocketmq2", "12345678", security_token="sts-token")
    signed = hook.before_request(RemotingCommand.request(11, FIELDS, BODY))
    # AccessKey < SecurityToken < consumerGroup < queueId < topic
    content = b"rocketmq2" + b"sts-token" + b"please_rename_unique_group_name" + b"1" + b"TopicTest" + BODY
    assert signed.ext_fields["Signature"] == _expected("12345678", content)
    assert signed.ext_fields["Signature"] == "XnAeeAzW5T4e/B5H4WnJFd3k0Fs="
    assert signed.ext_fields["SecurityToken"] == "sts-token"


def test_no_fields_no_body() -> None:
    signed = AclRPCHook("ak", "sk").before_request(RemotingCommand.request(34))
    assert dict(signed.ext_fields) == {"AccessKey": "ak", "Signature": "AL2pakQ4gJnpWeA42COL+SacNKk="}


def test_old_signature_is_ignored_and_replaced() -> None:
    hook = AclRPCHook("rocketmq2", "12345678")
    once = hook.before_request(RemotingCommand.request(11, FIELDS, BODY))
    twice = hook.before_request(once)
    assert twice.ext_fields["Signature"] == once.ext_fields["Signature"]
    stale = RemotingCommand.request(11, {**FIELDS, "Signature": "stale"}, BODY)
    assert hook.before_request(stale).ext_fields["Signature"] == once.ext_fields["Signature"]


def test_the_original_command_is_not_changed() -> None:
    request = RemotingCommand.request(11, FIELDS, BODY)
    AclRPCHook("ak", "sk").before_request(request)
    assert dict(request.ext_fields) == FIELDS


def test_keys_sort_by_utf16_code_units_like_java() -> None:
    # U+10000 is the surrogate pair D800 DC00, which Java sorts *before* U+FFFF (Python: after).
    fields = {"\uffff": "B", "\U00010000": "A", "a": "C"}
    content = b"CAB"  # "a" (0x61) < "\U00010000" (0xD800...) < "\uffff"
    assert acl_signature("sk", fields, b"") == _expected("sk", content)
    # Non-ASCII values are UTF-8 encoded.
    assert acl_signature("sk", {"k": "é"}, b"\x00\xff") == _expected("sk", "é".encode() + b"\x00\xff")


def test_repr_hides_the_secret() -> None:
    assert "sk-secret" not in repr(AclRPCHook("ak", "sk-secret"))


async def test_connection_signs_what_it_sends(fake_broker: FakeBroker) -> None:
    async with open_connection(fake_broker.address, hooks=[AclRPCHook("ak", "sk")]) as conn:
        await conn.request(RemotingCommand.request(ECHO, FIELDS, BODY), timeout=3)
        await conn.oneway(RemotingCommand.request(ECHO, {"x": "y"}))
        await fake_broker.wait_received(2)
    for received in fake_broker.received:
        fields = dict(received.ext_fields)
        signature = fields.pop("Signature")
        content = "".join(fields[k] for k in sorted(fields)).encode() + received.body
        assert signature == _expected("sk", content)
