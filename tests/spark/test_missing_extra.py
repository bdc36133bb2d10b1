"""Without the ``spark`` extra, importing the connector names the extra to install.

Each case runs in a fresh interpreter with one module of the extra blocked (``sys.modules[name] =
None`` makes its import fail as if it were not installed), so it needs no uninstalled environment.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

HINT = "pip install 'rocketmq-py[spark]'"


def _import_without(blocked: str, module: str) -> subprocess.CompletedProcess[str]:
    code = textwrap.dedent(
        f"""
        import sys
        sys.modules[{blocked!r}] = None
        try:
            import {module}
        except ImportError as exc:
            print(type(exc).__name__, exc.name, sep="|")
            print(exc)
            raise SystemExit(3)
        """
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize("blocked", ["pyarrow", "pyspark", "numpy"])
@pytest.mark.parametrize("module", ["spark_connector", "pyspark_rocketmq"])
def test_import_names_the_extra(blocked: str, module: str) -> None:
    done = _import_without(blocked, module)
    assert done.returncode == 3, done.stderr
    kind, name = done.stdout.splitlines()[0].split("|")
    assert kind == "ImportError"
    assert name == blocked
    assert HINT in done.stdout
    assert blocked in done.stdout.splitlines()[1]


def test_the_client_imports_without_the_extra() -> None:
    done = _import_without("pyarrow", "rocketmq_py, rocketmq_py.lowlevel, rocketmq_py.protocol")
    assert done.returncode == 0, done.stdout + done.stderr
