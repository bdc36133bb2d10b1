"""The JSON body codec: :class:`JsonBody` dataclasses to and from fastjson-style JSON objects.

Wire format
-----------
Bodies are JSON objects written by Java's fastjson: UTF-8, compact, fields in alphabetical order,
``null`` fields left out, enums by name, Java ``Set``s as arrays. Two departures from standard
JSON occur (see :mod:`._fastjson`): integer map keys written bare (``{0:"host:10911"}``) and
objects used as map keys (``{{"brokerName":"b","queueId":0,"topic":"t"}:120}``). Decoding
therefore always goes through :func:`parse_fastjson`, which accepts both forms.

The mapping
-----------
A body class is a frozen dataclass deriving from :class:`JsonBody`. Each field is one JSON key,
named by the rule of the ``extFields`` headers (:mod:`._ext_fields`): the field name in
camelCase (``broker_name`` -> ``brokerName``) unless the field says otherwise with
``metadata=wire_key(...)`` (``clientID``, ``lockOKMQSet``). Values by the field's type::

    field type                 JSON                        decoding accepts
    str / int / bool           string / number / boolean   that JSON type (an int is not a bool
                                                           or a float)
    float                      number                      a number (an int too: ``1`` for 1.0)
    an Enum                    the member's name           a known name
    a JsonBody                 object                      an object of that body
    tuple[X, ...]              array, in order             an array
    frozenset[X]               array, sorted               an array (duplicates merge)
    Mapping[str, X]            object                      an object
    Mapping[int, X]            object, int keys            quoted or bare decimal keys
    Mapping[<JsonBody>, X]     object, object keys         object keys (fastjson's form)
    X | None                   left out when None          absent, null or an X
    Any                        as is, left out when None   anything

:meth:`JsonBody.to_json` writes the keys in alphabetical order (as fastjson does). On decode,
keys the class does not know are ignored, and a missing or ``null`` key takes the field's
default, or raises :class:`MalformedBody` when the field has none. Each class's field list and
converters (its *plan*) are worked out once and cached. A body whose JSON does not fit this
mapping overrides ``to_json`` / ``from_json`` itself.

:func:`encode_body` writes compact JSON with sorted keys (so output is deterministic);
:func:`decode_body` raises :class:`MalformedBody` for a wrong type or a missing required key.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, ClassVar, NoReturn, Self, TypeVar

from rocketmq_py.errors import LocalProtocolError, MalformedBody
from rocketmq_py.protocol._ext_fields import camel
from rocketmq_py.protocol._fastjson import FrozenObject, dump_fastjson, parse_fastjson

__all__ = ["JsonBody", "decode_body", "encode_body", "prepare_bodies"]


class JsonBody:
    """Base of the body types: :func:`encode_body` / :func:`decode_body` work on any subclass.

    A dataclass subclass gets ``to_json`` / ``from_json`` from its fields (see the module
    docstring); a body the mapping cannot express overrides both.
    """

    __slots__ = ()

    #: The body needs fastjson's object-as-key form (not expressible in standard JSON).
    _OBJECT_KEYS: ClassVar[bool] = False

    def to_json(self) -> Any:
        """This value as Python JSON data (dicts may have ``int``/``FrozenObject`` keys)."""
        plan = _plan_for(type(self))
        out: dict[str, Any] = {}
        for fp, value in zip(plan.fields, plan.values(self), strict=True):
            if value is None and fp.optional:
                continue
            out[fp.key] = fp.encode(value)
        return out

    @classmethod
    def from_json(cls, value: Any) -> Self:
        """Build from parsed JSON data; raises :class:`MalformedBody` on a schema mismatch."""
        where = cls.__name__
        if not isinstance(value, Mapping):
            raise MalformedBody(f"{where}: expected a JSON object, got {type(value).__name__}")
        kwargs: dict[str, Any] = {}
        for fp in _plan_for(cls).fields:
            raw = value.get(fp.key)
            if raw is None:  # fastjson omits nulls; treat an explicit null the same way
                if fp.required:
                    raise MalformedBody(f"{where}: required key {fp.key!r} is missing")
                continue
            kwargs[fp.attr] = fp.decode(raw, f"{where}.{fp.key}")
        return cls(**kwargs)


B = TypeVar("B", bound=JsonBody)


def encode_body(body: JsonBody, *, bare_keys: bool = False) -> bytes:
    """Encode a body as compact UTF-8 JSON with sorted keys.

    Args:
        body: the value to encode.
        bare_keys: write integer map keys unquoted, as fastjson's default output does (what an
            old name server sends); a fake server can use it to exercise the quirk.

    Raises:
        LocalProtocolError: a value JSON cannot carry (e.g. a string with a lone surrogate).
    """
    value = body.to_json()
    if bare_keys or body._OBJECT_KEYS:
        return dump_fastjson(value)
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False)
        return text.encode("utf-8")
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
        raise LocalProtocolError(f"cannot encode {type(body).__name__} as JSON: {exc}") from None


def decode_body(cls: type[B], data: bytes | bytearray | memoryview | str) -> B:
    """Decode a JSON body (standard or fastjson dialect) into ``cls``; unknown keys are ignored.

    Raises:
        MalformedBody: the bytes are not JSON, or do not fit the schema of ``cls``.
    """
    return cls.from_json(parse_fastjson(data))


# --- value converters ----------------------------------------------------------------------------

Encode = Callable[[Any], Any]
Decode = Callable[[Any, str], Any]  # (JSON value, where) -> field value

_INT_KEY = re.compile(r"-?[0-9]{1,19}")


def _expected(where: str, what: str, value: Any) -> NoReturn:
    raise MalformedBody(f"{where}: expected {what}, got {type(value).__name__}")


def _same(value: Any) -> Any:
    return value


def _any(value: Any, where: str) -> Any:
    return value


def _decode_str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        _expected(where, "str", value)
    return value


def _decode_int(value: Any, where: str) -> int:
    if type(value) is not int:  # rejects bool and float
        _expected(where, "int", value)
    return value


def _decode_bool(value: Any, where: str) -> bool:
    if type(value) is not bool:
        _expected(where, "bool", value)
    return value


def _decode_float(value: Any, where: str) -> float:
    if type(value) not in (float, int):  # a Java double may be written without a fraction
        _expected(where, "float", value)
    return float(value)


_SCALARS: dict[Any, Decode] = {str: _decode_str, int: _decode_int, bool: _decode_bool, float: _decode_float}


def _enum_codec(cls: type[enum.Enum]) -> tuple[Encode, Decode]:
    def encode(member: enum.Enum) -> str:
        return member.name

    def decode(value: Any, where: str) -> enum.Enum:
        if not isinstance(value, str):
            _expected(where, "str", value)
        try:
            return cls[value]
        except KeyError:
            raise MalformedBody(f"{where}: unknown {cls.__name__} {value!r}") from None

    return encode, decode


def _body_codec(cls: type[JsonBody]) -> tuple[Encode, Decode]:
    def encode(body: JsonBody) -> Any:
        return body.to_json()

    def decode(value: Any, where: str) -> JsonBody:
        return cls.from_json(value)  # errors name the nested class, not the path to it

    return encode, decode


def _array_codec(item: tuple[Encode, Decode], kind: type, ordered: bool) -> tuple[Encode, Decode]:
    encode_item, decode_item = item

    def encode(values: Any) -> list[Any]:
        return [encode_item(v) for v in (values if ordered else sorted(values))]

    def decode(value: Any, where: str) -> Any:
        if not isinstance(value, list):
            _expected(where, "a JSON array", value)
        return kind(decode_item(v, f"{where}[{i}]") for i, v in enumerate(value))

    return encode, decode


def _decode_int_key(key: Any, where: str) -> int:
    # "0" (standard JSON) and bare 0 (fastjson) both arrive as the text "0"
    if type(key) is not str or _INT_KEY.fullmatch(key) is None:
        raise MalformedBody(f"{where}: expected a decimal map key, got {key!r}")
    return int(key)


def _decode_str_key(key: Any, where: str) -> str:
    if type(key) is not str:
        raise MalformedBody(f"{where}: expected a string map key, got {key!r}")
    return key


def _key_codec(hint: Any, where: str) -> tuple[Encode, Decode]:
    if hint is str:
        return _same, _decode_str_key
    if hint is int:
        return _same, _decode_int_key
    if isinstance(hint, type) and issubclass(hint, JsonBody):
        body_cls = hint

        def encode(key: JsonBody) -> FrozenObject:
            return FrozenObject(key.to_json())

        def decode(key: Any, where: str) -> JsonBody:
            if not isinstance(key, Mapping):
                raise MalformedBody(f"{where}: expected {body_cls.__name__} object keys, got {key!r}")
            return body_cls.from_json(key)

        return encode, decode
    raise TypeError(f"{where}: unsupported map key type {hint!r} (use str, int or a JsonBody)")


def _map_codec(key: tuple[Encode, Decode], item: tuple[Encode, Decode]) -> tuple[Encode, Decode]:
    encode_key, decode_key = key
    encode_item, decode_item = item

    def encode(values: Mapping[Any, Any]) -> dict[Any, Any]:
        return {encode_key(k): encode_item(v) for k, v in values.items()}

    def decode(value: Any, where: str) -> dict[Any, Any]:
        if not isinstance(value, dict):
            _expected(where, "a JSON object", value)
        return {decode_key(k, where): decode_item(v, f"{where}[{k!r}]") for k, v in value.items()}

    return encode, decode


def _codec_for(hint: Any, where: str) -> tuple[Encode, Decode]:
    if hint is Any:
        return _same, _any
    if hint in _SCALARS:
        return _same, _SCALARS[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _array_codec(_codec_for(args[0], f"{where}[]"), tuple, ordered=True)
    if origin is frozenset:
        return _array_codec(_codec_for(args[0], f"{where}[]"), frozenset, ordered=False)
    if origin in (Mapping, dict):
        return _map_codec(_key_codec(args[0], where), _codec_for(args[1], f"{where}[]"))
    if origin is None and isinstance(hint, type):
        if issubclass(hint, enum.Enum):
            return _enum_codec(hint)
        if issubclass(hint, JsonBody):
            return _body_codec(hint)
    raise TypeError(f"{where}: unsupported body field type {hint!r}")


# --- per-class plans -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _FieldPlan:
    attr: str
    key: str
    required: bool  # no default: a missing key is an error
    optional: bool  # the type admits None: a None value is left out
    encode: Encode
    decode: Decode


@dataclass(frozen=True, slots=True)
class _ClassPlan:
    fields: tuple[_FieldPlan, ...]  # in wire-key order
    values: Callable[[object], tuple[Any, ...]]


_PLANS: dict[type, _ClassPlan] = {}


def _values_getter(names: list[str]) -> Callable[[object], tuple[Any, ...]]:
    if len(names) > 1:
        return attrgetter(*names)  # already returns a tuple
    if names:
        single = attrgetter(names[0])
        return lambda obj: (single(obj),)
    return lambda obj: ()


def _build_plan(cls: type) -> _ClassPlan:
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not a body dataclass")
    hints = typing.get_type_hints(cls)
    plans: list[_FieldPlan] = []
    for f in dataclasses.fields(cls):
        where = f"{cls.__name__}.{f.name}"
        hint = hints[f.name]
        optional = hint is Any
        if typing.get_origin(hint) in (typing.Union, types.UnionType):
            args = [arg for arg in typing.get_args(hint) if arg is not type(None)]
            if len(args) != 1 or len(typing.get_args(hint)) != 2:
                raise TypeError(f"{where}: unsupported union {hint!r}")
            hint, optional = args[0], True
        encode, decode = _codec_for(hint, where)
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        key = f.metadata.get("wire", camel(f.name))
        plans.append(_FieldPlan(f.name, key, required, optional, encode, decode))
    plans.sort(key=lambda fp: fp.key)
    plan = _ClassPlan(tuple(plans), _values_getter([fp.attr for fp in plans]))
    _PLANS[cls] = plan
    return plan


def _plan_for(cls: type) -> _ClassPlan:
    plan = _PLANS.get(cls)
    return plan if plan is not None else _build_plan(cls)


def prepare_bodies(*classes: type[JsonBody]) -> None:
    """Build the plan of each body class now (at import: a malformed class fails there).

    Raises:
        TypeError: a class is not a dataclass, or has a field of a type the mapping cannot carry.
    """
    for cls in classes:
        _build_plan(cls)
