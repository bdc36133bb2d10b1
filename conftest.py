"""What tests/ and integration/ share: asyncio tests, and the tests that need the ``spark`` extra.

Asyncio tests: the suite runs in pytest-trio's trio mode (every ``async def`` test runs under trio),
and a test marked ``@pytest.mark.anyio`` runs under anyio's pytest plugin on an asyncio event loop
instead (:func:`anyio_backend`), as an asyncio application's own tests would run; the trio mark
trio mode gave it is taken off (:func:`pytest_collection_modifyitems`).

Skip reasons: pytest-trio turns a ``pytest.skip("why")`` inside a trio test into a bare skip (it
raises ``pytest.skip()`` from the exception group trio wrapped it in), so the report would say
"Skipped" at a line of pytest's own. :func:`pytest_runtest_call` raises the test's own skip (or
xfail) instead, so that ``-ra`` names the test's line and its reason.

Without the extra (pyspark, pyarrow, pandas and their numpy), a test module that imports it at its
top, directly or through ``spark_connector`` / ``pyspark_rocketmq`` (which import pyspark), cannot
even be imported. Such a module is not imported then: it is skipped with the reason, except in CI
(``CI`` set, as ``.ci/run`` exports it), where it is a collection error. CI installs every extra,
and a silent skip there would hide that the Spark tests never ran (integration/conftest.py treats
a cluster that cannot start the same way). A test that needs Spark only at run time (a subprocess,
an import inside the test, the ``spark`` session) asks for the :func:`spark_extra` fixture, which
skips or fails the same way.

pytest-xdist work units (``make test`` runs ``-n 3 --dist loadgroup``): :func:`work_group` puts each
module's tests in one unit, so that a module's own cluster starts once, and every integration module
using the ``spark`` session in one unit (:data:`SPARK_GROUP`), so that the run builds one SparkSession.
pytest-xdist's own loadgroup scheduling reads the ``xdist_group`` marks by renaming
``item._nodeid``, which pytest 9 no longer reads (the node id is ``item._id``): its groups were silently
one test each, and the tests of a module spread over the workers, each starting the module's
cluster. :func:`pytest_xdist_make_scheduler` gives it our grouping instead, read from the node ids
(the controller collects nothing): the test module's path, and for the Spark session modules the
group; which modules use the session is read from their source (a function taking ``spark``), and
each worker checks that against the fixtures its items really use (:func:`check_spark_modules`).

A failed test's leftovers (an unclosed socket, say) are collected in its own teardown
(:func:`pytest_runtest_teardown`): pytest keeps the failure in ``sys.last_value`` until the next test,
and the frames it holds would otherwise be freed by a later, random garbage collection, whose
ResourceWarning (an error here) would fail an innocent test far away.

Only the modules' own top-level ``import`` statements are read (with ``ast``, and only when the
extra is missing); a module reaching pyspark through a helper module of the tests must import it
lazily or use the fixture.
"""

from __future__ import annotations

import ast
import gc
import importlib.util
import os
import sys
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any, Final

import pytest

#: What ``pip install -e '.[spark]'`` brings that test modules import (numpy comes with pyarrow).
_SPARK_EXTRA: Final = ("pyspark", "pyarrow", "pandas", "numpy")
#: Our packages that import the extra.
_OURS_ON_SPARK: Final = frozenset({"spark_connector", "pyspark_rocketmq"})


def _missing_spark_extra() -> list[str]:
    return [name for name in _SPARK_EXTRA if importlib.util.find_spec(name) is None]


_MISSING: Final = _missing_spark_extra()


def require_spark_extra(who: str = "this test", *, module_level: bool = False) -> None:
    """Skip ``who`` (in CI: fail it) when the ``spark`` extra is not installed; nothing when it is."""
    if not _MISSING:
        return
    what = f"{who} needs the spark extra, which is not installed (no {', '.join(_MISSING)})"
    if os.environ.get("CI"):
        pytest.fail(
            f"{what}, and CI is set: the Spark tests must run there, not be skipped. "
            "Install it with `pip install -e '.[spark]'` (`make install` does).",
            pytrace=False,
        )
    pytest.skip(f"{what}: `pip install -e '.[spark]'` to run it", allow_module_level=module_level)


def _top_level_imports(path: Path) -> Iterable[str]:
    for node in ast.parse(path.read_bytes(), str(path)).body:
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def _imports_spark(path: Path) -> bool:
    roots = {name.partition(".")[0] for name in _top_level_imports(path)}
    return bool(roots & _OURS_ON_SPARK or roots.intersection(_MISSING))


class _NeedsSparkModule(pytest.Module):
    """A test module that imports the missing extra: skipped (failed in CI) instead of imported."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        require_spark_extra(self.nodeid, module_level=True)
        return super().collect()


@pytest.hookimpl(trylast=True)  # after pytest-trio's trio mode has marked every async test
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("anyio") is not None:
            item.own_markers[:] = [mark for mark in item.own_markers if mark.name != "trio"]
    if os.environ.get("PYTEST_XDIST_WORKER"):
        check_spark_modules(items)


def _lone_outcome(error: BaseException | None, kind: type[BaseException]) -> BaseException | None:
    """The one leaf of the exception group ``error`` if it is a ``kind``, else ``None``."""
    leaves: list[BaseException] = []
    queue = [error]
    while queue:
        found = queue.pop()
        if isinstance(found, BaseExceptionGroup):
            queue.extend(found.exceptions)
        elif found is not None:
            leaves.append(found)
    return leaves[0] if len(leaves) == 1 and isinstance(leaves[0], kind) else None


#: The pytest-xdist work unit of the integration modules that use the run's one SparkSession.
SPARK_GROUP: Final = "spark-session"
_ROOT: Final = Path(__file__).parent


@cache
def uses_spark_session(path: str) -> bool:
    """Whether the integration module at ``path`` (relative to the repository) has a function taking
    the ``spark`` session fixture (a test, or a fixture of its own)."""
    file = _ROOT / path
    if not path.startswith("integration/") or not file.is_file():
        return False
    return any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and any(arg.arg == "spark" for arg in node.args.args + node.args.kwonlyargs)
        for node in ast.walk(ast.parse(file.read_bytes(), str(file)))
    )


def work_group(nodeid: str) -> str:
    """The pytest-xdist work unit of a test: its module's path, or :data:`SPARK_GROUP`."""
    path = nodeid.split("::", 1)[0]
    return SPARK_GROUP if uses_spark_session(path) else path


def check_spark_modules(items: list[pytest.Item]) -> None:
    """Fail the run when a module uses the ``spark`` session without :func:`work_group` seeing it
    (through a fixture defined elsewhere only): its tests would build a second SparkSession."""
    hidden = sorted(
        {
            item.nodeid.split("::", 1)[0]
            for item in items
            if "spark" in getattr(item, "fixturenames", ()) and work_group(item.nodeid) != SPARK_GROUP
        }
    )
    if hidden:
        raise pytest.UsageError(
            f"{', '.join(hidden)} use the spark session only through other fixtures: name `spark` in a "
            "function of the module, so that pytest-xdist runs it with the other Spark modules"
        )


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: pytest-xdist's load-scope scheduling over :func:`work_group` units."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class _WorkGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_group(nodeid)

    return _WorkGroups(config, log)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    try:
        return (yield)
    except (pytest.skip.Exception, pytest.xfail.Exception) as bare:
        own = _lone_outcome(bare.__context__, type(bare)) if not bare.msg else None
        if own is None:
            raise
        raise own from None


@pytest.fixture
def anyio_backend() -> str:
    """anyio's plugin runs the tests marked ``anyio`` on asyncio (the trio API has trio mode)."""
    return "asyncio"


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    if _MISSING and _imports_spark(module_path):
        return _NeedsSparkModule.from_parent(parent, path=module_path)
    return None


@pytest.fixture(scope="session")
def spark_extra() -> None:
    """For a test that needs the ``spark`` extra at run time: skipped without it, failed in CI."""
    require_spark_extra()


@pytest.hookimpl(tryfirst=True)  # before pytest's own (trylast) report of unraisable exceptions
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Free what a failed test's exception holds, so that its leaks are reported against it."""
    if getattr(sys, "last_value", None) is None:
        return
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            delattr(sys, name)
    gc.collect()
