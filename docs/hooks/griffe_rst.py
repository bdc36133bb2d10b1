"""A griffe extension: the reStructuredText habits of our docstrings, read as Markdown.

The docstrings are written for ``help()`` and the source, in the Google style with a few
reStructuredText roles and literal blocks. mkdocstrings renders Markdown, so before griffe parses a
docstring this extension rewrites:

- a role, ``:class:`~rocketmq_py.errors.StateError``` or ``:meth:`poll```, to inline code
  (```StateError```, ```poll```): the leading ``~`` keeps the last name only, as Sphinx does;
- a paragraph ending in ``::`` (a literal block follows) to end in ``:``; the indented block after
  it is already a Markdown code block;
- ``Args: as :class:`X`.`` (a facade that takes its counterpart's arguments) to a sentence, so
  that it is not read as an ``Args`` section with no parameters.

It also gives an attribute (a module constant, a class or instance attribute) with no docstring
the ``#:`` comment lines right above its assignment, as Sphinx's autodoc does: that is how this
code documents its constants and fields.

Nothing else changes: the text of each docstring stays as written.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|attr|data|mod|exc|obj|const):`(?P<target>[^`]+)`")
_LITERAL = re.compile(r"(?<=\S)::$", re.MULTILINE)
_BARE_LITERAL = re.compile(r"^(?P<indent>\s*)::$", re.MULTILINE)
_ARGS_AS = re.compile(r"^(?P<indent>\s*)Args:\s+(?P<rest>as\s.+)$", re.MULTILINE)


def _role(match: re.Match[str]) -> str:
    target = match.group("target")
    explicit = re.fullmatch(r"(?P<text>.+?)\s*<(?P<ref>[^>]+)>", target)
    if explicit is not None:
        return f"`{explicit.group('text')}`"
    if target.startswith("~"):
        target = target[1:].rpartition(".")[2]
    return f"`{target}`"


def rst_to_markdown(text: str) -> str:
    """``text`` with the rewrites of the module docstring applied."""
    text = _ROLE.sub(_role, text)
    text = _ARGS_AS.sub(lambda m: f"{m.group('indent')}Arguments: {m.group('rest')}", text)
    text = _BARE_LITERAL.sub("", text)
    return _LITERAL.sub(":", text)


def comment_docstring(lines: list[str], lineno: int) -> str | None:
    """The ``#:`` comment lines right above line ``lineno`` (1-based) of ``lines``, as text."""
    found: list[str] = []
    index = lineno - 2
    while index >= 0:
        stripped = lines[index].strip()
        if not stripped.startswith("#:"):
            break
        found.append(stripped[2:].strip())
        index -= 1
    return "\n".join(reversed(found)) or None


class RstToMarkdown(griffe.Extension):
    """Rewrites each docstring as it is loaded (see the module docstring)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rst_to_markdown(obj.docstring.value)

    def on_attribute_instance(self, *, attr: griffe.Attribute, **kwargs: Any) -> None:
        if attr.docstring is not None or attr.lineno is None:
            return
        filepath = attr.filepath
        if isinstance(filepath, list):  # a namespace package: no source lines
            return
        try:
            lines = attr.lines_collection[filepath]
        except KeyError:
            return
        text = comment_docstring(lines, attr.lineno)
        if text is not None:
            attr.docstring = griffe.Docstring(rst_to_markdown(text), lineno=attr.lineno, parent=attr)
