"""A FastAPI service on asyncio: sends an order on each request, stores consumed orders with aiosqlite.

The asyncio clients (:mod:`rocketmq_py.aio`) live on the service's own event loop: the producer is
opened in the app's lifespan, and a push consumer whose listener is an ordinary asyncio coroutine
writes every consumed order to SQLite with ``aiosqlite``. Run it against a local cluster::

    python -m rocketmq_py.testing up &          # prints the NameServer address
    ROCKETMQ_NAMESRV=127.0.0.1:9876 uvicorn examples.aio_fastapi:app --port 8000
    curl -X POST 'localhost:8000/orders?item=book'
    curl localhost:8000/orders                  # what the consumer stored

(needs ``pip install fastapi uvicorn aiosqlite``; ``integration/test_aio_fastapi.py`` runs it.)
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiosqlite
from fastapi import FastAPI

from rocketmq_py.aio import Message, Producer, PushConsumer
from rocketmq_py.protocol import MessageExt

TOPIC = os.environ.get("ORDERS_TOPIC", "orders")
GROUP = os.environ.get("ORDERS_GROUP", "orders-store")
DATABASE = os.environ.get("ORDERS_DB", ":memory:")


def create_app(
    namesrv: str | None = None, topic: str = TOPIC, group: str = GROUP, database: str = DATABASE
) -> FastAPI:
    """The service: ``POST /orders?item=...`` sends, ``GET /orders`` lists what was consumed."""
    namesrv = namesrv or os.environ.get("ROCKETMQ_NAMESRV", "127.0.0.1:9876")
    state: dict[str, Any] = {}

    async def store(msgs: list[MessageExt]) -> None:  # an asyncio coroutine on the service's loop
        db: aiosqlite.Connection = state["db"]
        await db.executemany(
            "INSERT OR IGNORE INTO orders (id, item) VALUES (?, ?)",
            [(msg.keys[0], msg.body.decode()) for msg in msgs],
        )
        await db.commit()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with aiosqlite.connect(database) as db:
            await db.execute("CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, item TEXT)")
            state["db"] = db
            consumer = PushConsumer(group, namesrv=namesrv, listener=store)
            consumer.subscribe(topic)
            async with Producer("orders-api", namesrv=namesrv) as producer, consumer:
                state["producer"] = producer
                yield

    app = FastAPI(lifespan=lifespan)

    @app.post("/orders")
    async def create_order(item: str) -> dict[str, str]:
        order_id = uuid.uuid4().hex
        result = await state["producer"].send(Message(topic, item.encode(), keys=[order_id]))
        return {"id": order_id, "msg_id": result.msg_id, "queue": str(result.queue)}

    @app.get("/orders")
    async def list_orders() -> list[dict[str, str]]:
        async with state["db"].execute("SELECT id, item FROM orders ORDER BY item") as cursor:
            return [{"id": row[0], "item": row[1]} async for row in cursor]

    return app


app = create_app()
