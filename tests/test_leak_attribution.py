"""A socket a failing test leaves open is reported against that test, not a later one.

pytest keeps a failed test's exception in ``sys.last_value`` until the next test starts; trio's
exception groups and their frames then form reference cycles, freed by whichever garbage collection
pass comes next, and the unclosed socket's ResourceWarning (an error: ``filterwarnings = error``)
failed that later, innocent test. A full run failed that way: ``test_netfault`` (no iptables) left
its client socket open, and ``test_aio_fastapi`` failed 20 minutes later when pydantic's import ran a
collection. The suite's conftest collects a failed test's leftovers in its own teardown.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TESTS = """
import functools
import gc

import trio


async def test_fails_with_a_connection_open():
    async def serve(stream):
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(functools.partial(trio.serve_tcp, serve, 0, host="127.0.0.1"))
        client = await trio.open_tcp_stream("127.0.0.1", listeners[0].socket.getsockname()[1])
        assert client is None, "fails before the test closes its client"


def test_later_and_innocent():
    gc.collect()  # as any import or allocation may, at any moment
"""


def test_a_failed_tests_unclosed_socket_is_reported_in_its_own_teardown(tmp_path: Path) -> None:
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\ntrio_mode = true\nfilterwarnings = error\n")
    (tmp_path / "test_leaks.py").write_text(TESTS)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    summary = run.stdout[run.stdout.rindex("short test summary info") :]
    assert "PASSED test_leaks.py::test_later_and_innocent" in summary, run.stdout + run.stderr
    assert "FAILED test_leaks.py::test_fails_with_a_connection_open" in summary
    assert "ERROR test_leaks.py::test_fails_with_a_connection_open" in summary  # its teardown
    assert "unclosed <socket.socket" in run.stdout
