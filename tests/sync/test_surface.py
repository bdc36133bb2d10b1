"""The blocking API mirrors the async one: same class names, method names and parameters.

Add a pair to ``PAIRS`` with every new sync class. The only differences allowed are the lifecycle
(``start`` / ``shutdown`` / ``close`` for ``aclose``, ``with`` for ``async with``) and the names in
``ASYNC_ONLY``, which hand out loop-bound internals.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import rocketmq_py
import rocketmq_py.sync

PAIRS: list[tuple[type[Any], type[Any]]] = [
    (rocketmq_py.Producer, rocketmq_py.sync.Producer),
    (rocketmq_py.TransactionProducer, rocketmq_py.sync.TransactionProducer),
    (rocketmq_py.PushConsumer, rocketmq_py.sync.PushConsumer),
    (rocketmq_py.LitePullConsumer, rocketmq_py.sync.LitePullConsumer),
    (rocketmq_py.Admin, rocketmq_py.sync.Admin),
]
#: Public names of the async classes with no blocking counterpart, and why.
ASYNC_ONLY = {
    "instance": "the ClientInstance: async internals bound to the loop thread",
    "offsets": "the consumer's offset store: loop-bound state",
}
#: Async name -> blocking name.
RENAMED = {"aclose": "close"}
#: Blocking-only lifecycle methods (Java's names).
SYNC_LIFECYCLE = {"start", "shutdown", "close"}
#: Names of :mod:`rocketmq_py` that rocketmq_py.sync does not export, and why.
NOT_IN_SYNC = {
    "send_many": "a trio coroutine over a trio Producer",
    "SendCounts": "what send_many returns",
    "__version__": "the package's, not an API name",
}
#: The blocking classes; every other name rocketmq_py.sync exports is rocketmq_py's, re-exported.
CLIENTS = {sync.__name__ for _, sync in PAIRS}
REEXPORTED = sorted(set(rocketmq_py.__all__) - set(NOT_IN_SYNC) - CLIENTS)

pairs = pytest.mark.parametrize(("async_cls", "sync_cls"), PAIRS, ids=[sync.__name__ for _, sync in PAIRS])


def _public(cls: type[Any]) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def _shared(async_cls: type[Any]) -> list[str]:
    return sorted(_public(async_cls) - set(ASYNC_ONLY) - set(RENAMED))


def _describe(fn: Any) -> tuple[list[tuple[str, Any, Any, Any]], Any]:
    # Annotations stay strings (both modules use `from __future__ import annotations`).
    sig = inspect.signature(fn)
    params = [(p.name, p.kind, p.default, p.annotation) for p in sig.parameters.values()]
    return params, sig.return_annotation


@pairs
def test_same_class_name(async_cls: type[Any], sync_cls: type[Any]) -> None:
    assert sync_cls.__name__ == async_cls.__name__
    assert getattr(rocketmq_py.sync, sync_cls.__name__) is sync_cls
    assert sync_cls.__name__ in rocketmq_py.sync.__all__


@pairs
def test_same_public_names(async_cls: type[Any], sync_cls: type[Any]) -> None:
    expected = {RENAMED.get(name, name) for name in _public(async_cls) - set(ASYNC_ONLY)}
    assert _public(sync_cls) == expected | SYNC_LIFECYCLE


@pairs
def test_same_parameters(async_cls: type[Any], sync_cls: type[Any]) -> None:
    assert _describe(sync_cls.__init__) == _describe(async_cls.__init__)
    for name in _shared(async_cls):
        async_attr = inspect.getattr_static(async_cls, name)
        sync_attr = inspect.getattr_static(sync_cls, name)
        if isinstance(async_attr, property):
            assert isinstance(sync_attr, property), name
            continue
        assert callable(sync_attr), name
        assert not inspect.iscoroutinefunction(sync_attr), f"{name} must block, not be async"
        assert _describe(sync_attr) == _describe(async_attr), name


@pairs
def test_lifecycle(async_cls: type[Any], sync_cls: type[Any]) -> None:
    assert hasattr(async_cls, "__aenter__")
    assert hasattr(async_cls, "__aexit__")
    assert hasattr(sync_cls, "__enter__")
    assert hasattr(sync_cls, "__exit__")
    assert not hasattr(sync_cls, "__aenter__")
    for name in SYNC_LIFECYCLE:
        assert inspect.signature(getattr(sync_cls, name)).parameters.keys() == {"self"}


@pytest.mark.parametrize("name", REEXPORTED)
def test_reexports(name: str) -> None:
    assert getattr(rocketmq_py.sync, name) is getattr(rocketmq_py, name)
    assert name in rocketmq_py.sync.__all__


def test_sync_exports_the_names_of_the_package() -> None:
    """A name added to ``rocketmq_py.__all__`` fails here until rocketmq_py.sync exports it (or
    ``NOT_IN_SYNC`` says why it does not)."""
    assert set(NOT_IN_SYNC) <= set(rocketmq_py.__all__)
    assert sorted(rocketmq_py.sync.__all__) == sorted(set(rocketmq_py.__all__) - set(NOT_IN_SYNC))


def test_every_sync_class_is_compared() -> None:
    classes = {n for n in rocketmq_py.sync.__all__ if isinstance(getattr(rocketmq_py.sync, n), type)}
    assert classes - set(REEXPORTED) == CLIENTS
