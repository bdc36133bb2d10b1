"""ACL for a test cluster: one admin account, configured the way each broker version expects.

- **4.x** (ACL 1.0): ``aclEnable=true`` in broker.conf and ``$ROCKETMQ_HOME/conf/plain_acl.yml`` with
  one ``admin: true`` account and no white-listed addresses, so every request must be signed.
- **5.x** (ACL 2.0; 5.3 has no ACL 1.0 left, only a migration from its files):
  ``authenticationEnabled`` / ``authorizationEnabled`` with the default providers and the local
  (RocksDB) metadata stores; ``initAuthenticationUser`` creates the account as a SUPER user when the
  broker starts, and ``innerClientAuthenticationCredentials`` signs the broker's own requests (a
  slave's calls to its master). The NameServer checks nothing in either version.

The Java tools find the same account in ``conf/tools.yml`` of their home directory.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Credentials", "acl_broker_config", "write_plain_acl", "write_tools_credentials"]

_AUTHN = "org.apache.rocketmq.auth.authentication.provider"
_AUTHZ = "org.apache.rocketmq.auth.authorization.provider"


@dataclass(frozen=True, slots=True)
class Credentials:
    """An ACL account: the access key and its secret (the secret never shows in a repr).

    4.x brokers want both longer than 6 characters.
    """

    access_key: str
    secret_key: str = field(repr=False)

    @classmethod
    def generate(cls) -> Credentials:
        """A fresh random account (``rmqpy-`` + 8 hex digits, and a 24-character secret)."""
        return cls(f"rmqpy-{secrets.token_hex(4)}", secrets.token_urlsafe(18))


def _is_4x(version: str) -> bool:
    return version.startswith("4.")


def acl_broker_config(version: str, credentials: Credentials) -> dict[str, str]:
    """The broker.conf entries that switch ACL on for ``version`` with ``credentials`` as admin."""
    if _is_4x(version):
        return {"aclEnable": "true"}
    user = json.dumps({"username": credentials.access_key, "password": credentials.secret_key})
    inner = json.dumps({"accessKey": credentials.access_key, "secretKey": credentials.secret_key})
    return {
        "authenticationEnabled": "true",
        "authorizationEnabled": "true",
        "authenticationProvider": f"{_AUTHN}.DefaultAuthenticationProvider",
        "authenticationMetadataProvider": f"{_AUTHN}.LocalAuthenticationMetadataProvider",
        "authorizationProvider": f"{_AUTHZ}.DefaultAuthorizationProvider",
        "authorizationMetadataProvider": f"{_AUTHZ}.LocalAuthorizationMetadataProvider",
        "initAuthenticationUser": user,
        "innerClientAuthenticationCredentials": inner,
    }


def write_plain_acl(home: Path, version: str, credentials: Credentials) -> None:
    """Write ``home/conf/plain_acl.yml`` for a 4.x broker whose ROCKETMQ_HOME is ``home`` (5.x: nothing)."""
    if not _is_4x(version):
        return
    conf = home / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    # JSON strings are valid YAML scalars, so the keys need no YAML escaping of their own.
    (conf / "plain_acl.yml").write_text(
        "globalWhiteRemoteAddresses: []\n"
        "accounts:\n"
        f"  - accessKey: {json.dumps(credentials.access_key)}\n"
        f"    secretKey: {json.dumps(credentials.secret_key)}\n"
        "    whiteRemoteAddress:\n"
        "    admin: true\n"
        "    defaultTopicPerm: PUB|SUB\n"
        "    defaultGroupPerm: PUB|SUB\n"
    )


def write_tools_credentials(home: Path, credentials: Credentials) -> None:
    """Write ``home/conf/tools.yml``, where mqadmin (4.x and 5.x) reads the account it signs with."""
    conf = home / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "tools.yml").write_text(
        f"accessKey: {json.dumps(credentials.access_key)}\nsecretKey: {json.dumps(credentials.secret_key)}\n"
    )
