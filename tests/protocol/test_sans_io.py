"""The codec is sans-IO: importing every module of rocketmq_py.protocol pulls in no I/O library."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import rocketmq_py.protocol


def test_protocol_package_imports_no_io_library() -> None:
    modules = sorted(
        m.name for m in pkgutil.iter_modules(rocketmq_py.protocol.__path__, "rocketmq_py.protocol.")
    )
    assert len(modules) >= 10
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "bad = sorted({'trio', 'socket', 'ssl', 'pyspark', 'asyncio', 'selectors'} & set(sys.modules))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
