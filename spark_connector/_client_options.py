"""Connection options of the reader and the writer: TLS, the ACL security token, and ``client.*``.

Parsed with no I/O, into :class:`ClientSettings`, which is picklable: it travels to the executors
inside the reader or the writer. The TLS context is built where a client is built
(:meth:`ClientSettings.ssl_context`), since an :class:`ssl.SSLContext` cannot be pickled; a CA or
certificate file that does not load is then a :class:`SparkOptionError` naming the option.

``tls=true`` speaks TLS on every connection, verifying the servers against the system's CAs, or
against ``tlsCaFile`` only, and checking that their certificate names the address dialled
(``tlsCheckHostname``, on by default); ``tlsVerify=false`` verifies nothing. ``tlsCertFile`` (and
``tlsKeyFile``, ``tlsKeyPassword``) is a client certificate for servers that ask for one. This is
what a client given ``ssl_context=ssl.create_default_context(cafile=...)`` does.

``securityToken`` is an ACL STS token, sent with each signed request as a client given
``security_token=`` sends it; it needs ``accessKey`` / ``secretKey``.

Options under ``client.`` are the keyword arguments of the client the connector builds, in
camelCase and in the client's units (seconds): ``client.retryTimes`` is the writer's
``Producer(retry_times=...)``. Each side takes those listed in :data:`OFFERED` for it; one the
connector sets itself, or that makes no sense in a Spark job, is refused with the reason
(:data:`REFUSED`), and any other key under the prefix is refused naming the ones offered.
"""

from __future__ import annotations

import math
import os
import ssl
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

from rocketmq_py.protocol import CompressionType, SerializeType
from spark_connector._errors import SparkOptionError
from spark_connector._option_values import get_duration_ms

__all__ = [
    "CACHE_TIMEOUT_MS",
    "CLIENT_PREFIX",
    "CONNECTION_OPTIONS",
    "OFFERED",
    "REFUSED",
    "ClientSettings",
    "Side",
    "TlsOptions",
    "build_ssl_context",
    "client_option_names",
    "parse_client_keywords",
    "parse_client_settings",
    "parse_tls",
]

#: The reader (``spark.read`` / ``readStream``) or the writer (``write`` / ``writeStream``).
Side: TypeAlias = Literal["reader", "writer"]

#: Options under this prefix are client keyword arguments (Spark hands their keys lower-cased).
CLIENT_PREFIX: Final = "client."

#: The options that only mean something with ``tls=true``.
_TLS_DETAILS: Final = (
    "tlsVerify",
    "tlsCheckHostname",
    "tlsCaFile",
    "tlsCertFile",
    "tlsKeyFile",
    "tlsKeyPassword",
)
#: The top-level options this module reads (besides the ``client.`` ones), as documented.
CONNECTION_OPTIONS: Final = ("tls", *_TLS_DETAILS, "securityToken", "clientCacheTimeout")
#: ``clientCacheTimeout`` when not given, ms: Spark's Kafka source keeps its consumers 5 minutes
#: (``spark.kafka.consumer.cache.timeout``), its sink its producers 10
#: (``spark.kafka.producer.cache.timeout``).
CACHE_TIMEOUT_MS: Final[Mapping[Side, int]] = {"reader": 5 * 60 * 1000, "writer": 10 * 60 * 1000}


def _text(options: Mapping[str, str], name: str) -> str | None:
    """The value of option ``name`` from lower-cased ``options``; blank counts as not given."""
    value = options.get(name.lower())
    text = None if value is None else str(value).strip()
    return text or None


def _flag(options: Mapping[str, str], name: str, default: bool) -> bool:
    text = _text(options, name)
    return default if text is None else _boolean(name, text)


# --- TLS ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsOptions:
    """TLS settings of every connection (``tls=true``); paths are read where a client is built.

    Attributes:
        ca_file: PEM file of the CAs to trust instead of the system's (``tlsCaFile``).
        verify: verify the servers' certificates (``tlsVerify``).
        check_hostname: check that a certificate names the address dialled (``tlsCheckHostname``).
        cert_file: PEM client certificate, for servers that ask for one (``tlsCertFile``).
        key_file: its private key, when not in ``cert_file`` (``tlsKeyFile``).
        key_password: the key's password (``tlsKeyPassword``; not in the repr).
    """

    ca_file: str | None = None
    verify: bool = True
    check_hostname: bool = True
    cert_file: str | None = None
    key_file: str | None = None
    key_password: str | None = field(default=None, repr=False)


def parse_tls(options: Mapping[str, str]) -> TlsOptions | None:
    """The TLS options from lower-cased ``options``; ``None`` when ``tls`` is not ``true``.

    Raises:
        SparkOptionError: a value does not parse, a TLS option is given without ``tls=true``, or
            two contradict each other (a CA or a host name check with ``tlsVerify=false``, a key
            without its certificate).
    """
    enabled = _flag(options, "tls", False)
    verify = _flag(options, "tlsVerify", True)
    check_hostname = _flag(options, "tlsCheckHostname", verify)
    ca_file = _text(options, "tlsCaFile")
    cert_file = _text(options, "tlsCertFile")
    key_file = _text(options, "tlsKeyFile")
    key_password = _text(options, "tlsKeyPassword")
    if not enabled:
        given = [name for name in _TLS_DETAILS if _text(options, name) is not None]
        if given:
            raise SparkOptionError(given[0], "needs tls=true (TLS is off)")
        return None
    if not verify and ca_file is not None:
        raise SparkOptionError(
            "tlsCaFile", "is a CA to verify the servers with, and tlsVerify=false verifies none"
        )
    if not verify and check_hostname:
        raise SparkOptionError(
            "tlsCheckHostname", "needs tlsVerify=true: an unverified certificate's name proves nothing"
        )
    for name, value in (("tlsKeyFile", key_file), ("tlsKeyPassword", key_password)):
        if value is not None and cert_file is None:
            raise SparkOptionError(name, "needs tlsCertFile (the client certificate the key belongs to)")
    return TlsOptions(
        ca_file=ca_file,
        verify=verify,
        check_hostname=check_hostname,
        cert_file=cert_file,
        key_file=key_file,
        key_password=key_password,
    )


def _no_password() -> str:
    raise SparkOptionError("tlsKeyPassword", "the client certificate's key is encrypted: give its password")


def build_ssl_context(tls: TlsOptions) -> ssl.SSLContext:
    """A client context for ``tls``, reading its files (call it where the client is built).

    Raises:
        SparkOptionError: a file is missing or does not load, naming its option; an encrypted key
            without ``tlsKeyPassword`` (never an interactive prompt).
    """
    try:
        context = ssl.create_default_context(cafile=tls.ca_file)
    except (OSError, ValueError) as exc:
        if tls.ca_file is None:
            raise
        raise SparkOptionError(
            "tlsCaFile", f"{tls.ca_file!r} does not load as PEM CA certificates: {exc}"
        ) from None
    if not tls.verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif not tls.check_hostname:
        context.check_hostname = False
    if tls.cert_file is not None:
        for name, path in (("tlsCertFile", tls.cert_file), ("tlsKeyFile", tls.key_file)):
            if path is not None and not os.path.isfile(path):
                raise SparkOptionError(name, f"{path!r} is not a file")
        try:
            context.load_cert_chain(tls.cert_file, tls.key_file, password=tls.key_password or _no_password)
        except (OSError, ValueError) as exc:
            if isinstance(exc, SparkOptionError):
                raise
            raise SparkOptionError(
                "tlsCertFile",
                f"{tls.cert_file!r} does not load as a PEM certificate with its key "
                f"(tlsKeyFile, tlsKeyPassword): {exc}",
            ) from None
    return context


# --- client.* ------------------------------------------------------------------------------------------


def _boolean(name: str, text: str) -> bool:
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise SparkOptionError(name, f"{text!r} is not 'true' or 'false'")
    return lowered == "true"


def _seconds(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise SparkOptionError(name, f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise SparkOptionError(name, f"{text!r} is out of range: it must be seconds > 0")
    return value


def _seconds_or_none(name: str, text: str) -> float | None:
    return None if text.lower() == "none" else _seconds(name, text)


def _integer(minimum: int) -> Callable[[str, str], int]:
    def parse(name: str, text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise SparkOptionError(name, f"{text!r} is not an integer") from None
        if value < minimum:
            raise SparkOptionError(name, f"{value} is out of range: it must be >= {minimum}")
        return value

    return parse


def _member(kind: type[CompressionType] | type[SerializeType]) -> Callable[[str, str], object]:
    def parse(name: str, text: str) -> object:
        try:
            return kind[text.upper()]
        except KeyError:
            raise SparkOptionError(
                name, f"{text!r} is not one of {', '.join(m.name for m in kind)}"
            ) from None

    return parse


@dataclass(frozen=True, slots=True)
class _Offered:
    """A ``client.`` option: its documented name, the client's keyword, its parser, and the sides."""

    name: str
    keyword: str
    parse: Callable[[str, str], object]
    reader: bool = False
    writer: bool = False


@dataclass(frozen=True, slots=True)
class _Refused:
    """A client keyword the connector does not take under ``client.``, with the reason per side."""

    name: str
    reader: str | None = None
    writer: str | None = None


#: The ``client.`` options each side takes: ``ClientConfig`` settings, and the writer's ``Producer``.
OFFERED: Final = (
    _Offered("client.serializeType", "serialize_type", _member(SerializeType), reader=True, writer=True),
    _Offered(
        "client.closeConnectionOnTimeout", "close_connection_on_timeout", _boolean, reader=True, writer=True
    ),
    _Offered("client.requestTimeout", "request_timeout", _seconds, writer=True),
    _Offered("client.attemptTimeout", "attempt_timeout", _seconds_or_none, writer=True),
    _Offered("client.retryTimes", "retry_times", _integer(0), writer=True),
    _Offered(
        "client.retryAnotherBrokerWhenNotStoreOk",
        "retry_another_broker_when_not_store_ok",
        _boolean,
        writer=True,
    ),
    _Offered("client.compressOver", "compress_over", _integer(0), writer=True),
    _Offered("client.compressType", "compress_type", _member(CompressionType), writer=True),
    _Offered("client.compressLevel", "compress_level", _integer(-1), writer=True),
    _Offered("client.autoCreateTopic", "auto_create_topic", _boolean, writer=True),
    _Offered("client.defaultTopicQueueNums", "default_topic_queue_nums", _integer(1), writer=True),
)


def _own(option: str) -> str:
    return f"the connector's option {option!r} sets it"


_PER_TASK_ID = "every task's client needs an id of its own (the default is unique per client)"
_LOOPS = "the connector's clients live for one task or one planning call, not long enough for it to matter"
_OBJECT = "it takes a Python object, not a string"
_NOT_A_MEMBER = "the reader joins no consumer group: Spark plans the offsets and checkpoints them"

#: The client keywords not offered under ``client.``, with the reason, per side.
REFUSED: Final = (
    _Refused("client.namesrv", reader=_own("namesrv"), writer=_own("namesrv")),
    _Refused("client.namespace", reader=_own("namespace"), writer=_own("namespace")),
    _Refused("client.accessKey", reader=_own("accessKey"), writer=_own("accessKey")),
    _Refused("client.secretKey", reader=_own("secretKey"), writer=_own("secretKey")),
    _Refused("client.securityToken", reader=_own("securityToken"), writer=_own("securityToken")),
    _Refused("client.sslContext", reader=_own("tls"), writer=_own("tls")),
    _Refused("client.config", reader=_OBJECT, writer=_OBJECT),
    _Refused("client.hooks", reader=_OBJECT, writer=_OBJECT),
    _Refused("client.instanceName", reader=_PER_TASK_ID, writer=_PER_TASK_ID),
    _Refused("client.clientIp", reader=_PER_TASK_ID, writer=_PER_TASK_ID),
    _Refused("client.pollNamesrvInterval", reader=_LOOPS, writer=_LOOPS),
    _Refused("client.heartbeatInterval", reader=_LOOPS, writer=_LOOPS),
    _Refused("client.group", reader=_NOT_A_MEMBER + " (see commitToGroup)", writer=_own("producerGroup")),
    _Refused("client.enableTrace", reader=_NOT_A_MEMBER, writer=_own("enableTrace")),
    _Refused("client.traceTopic", reader=_NOT_A_MEMBER, writer=_own("traceTopic")),
    _Refused("client.sendTimeout", writer=_own("sendTimeoutMs")),
    _Refused("client.maxMessageSize", writer=_own("maxMessageSize")),
    _Refused("client.fault", writer=_OBJECT),
    _Refused("client.requestTimeout", reader=_own("pullTimeoutMs") + " (every call of the reader takes it)"),
    _Refused("client.pullBatchSize", reader=_own("pullBatchSize")),
    _Refused("client.strategy", reader=_own("allocateStrategy")),
    _Refused("client.consumeFromWhere", reader=_own("startingOffsets")),
    _Refused("client.consumeTimestampMs", reader=_own("startingTimestamp")),
    _Refused("client.consumeTimestamp", reader=_own("startingTimestamp")),
    _Refused("client.messageModel", reader=_NOT_A_MEMBER),
    _Refused("client.autoCommit", reader=_NOT_A_MEMBER),
    _Refused("client.autoCommitInterval", reader=_NOT_A_MEMBER),
    _Refused("client.rebalanceInterval", reader=_NOT_A_MEMBER),
    _Refused("client.handoffDelay", reader=_NOT_A_MEMBER),
    _Refused("client.offsetsDir", reader=_NOT_A_MEMBER),
    _Refused("client.topicMetadataCheckInterval", reader=_NOT_A_MEMBER),
    _Refused("client.flowLimits", reader=_NOT_A_MEMBER),
    _Refused("client.pullThresholdForAll", reader=_NOT_A_MEMBER),
    _Refused("client.pullThresholdForQueue", reader=_NOT_A_MEMBER),
    _Refused("client.pullThresholdSizeForQueueMib", reader=_NOT_A_MEMBER),
    _Refused("client.consumeMaxSpan", reader=_NOT_A_MEMBER),
)

_OFFERED_BY_KEY: Final = {option.name.lower(): option for option in OFFERED}
_REFUSED_BY_KEY: Final = {option.name.lower(): option for option in REFUSED}
#: The levels each codec takes (the client passes the level on; LZ4 has none).
_LEVELS: Final = {CompressionType.ZLIB: (-1, 9), CompressionType.ZSTD: (1, 22)}


def client_option_names(side: Side) -> list[str]:
    """The documented names of the ``client.`` options ``side`` takes, sorted."""
    return sorted(option.name for option in OFFERED if getattr(option, side))


def parse_client_keywords(options: Mapping[str, str], side: Side) -> dict[str, Any]:
    """The ``client.`` options of lower-cased ``options`` as the client's keyword arguments.

    Raises:
        SparkOptionError: a value does not parse or is out of the client's range, or a key under
            the prefix is refused (the reason), is the other side's, or is unknown (the message
            lists the options ``side`` takes).
    """
    keywords: dict[str, Any] = {}
    for key in sorted(options):
        if not key.startswith(CLIENT_PREFIX) or _text(options, key) is None:
            continue
        text = str(options[key]).strip()
        offered, refused = _OFFERED_BY_KEY.get(key), _REFUSED_BY_KEY.get(key)
        if offered is not None and getattr(offered, side):
            keywords[offered.keyword] = offered.parse(offered.name, text)
            continue
        reason = None if refused is None else getattr(refused, side)
        if refused is not None and reason is not None:
            raise SparkOptionError(refused.name, f"is not offered: {reason}")
        known = ", ".join(client_option_names(side))
        if offered is not None:
            raise SparkOptionError(
                offered.name,
                f"is for the {'writer' if side == 'reader' else 'reader'} only; the {side} takes {known}",
            )
        raise SparkOptionError(key, f"is not a client option the {side} takes ({known})")
    _check_level(keywords)
    return keywords


def _check_level(keywords: Mapping[str, Any]) -> None:
    level = keywords.get("compress_level")
    if level is None:
        return
    kind = keywords.get("compress_type", CompressionType.ZLIB)
    bounds = _LEVELS.get(kind)
    if bounds is None:
        raise SparkOptionError("client.compressLevel", f"{kind.name} compression takes no level")
    low, high = bounds
    if not low <= level <= high:
        raise SparkOptionError(
            "client.compressLevel", f"{level} is out of range: {kind.name} takes {low} to {high}"
        )


# --- all of it -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientSettings:
    """What every client of one reader or writer gets besides the connector's own options. Picklable.

    Attributes:
        security_token: the ACL STS token (``securityToken``; not in the repr).
        tls: TLS settings (``None``: plaintext).
        keywords: the ``client.`` options as the client's keyword arguments (``retry_times``, ...).
        cache_timeout_ms: how long an executor process keeps a task's client open for its later
            tasks (``clientCacheTimeout``; ``0``: closed with the task), see
            :mod:`spark_connector._executor`.
    """

    security_token: str | None = field(default=None, repr=False)
    tls: TlsOptions | None = None
    keywords: Mapping[str, Any] = field(default_factory=dict)
    cache_timeout_ms: int = 0

    def key(self) -> Hashable:
        """What tells two clients' connections apart (the token, TLS and ``client.`` options; not
        :attr:`cache_timeout_ms`), for the executors' client cache."""
        keywords = tuple(sorted((name, repr(value)) for name, value in self.keywords.items()))
        return (self.security_token, self.tls, keywords)

    @property
    def cache_timeout(self) -> float:
        """:attr:`cache_timeout_ms` in seconds."""
        return self.cache_timeout_ms / 1000.0

    def ssl_context(self) -> ssl.SSLContext | None:
        """A fresh context for :attr:`tls` (``None``: plaintext), its files read now.

        Raises:
            SparkOptionError: a TLS file is missing or does not load (see :func:`build_ssl_context`).
        """
        return None if self.tls is None else build_ssl_context(self.tls)


def parse_client_settings(options: Mapping[str, str], side: Side, *, signed: bool) -> ClientSettings:
    """``securityToken``, the TLS options and the ``client.`` options of lower-cased ``options``.

    Args:
        options: the options, keys lower-cased.
        side: which ``client.`` options are offered.
        signed: ``accessKey`` and ``secretKey`` are given (a token needs them).

    Raises:
        SparkOptionError: see :func:`parse_tls` and :func:`parse_client_keywords`; or a
            ``securityToken`` without the ACL keys (the message never holds the token).
    """
    token = _text(options, "securityToken")
    if token is not None and not signed:
        raise SparkOptionError("securityToken", "needs accessKey and secretKey: it goes with signed requests")
    cache_timeout = get_duration_ms(options, "clientCacheTimeout")
    return ClientSettings(
        security_token=token,
        tls=parse_tls(options),
        keywords=parse_client_keywords(options, side),
        cache_timeout_ms=CACHE_TIMEOUT_MS[side] if cache_timeout is None else cache_timeout,
    )
