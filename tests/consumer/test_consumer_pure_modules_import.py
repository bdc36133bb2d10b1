"""The consumer's decision modules are pure: importing them pulls in no I/O library."""

from __future__ import annotations

import subprocess
import sys

PURE_MODULES = (
    "rocketmq_py.consumer._allocate",
    "rocketmq_py.consumer._rebalance",
    "rocketmq_py.consumer._retry",
    "rocketmq_py.consumer._process_queue",
    "rocketmq_py.consumer._flow",
    "rocketmq_py.consumer._filter",
    "rocketmq_py.consumer._start_offset",
    "rocketmq_py.consumer._pull_result",
)


def test_consumer_pure_modules_import_no_io_library() -> None:
    code = (
        "import importlib, sys\n"
        f"for name in {PURE_MODULES!r}: importlib.import_module(name)\n"
        "bad = sorted({'trio', 'socket', 'ssl', 'asyncio', 'selectors'} & set(sys.modules))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
