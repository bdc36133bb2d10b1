"""The decision modules of route sync and the producer are pure: importing them pulls in no I/O."""

from __future__ import annotations

import subprocess
import sys

PURE_MODULES = (
    "rocketmq_py._client._route",
    "rocketmq_py.producer._fault",
    "rocketmq_py.producer._selectors",
    "rocketmq_py.producer._types",
    "rocketmq_py.producer._validation",
)


def test_decision_modules_import_no_io_library() -> None:
    code = (
        "import importlib, sys\n"
        f"for name in {PURE_MODULES!r}: importlib.import_module(name)\n"
        "bad = sorted({'trio', 'socket', 'ssl', 'asyncio'} & set(sys.modules))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
