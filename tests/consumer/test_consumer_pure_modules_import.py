"""The push consumer's cache, flow, filter, start-offset and pull-answer modules do no I/O."""

from __future__ import annotations

import subprocess
import sys

PURE_MODULES = (
    "rocketmq_py.consumer._process_queue",
    "rocketmq_py.consumer._flow",
    "rocketmq_py.consumer._filter",
    "rocketmq_py.consumer._start_offset",
    "rocketmq_py.consumer._pull_result",
)


def test_push_consumer_pure_modules_import_no_io_library() -> None:
    code = (
        "import importlib, sys\n"
        f"for name in {PURE_MODULES!r}: importlib.import_module(name)\n"
        "bad = sorted({'trio', 'socket', 'ssl', 'asyncio', 'selectors'} & set(sys.modules))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
