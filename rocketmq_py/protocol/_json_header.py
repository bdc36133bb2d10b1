"""The JSON header (serialize type 0) of a remoting command.

JSON header (type 0): one compact UTF-8 JSON object with the keys in alphabetical order, as
Java's fastjson writes them; ``extFields`` is left out when empty and ``remark`` when None::

    {"code":105,"extFields":{"topic":"T"},"flag":0,"language":"PYTHON","opaque":3,
     "serializeTypeCurrentRPC":"JSON","version":479}

``language`` is the :class:`LanguageCode` member *name*. On decode unknown keys are ignored,
an unknown language name becomes ``OTHER``, and numbers/booleans among the ``extFields``
values are turned into the strings Java would send (``true`` -> ``"true"``).


Encoding raises :class:`LocalProtocolError` for what the header cannot carry (a non-string
``extFields`` value, an int beyond int32, a language with no name...); decoding raises
:class:`MalformedHeader`, never a bare ``UnicodeDecodeError`` or ``JSONDecodeError``. With the
optional ``orjson`` extra, orjson reads headers (see :func:`_json_object`).
"""

from __future__ import annotations

import json
import json.scanner
from collections.abc import Callable
from types import ModuleType
from typing import Any, Final, cast

from ..errors import LocalProtocolError, MalformedHeader
from ._codes import LanguageCode
from ._header_base import (
    _I32_MAX,
    _I32_MIN,
    _LANGUAGE_BY_NAME,
    _LANGUAGE_BY_VALUE,
    _LANGUAGE_NAMES,
    HeaderFields,
    _Fields,
    _int_in,
)

__all__: list[str] = []

_JSON_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))
_JSON_DECODER: Final = json.JSONDecoder()
# The optional "orjson" extra: a faster reader of JSON headers (see _json_object).
_orjson: ModuleType | None
try:
    import orjson

    _orjson = orjson
except ImportError:  # pragma: no cover - the pure path is the default install
    _orjson = None
# The C scanner behind JSONDecoder.decode (typeshed types its argument as a scanner, not a decoder).
_JSON_SCAN: Final[Callable[[str, int], tuple[object, int]]] = json.scanner.make_scanner(
    cast(Any, _JSON_DECODER)
)
_JSON_WHITESPACE: Final = " \t\n\r"


def _encode_json_header(cmd: HeaderFields) -> bytes:
    """Keys in alphabetical order, as fastjson writes them; compact; UTF-8.

    Built from pieces (the fixed fields formatted, ``extFields`` and ``remark`` through the JSON
    encoder): the same bytes as encoding the whole object with ``sort_keys``, at half the cost.
    """
    language = _int_in(cmd.language, 0, 255, "language")
    name = _LANGUAGE_NAMES.get(language)
    if name is None:
        raise LocalProtocolError(f"language {language} has no LanguageCode name for a JSON header")
    code = _int_in(cmd.code, _I32_MIN, _I32_MAX, "code")
    flag = _int_in(cmd.flag, _I32_MIN, _I32_MAX, "flag")
    opaque = _int_in(cmd.opaque, _I32_MIN, _I32_MAX, "opaque")
    version = _int_in(cmd.version, _I32_MIN, _I32_MAX, "version")
    ext_part = ""
    if cmd.ext_fields:
        ext = cmd.ext_fields
        for key, value in ext.items():
            if type(key) is not str or type(value) is not str:
                raise LocalProtocolError(f"extFields entry {key!r}: {value!r} is not str -> str")
        ext_part = f'"extFields":{_JSON_ENCODER.encode(dict(ext))},'
    remark_part = ""
    if cmd.remark is not None:
        if not isinstance(cmd.remark, str):
            raise LocalProtocolError(f"remark must be a str, not {type(cmd.remark).__name__}")
        remark_part = f',"remark":{_JSON_ENCODER.encode(cmd.remark)}'
    text = (
        f'{{"code":{code},{ext_part}"flag":{flag},"language":"{name}","opaque":{opaque}'
        f'{remark_part},"serializeTypeCurrentRPC":"JSON","version":{version}}}'
    )
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise LocalProtocolError(f"header text is not encodable as UTF-8: {exc}") from exc


def _json_int(obj: dict[str, object], key: str, required: bool) -> int:
    value = obj.get(key)
    if value is None:
        if required:
            raise MalformedHeader(f"JSON header has no {key!r}")
        return 0  # what Java's int fields keep when the key is absent
    if type(value) is not int or not _I32_MIN <= value <= _I32_MAX:
        raise MalformedHeader(f"JSON header {key!r} is {value!r}, not an int32")
    return value


def _java_string(key: str, value: object) -> str:
    """An extFields value as the string Java would have sent."""
    if type(value) is str:
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int or type(value) is float:
        return str(value)
    raise MalformedHeader(f"JSON header extFields[{key!r}] is {type(value).__name__}, not a string")


def _json_object(header: bytes, *, pure: bool = False) -> object:
    """The JSON value of ``header``, as ``json.loads`` reads it (errors as :class:`MalformedHeader`).

    With the ``orjson`` extra installed, orjson reads it (about twice as fast on reply headers);
    what orjson refuses (NaN, lone surrogates, very deep nesting) goes the standard library's way,
    so the decoded header or the error is the same either way
    (``tests/protocol/test_json_header_paths.py``). Without it, a header that starts with ``{`` goes
    straight to the C scanner: ``JSONDecoder.decode`` would only add a whitespace match on each
    side, at a third of the cost of a reply header. ``pure``: the standard library's reading only.

    orjson reads integers past 64 bits as floats; that matters only where a number becomes text
    (``extFields`` values), and :func:`_decode_json_header` reads those the standard way.
    """
    if _orjson is not None and not pure:
        try:
            return _orjson.loads(header)
        except _orjson.JSONDecodeError:
            pass  # the standard library's reading, or its error
    try:
        text = header.decode("utf-8")
        if text[:1] == "{":
            obj, end = _JSON_SCAN(text, 0)
            if end == len(text) or not text[end:].strip(_JSON_WHITESPACE):
                return obj
        return _JSON_DECODER.decode(text)  # the decoder's own error for what is left
    except StopIteration as exc:  # the scanner's "no value here"
        raise MalformedHeader(f"JSON header does not parse at {exc.value}") from None
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError included
        raise MalformedHeader(f"JSON header does not parse: {exc}") from exc


def _decode_json_header(header: bytes) -> _Fields:
    obj = _json_object(header)
    if type(obj) is not dict:
        raise MalformedHeader(f"JSON header is a {type(obj).__name__}, not an object")
    # The common case inline (int32 values present); anything else goes through _json_int.
    get = obj.get
    code = get("code")
    if type(code) is not int or not _I32_MIN <= code <= _I32_MAX:
        code = _json_int(obj, "code", True)
    opaque = get("opaque", 0)
    if type(opaque) is not int or not _I32_MIN <= opaque <= _I32_MAX:
        opaque = _json_int(obj, "opaque", False)
    flag = get("flag", 0)
    if type(flag) is not int or not _I32_MIN <= flag <= _I32_MAX:
        flag = _json_int(obj, "flag", False)
    version = get("version", 0)
    if type(version) is not int or not _I32_MIN <= version <= _I32_MAX:
        version = _json_int(obj, "version", False)

    language_value = obj.get("language")
    language: int
    if type(language_value) is str:
        language = _LANGUAGE_BY_NAME.get(language_value, LanguageCode.OTHER)
    elif language_value is None:
        language = LanguageCode.OTHER
    elif type(language_value) is int and 0 <= language_value <= 255:
        language = _LANGUAGE_BY_VALUE.get(language_value, language_value)
    else:
        raise MalformedHeader(f"JSON header language is {language_value!r}")

    remark = obj.get("remark")
    if remark is not None and type(remark) is not str:
        raise MalformedHeader(f"JSON header remark is a {type(remark).__name__}, not a string")

    raw_ext = obj.get("extFields")
    ext: dict[str, str]
    if raw_ext is None:
        ext = {}
    elif type(raw_ext) is dict:
        ext = raw_ext
        for value in raw_ext.values():
            if type(value) is not str:
                if _orjson is not None:  # orjson reads integers past 64 bits as floats: not Java's text
                    pure = _json_object(header, pure=True)  # the same document, read the standard way
                    raw_ext = pure.get("extFields") if type(pure) is dict else None
                    if type(raw_ext) is not dict:
                        raise MalformedHeader("JSON header reads differently with orjson")
                ext = {k: _java_string(k, v) for k, v in raw_ext.items() if v is not None}
                break
    else:
        raise MalformedHeader(f"JSON header extFields is a {type(raw_ext).__name__}, not an object")
    return code, language, version, opaque, flag, remark, ext
