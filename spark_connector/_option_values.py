"""Reading one option's value, with no I/O: what the reader's and the writer's parsers share.

Spark hands every option as a string under its lower-cased key. Each function here takes those
lower-cased options and the option's documented name (``numPartitions``), reads the value, and
raises :class:`SparkOptionError` naming the option as documented when the value is bad. A blank
value is no value: the default applies.

The documentation build reads which option names each parser reaches through these functions
(``docs/hooks/spark_options.py``), so a name is always their second argument, as a literal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from rocketmq_py.lowlevel import namespace_of_endpoint, strip_endpoint_scheme
from rocketmq_py.protocol import validate_namespace
from spark_connector._errors import SparkOptionError

__all__ = [
    "TOPIC_NAME",
    "get_bool",
    "get_duration_ms",
    "get_int",
    "get_text",
    "or_default",
    "parse_credentials",
    "parse_namespace",
    "parse_namesrv",
]

#: What a topic name may hold (the broker's rule, and ``%`` of a namespace).
TOPIC_NAME: Final = re.compile(r"[%|a-zA-Z0-9_-]{1,127}")
_ADDRESS: Final = re.compile(r"[^\s:;]+:\d{1,5}")
#: Milliseconds per unit of a duration (the units Spark's own time strings take).
_UNITS_MS: Final = {
    "ms": 1,
    "s": 1_000,
    "sec": 1_000,
    "m": 60_000,
    "min": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
}
_DURATION: Final = re.compile(r"(\d+)\s*([a-z]*)")


def get_text(options: Mapping[str, str], name: str) -> str | None:
    """Option ``name`` stripped, or ``None`` when it is not given or blank."""
    value = options.get(name.lower())
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def get_int(options: Mapping[str, str], name: str, *, minimum: int, maximum: int | None = None) -> int | None:
    """Option ``name`` as an integer in ``[minimum, maximum]``, or ``None`` when not given.

    Raises:
        SparkOptionError: not an integer, or out of range.
    """
    text = get_text(options, name)
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise SparkOptionError(name, f"{text!r} is not an integer") from None
    if value < minimum or (maximum is not None and value > maximum):
        bound = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        raise SparkOptionError(name, f"{value} is out of range: it must be {bound}")
    return value


def or_default(value: int | None, default: int) -> int:
    """``value``, or ``default`` when the option was not given (0 is a value)."""
    return default if value is None else value


def get_bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    """Option ``name`` as ``true`` / ``false`` (any case), or ``default`` when not given.

    Raises:
        SparkOptionError: anything else.
    """
    text = get_text(options, name)
    if text is None:
        return default
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise SparkOptionError(name, f"{text!r} is not 'true' or 'false'")
    return lowered == "true"


def get_duration_ms(options: Mapping[str, str], name: str) -> int | None:
    """Option ``name`` as a duration in milliseconds, or ``None`` when not given.

    A whole number of milliseconds (``500``), or a whole number with a unit: ``ms``, ``s``
    (``sec``), ``m`` (``min``), ``h``, ``d`` (``30s``, ``15m``), as Spark's time strings.

    Raises:
        SparkOptionError: anything else.
    """
    text = get_text(options, name)
    if text is None:
        return None
    match = _DURATION.fullmatch(text.lower())
    if match is None or match.group(2) not in ("", *_UNITS_MS):
        raise SparkOptionError(
            name, f"{text!r} is not a duration: a whole number of ms, or with a unit (ms, s, m, h, d)"
        )
    return int(match.group(1)) * _UNITS_MS.get(match.group(2), 1)


def parse_namesrv(options: Mapping[str, str]) -> tuple[str, ...]:
    """The ``namesrv`` addresses, ``host:port`` each (a hosted endpoint's ``http://`` removed).

    Raises:
        SparkOptionError: missing, or an address is not ``host:port``.
    """
    text = get_text(options, "namesrv")
    if text is None:
        raise SparkOptionError("namesrv", "is required (NameServer addresses 'host:port;host:port')")
    # A hosted endpoint's http:// goes, as for a client (rocketmq_py.lowlevel.parse_namesrv_addrs).
    addresses = tuple(strip_endpoint_scheme(part.strip()) for part in re.split(r"[;,]", text) if part.strip())
    for address in addresses:
        if _ADDRESS.fullmatch(address) is None:
            raise SparkOptionError("namesrv", f"{address!r} is not 'host:port'")
    if not addresses:
        raise SparkOptionError("namesrv", f"{text!r} holds no address")
    return addresses


def parse_credentials(options: Mapping[str, str]) -> tuple[str | None, str | None]:
    """``(accessKey, secretKey)`` from lower-cased options: both, or neither (``(None, None)``).

    Raises:
        SparkOptionError: only one of the two is given (the message never holds the secret).
    """
    access_key = get_text(options, "accessKey")
    secret_key = get_text(options, "secretKey")
    if (access_key is None) != (secret_key is None):
        missing = "secretKey" if secret_key is None else "accessKey"
        raise SparkOptionError(missing, "is required too: give accessKey and secretKey together")
    return access_key, secret_key


def parse_namespace(options: Mapping[str, str]) -> str | None:
    """The ``namespace`` option checked; when not given, the instance id of a hosted endpoint in
    ``namesrv`` (``http://MQ_INST_<id>_<x>.<region>...:8080``), as for a client, else ``None``.

    Raises:
        SparkOptionError: it holds other characters than letters, digits, ``_`` and ``-``.
    """
    namespace = get_text(options, "namespace")
    if namespace is None:
        namespace = namespace_of_endpoint(get_text(options, "namesrv"))
    try:
        return validate_namespace(namespace)
    except ValueError as exc:
        raise SparkOptionError("namespace", str(exc)) from None
