"""MkDocs hook: the CLI reference, generated from the argparse parsers at every build.

A page holding the line ``<!-- cli-reference: rocketmq-py -->`` (or ``testing``) gets, in its
place, one section per command and subcommand of that parser: its help line, its usage, and a
table of its arguments (name, value, default, help). The parsers are the programs' own
(``rocketmq_py.cli._parser.build_parser`` and ``rocketmq_py.testing._cli.build_parser``), so the
page changes when the command line does. A marker naming no known parser fails the build.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

from mkdocs.exceptions import PluginError

_MARKER = re.compile(r"^<!-- cli-reference: (?P<name>[\w-]+) -->$", re.MULTILINE)
#: Columns argparse wraps usage lines at (it reads $COLUMNS): fixed, so the page does not depend
#: on the terminal of whoever builds it.
_WIDTH = "96"


def _rocketmq_py() -> argparse.ArgumentParser:
    from rocketmq_py.cli._parser import build_parser

    return build_parser()


def _testing() -> argparse.ArgumentParser:
    from rocketmq_py.testing._cli import build_parser

    return build_parser()


PARSERS: dict[str, Callable[[], argparse.ArgumentParser]] = {"rocketmq-py": _rocketmq_py, "testing": _testing}


@contextlib.contextmanager
def _environment() -> Iterator[None]:
    """A fixed width, and defaults read from the environment as on a machine that sets none."""
    saved = {key: os.environ.get(key) for key in ("COLUMNS", "ROCKETMQ_VERSION", "ROCKETMQ_NAMESRV")}
    os.environ["COLUMNS"] = _WIDTH
    os.environ.pop("ROCKETMQ_VERSION", None)
    os.environ.pop("ROCKETMQ_NAMESRV", None)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    return f"`{text}`" if "`" not in text else f"`` {text} ``"


def _argument_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._VersionAction | argparse._SubParsersAction):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            name = ", ".join(action.option_strings)
        else:
            name = action.metavar if isinstance(action.metavar, str) else action.dest
        if action.nargs == 0 or (not action.option_strings and action.choices is None):
            value = ""  # a flag, or a positional (its name is its value)
        elif action.choices is not None and not isinstance(action.metavar, str):
            value = " \\| ".join(_code(str(choice)) for choice in action.choices)
        else:
            metavar = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
            value = _code("..." if action.nargs == argparse.REMAINDER else metavar)
        default = action.default
        if action.nargs == 0 or default in (None, argparse.SUPPRESS, [], False):
            shown = ""
        else:
            shown = _code(str(default))
        required = " (required)" if action.required and action.option_strings else ""
        help_text = (action.help or "") % {"default": default, "prog": parser.prog}
        rows.append(f"| {_code(name)} | {value} | {shown} | {_cell(help_text)}{required} |")
    return rows


def _commands(parser: argparse.ArgumentParser) -> Iterator[tuple[argparse.ArgumentParser, str]]:
    """(parser, help line) of each subcommand, depth first, in definition order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield sub, helps.get(name, "")
                yield from _commands(sub)


def _section(parser: argparse.ArgumentParser, help_line: str, level: int) -> list[str]:
    lines = [f"{'#' * level} `{parser.prog}`", ""]
    if help_line:
        lines += [help_line[0].upper() + help_line[1:] + ".", ""]
    lines += ["```text", parser.format_usage().strip(), "```", ""]
    rows = _argument_rows(parser)
    if rows:
        lines += ["| argument | value | default | |", "|---|---|---|---|", *rows, ""]
    return lines


def render(name: str) -> str:
    """The Markdown of parser ``name``: the program, then every (sub)command."""
    with _environment():
        parser = PARSERS[name]()
        lines = []
        if parser.description:
            lines += [parser.description, ""]
        lines += _section(parser, "", 3)[2:]  # the program's own usage and options, under the page's heading
        for sub, help_line in _commands(parser):
            if any(isinstance(a, argparse._SubParsersAction) for a in sub._actions) and not _argument_rows(
                sub
            ):
                continue  # a group of subcommands only (``topic``, ``group``): its commands follow
            lines += _section(sub, help_line, 3)
    return "\n".join(lines)


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """Replace each marker with the reference of the parser it names."""

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in PARSERS:
            raise PluginError(
                f"{page.file.src_path}: no CLI parser named {name!r} (have {', '.join(PARSERS)})"
            )
        return render(name)

    return _MARKER.sub(replace, markdown)
