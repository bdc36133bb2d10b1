"""MkDocs hook: the Spark guide's option tables must name exactly the options the code reads.

The options are read in ``spark_connector/_options.py`` by ``parse_read_options`` and
``parse_sink_options``, each through small helpers (``_get``, ``_int``, ``_bool`` with the
option's documented name, and functions such as ``_namesrv`` or ``parse_credentials`` that call
them). No single table declares them, so the guide's tables are written by hand, and this hook
reads the module's source (``ast``: no pyspark needed) to find every option name each parser
reaches, and fails the build when a table between ``<!-- spark-options: reader -->`` (or
``writer``) and ``<!-- /spark-options -->`` lists one more or one less.

The same for the columns: a table between ``<!-- spark-columns -->`` and
``<!-- /spark-columns -->`` must list the columns of ``SCHEMA_DDL`` (``spark_connector/_schema.py``)
in its order, each with its type.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

SOURCE = Path(__file__).resolve().parents[2] / "spark_connector" / "_options.py"
SCHEMA_SOURCE = SOURCE.with_name("_schema.py")
#: The parser function behind each table.
PARSERS = {"reader": "parse_read_options", "writer": "parse_sink_options"}
#: The helpers whose second argument is an option's name.
_READERS = frozenset({"_get", "_int", "_bool"})
_TABLE = re.compile(r"<!-- spark-options: (?P<name>\w+) -->\n(?P<body>.*?)<!-- /spark-options -->", re.DOTALL)
_ROW_NAME = re.compile(r"^\|\s*`(?P<option>[A-Za-z]+)`", re.MULTILINE)
_COLUMNS = re.compile(r"<!-- spark-columns -->\n(?P<body>.*?)<!-- /spark-columns -->", re.DOTALL)
_COLUMN_ROW = re.compile(r"^\|\s*`(?P<name>\w+)`\s*\|\s*`(?P<type>[^`]+)`", re.MULTILINE)


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def options_read_by(function: str, source: Path = SOURCE) -> set[str]:
    """Every option name ``function`` of ``source`` reads, directly or through the module's functions."""
    functions = _functions(ast.parse(source.read_text(), str(source)))
    found: set[str] = set()
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        for node in ast.walk(functions[name]):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            callee = node.func.id
            if callee in _READERS:
                if len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
                    found.add(str(node.args[1].value))
            elif callee in functions:
                visit(callee)

    visit(function)
    return found


def schema_columns(source: Path = SCHEMA_SOURCE) -> list[tuple[str, str]]:
    """``(name, type)`` of each column of ``SCHEMA_DDL``, in order."""
    for node in ast.parse(source.read_text(), str(source)).body:
        if not isinstance(node, ast.AnnAssign | ast.Assign) or not isinstance(node.value, ast.Constant):
            continue
        targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
        if any(isinstance(target, ast.Name) and target.id == "SCHEMA_DDL" for target in targets):
            columns = []
            # The commas between columns, not those inside MAP<STRING,STRING>.
            for part in re.split(r",\s*(?![^<]*>)", str(node.value.value)):
                name, _, kind = part.strip().partition(" ")
                columns.append((name, kind))
            return columns
    raise PluginError(f"{source}: no SCHEMA_DDL")


def check_tables(markdown: str, where: str) -> None:
    """Raise :class:`PluginError` when a marked table's option names differ from the code's."""
    for table in _TABLE.finditer(markdown):
        name = table.group("name")
        if name not in PARSERS:
            raise PluginError(f"{where}: unknown option table {name!r} (have {', '.join(PARSERS)})")
        listed = [m.group("option") for m in _ROW_NAME.finditer(table.group("body"))]
        code = options_read_by(PARSERS[name])
        missing, extra = sorted(code - set(listed)), sorted(set(listed) - code)
        repeated = sorted({option for option in listed if listed.count(option) > 1})
        if missing or extra or repeated:
            raise PluginError(
                f"{where}: the {name} options table is out of date with spark_connector/_options.py "
                f"(missing: {missing or 'none'}; not read by {PARSERS[name]}: {extra or 'none'}; "
                f"listed twice: {repeated or 'none'})"
            )
    for table in _COLUMNS.finditer(markdown):
        listed_columns = [
            (m.group("name"), m.group("type")) for m in _COLUMN_ROW.finditer(table.group("body"))
        ]
        if listed_columns != schema_columns():
            raise PluginError(
                f"{where}: the columns table differs from SCHEMA_DDL in spark_connector/_schema.py: "
                f"{listed_columns} != {schema_columns()}"
            )


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """Check the page's option tables; the page itself is left as it is."""
    check_tables(markdown, page.file.src_path)
    return markdown
