"""What the POP tests on a FakeBroker share: a member of a POP group, and polling for a state."""

from __future__ import annotations

from typing import Any

import trio

from rocketmq_py.consumer._push import PushConsumer
from rocketmq_py.protocol import ConsumeFromWhere


def pop_member(
    fb: Any, listener: Any, group: str, topic: str, *, name: str = "me", **options: Any
) -> PushConsumer:
    """A member of ``group`` that lets the fake assign its queues (``client_rebalance=False``),
    subscribed to ``topic``, from the first offset unless ``options`` say otherwise."""
    options.setdefault("consume_from_where", ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer = PushConsumer(
        group,
        namesrv=fb.address,
        listener=listener,
        client_rebalance=False,
        instance_name=name,
        client_ip="127.0.0.1",
        **options,
    )
    consumer.subscribe(topic)
    return consumer


async def wait_until(predicate: Any, timeout: float = 600) -> None:  # noqa: ASYNC109
    """Poll ``predicate`` (trio time) until it holds; fail after ``timeout``."""
    with trio.fail_after(timeout):
        while not predicate():  # noqa: ASYNC110 - state lives in the consumer and the fake
            await trio.sleep(0.05)
