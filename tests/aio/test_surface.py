"""The asyncio API mirrors the trio one: same class names, method names, parameters and kinds.

A method is ``async`` in :mod:`rocketmq_py.aio` exactly where it is in :mod:`rocketmq_py`; the
only names left out are those in ``TRIO_ONLY`` (trio internals a caller on asyncio cannot await).
"""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import rocketmq_py
import rocketmq_py.aio
import rocketmq_py.sync

SCRIPTS = Path(__file__).resolve().parent.parent.parent / "scripts"


def _description() -> ModuleType:
    """``scripts/facade_description.py``, which declares the names the facades leave out."""
    sys.path.insert(0, str(SCRIPTS))
    try:
        return importlib.import_module("facade_description")
    finally:
        sys.path.remove(str(SCRIPTS))


PAIRS: list[tuple[type[Any], type[Any]]] = [
    (rocketmq_py.Producer, rocketmq_py.aio.Producer),
    (rocketmq_py.TransactionProducer, rocketmq_py.aio.TransactionProducer),
    (rocketmq_py.PushConsumer, rocketmq_py.aio.PushConsumer),
    (rocketmq_py.LitePullConsumer, rocketmq_py.aio.LitePullConsumer),
    (rocketmq_py.Admin, rocketmq_py.aio.Admin),
]
#: Public names of the trio classes with no asyncio counterpart, and why.
TRIO_ONLY = {
    "instance": "the ClientInstance: its async methods are trio coroutines",
    "offsets": "the consumer's offset store: its async methods are trio coroutines",
}
#: asyncio-only lifecycle: ``open()`` is what ``async with`` calls.
AIO_LIFECYCLE = {"open"}
#: Names of :mod:`rocketmq_py` that the facades do not export, and why: the generator's own list.
NOT_IN_FACADES = _description().NOT_IN_FACADES
#: The facade's own classes; every other name of rocketmq_py is the same object in the facades.
CLIENTS = {aio.__name__ for _, aio in PAIRS}
REEXPORTED = sorted(set(rocketmq_py.__all__) - set(NOT_IN_FACADES) - CLIENTS)

pairs = pytest.mark.parametrize(("trio_cls", "aio_cls"), PAIRS, ids=[aio.__name__ for _, aio in PAIRS])


def _public(cls: type[Any]) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def _describe(fn: Any) -> tuple[list[tuple[str, Any, Any, Any]], Any]:
    sig = inspect.signature(fn)
    params = [(p.name, p.kind, p.default, p.annotation) for p in sig.parameters.values()]
    return params, sig.return_annotation


@pairs
def test_same_class_name(trio_cls: type[Any], aio_cls: type[Any]) -> None:
    assert aio_cls.__name__ == trio_cls.__name__
    assert getattr(rocketmq_py.aio, aio_cls.__name__) is aio_cls
    assert aio_cls.__name__ in rocketmq_py.aio.__all__


@pairs
def test_same_public_names(trio_cls: type[Any], aio_cls: type[Any]) -> None:
    assert _public(aio_cls) == (_public(trio_cls) - set(TRIO_ONLY)) | AIO_LIFECYCLE


@pairs
def test_same_parameters_and_kinds(trio_cls: type[Any], aio_cls: type[Any]) -> None:
    assert _describe(aio_cls.__init__) == _describe(trio_cls.__init__)
    for name in [*sorted(_public(trio_cls) - set(TRIO_ONLY)), "__aenter__", "__aexit__"]:
        trio_attr = inspect.getattr_static(trio_cls, name)
        aio_attr = inspect.getattr_static(aio_cls, name)
        if isinstance(trio_attr, property):
            assert isinstance(aio_attr, property), name
            continue
        assert inspect.iscoroutinefunction(aio_attr) == inspect.iscoroutinefunction(trio_attr), name
        if name not in ("__aenter__", "__aexit__"):
            assert _describe(aio_attr) == _describe(trio_attr), name


@pairs
def test_async_iteration_where_the_trio_class_has_it(trio_cls: type[Any], aio_cls: type[Any]) -> None:
    assert hasattr(aio_cls, "__aiter__") == hasattr(trio_cls, "__aiter__")
    assert hasattr(aio_cls, "__anext__") == hasattr(trio_cls, "__anext__")


@pairs
def test_every_public_name_has_its_own_docstring(trio_cls: type[Any], aio_cls: type[Any]) -> None:
    assert aio_cls.__doc__
    missing = [name for name in sorted(_public(aio_cls)) if not inspect.getdoc(getattr(aio_cls, name))]
    assert missing == []


@pytest.mark.parametrize("name", REEXPORTED)
def test_reexports(name: str) -> None:
    assert getattr(rocketmq_py.aio, name) is getattr(rocketmq_py, name)
    assert name in rocketmq_py.aio.__all__


@pytest.mark.parametrize("module", [rocketmq_py.aio, rocketmq_py.sync], ids=["aio", "sync"])
def test_the_facades_export_the_names_of_the_package(module: Any) -> None:
    """A name added to ``rocketmq_py.__all__`` fails here until the facades export it (or
    ``NOT_IN_FACADES`` says why they do not)."""
    assert set(NOT_IN_FACADES) <= set(rocketmq_py.__all__)
    assert sorted(module.__all__) == sorted(set(rocketmq_py.__all__) - set(NOT_IN_FACADES))
    assert not [name for name in NOT_IN_FACADES if hasattr(module, name)]


def test_every_aio_class_is_compared() -> None:
    classes = {n for n in rocketmq_py.aio.__all__ if isinstance(getattr(rocketmq_py.aio, n), type)}
    assert classes - set(REEXPORTED) == CLIENTS


def test_the_three_apis_have_the_same_classes() -> None:
    def classes(module: Any) -> set[str]:
        return {n for n in module.__all__ if isinstance(getattr(module, n), type)} - set(REEXPORTED)

    assert classes(rocketmq_py.aio) == classes(rocketmq_py.sync)
    assert classes(rocketmq_py.aio) <= set(rocketmq_py.__all__)
