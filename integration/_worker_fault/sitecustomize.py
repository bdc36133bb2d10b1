"""Fault injection for the Spark write test: kill the sink's Python worker in the middle of a task.

On ``PYTHONPATH`` of the executors' Python workers with ``RMQ_IT_KILL="<topic>:<count>:<marker>"``:
in the first attempt of a task, once the sink's producer had ``count`` messages of ``topic``
acknowledged by the broker, the Python worker exits at once (as a worker killed by the OS or an
out-of-memory kill would), so Spark fails that attempt and runs the task again. Every attempt that
sends to ``topic`` touches ``<marker>.p<partition>.a<attempt>`` so the test can tell what ran.
"""

from __future__ import annotations

import os

_SPEC = os.environ.get("RMQ_IT_KILL", "")


def _install(topic: str, count: int, marker: str) -> None:
    from typing import Any

    import trio

    from rocketmq_py.producer._producer import Producer

    original = Producer.send_batch
    acknowledged: dict[tuple[int, int], int] = {}

    async def send_batch(self: Producer, messages: Any, *args: Any, **kwargs: Any) -> Any:
        from pyspark import TaskContext

        result = await original(self, messages, *args, **kwargs)
        context = TaskContext.get()
        batch = list(messages)
        if context is None or not batch or batch[0].topic != topic:
            return result
        key = (context.partitionId(), context.attemptNumber())
        if key not in acknowledged:
            await trio.Path(f"{marker}.p{key[0]}.a{key[1]}").touch()
        acknowledged[key] = acknowledged.get(key, 0) + len(batch)
        if key[1] == 0 and acknowledged[key] >= count:
            os._exit(17)
        return result

    Producer.send_batch = send_batch  # type: ignore[method-assign]


if _SPEC:
    _topic, _count, _marker = _SPEC.split(":", 2)
    _install(_topic, int(_count), _marker)
