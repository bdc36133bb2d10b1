"""AclRPCHook against signatures computed by the Java client's own AclClientRPCHook.

``protocol/vectors/acl_signature.json`` was written by ``protocol/recorder/AclSignature.java``
(rocketmq-client 5.3.3): for fixed credentials and requests it holds the ext fields before and
after ``AclClientRPCHook.doBeforeRequest``. Our hook must produce the same fields, signature
included.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pytest

from rocketmq_py._transport._hooks import ACCESS_KEY, SECURITY_TOKEN, SIGNATURE, AclRPCHook, acl_signature
from rocketmq_py.protocol._command import RemotingCommand

VECTOR = Path(__file__).resolve().parents[2] / "protocol" / "vectors" / "acl_signature.json"
DATA: dict[str, Any] = json.loads(VECTOR.read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = DATA["cases"]


def each_case() -> pytest.MarkDecorator:
    return pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])


def test_vector_was_made_by_the_java_client() -> None:
    assert DATA["produced_by"].startswith("rocketmq-client 5.3.3 ")
    assert {case["name"] for case in CASES} == {"send-message-v2", "pull-message-token", "utf16-key-order"}
    assert all(case["access_key"] == "rocketmq2" and case["secret_key"] == "12345678" for case in CASES)


@each_case()
def test_hook_adds_the_same_fields_as_java(case: dict[str, Any]) -> None:
    hook = AclRPCHook(case["access_key"], case["secret_key"], case["security_token"])
    request = RemotingCommand(
        case["code"], ext_fields=case["ext_fields_before"], body=base64.b64decode(case["body_base64"])
    )
    signed = hook.before_request(request)
    assert dict(signed.ext_fields) == case["ext_fields_after"]
    assert signed.ext_fields[SIGNATURE] == case["signature"]
    assert signed.ext_fields[ACCESS_KEY] == case["access_key"]
    assert (SECURITY_TOKEN in signed.ext_fields) == (case["security_token"] is not None)
    assert signed.body == request.body
    assert dict(request.ext_fields) == case["ext_fields_before"]  # the original is untouched


@each_case()
def test_signature_function_matches_java(case: dict[str, Any]) -> None:
    fields = dict(case["ext_fields_after"])
    body = base64.b64decode(case["body_base64"])
    assert acl_signature(case["secret_key"], fields, body) == case["signature"]
    # A Signature already present is not part of what is signed.
    fields[SIGNATURE] = "stale"
    assert acl_signature(case["secret_key"], fields, body) == case["signature"]


def test_resigning_a_signed_request_gives_the_same_signature() -> None:
    case = CASES[0]
    hook = AclRPCHook(case["access_key"], case["secret_key"], case["security_token"])
    signed = hook.before_request(RemotingCommand(case["code"], ext_fields=case["ext_fields_after"]))
    again = hook.before_request(RemotingCommand(case["code"], ext_fields=case["ext_fields_before"]))
    assert signed.ext_fields[SIGNATURE] == again.ext_fields[SIGNATURE]


def test_key_order_is_utf16_not_code_point() -> None:
    case = next(c for c in CASES if c["name"] == "utf16-key-order")
    keys = list(case["ext_fields_before"])
    # Java's TreeMap put U+1D49C (surrogates D835 DC9C) before U+FF21; code points disagree.
    assert keys.index("\U0001d49c") < keys.index("\uff21")
    assert sorted(keys).index("\U0001d49c") > sorted(keys).index("\uff21")
    fields = dict(case["ext_fields_after"])
    body = base64.b64decode(case["body_base64"])
    content = "".join(fields[k] for k in sorted(fields) if k != SIGNATURE).encode() + body
    naive = base64.b64encode(hmac.new(case["secret_key"].encode(), content, hashlib.sha1).digest()).decode()
    assert naive != case["signature"]  # a code-point sort would not match Java
