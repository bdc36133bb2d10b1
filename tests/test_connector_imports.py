"""The Spark connector uses rocketmq-py's public modules only (docs/ARCHITECTURE "Layers").

Read from the source (no pyspark needed): every ``import`` / ``from ... import`` of ``rocketmq_py``
in ``spark_connector`` and ``pyspark_rocketmq`` names a module with no ``_``-prefixed part.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(
    [*ROOT.joinpath("spark_connector").glob("*.py"), *ROOT.joinpath("pyspark_rocketmq").glob("*.py")]
)


def _imported_modules(path: Path) -> list[str]:
    modules: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.append(node.module)
        elif isinstance(node, ast.Import):
            modules.extend(alias.name for alias in node.names)
    return modules


def test_sources_found() -> None:
    assert len(SOURCES) > 10


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_private_rocketmq_py_module(path: Path) -> None:
    private = [
        module
        for module in _imported_modules(path)
        if module.split(".")[0] == "rocketmq_py" and any(part.startswith("_") for part in module.split("."))
    ]
    assert not private, f"{path.name} imports private modules of rocketmq_py: {private}"
