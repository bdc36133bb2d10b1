"""Waiting for buffered messages: what ``poll`` and ``getmany`` of the lite pull consumer block on.

The pull tasks append batches to the :class:`~rocketmq_py.consumer._lite_buffer.LiteBuffer`; a
poller takes what is there, or waits for the next arrival until its timeout. A closed consumer
wakes its pollers, which then find it not running.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from rocketmq_py.consumer._lite_buffer import LiteBuffer
from rocketmq_py.protocol import MessageExt, MessageQueue

__all__ = ["wait_take"]


async def wait_take(
    buffer: LiteBuffer,
    check_running: Callable[[], object],
    limit: int | None,
    *,
    one_batch: bool,
    timeout: float,  # noqa: ASYNC109
) -> dict[MessageQueue, list[MessageExt]]:
    """Take up to ``limit`` buffered messages (``one_batch``: one queue's first batch), by queue.

    Waits up to ``timeout`` seconds for the first message; ``{}`` when none came.

    Raises:
        StateError: ``check_running`` raised it (the consumer is not running), at each wake-up.
    """
    with trio.move_on_after(timeout):
        while True:
            check_running()
            taken = buffer.take(limit, one_batch=one_batch)
            if taken:
                return taken
            await buffer.wait_arrival()
    return {}
