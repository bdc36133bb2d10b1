"""Every public definition has a docstring (the API reference in ``docs/`` is built from them).

Public means: each name in the ``__all__`` of a public module that is a class, a function or a
module of ours, and every public method, class or static method and property of such a class,
including what it inherits from classes of ours (a base's method is counted once, where it is
defined); plus the private-module types the public signatures use (:data:`USED_TYPES`). Dunder
methods are left out, and so is what comes from the standard library or third parties (``Enum``,
``NamedTuple``, ``Exception``). An override without a docstring of its own counts as missing: the
reference shows no inherited text.

A constant in ``__all__`` has no docstring of its own; this code documents constants with ``#:``
comment lines right above their assignment, which the API reference reads as docstrings
(``docs/hooks/griffe_rst.py``). The constant tests check those, following ``from ... import`` to
the module that assigns the name.
"""

from __future__ import annotations

import ast
import enum
import importlib
import importlib.util
import inspect
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

#: The modules the API reference documents; spark_connector needs the spark extra.
PUBLIC_MODULES: Final = (
    "rocketmq_py",
    "rocketmq_py.aio",
    "rocketmq_py.sync",
    "rocketmq_py.protocol",
    "rocketmq_py.lowlevel",
    "rocketmq_py.errors",
    "rocketmq_py.testing",
    "rocketmq_py.cli",
)
SPARK_MODULES: Final = ("spark_connector", "pyspark_rocketmq")
#: Classes and functions the public signatures use from private modules and that no public module
#: exports (none: rocketmq_py exports every type its signatures use, tests/test_public_surface.py).
USED_TYPES: Final[tuple[str, ...]] = ()
#: Missing docstrings in files that are being changed elsewhere: each entry must still be missing
#: (the test fails once it has one, so that the list only shrinks).
#: Public definitions still without a docstring (none: keep it that way).
KNOWN_MISSING: Final[frozenset[str]] = frozenset()
OURS: Final = ("rocketmq_py", "spark_connector", "pyspark_rocketmq")


def _ours(obj: Any) -> bool:
    module = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", None)
    return isinstance(module, str) and module.partition(".")[0] in OURS


def _members(cls: type) -> Iterator[tuple[str, Any]]:
    """(qualified name, the function or property) for each public member ``cls`` has from us."""
    seen: set[str] = set()
    for klass in cls.__mro__:
        if not _ours(klass):
            continue
        for name, raw in vars(klass).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            if isinstance(raw, enum.Enum):
                continue
            if isinstance(raw, classmethod | staticmethod):
                raw = raw.__func__
            # A property, or a function or nested class of ours.
            if isinstance(raw, property) or (
                (inspect.isfunction(raw) or isinstance(raw, type)) and _ours(raw)
            ):
                yield f"{klass.__module__}.{klass.__qualname__}.{name}", raw


def _own_doc(obj: Any) -> str | None:
    doc = obj.__doc__
    if isinstance(obj, type) and doc is not None:
        # A dataclass without a docstring gets its signature as __doc__; an enum, "An enumeration."
        for base in obj.__mro__[1:]:
            if base.__doc__ == doc:
                return None
        if doc.startswith(f"{obj.__name__}("):
            return None
    return doc.strip() if isinstance(doc, str) and doc.strip() else None


def _exported(module_names: tuple[str, ...], extra: tuple[str, ...]) -> Iterator[Any]:
    for module_name in module_names:
        module = importlib.import_module(module_name)
        yield module
        for name in module.__all__:
            yield getattr(module, name)
    for spec in extra:
        module_name, _, name = spec.partition(":")
        yield getattr(importlib.import_module(module_name), name)


def public_definitions(module_names: tuple[str, ...], extra: tuple[str, ...] = ()) -> dict[str, bool]:
    """Qualified name -> whether it has a docstring, for every public definition of the modules.

    ``extra`` names more classes and functions (``"module:name"``) to walk as if exported.
    """
    found: dict[str, bool] = {}
    classes: list[type] = []
    for obj in _exported(module_names, extra):
        if not (isinstance(obj, type) or inspect.isfunction(obj) or isinstance(obj, types.ModuleType)):
            continue
        if not _ours(obj):
            continue
        key = obj.__name__ if isinstance(obj, types.ModuleType) else f"{obj.__module__}.{obj.__qualname__}"
        found[key] = _own_doc(obj) is not None
        if isinstance(obj, type):
            classes.append(obj)
    while classes:
        cls = classes.pop()
        for key, member in _members(cls):
            if key in found:
                continue
            found[key] = _own_doc(member) is not None
            if isinstance(member, type):
                classes.append(member)
    return found


def _check(module_names: tuple[str, ...], extra: tuple[str, ...] = ()) -> None:
    found = public_definitions(module_names, extra)
    missing = sorted(key for key, documented in found.items() if not documented and key not in KNOWN_MISSING)
    assert not missing, f"{len(missing)} public definitions without a docstring:\n" + "\n".join(missing)
    documented_now = sorted(key for key in KNOWN_MISSING if found.get(key))
    assert not documented_now, "documented now, remove from KNOWN_MISSING:\n" + "\n".join(documented_now)


def test_every_public_definition_has_a_docstring() -> None:
    _check(PUBLIC_MODULES, USED_TYPES)


@pytest.mark.usefixtures("spark_extra")
def test_every_public_definition_of_the_spark_connector_has_a_docstring() -> None:
    _check(SPARK_MODULES)


def _assigned_names(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.Assign):
        return {target.id for target in node.targets if isinstance(target, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    return set()


def _comment_above(module_name: str, name: str, seen: frozenset[str] = frozenset()) -> bool:
    """Whether ``name`` of ``module_name`` is assigned right under ``#:`` lines (imports followed)."""
    if module_name in seen:
        return False
    spec = importlib.util.find_spec(module_name)
    assert spec is not None, module_name
    assert spec.origin is not None, module_name
    source = Path(spec.origin).read_text()
    lines = source.splitlines()
    tree = ast.parse(source).body
    # Imports under ``if TYPE_CHECKING:`` count too: the lazily imported names of rocketmq_py.
    nodes = [inner for node in tree for inner in (node.body if isinstance(node, ast.If) else [node])]
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    return _comment_above(node.module, alias.name, seen | {module_name})
        if name in _assigned_names(node):
            return node.lineno >= 2 and lines[node.lineno - 2].strip().startswith("#:")
    return False


def _undocumented_constants(module_names: tuple[str, ...]) -> list[str]:
    missing = []
    for module_name in module_names:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, type | types.ModuleType) or inspect.isfunction(obj):
                continue
            if not _comment_above(module_name, name):
                missing.append(f"{module_name}.{name}")
    return missing


def test_every_public_constant_has_a_comment() -> None:
    missing = _undocumented_constants(PUBLIC_MODULES)
    assert not missing, "constants without a #: comment above their assignment:\n" + "\n".join(missing)


@pytest.mark.usefixtures("spark_extra")
def test_every_public_constant_of_the_spark_connector_has_a_comment() -> None:
    missing = _undocumented_constants(SPARK_MODULES)
    assert not missing, "constants without a #: comment above their assignment:\n" + "\n".join(missing)


def test_the_walk_finds_what_it_should() -> None:
    """The walk itself: classes, inherited members once, properties; no constants, no dunders."""
    found = public_definitions(("rocketmq_py",))
    assert "rocketmq_py.producer._producer.Producer" in found
    assert "rocketmq_py.producer._producer.Producer.send" in found
    assert "rocketmq_py.errors.RocketMQError" in found
    assert not any(key.endswith(("__init__", "__version__")) for key in found)
