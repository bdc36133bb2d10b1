"""``examples/aio_fastapi.py`` served by uvicorn on asyncio, against the real cluster.

Requests send orders through the asyncio producer; the asyncio listener stores them with aiosqlite;
the test reads them back over HTTP, as a user of the example would.
"""

from __future__ import annotations

import asyncio
import importlib.util
import socket
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import httpx
import pytest
import uvicorn

from rocketmq_py.testing import Cluster

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "aio_fastapi.py"


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("aio_fastapi_example", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.anyio  # an asyncio test (anyio's plugin on asyncio, ../conftest.py), as the app's own tests
async def test_the_fastapi_example_sends_on_requests_and_stores_what_it_consumes(
    cluster: Cluster, create_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = create_topic(4)
    app = _example().create_app(
        namesrv=cluster.namesrv_addr,
        topic=topic,
        group=f"it-aio-fastapi-{uuid.uuid4().hex[:6]}",
        database=str(tmp_path / "orders.db"),
    )
    items = [f"item-{i}" for i in range(12)]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(60):
            while not server.started:  # noqa: ASYNC110 - uvicorn sets a flag, no event
                await asyncio.sleep(0.05)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            sent = await asyncio.gather(*(http.post("/orders", params={"item": item}) for item in items))
            created = [r.json() for r in sent if r.status_code == 200]
            async with asyncio.timeout(60):
                while len(stored := (await http.get("/orders")).json()) < len(items):  # noqa: ASYNC110
                    await asyncio.sleep(0.1)
    finally:
        server.should_exit = True
        await serving
    assert len(created) == len(items)
    assert sorted(row["item"] for row in stored) == sorted(items)
    assert {row["id"] for row in stored} == {order["id"] for order in created}
