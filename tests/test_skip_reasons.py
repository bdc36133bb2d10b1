"""The suite's conftest keeps the reason of a skip inside a trio test (pytest-trio drops it)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TESTS = """
import pytest
import trio


async def test_skipped_in_trio():
    await trio.sleep(0)
    pytest.skip("no such broker release here")


@pytest.fixture
async def resource():
    yield 1


async def test_skipped_with_an_async_fixture(resource):
    pytest.skip("needs another cluster shape")


async def test_xfailed_in_trio():
    pytest.xfail("known to fail on this release")
"""


def test_skips_and_xfails_in_trio_tests_report_their_own_line_and_reason(tmp_path: Path) -> None:
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\ntrio_mode = true\n")
    (tmp_path / "test_outcomes.py").write_text(TESTS)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-ra", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "test_outcomes.py:8: no such broker release here" in run.stdout
    assert "test_outcomes.py:17: needs another cluster shape" in run.stdout
    assert "known to fail on this release" in run.stdout
    assert "_pytest" not in run.stdout
