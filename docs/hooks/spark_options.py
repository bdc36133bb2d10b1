"""MkDocs hook: the Spark guide's option tables must name exactly the options the code reads.

The options are read by ``parse_read_options`` (``spark_connector/_options.py``) and
``parse_sink_options`` (``spark_connector/_sink_options.py``), each through small helpers
(``get_text``, ``get_int``, ``get_bool``, ``get_duration_ms`` of ``spark_connector/_option_values.py``
with the option's documented name, and functions such as ``parse_namesrv`` or ``parse_credentials``
that call them), and in ``spark_connector/_client_options.py`` (``_text``, ``_flag``: TLS,
``securityToken``).
No single table declares them, so the guide's tables are written by hand, and this hook
reads the modules' source (``ast``: no pyspark needed) to find every option name each parser
reaches, and fails the build when a table between ``<!-- spark-options: reader -->`` (or
``writer``) and ``<!-- /spark-options -->`` lists one more or one less.

The ``client.`` options are declared in ``_client_options.py``, one ``_Offered(name, keyword,
parser, reader=..., writer=...)`` each, and those not offered one ``_Refused(name, reader=reason,
writer=reason)`` each. A table between ``<!-- spark-client-options -->`` and
``<!-- /spark-client-options -->`` must list each offered option once, as
``| `name` | yes or blank (reader) | yes or blank (writer) | `keyword` | ...``; one between
``<!-- spark-client-refused -->`` and ``<!-- /spark-client-refused -->`` each refused one once, as
``| `name`, `name` | reason or blank (reader) | reason or blank (writer) |``.

Spark's Kafka source and sink options are declared in ``_kafka.py``, one ``KafkaOption(name, side,
ours)`` each. A table between ``<!-- spark-kafka: reader -->`` (or ``writer``) and
``<!-- /spark-kafka -->`` must list each of that side once, as ``| `name` | `ours` | what differs |``
(the second cell without a backticked name where there is none).

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
CLIENT_SOURCE = SOURCE.with_name("_client_options.py")
#: Every module whose functions the parsers call to read options.
OPTION_SOURCES = (
    SOURCE,
    SOURCE.with_name("_sink_options.py"),
    SOURCE.with_name("_option_values.py"),
    SOURCE.with_name("_offset_spec.py"),
    CLIENT_SOURCE,
)
SCHEMA_SOURCE = SOURCE.with_name("_schema.py")
KAFKA_SOURCE = SOURCE.with_name("_kafka.py")
#: The parser function behind each table.
PARSERS = {"reader": "parse_read_options", "writer": "parse_sink_options"}
#: The helpers whose second argument is an option's name.
_READERS = frozenset({"get_text", "get_int", "get_bool", "get_duration_ms", "_text", "_flag"})
_TABLE = re.compile(r"<!-- spark-options: (?P<name>\w+) -->\n(?P<body>.*?)<!-- /spark-options -->", re.DOTALL)
_ROW_NAME = re.compile(r"^\|\s*`(?P<option>[A-Za-z][A-Za-z.]*)`", re.MULTILINE)
_COLUMNS = re.compile(r"<!-- spark-columns -->\n(?P<body>.*?)<!-- /spark-columns -->", re.DOTALL)
_COLUMN_ROW = re.compile(r"^\|\s*`(?P<name>\w+)`\s*\|\s*`(?P<type>[^`]+)`", re.MULTILINE)
_CLIENT_TABLE = re.compile(
    r"<!-- spark-client-options -->\n(?P<body>.*?)<!-- /spark-client-options -->", re.DOTALL
)
_REFUSED_TABLE = re.compile(
    r"<!-- spark-client-refused -->\n(?P<body>.*?)<!-- /spark-client-refused -->", re.DOTALL
)
_BACKTICKED = re.compile(r"`([^`]+)`")
_KAFKA_TABLE = re.compile(
    r"<!-- spark-kafka: (?P<side>\w+) -->\n(?P<body>.*?)<!-- /spark-kafka -->", re.DOTALL
)


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def options_read_by(function: str, sources: tuple[Path, ...] = OPTION_SOURCES) -> set[str]:
    """Every option name ``function`` reads, directly or through the functions of ``sources``."""
    functions: dict[str, ast.FunctionDef] = {}
    for source in sources:
        functions.update(_functions(ast.parse(source.read_text(), str(source))))
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


def _declarations(kind: str, source: Path) -> list[tuple[list[str], ast.Call]]:
    """``(its leading string arguments, the call)`` of every ``kind(...)`` call in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source.read_text(), str(source))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == kind:
            strings = []
            for arg in node.args:
                if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                    break
                strings.append(arg.value)
            if strings:
                found.append((strings, node))
    return found


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _is_true(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _given(node: ast.expr | None) -> bool:
    return node is not None and not (isinstance(node, ast.Constant) and node.value is None)


def client_options(source: Path = CLIENT_SOURCE) -> dict[str, tuple[str, bool, bool]]:
    """``{name: (keyword, reader, writer)}`` of every ``_Offered`` ``client.`` option."""
    found = {}
    for strings, call in _declarations("_Offered", source):
        if len(strings) < 2:
            raise PluginError(f"{source}: _Offered({strings[0]!r}, ...) names no client keyword")
        found[strings[0]] = (
            strings[1],
            _is_true(_keyword(call, "reader")),
            _is_true(_keyword(call, "writer")),
        )
    return found


def refused_options(source: Path = CLIENT_SOURCE) -> dict[str, tuple[bool, bool]]:
    """``{name: (refused by the reader, refused by the writer)}`` of every ``_Refused`` one."""
    return {
        strings[0]: (_given(_keyword(call, "reader")), _given(_keyword(call, "writer")))
        for strings, call in _declarations("_Refused", source)
    }


def kafka_options(source: Path = KAFKA_SOURCE) -> dict[str, dict[str, str]]:
    """``{side: {Kafka's name: ours or ""}}`` of every ``KafkaOption`` declared in ``source``."""
    found: dict[str, dict[str, str]] = {}
    for strings, _call in _declarations("KafkaOption", source):
        name, side, *ours = strings
        found.setdefault(side, {})[name] = ours[0] if ours else ""
    return found


def _check_kafka_tables(markdown: str, where: str) -> None:
    declared = kafka_options()
    for table in _KAFKA_TABLE.finditer(markdown):
        side = table.group("side")
        listed: dict[str, str] = {}
        for row in _table_rows(table.group("body")):
            names = _BACKTICKED.findall(row[0])
            if len(names) != 1 or names[0] in listed or len(row) < 3:
                raise PluginError(f"{where}: Kafka options row {row!r}: one `name`, once, and what differs")
            ours = _BACKTICKED.findall(row[1])
            listed[names[0]] = ours[0] if ours else ""
        code = declared.get(side, {})
        if listed != code:
            raise PluginError(
                f"{where}: the Kafka {side} options table differs from the KafkaOption declarations in "
                f"spark_connector/_kafka.py: {_differences(listed, code)}"
            )


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def _table_rows(body: str) -> list[list[str]]:
    """The cells of each row of a Markdown table, header and rule left out."""
    rows = [_cells(line) for line in body.splitlines() if line.startswith("|")]
    return [row for row in rows[2:] if row]


def _check_client_tables(markdown: str, where: str) -> None:
    for table in _CLIENT_TABLE.finditer(markdown):
        listed: dict[str, tuple[str, bool, bool]] = {}
        for row in _table_rows(table.group("body")):
            names, keywords = _BACKTICKED.findall(row[0]), _BACKTICKED.findall(row[3]) if len(row) > 3 else []
            if len(names) != 1 or len(keywords) != 1 or names[0] in listed:
                raise PluginError(
                    f"{where}: client options row {row!r}: one `name`, one `keyword`, once each"
                )
            listed[names[0]] = (keywords[0], row[1] == "yes", row[2] == "yes")
        if listed != client_options():
            raise PluginError(
                f"{where}: the client options table differs from the _Offered declarations in "
                f"spark_connector/_client_options.py: {_differences(listed, client_options())}"
            )
    for table in _REFUSED_TABLE.finditer(markdown):
        refused: dict[str, tuple[bool, bool]] = {}
        for row in _table_rows(table.group("body")):
            for name in _BACKTICKED.findall(row[0]):
                if name in refused or len(row) < 3:
                    raise PluginError(
                        f"{where}: refused client options row {row!r}: a name twice, or no reasons"
                    )
                refused[name] = (bool(row[1]), bool(row[2]))
        if refused != refused_options():
            raise PluginError(
                f"{where}: the refused client options table differs from the _Refused declarations in "
                f"spark_connector/_client_options.py: {_differences(refused, refused_options())}"
            )


def _differences(listed: dict[str, Any], code: dict[str, Any]) -> str:
    missing = sorted(set(code) - set(listed))
    extra = sorted(set(listed) - set(code))
    changed = sorted(name for name in set(code) & set(listed) if code[name] != listed[name])
    return f"missing: {missing or 'none'}; not in the code: {extra or 'none'}; differing: {changed or 'none'}"


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
    _check_client_tables(markdown, where)
    _check_kafka_tables(markdown, where)
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
