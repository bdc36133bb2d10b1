"""The layers above the client use rocketmq-py's public modules only (docs/ARCHITECTURE "Layers").

Read from the source (no pyspark needed): every ``import`` / ``from ... import`` of ``rocketmq_py``
in ``spark_connector`` and ``pyspark_rocketmq`` names a module, and imports names, with no
``_``-prefixed part (dunders such as ``__version__`` are public), and so does every one in
``rocketmq_py.cli``, except the command line's own private modules
(``rocketmq_py.cli._parser`` and its siblings). What is genuinely lower-level comes from
:mod:`rocketmq_py.lowlevel`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(
    [*ROOT.joinpath("spark_connector").glob("*.py"), *ROOT.joinpath("pyspark_rocketmq").glob("*.py")]
)
CLI_PACKAGE = "rocketmq_py.cli"
CLI_SOURCES = sorted(ROOT.joinpath("rocketmq_py", "cli").glob("*.py"))


def _imported_modules(path: Path) -> list[str]:
    """Every module ``path`` imports, anywhere in it (function bodies too)."""
    return _imports_of(path.read_text(), path.parent.relative_to(ROOT).parts)


def _imports_of(source: str, package: tuple[str, ...]) -> list[str]:
    """Every module ``source`` imports; relative imports resolved from ``package`` (its parts)."""
    modules: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = list(package[: len(package) - node.level + 1]) if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            modules.append(module)
            # ``from rocketmq_py import _client``: a private submodule (or private name) by name
            modules.extend(f"{module}.{alias.name}" for alias in node.names if _private(alias.name))
        elif isinstance(node, ast.Import):
            modules.extend(alias.name for alias in node.names)
    return modules


def _private(name: str) -> bool:
    """``_route`` is private; ``__version__`` is not."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_modules(modules: list[str], *, own_package: str | None = None) -> list[str]:
    """The ``rocketmq_py`` modules among ``modules`` with a ``_``-prefixed part, except those of
    ``own_package`` (a package's private modules may import each other)."""
    return [
        module
        for module in modules
        if module.split(".")[0] == "rocketmq_py"
        and any(_private(part) for part in module.split("."))
        and not (own_package and module.startswith(f"{own_package}."))
    ]


def test_sources_found() -> None:
    assert len(SOURCES) > 10
    assert len(CLI_SOURCES) > 5


def test_the_finder_sees_private_imports() -> None:
    """Top-level and local imports, absolute and relative; the own package's are allowed."""
    source = (
        "import rocketmq_py._transport\n"
        "from rocketmq_py import Producer\n"
        "from rocketmq_py.cli._parser import PROG\n"
        "from ._format import route_lines\n"
        "from .. import lowlevel\n"
        "from .._client import _route\n"
        "from rocketmq_py import _deprecation, __version__\n"
        "def f():\n    from rocketmq_py.consumer._push import PushConsumer\n"
    )
    modules = _imports_of(source, ("rocketmq_py", "cli"))
    assert _private_modules(modules) == [
        "rocketmq_py._transport",
        "rocketmq_py.cli._parser",
        "rocketmq_py.cli._format",
        "rocketmq_py._client",
        "rocketmq_py._client._route",
        "rocketmq_py._deprecation",
        "rocketmq_py.consumer._push",
    ]
    assert "rocketmq_py" in modules
    assert _private_modules(modules, own_package=CLI_PACKAGE) == [
        "rocketmq_py._transport",
        "rocketmq_py._client",
        "rocketmq_py._client._route",
        "rocketmq_py._deprecation",
        "rocketmq_py.consumer._push",
    ]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_private_rocketmq_py_module(path: Path) -> None:
    private = _private_modules(_imported_modules(path))
    assert not private, f"{path.name} imports private modules of rocketmq_py: {private}"


@pytest.mark.parametrize("path", CLI_SOURCES, ids=lambda p: f"cli/{p.name}")
def test_cli_imports_no_private_module_outside_itself(path: Path) -> None:
    private = _private_modules(_imported_modules(path), own_package=CLI_PACKAGE)
    assert not private, f"rocketmq_py/cli/{path.name} imports private modules of rocketmq_py: {private}"
