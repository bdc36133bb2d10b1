"""A tolerant reader (and a writer) for the JSON dialect Java's fastjson 1.x emits by default.

Wire format
-----------
RocketMQ's Java side serializes bodies with fastjson. Its default output is JSON except for map
keys that are not strings, which it writes *unquoted*:

- number keys are written bare::

      {"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"}}

- object keys (a ``MessageQueue`` used as a map key) are written as the object itself::

      {"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:123}}

Everything else is RFC 8259 JSON (UTF-8, compact, object fields in alphabetical order).

What the parser returns
-----------------------
The same Python values as :func:`json.loads` (``dict``, ``list``, ``str``, ``int``, ``float``,
``bool``, ``None``), except for map keys:

- a quoted key is a ``str``;
- a bare number key is the ``str`` of its literal text, so ``{0:"a"}`` parses exactly like
  ``{"0":"a"}`` (the standard form the name server sends to new clients) and callers convert
  keys once, whichever form arrived;
- an object key is a :class:`FrozenObject` (a hashable, read-only mapping), and an array key a
  ``tuple``; nested containers inside such keys are frozen the same way.

:func:`parse_fastjson` tries the C-accelerated :func:`json.loads` first and only falls back to
the hand-written scanner when that fails, so standard bodies pay nothing extra. Any bad input,
including invalid UTF-8 and nesting deeper than :data:`MAX_DEPTH`, raises :class:`MalformedBody`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any, NoReturn

from rocketmq_py.errors import LocalProtocolError, MalformedBody

__all__ = ["MAX_DEPTH", "FrozenObject", "dump_fastjson", "parse_fastjson"]

#: Deepest container nesting the scanner accepts (route data nests 4 deep; this is generous
#: while keeping the recursive scanner far from Python's recursion limit).
MAX_DEPTH = 100


class FrozenObject(Mapping[str, Any]):
    """A JSON object used as a map key: read-only, hashable, compares equal to an equal dict."""

    __slots__ = ("_hash", "_items")

    def __init__(self, items: Mapping[str, Any] | None = None) -> None:
        self._items: dict[str, Any] = {k: _freeze(v) for k, v in (items or {}).items()}
        self._hash: int | None = None

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._items.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self._items == dict(other.items())
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenObject({self._items!r})"


def _freeze(value: Any) -> Any:
    if isinstance(value, FrozenObject):
        return value
    if isinstance(value, Mapping):
        return FrozenObject(value)
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


# --- reading -------------------------------------------------------------------------------------


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")  # json.loads would otherwise accept NaN/Infinity


def parse_fastjson(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse a JSON body that may use fastjson's unquoted number or object map keys.

    Args:
        data: the body (UTF-8 bytes) or already-decoded text.

    Returns:
        Python values as :func:`json.loads` gives them; see the module docstring for map keys.

    Raises:
        MalformedBody: invalid UTF-8, input that is neither JSON nor fastjson's dialect, or
            nesting deeper than :data:`MAX_DEPTH`.
    """
    if isinstance(data, str):
        text = data
    else:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedBody(f"JSON body is not valid UTF-8: {exc}") from None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        pass
    return _Scanner(text).document()


_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
# A whole string token; the alternatives are disjoint on their first character, so matching is
# linear. Its escapes are then decoded by json.loads (surrogate pairs included).
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"')
_LITERALS: tuple[tuple[str, Any], ...] = (("true", True), ("false", False), ("null", None))


class _Scanner:
    """Recursive descent over the text; every method leaves ``pos`` after what it read."""

    __slots__ = ("pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> NoReturn:
        raise MalformedBody(f"malformed JSON body at offset {self.pos}: {what}")

    def skip_ws(self) -> None:
        match = _WS.match(self.text, self.pos)
        assert match is not None  # the pattern matches the empty string
        self.pos = match.end()

    def document(self) -> Any:
        try:
            self.skip_ws()
            value = self.value(0)
            self.skip_ws()
        except RecursionError:  # defensive: MAX_DEPTH should stop us long before this
            self.fail("nested too deeply")
        if self.pos != len(self.text):
            self.fail("trailing data after the JSON value")
        return value

    def value(self, depth: int) -> Any:
        text, pos = self.text, self.pos
        char = text[pos : pos + 1]
        if char == "{":
            return self.obj(depth + 1)
        if char == "[":
            return self.array(depth + 1)
        if char == '"':
            return self.string()
        if char == "-" or "0" <= char <= "9":
            literal = self.number_text()
            try:
                return (
                    float(literal) if ("." in literal or "e" in literal or "E" in literal) else int(literal)
                )
            except ValueError:  # more digits than Python's int() accepts
                self.fail("number too long")
        for word, result in _LITERALS:
            if text.startswith(word, pos):
                self.pos = pos + len(word)
                return result
        self.fail("expected a value" if char else "unexpected end of input")

    def number_text(self) -> str:
        match = _NUMBER.match(self.text, self.pos)
        if match is None:
            self.fail("malformed number")
        self.pos = match.end()
        return match.group()

    def string(self) -> str:
        match = _STRING.match(self.text, self.pos)
        if match is None:
            self.fail("malformed string")
        self.pos = match.end()
        result: str = json.loads(match.group())
        return result

    def key(self, depth: int) -> Any:
        char = self.text[self.pos : self.pos + 1]
        if char == '"':
            return self.string()
        if char == "-" or "0" <= char <= "9":
            return self.number_text()  # fastjson's bare Integer/Long keys, kept as text
        if char in ("{", "["):
            return _freeze(self.value(depth))
        self.fail("expected a map key")

    def obj(self, depth: int) -> dict[Any, Any]:
        if depth > MAX_DEPTH:
            self.fail(f"nested deeper than {MAX_DEPTH}")
        self.pos += 1  # "{"
        result: dict[Any, Any] = {}
        self.skip_ws()
        if self.text.startswith("}", self.pos):
            self.pos += 1
            return result
        while True:
            self.skip_ws()
            key = self.key(depth)
            self.skip_ws()
            if not self.text.startswith(":", self.pos):
                self.fail("expected ':' after a map key")
            self.pos += 1
            self.skip_ws()
            result[key] = self.value(depth)
            self.skip_ws()
            char = self.text[self.pos : self.pos + 1]
            self.pos += 1
            if char == "}":
                return result
            if char != ",":
                self.pos -= 1
                self.fail("expected ',' or '}' in an object")

    def array(self, depth: int) -> list[Any]:
        if depth > MAX_DEPTH:
            self.fail(f"nested deeper than {MAX_DEPTH}")
        self.pos += 1  # "["
        result: list[Any] = []
        self.skip_ws()
        if self.text.startswith("]", self.pos):
            self.pos += 1
            return result
        while True:
            self.skip_ws()
            result.append(self.value(depth))
            self.skip_ws()
            char = self.text[self.pos : self.pos + 1]
            self.pos += 1
            if char == "]":
                return result
            if char != ",":
                self.pos -= 1
                self.fail("expected ',' or ']' in an array")


# --- writing -------------------------------------------------------------------------------------


def dump_fastjson(value: Any) -> bytes:
    """Write ``value`` the way fastjson does by default: compact, int and object keys unquoted.

    Map entries are sorted by their written key, so the output is deterministic. Keys may be
    ``str`` (quoted), ``int`` (bare) or a mapping (written as an object); :func:`parse_fastjson`
    reads the result back (bare int keys come back as ``str``).

    Raises:
        LocalProtocolError: a value JSON cannot carry (NaN, an unsupported type or key type, a
            string that is not valid Unicode).
    """
    parts: list[str] = []
    _write(value, parts)
    try:
        return "".join(parts).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise LocalProtocolError(f"string is not encodable as UTF-8: {exc}") from None


def _write(value: Any, out: list[str]) -> None:
    if value is None or isinstance(value, bool | str):
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, int):
        out.append(str(int(value)))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise LocalProtocolError(f"{value!r} is not representable in JSON")
        out.append(repr(value))
    elif isinstance(value, Mapping):
        entries = sorted(((_key_text(k), v) for k, v in value.items()), key=lambda entry: entry[0])
        out.append("{")
        for index, (key, item) in enumerate(entries):
            if index:
                out.append(",")
            out.append(key)
            out.append(":")
            _write(item, out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:
        raise LocalProtocolError(f"cannot write {type(value).__name__} as JSON")


def _key_text(key: Any) -> str:
    if isinstance(key, str):
        return json.dumps(key, ensure_ascii=False)
    if isinstance(key, int) and not isinstance(key, bool):
        return str(int(key))
    if isinstance(key, Mapping):
        parts: list[str] = []
        _write(key, parts)
        return "".join(parts)
    raise LocalProtocolError(f"cannot write a {type(key).__name__} map key")
