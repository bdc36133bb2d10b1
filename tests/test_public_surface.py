"""Every type a public signature of :mod:`rocketmq_py` mentions can be imported from :mod:`rocketmq_py`.

For each name in ``rocketmq_py.__all__`` that is a class or a function, the walk reads its public
signatures: a function's parameters and return; a class's ``__init__``, public methods, class and
static methods, properties (their return types) and annotated attributes (dataclass fields),
including what it inherits from classes of ours. Each annotation is read twice:

* as written (the source uses ``from __future__ import annotations``, so annotations are strings):
  every name in it is looked up in the defining module, so a type alias (``SelectQueue``) counts by
  its own name;
* through :func:`typing.get_type_hints`, so the classes inside an alias count too (``Chunk`` inside
  ``send_many``'s callback types).

Every class defined in ``rocketmq_py`` (its ``__module__`` starts with ``rocketmq_py``) and every
public alias found so must be one of the objects ``rocketmq_py`` exports; a class whose name starts
with ``_`` never may be. An alias whose own name starts with ``_`` (``Listener``'s ``_Status``) is
looked through: the classes inside it are checked instead. Enums are not walked (their members
are values, not signatures). There is no list of tolerated leaks: the last ones (the clients'
``instance`` and the consumers' ``offsets``) are deprecated properties annotated ``Any`` (issue 25).
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import importlib
import inspect
import sys
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any, Final

import rocketmq_py

#: Dunder methods walked like public ones: their signatures are what users call.
_WALKED_DUNDERS: Final = frozenset({"__init__", "__call__", "__enter__", "__aenter__"})

_ALIAS_TYPES: Final = (
    types.GenericAlias,
    types.UnionType,
    typing._GenericAlias,  # type: ignore[attr-defined]  # Callable[...], Union[...], list[...] aliases
)


def _exported() -> dict[int, str]:
    return {id(getattr(rocketmq_py, name)): name for name in rocketmq_py.__all__}


def _is_ours(obj: object) -> bool:
    return isinstance(obj, type) and obj.__module__.split(".")[0] == "rocketmq_py"


def _namespace(module_name: str) -> dict[str, Any]:
    """The module's globals plus the names it imports only under ``TYPE_CHECKING``."""
    module = sys.modules[module_name]
    ns = dict(vars(module))
    source = inspect.getsource(module)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                name = alias.asname or alias.name
                if name in ns:
                    continue
                try:
                    ns[name] = getattr(importlib.import_module(node.module), alias.name)
                except (ImportError, AttributeError):
                    continue
    return ns


_NAMESPACES: dict[str, dict[str, Any]] = {}


def _ns(module_name: str) -> dict[str, Any]:
    if module_name not in _NAMESPACES:
        _NAMESPACES[module_name] = _namespace(module_name)
    return _NAMESPACES[module_name]


def _named(annotation: object, ns: dict[str, Any]) -> Iterator[object]:
    """The objects the names in a written annotation stand for (aliases as themselves)."""
    if not isinstance(annotation, str):
        yield annotation
        return
    tree = ast.parse(annotation, mode="eval")
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield from _named(node.value, ns)  # a quoted name inside: Callable[..., "Awaitable[X]"]
        if not isinstance(node, ast.Name | ast.Attribute):
            continue
        try:
            yield eval(compile(ast.Expression(node), "<annotation>", "eval"), ns)
        except (NameError, AttributeError):
            continue


def _inner(hint: object, seen: set[int]) -> Iterator[object]:
    """``hint`` and every type inside it (arguments, unions, TypeVar bounds)."""
    if id(hint) in seen:
        return
    seen.add(id(hint))
    yield hint
    if isinstance(hint, typing.TypeVar):
        if hint.__bound__ is not None:
            yield from _inner(hint.__bound__, seen)
        for constraint in hint.__constraints__:
            yield from _inner(constraint, seen)
        return
    for arg in typing.get_args(hint):
        if isinstance(arg, list):  # Callable[[A, B], R]
            for a in arg:
                yield from _inner(a, seen)
        else:
            yield from _inner(arg, seen)


def _hints(holder: dict[str, object], ns: dict[str, Any]) -> dict[str, Any]:
    shim = types.SimpleNamespace(__annotations__=holder)
    try:
        return typing.get_type_hints(shim, globalns=ns, localns=ns)
    except NameError:
        # A quoted name inside an alias is looked up where the annotation is, not where the alias
        # was written (Listener's "Awaitable[...]"): look in every module of ours too.
        merged = {**_every_namespace(), **ns}
        return typing.get_type_hints(shim, globalns=merged, localns=merged)


def _every_namespace() -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for module_name in sorted(sys.modules):
        if module_name.split(".")[0] == "rocketmq_py" and sys.modules[module_name] is not None:
            merged.update(_ns(module_name))
    return merged


def _function_types(where: str, fn: Callable[..., Any]) -> Iterator[tuple[str, object]]:
    fn = inspect.unwrap(fn)
    annotations = dict(getattr(fn, "__annotations__", {}))
    if not annotations:
        return
    ns = _ns(fn.__module__)
    yield from _types_of(where, annotations, ns)


def _types_of(where: str, annotations: dict[str, object], ns: dict[str, Any]) -> Iterator[tuple[str, object]]:
    for name, annotation in annotations.items():
        at = f"{where}: {name}"
        for obj in _named(annotation, ns):
            yield at, obj
        for obj in _inner(_hints({name: annotation}, ns)[name], set()):
            yield at, obj


def _class_types(cls: type) -> Iterator[tuple[str, object]]:
    for klass in reversed(cls.__mro__):
        if not _is_ours(klass) or (issubclass(klass, BaseException) and klass is not cls):
            continue
        ns = _ns(klass.__module__)
        fields = {f.name for f in dataclasses.fields(klass)} if dataclasses.is_dataclass(klass) else set()
        annotations = {
            name: annotation
            for name, annotation in inspect.get_annotations(klass).items()
            if (not name.startswith("_") or name in fields) and not _is_classvar(annotation)
        }
        yield from _types_of(f"{cls.__name__}.<field>", annotations, ns)
        for name, member in klass.__dict__.items():
            if name.startswith("_") and name not in _WALKED_DUNDERS:
                continue
            where = f"{cls.__name__}.{name}"
            if isinstance(member, property) and member.fget is not None:
                yield from _function_types(where, member.fget)
            elif isinstance(member, classmethod | staticmethod):
                yield from _function_types(where, member.__func__)
            elif inspect.isfunction(member):
                yield from _function_types(where, member)


def _is_classvar(annotation: object) -> bool:
    return isinstance(annotation, str) and annotation.replace("typing.", "").startswith(("ClassVar", "Final"))


def _mentioned() -> Iterator[tuple[str, object]]:
    for name in rocketmq_py.__all__:
        value = getattr(rocketmq_py, name)
        if isinstance(value, type):
            if issubclass(value, enum.Enum):
                continue
            yield from _class_types(value)
        elif inspect.isfunction(value):
            yield from _function_types(name, value)


def _is_alias(obj: object) -> bool:
    return isinstance(obj, _ALIAS_TYPES)


def _leaks() -> set[str]:
    exported = _exported()
    alias_names = _alias_names()
    found: set[str] = set()
    for where, obj in _mentioned():
        if _is_ours(obj):
            assert isinstance(obj, type)
            if id(obj) not in exported or obj.__name__.startswith("_"):
                found.add(f"{where}: {obj.__module__}.{obj.__qualname__}")
        elif (
            _is_alias(obj)
            and id(obj) in alias_names
            and id(obj) not in exported
            and not alias_names[id(obj)].rsplit(".", 1)[1].startswith("_")
        ):
            found.add(f"{where}: {alias_names[id(obj)]}")
    return found


def _alias_names() -> dict[int, str]:
    """Every module-level type alias defined in a ``rocketmq_py`` module, by identity."""
    names: dict[int, str] = {}
    for module_name, module in list(sys.modules.items()):
        if module is None or module_name.split(".")[0] != "rocketmq_py":
            continue
        for name, value in vars(module).items():
            if _is_alias(value) and id(value) not in names:
                names[id(value)] = f"{module_name}.{name}"
    return names


def test_public_signatures_use_only_exported_types() -> None:
    unexpected = sorted(_leaks())
    assert not unexpected, "public signatures use types rocketmq_py does not export:\n" + "\n".join(
        unexpected
    )


def test_the_walk_sees_aliases_and_their_insides() -> None:
    """The walk itself: ``send_many``'s callback types name ``Chunk``; ``Producer.send`` names
    ``SelectQueue``; ``PushConsumer`` names ``FlowLimits``."""
    mentioned = {id(obj) for _, obj in _mentioned()}
    from rocketmq_py.consumer._flow import FlowLimits
    from rocketmq_py.producer._batcher import Chunk
    from rocketmq_py.producer._selectors import SelectQueue

    for obj in (Chunk, SelectQueue, FlowLimits):
        assert id(obj) in mentioned, obj


def test_all_is_unique() -> None:
    assert len(rocketmq_py.__all__) == len(set(rocketmq_py.__all__))
    for name in rocketmq_py.__all__:
        assert getattr(rocketmq_py, name) is not None, name
