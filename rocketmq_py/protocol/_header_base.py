"""What the two header encodings of a remoting command share (see ``_json_header``, ``_binary_header``).

A decoded header is the tuple :data:`_Fields` (code, language, version, opaque, flag, remark,
extFields), from which ``_command`` builds the :class:`~rocketmq_py.protocol._command.RemotingCommand`;
an encoder reads a command as :class:`HeaderFields` (so the codecs need not import the command
type, which imports them). The range and text checks raise :class:`LocalProtocolError` for what
a header cannot carry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Protocol, TypeAlias

from ..errors import LocalProtocolError
from ._codes import LanguageCode

__all__ = ["HeaderFields"]

_I16_MIN: Final = -(1 << 15)
_I16_MAX: Final = (1 << 15) - 1
_I32_MIN: Final = -(1 << 31)
_I32_MAX: Final = (1 << 31) - 1

_LANGUAGE_NAMES: Final = {member.value: member.name for member in LanguageCode}
_LANGUAGE_BY_NAME: Final = {member.name: member for member in LanguageCode}
_LANGUAGE_BY_VALUE: Final = {member.value: member for member in LanguageCode}

#: A decoded header: code, language, version, opaque, flag, remark, extFields.
_Fields: TypeAlias = tuple[int, int, int, int, int, str | None, dict[str, str]]


class HeaderFields(Protocol):
    """The fields of a command a header carries (a ``RemotingCommand`` is one)."""

    @property
    def code(self) -> int: ...
    @property
    def opaque(self) -> int: ...
    @property
    def flag(self) -> int: ...
    @property
    def ext_fields(self) -> Mapping[str, str]: ...
    @property
    def remark(self) -> str | None: ...
    @property
    def language(self) -> int: ...
    @property
    def version(self) -> int: ...


def _int_in(value: object, low: int, high: int, what: str) -> int:
    """``value`` as a plain int in ``[low, high]`` (bools refused), else LocalProtocolError."""
    if type(value) is not int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise LocalProtocolError(f"{what} must be an int, not {type(value).__name__}")
        value = int(value)
    if not low <= value <= high:
        raise LocalProtocolError(f"{what} {value} is outside [{low}, {high}]")
    return value


def _utf8(value: object, what: str) -> bytes:
    if not isinstance(value, str):
        raise LocalProtocolError(f"{what} must be a str, not {type(value).__name__}")
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise LocalProtocolError(f"{what} is not encodable as UTF-8: {exc}") from exc
