"""The import graph of ``rocketmq_py`` has no cycle, and parts never import their owner.

Every ``import`` counts: at module level, inside a function (a local import hides an upward arrow
from the import-time order, not from the design) and under ``TYPE_CHECKING`` (a type-only arrow
still ties the two modules' shapes together). The graph is read from the sources with ``ast``,
nothing is imported. A cycle is reported as the modules of one strongly connected component.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
PACKAGE: Final = "rocketmq_py"


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES: Final = _modules()


def _target(name: str) -> str | None:
    """The module of ours ``name`` (a module, or a name in one) is read from, if any."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imported(module: str, path: Path) -> Iterator[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            # ``from pkg import mod`` imports the module; ``from mod import name`` the module.
            names = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names
            ]
        else:
            continue
        for name in names:
            target = _target(name)
            if target is not None and target != module:
                yield target


GRAPH: Final = {module: set(_imported(module, path)) for module, path in MODULES.items()}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iteratively: the components of more than one module (the cycles)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
    return cycles


def test_the_finder_sees_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert strongly_connected(graph) == [["a", "b", "c"]]


def test_local_and_type_checking_imports_are_edges(tmp_path: Path) -> None:
    """The arrows the cycle test must see: a function's own import and a ``TYPE_CHECKING`` one."""
    assert "rocketmq_py.producer._producer" in GRAPH["rocketmq_py"]  # the package's lazy exports
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rocketmq_py.errors import X\n"
    source += "def f():\n    from rocketmq_py.protocol import _frame\n"
    module = tmp_path / "probe.py"
    module.write_text(source)
    assert set(_imported("rocketmq_py.probe", module)) == {
        "rocketmq_py.errors",
        "rocketmq_py.protocol._frame",
    }


def test_no_import_cycle_in_the_package() -> None:
    """No cycle anywhere: consumer parts, the trace dispatcher and the producer, the fake broker."""
    assert strongly_connected(GRAPH) == []


def test_nothing_but_the_package_imports_the_push_consumer() -> None:
    """Consume services, pull loops and the assignment get a runtime object and settings, never the
    public ``PushConsumer``: only the packages that export it and the layers above import it."""
    owner = "rocketmq_py.consumer._push"
    above = (
        "rocketmq_py.aio",
        "rocketmq_py.sync",
        "rocketmq_py.cli",
        "rocketmq_py.testing",
        "rocketmq_py.otel",
    )
    importers = {
        module
        for module, targets in GRAPH.items()
        if owner in targets
        and module not in {"rocketmq_py", "rocketmq_py.consumer"}
        and not module.startswith(above)
    }
    assert importers == set()


def test_the_trace_dispatcher_does_not_import_the_producer() -> None:
    """Message traces are sent by a producer the dispatcher gets from a sender factory."""
    tracing = {
        module: targets for module, targets in GRAPH.items() if module.startswith("rocketmq_py._tracing")
    }
    assert tracing
    assert {
        module: sorted(t for t in targets if t.startswith("rocketmq_py.producer"))
        for module, targets in tracing.items()
    } == {module: [] for module in tracing}


def test_only_the_command_line_imports_the_command_line() -> None:
    """The CLI is a shell over the public Admin and :mod:`rocketmq_py.lowlevel`: no module below it
    (the Admin once wrapped the CLI's own admin calls) imports ``rocketmq_py.cli``."""
    importers = {
        module: sorted(t for t in targets if t.startswith("rocketmq_py.cli"))
        for module, targets in GRAPH.items()
        if not module.startswith("rocketmq_py.cli")
    }
    assert {module: found for module, found in importers.items() if found} == {}
