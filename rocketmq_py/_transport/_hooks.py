"""RPC hooks: code that sees every request a connection sends, and its response.

A hook's :meth:`~RPCHook.before_request` returns the command to send (commands are immutable, so
a hook that adds ext fields returns a new one); :meth:`~RPCHook.after_response` sees the request as
sent and the response, for tracing or metrics. Hooks apply to our own requests and oneways only,
not to requests the broker sends us.

:class:`AclRPCHook` signs requests for a broker with ACL enabled, the way the Java client's
``AclClientRPCHook`` does::

    fields  = request ext fields + {"AccessKey": ak} (+ {"SecurityToken": token})
    content = concat(value for key in sorted(fields) if key != "Signature").utf8 + body
    fields["Signature"] = base64(hmac_sha1(secret_key.utf8, content))

Keys sort as Java's ``TreeMap<String, ...>`` does: by UTF-16 code units (for ASCII keys, the same
as Python's ``str`` order).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
from collections.abc import Mapping
from typing import Final, Protocol

from rocketmq_py.protocol._command import RemotingCommand

__all__ = [
    "ACCESS_KEY",
    "SECURITY_TOKEN",
    "SIGNATURE",
    "AclRPCHook",
    "RPCHook",
    "acl_signature",
]

#: Ext-field names of the ACL credentials (Java ``SessionCredentials`` constants).
ACCESS_KEY: Final = "AccessKey"
SECURITY_TOKEN: Final = "SecurityToken"
SIGNATURE: Final = "Signature"


class RPCHook(Protocol):
    """Sees every request a connection sends and the response it gets."""

    def before_request(self, request: RemotingCommand) -> RemotingCommand:
        """Return the command to send instead of ``request`` (or ``request`` itself)."""
        ...

    def after_response(self, request: RemotingCommand, response: RemotingCommand) -> None:
        """Observe a response; ``request`` is the command as sent (after every hook)."""
        ...


def _utf16_order(key: str) -> bytes:
    # Big-endian UTF-16 bytes compare like Java's String.compareTo (code unit by code unit).
    return key.encode("utf-16-be", "surrogatepass")


def acl_signature(secret_key: str, fields: Mapping[str, str], body: bytes) -> str:
    """Compute the ACL signature of a request.

    Args:
        secret_key: the account's secret key.
        fields: every ext field that will be sent (including ``AccessKey`` and ``SecurityToken``);
            a ``Signature`` entry is ignored.
        body: the request body.

    Returns:
        ``Base64(HMAC-SHA1(secret_key, values sorted by key + body))``, as the broker checks it.
    """
    content = "".join(fields[key] for key in sorted(fields, key=_utf16_order) if key != SIGNATURE)
    digest = hmac.new(secret_key.encode("utf-8"), content.encode("utf-8") + body, hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


class AclRPCHook:
    """Sign requests for a broker with ACL enabled (Java ``AclClientRPCHook``).

    Args:
        access_key: the account's access key, sent as ``AccessKey``.
        secret_key: the secret the signature is keyed with; never sent.
        security_token: an optional STS token, sent as ``SecurityToken``.
    """

    __slots__ = ("_access_key", "_secret_key", "_security_token")

    def __init__(self, access_key: str, secret_key: str, security_token: str | None = None) -> None:
        self._access_key = access_key
        self._secret_key = secret_key
        self._security_token = security_token

    def __repr__(self) -> str:
        # Never show the secret.
        return f"AclRPCHook(access_key={self._access_key!r})"

    def before_request(self, request: RemotingCommand) -> RemotingCommand:
        """Return ``request`` with ``AccessKey``, ``SecurityToken`` (if any) and ``Signature`` added."""
        fields = dict(request.ext_fields)
        fields.pop(SIGNATURE, None)
        fields[ACCESS_KEY] = self._access_key
        if self._security_token is not None:
            fields[SECURITY_TOKEN] = self._security_token
        fields[SIGNATURE] = acl_signature(self._secret_key, fields, request.body)
        return dataclasses.replace(request, ext_fields=fields)

    def after_response(self, request: RemotingCommand, response: RemotingCommand) -> None:
        """Nothing to check on responses."""
