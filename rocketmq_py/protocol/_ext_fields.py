"""The ``extFields`` codec: typed header dataclasses to and from a remoting command's string map.

Wire format
-----------
Every request or response may carry a flat ``extFields`` map (JSON object, or the binary
key/value list of the ROCKETMQ header encoding). Keys are the Java header class's field names;
**every value is a string**, written with Java's ``toString``::

    {"consumerGroup": "g", "queueId": "3", "queueOffset": "1024", "setZeroIfNotFound": "true"}

    Java type        on the wire              here
    String           as is                    ``str``
    Integer / int    decimal, optional sign   ``Int32`` (an ``int`` checked to int32 range)
    Long / long      decimal, optional sign   ``Int64`` (an ``int`` checked to int64 range)
    Boolean          "true" / "false"         ``bool``
    null             key absent               ``None``

A header is a frozen, slotted, keyword-only dataclass (:class:`CustomHeader`); the classes live
in :mod:`._headers` and :mod:`._admin_headers`. A field without a default is required (Java
``@CFNotNull``); a missing key on decode raises :class:`MalformedHeader`. Wire-key rule: the
Python field name in camelCase (``queue_offset`` -> ``queueOffset``), unless the field says
otherwise with ``metadata=wire_key(...)`` (``clientID``, ``bname``, the misspelt
``proxyFrowardClientId``). ``REQUEST_CODE`` is the :class:`RequestCode` that carries the
header; response headers have ``None``.

Keys a header class does not know are kept in its ``extra`` map on decode and written back by
:func:`to_ext_fields`, so fields added by newer brokers survive a round trip (and extra
response keys such as ``MSG_REGION`` / ``TRACE_ON`` on a send reply stay readable).

Each class's field list, wire keys and value converters are worked out once (its *plan*) and
cached; :func:`prepare_headers` builds them at import, so a malformed class fails there.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Annotated, Any, ClassVar, Protocol, TypeVar

from rocketmq_py.errors import LocalProtocolError, MalformedHeader

__all__ = [
    "CustomHeader",
    "Int32",
    "Int64",
    "camel",
    "extra_field",
    "from_ext_fields",
    "header_keys",
    "prepare_headers",
    "to_ext_fields",
    "wire_key",
]


@dataclass(frozen=True, slots=True)
class _JavaInt:
    """Annotation marker: an ``int`` carried as a Java integer of ``bits`` width."""

    bits: int


#: A Java ``Integer``/``int`` field (int32 range checked on encode and decode).
Int32 = Annotated[int, _JavaInt(32)]
#: A Java ``Long``/``long`` field (int64 range checked on encode and decode).
Int64 = Annotated[int, _JavaInt(64)]


class CustomHeader(Protocol):
    """What every header class provides (for typing the generic codec functions)."""

    REQUEST_CODE: ClassVar[int | None]

    @property
    def extra(self) -> Mapping[str, str]:
        """The wire keys the header class does not define, kept as received."""
        ...


H = TypeVar("H", bound=CustomHeader)


def wire_key(key: str) -> dict[str, str]:
    """Field metadata naming a wire key that is not the camelCase of the field name."""
    return {"wire": key}


def extra_field() -> Any:
    """The declaration of a header's ``extra`` field (the keys its class does not define).

    Excluded from the hash (a dict is unhashable), still part of equality and repr.
    """
    return field(default_factory=dict, hash=False)


def camel(name: str) -> str:
    """The Java field name of a Python field name: ``queue_offset`` -> ``queueOffset``."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# --- value converters ----------------------------------------------------------------------------

_INT_TEXT = re.compile(r"[+-]?[0-9]{1,20}")  # Java parseInt/parseLong: optional sign, ASCII digits


def _encode_str(value: object) -> str:
    if type(value) is str:
        return value
    if isinstance(value, str):
        return str.__str__(value)  # a StrEnum member: its value, not its name
    raise ValueError(f"expected str, got {type(value).__name__}")


def _decode_str(text: str) -> str:
    if type(text) is not str:
        raise ValueError(f"expected a string value, got {type(text).__name__}")
    return text


def _encode_bool(value: object) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    raise ValueError(f"expected bool, got {type(value).__name__}")


def _decode_bool(text: str) -> bool:
    lowered = text.lower()  # Java's Boolean.parseBoolean ignores case
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    raise ValueError("expected 'true' or 'false'")


def _int_codec(bits: int) -> tuple[Callable[[object], str], Callable[[str], int]]:
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def encode(value: object) -> str:
        if type(value) is not int:
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"expected int, got {type(value).__name__}")
            value = int(value)  # an IntEnum/IntFlag: write the number, not the name
        if not low <= value <= high:
            raise ValueError(f"{value} is outside the int{bits} range")
        return str(value)

    def decode(text: str) -> int:
        # Fast path for the usual unsigned value; int() alone would also take "1_0", " 1" and
        # non-ASCII digits, which Java rejects.
        if not (text.isascii() and text.isdigit()) and _INT_TEXT.fullmatch(text) is None:
            raise ValueError("not a decimal integer")
        value = int(text)
        if not low <= value <= high:
            raise ValueError(f"outside the int{bits} range")
        return value

    return encode, decode


_CODECS: dict[object, tuple[Callable[[object], str], Callable[[str], Any]]] = {
    str: (_encode_str, _decode_str),
    bool: (_encode_bool, _decode_bool),
    32: _int_codec(32),
    64: _int_codec(64),
}


# --- per-class plans -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _FieldPlan:
    attr: str
    key: str
    required: bool
    encode: Callable[[object], str]
    decode: Callable[[str], Any]


@dataclass(frozen=True, slots=True)
class _ClassPlan:
    fields: tuple[_FieldPlan, ...]
    keys: frozenset[str]
    values: Callable[[object], tuple[Any, ...]]  # all field values in one attrgetter call


_PLANS: dict[type, _ClassPlan] = {}


def _codec_for(hint: Any, where: str) -> tuple[Callable[[object], str], Callable[[str], Any]]:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        if len(args) != 1:
            raise TypeError(f"{where}: unsupported union {hint!r}")
        hint = args[0]
    if typing.get_origin(hint) is Annotated:
        base, *marks = typing.get_args(hint)
        widths = [mark.bits for mark in marks if isinstance(mark, _JavaInt)]
        if base is int and len(widths) == 1:
            return _CODECS[widths[0]]
    elif hint in (str, bool):
        return _CODECS[hint]
    raise TypeError(f"{where}: unsupported header field type {hint!r} (use str, bool, Int32, Int64)")


def _values_getter(names: list[str]) -> Callable[[object], tuple[Any, ...]]:
    if len(names) > 1:
        return attrgetter(*names)  # already returns a tuple
    if names:
        single = attrgetter(names[0])
        return lambda obj: (single(obj),)
    return lambda obj: ()


def _build_plan(cls: type) -> _ClassPlan:
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not a header dataclass")
    hints = typing.get_type_hints(cls, include_extras=True)
    plans: list[_FieldPlan] = []
    for f in dataclasses.fields(cls):
        if f.name == "extra":
            continue
        encode, decode = _codec_for(hints[f.name], f"{cls.__name__}.{f.name}")
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        key = f.metadata.get("wire", camel(f.name))
        plans.append(_FieldPlan(f.name, key, required, encode, decode))
    plan = _ClassPlan(tuple(plans), frozenset(p.key for p in plans), _values_getter([p.attr for p in plans]))
    _PLANS[cls] = plan
    return plan


def _plan_for(cls: type) -> _ClassPlan:
    plan = _PLANS.get(cls)
    return plan if plan is not None else _build_plan(cls)


def prepare_headers(*classes: type) -> None:
    """Build the plan of each header class now (at import: a malformed class fails there, and no
    first call pays for the reflection).

    Raises:
        TypeError: a class is not a dataclass, or has a field of a type the codec cannot carry.
    """
    for cls in classes:
        _build_plan(cls)


def header_keys(cls: type) -> frozenset[str]:
    """The ``extFields`` keys header class ``cls`` defines."""
    return _plan_for(cls).keys


# --- the generic pair ----------------------------------------------------------------------------


def to_ext_fields(header: CustomHeader) -> dict[str, str]:
    """Encode a header as its ``extFields`` map.

    Ints are written in decimal, booleans as ``"true"``/``"false"``, ``None`` fields are left
    out, and the keys in ``header.extra`` are written back as they are.

    Raises:
        LocalProtocolError: a field holds a value the Java side cannot parse (wrong type, an
            int outside its Java range, a required field set to ``None``), or ``extra``
            repeats a key the header class defines.
    """
    cls = type(header)
    plan = _plan_for(cls)
    extra = header.extra
    if extra:
        clash = plan.keys.intersection(extra)
        if clash:
            raise LocalProtocolError(f"{cls.__name__}.extra repeats defined keys {sorted(clash)}")
        out = dict(extra)
    else:
        out = {}
    for fp, value in zip(plan.fields, plan.values(header), strict=True):
        if value is None:
            if fp.required:
                raise LocalProtocolError(f"{cls.__name__}.{fp.attr} ({fp.key!r}) is required")
            continue
        try:
            out[fp.key] = fp.encode(value)
        except ValueError as exc:
            raise LocalProtocolError(f"{cls.__name__}.{fp.attr} ({fp.key!r}): {exc}") from None
    return out


def from_ext_fields(cls: type[H], ext: Mapping[str, str] | None) -> H:
    """Decode an ``extFields`` map (``None`` = no map) into a header of class ``cls``.

    Keys ``cls`` does not define are kept in the result's ``extra``.

    Raises:
        MalformedHeader: a required key is missing, or a value does not parse as the field's
            Java type (naming the class and the key).
    """
    plan = _plan_for(cls)
    if ext is None:
        ext = {}
    kwargs: dict[str, Any] = {}
    seen = 0
    for fp in plan.fields:
        text = ext.get(fp.key)
        if text is None:
            if fp.required:
                raise MalformedHeader(f"{cls.__name__}: required extFields key {fp.key!r} is missing")
            continue
        seen += 1
        try:
            kwargs[fp.attr] = fp.decode(text)
        except (ValueError, TypeError, AttributeError):
            raise MalformedHeader(
                f"{cls.__name__}: extFields key {fp.key!r} has an unparseable value {text!r}"
            ) from None
    if seen != len(ext):
        kwargs["extra"] = {k: v for k, v in ext.items() if k not in plan.keys}
    return cls(**kwargs)
