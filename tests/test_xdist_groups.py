"""pytest-xdist runs a module's tests on one worker, and the Spark session modules together.

``make test`` runs ``pytest -n 3 --dist loadgroup``; the work units are ../conftest.py's
``work_group``. pytest-xdist's own loadgroup grouping renames ``item._nodeid``, which pytest 9 no
longer reads: every test was a unit of its own, and a module's cluster started on each worker that
got one of its tests (the master-slave module's three times, each waiting for the slave's copy).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Pure codec modules (no sockets, processes or shared files): this run goes on beside the suite's own,
#: which runs the same modules at the same time (a launcher module run twice at once fought over its
#: process registry and failed under load). Quick ones with many tests (~400 in 1 s): the header and
#: body modules' hypothesis runs made this test take 61 s of two cores in CI (ci11).
MODULES = ("tests/protocol/test_vectors.py", "tests/protocol/test_json_body.py")


def _root_conftest(config: pytest.Config) -> Any:
    plugin = config.pluginmanager.get_plugin(str(ROOT / "conftest.py"))
    assert plugin is not None
    return plugin


def test_every_module_runs_whole_on_one_worker() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-v",
            "-p",
            "no:cacheprovider",
            *MODULES,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    workers: dict[str, set[str]] = defaultdict(set)
    ran = 0
    for worker, nodeid in re.findall(r"^\[(gw\d+)\] \[\s*\d+%\] PASSED (\S+)", run.stdout, re.MULTILINE):
        workers[nodeid.split("::", 1)[0]].add(worker)
        ran += 1
    assert set(workers) == set(MODULES)
    assert ran >= 30
    assert all(len(w) == 1 for w in workers.values()), dict(workers)


def test_the_spark_session_modules_are_one_unit(pytestconfig: pytest.Config) -> None:
    work_group = _root_conftest(pytestconfig).work_group
    spark = {
        f"integration/{p.name}"
        for p in (ROOT / "integration").glob("test_*.py")
        if work_group(f"integration/{p.name}::t") == "spark-session"
    }
    # The modules with a test or fixture taking ``spark``; not the ones starting Spark processes.
    assert spark == {
        "integration/test_acl.py",
        "integration/test_controller.py",
        "integration/test_spark_read.py",
        "integration/test_spark_stream.py",
        "integration/test_spark_write.py",
        "integration/test_tls.py",
    }
    assert work_group("integration/test_spark_cluster.py::test_x") == "integration/test_spark_cluster.py"
    assert work_group("tests/test_invalid_option.py::test_x[1]") == "tests/test_invalid_option.py"
