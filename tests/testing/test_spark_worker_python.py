"""``worker_python()``: Spark's Python workers import the installed, compiled pyspark, not its zip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark")

from rocketmq_py.testing import worker_python  # noqa: E402
from rocketmq_py.testing._spark import spark_home  # noqa: E402


def _run(script: str, pythonpath: str) -> str:
    code = "import os, sys, pyspark; print(os.environ['PYTHONPATH']); print(sys.executable); print(pyspark.__file__)"
    env = {**os.environ, "PYTHONPATH": pythonpath}
    done = subprocess.run(
        [script, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout


@pytest.mark.skipif(os.name != "posix", reason="the script is a POSIX shell script")
def test_the_script_drops_only_sparks_zips_and_runs_this_interpreter(tmp_path: Path) -> None:
    lib = spark_home() / "python" / "lib"
    py4j = next(lib.glob("py4j-*-src.zip"))
    kept = [str(tmp_path / "a dir with spaces"), str(tmp_path / "other.zip"), "/opt/pyspark.zip"]
    script = worker_python(directory=tmp_path)
    out = _run(script, os.pathsep.join([str(lib / "pyspark.zip"), str(py4j), *kept])).splitlines()
    assert out[0] == os.pathsep.join(kept)  # an unrelated pyspark.zip elsewhere is not Spark's
    assert out[1] == sys.executable
    assert out[2] == pyspark.__file__  # the installed package, whose files are compiled
    assert not out[2].startswith(str(lib))


def test_the_script_is_written_once_per_interpreter(tmp_path: Path) -> None:
    first = worker_python(directory=tmp_path)
    assert worker_python(directory=tmp_path) == first
    assert Path(first).stat().st_mode & 0o111
    assert worker_python("/usr/bin/python with space", directory=tmp_path) == "/usr/bin/python with space"
