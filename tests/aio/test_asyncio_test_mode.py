"""The suite's two async test modes (../../conftest.py): trio by default, asyncio when marked ``anyio``."""

from __future__ import annotations

import asyncio

import pytest
import sniffio
import trio


@pytest.mark.anyio
async def test_a_test_marked_anyio_runs_on_an_asyncio_loop() -> None:
    assert sniffio.current_async_library() == "asyncio"
    assert asyncio.get_running_loop().is_running()
    await asyncio.sleep(0)


async def test_other_async_tests_run_under_trio() -> None:
    assert sniffio.current_async_library() == "trio"
    await trio.lowlevel.checkpoint()
