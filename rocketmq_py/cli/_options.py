"""The options of every command: the NameServer, the timeout, the namespace, ACL keys and TLS.

Each is accepted before the command and after it (``rocketmq-py -n h:9876 route T`` and
``rocketmq-py route T -n h:9876``; after the command, argparse defaults are suppressed so that they
do not overwrite a value given before it). Defaults that come from the environment are read in
:func:`common_from_args`, not by argparse, so that ``--help`` (and the generated CLI reference)
never shows a secret:

====================  ============================  ===============================================
option                environment                   meaning
====================  ============================  ===============================================
``-n/--namesrv``      ``ROCKETMQ_NAMESRV``          NameServer addresses, ``;``-separated
``--access-key``      ``ROCKETMQ_ACCESS_KEY``       ACL 1.0 signing (Java ``AclClientRPCHook``);
``--secret-key``      ``ROCKETMQ_SECRET_KEY``       both keys or neither
``--security-token``  ``ROCKETMQ_SECURITY_TOKEN``   an ACL STS token sent with each signed request
                                                    (Java ``SessionCredentials``); needs the keys
``--tls``                                           TLS to every NameServer and broker, checked
                                                    against the system's trusted CAs and the host
                                                    name
``--tls-ca-file``                                   trust this CA bundle instead (implies ``--tls``)
``--tls-insecure``                                  no certificate or host-name check (Java's
                                                    client with ``tls.client.authServer=false``;
                                                    implies ``--tls``)
====================  ============================  ===============================================
"""

from __future__ import annotations

import argparse
import ssl
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

from rocketmq_py.errors import ClientError
from rocketmq_py.lowlevel import (
    DEFAULT_REQUEST_TIMEOUT,
    AdminCalls,
    namespace_of_endpoint,
    open_admin_calls,
    parse_namesrv_addrs,
)
from rocketmq_py.protocol import validate_namespace, wrap_name

__all__ = [
    "ACCESS_KEY_ENV",
    "NAMESRV_ENV",
    "SECRET_KEY_ENV",
    "SECURITY_TOKEN_ENV",
    "Common",
    "UsageError",
    "add_common_options",
    "admin_of",
    "common_from_args",
    "positive_seconds",
    "tls_context",
]

#: The environment variable ``-n/--namesrv`` defaults to.
NAMESRV_ENV = "ROCKETMQ_NAMESRV"
#: The environment variable ``--access-key`` defaults to.
ACCESS_KEY_ENV = "ROCKETMQ_ACCESS_KEY"
#: The environment variable ``--secret-key`` defaults to (so that the secret need not be in argv).
SECRET_KEY_ENV = "ROCKETMQ_SECRET_KEY"
#: The environment variable ``--security-token`` defaults to.
SECURITY_TOKEN_ENV = "ROCKETMQ_SECURITY_TOKEN"


class UsageError(Exception):
    """The command line is wrong; ``usage`` is the usage text of the (sub)command."""

    def __init__(self, message: str, usage: str = "") -> None:
        super().__init__(message)
        self.usage = usage


@dataclass(frozen=True, slots=True)
class Common:
    """Options of every command."""

    namesrv: tuple[str, ...]
    timeout: float = DEFAULT_REQUEST_TIMEOUT
    #: Topics and groups are this namespace's (``None``: no namespace).
    namespace: str | None = None
    #: ACL: requests are signed with this access key and :attr:`secret_key` (both or neither).
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    #: ACL: an STS token sent with each signed request (only with both keys).
    security_token: str | None = field(default=None, repr=False)
    #: TLS for every connection (``None``: plain TCP).
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False)

    def wire(self, name: str) -> str:
        """``name`` as the brokers know it (wrapped in :attr:`namespace`)."""
        return wrap_name(self.namespace, name)

    def connection_options(self) -> dict[str, Any]:
        """The ACL credentials and TLS context as the clients and the Admin take them (keywords)."""
        return {
            "access_key": self.access_key,
            "secret_key": self.secret_key,
            "security_token": self.security_token,
            "ssl_context": self.ssl_context,
        }


def admin_of(common: Common) -> AbstractAsyncContextManager[AdminCalls]:
    """Admin calls with a command line's NameServers, timeout, ACL credentials and TLS (a pool of
    their own, closed at the end of the ``async with``)."""
    return open_admin_calls(list(common.namesrv), timeout=common.timeout, **common.connection_options())


def add_common_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """Add the options of every command to ``parser``.

    Args:
        suppress: no defaults (for the copy after the command: a default there would overwrite
            the value given before the command).
    """
    unset: object = argparse.SUPPRESS if suppress else None
    flag_unset: object = argparse.SUPPRESS if suppress else False
    parser.add_argument(
        "-n",
        "--namesrv",
        metavar="HOST:PORT[;HOST:PORT]",
        default=unset,
        help=f"NameServer address(es); default: ${NAMESRV_ENV}",
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        metavar="SECONDS",
        default=argparse.SUPPRESS if suppress else DEFAULT_REQUEST_TIMEOUT,
        help=f"per request, and per send including retries (default {DEFAULT_REQUEST_TIMEOUT:g})",
    )
    parser.add_argument(
        "--namespace",
        metavar="NS",
        default=unset,
        help="topics and groups of namespace NS (NS%%NAME on the brokers, as Java's setNamespace; "
        "default: the instance id of a hosted endpoint -n http://MQ_INST_...)",
    )
    parser.add_argument(
        "--access-key",
        metavar="AK",
        default=unset,
        help=f"sign every request with this ACL access key (with --secret-key); default: ${ACCESS_KEY_ENV}",
    )
    parser.add_argument(
        "--secret-key",
        metavar="SK",
        default=unset,
        help=f"the ACL secret key; default: ${SECRET_KEY_ENV} (better than argv, which others may see)",
    )
    parser.add_argument(
        "--security-token",
        metavar="TOKEN",
        default=unset,
        help=f"an ACL STS token sent with each signed request (with both keys); default: ${SECURITY_TOKEN_ENV}",
    )
    parser.add_argument(
        "--tls",
        action="store_true",
        default=flag_unset,
        help="TLS to every NameServer and broker, verified against the system's CAs and the host name",
    )
    parser.add_argument(
        "--tls-ca-file",
        metavar="PATH",
        default=unset,
        help="trust the CA certificate(s) in this PEM file instead (implies --tls)",
    )
    parser.add_argument(
        "--tls-insecure",
        action="store_true",
        default=flag_unset,
        help="TLS without checking the certificate or the host name, as Java's client with "
        "tls.client.authServer=false (implies --tls)",
    )


def positive_seconds(text: str) -> float:
    """An argparse type: a number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
    return value


def common_from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> Common:
    """The :class:`Common` options of parsed ``args``, with the environment's defaults.

    Raises:
        UsageError: no NameServer, a bad namespace, one ACL key without the other, a security
            token without the keys, ``--tls-ca-file``
            with ``--tls-insecure``, or a CA file that cannot be read.
    """
    namesrv_text = args.namesrv if args.namesrv is not None else environ.get(NAMESRV_ENV)
    access_key = _key(args.access_key, environ.get(ACCESS_KEY_ENV))
    secret_key = _key(args.secret_key, environ.get(SECRET_KEY_ENV))
    if access_key is None and secret_key is not None:
        raise UsageError(f"a secret key without an access key: pass --access-key AK or set {ACCESS_KEY_ENV}")
    if access_key is not None and secret_key is None:
        raise UsageError(f"an access key without a secret key: set {SECRET_KEY_ENV} or pass --secret-key SK")
    security_token = _key(args.security_token, environ.get(SECURITY_TOKEN_ENV))
    if security_token is not None and access_key is None:
        raise UsageError(
            "a security token without ACL keys: it is sent with signed requests only "
            f"(pass --access-key and --secret-key, or set {ACCESS_KEY_ENV} and {SECRET_KEY_ENV})"
        )
    use_tls = args.tls or args.tls_ca_file is not None or args.tls_insecure
    return Common(
        namesrv=_namesrv(namesrv_text),
        timeout=args.timeout,
        namespace=_namespace(args.namespace, namesrv_text),
        access_key=access_key,
        secret_key=secret_key,
        security_token=security_token,
        ssl_context=tls_context(ca_file=args.tls_ca_file, insecure=args.tls_insecure) if use_tls else None,
    )


def _key(value: str | None, default: str | None) -> str | None:
    """The option, else the environment's value; empty is none."""
    chosen = value if value is not None else default
    return chosen or None


def tls_context(*, ca_file: str | None = None, insecure: bool = False) -> ssl.SSLContext:
    """The client TLS context of ``--tls``, ``--tls-ca-file`` or ``--tls-insecure``.

    Args:
        ca_file: trust only the CA certificates in this PEM file (default: the system's).
        insecure: check neither the certificate nor the host name.

    Raises:
        UsageError: both given, or ``ca_file`` cannot be read or holds no certificate.
    """
    if insecure:
        if ca_file is not None:
            raise UsageError("--tls-ca-file and --tls-insecure exclude each other: choose one")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    try:
        return ssl.create_default_context(cafile=ca_file)
    except ssl.SSLError as exc:  # an OSError too: catch it first
        raise UsageError(
            f"--tls-ca-file {ca_file}: no CA certificate in it (PEM expected; {exc.reason or exc})"
        ) from None
    except OSError as exc:
        raise UsageError(f"cannot read --tls-ca-file {ca_file}: {exc.strerror or exc}") from None


def _namesrv(text: str | None) -> tuple[str, ...]:
    if not (text or "").replace(";", "").strip():
        raise UsageError(f"no NameServer: pass -n HOST:PORT or set {NAMESRV_ENV}")
    try:
        return tuple(parse_namesrv_addrs(text or ""))
    except ClientError as exc:
        raise UsageError(f"-n/--namesrv: {exc}") from None


def _namespace(value: str | None, namesrv: str | None) -> str | None:
    if value is None:  # as a client given no namespace: a hosted endpoint's instance id
        value = namespace_of_endpoint(namesrv)
    try:
        return validate_namespace(value)
    except ValueError as exc:
        raise UsageError(f"--namespace: {exc}") from None
