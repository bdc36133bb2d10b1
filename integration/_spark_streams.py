"""Starting a streaming query of the ``rocketmq`` source in the tests, past a Spark limit on a loaded machine.

A Python streaming source runs, on the driver, one Python process for the query
(``PythonStreamingSourceRunner.init``, when the query plans its first batch), started as a "simple
worker": Spark gives it a fixed 10 s to connect back (``PythonWorkerFactory.createSimpleWorker``,
no setting), and the query ends with ``Python worker failed to connect back`` when it does not. The
runner's start is pyspark's and pyarrow's imports (0.7 s of CPU on an idle machine, before any code
of ours runs); in the main suite, on two cores shared with three workers' brokers and Spark
processes, it has taken longer (CI: the controller test's stream, twice). Nothing was read then,
so :func:`start_stream` starts the query again from the same checkpoint, as a job's retry policy
would, and prints that it did. Any other failure, or one after the first batch, is the query's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming import StreamingQuery

__all__ = ["CONNECT_BACK", "drain_available_now", "start_stream"]

#: What Spark's query exception says when the runner did not connect back in time.
CONNECT_BACK = "Python worker failed to connect back"
#: Starts of one query at most.
ATTEMPTS = 3
#: Seconds to wait for a query's first batch to begin (the runner starts before it).
FIRST_BATCH_WAIT = 120.0


def _failed_at_start(query: StreamingQuery) -> bool:
    """Wait until the query began its first batch or ended; whether it ended because its Python
    runner did not connect back, before any batch."""
    deadline = time.monotonic() + FIRST_BATCH_WAIT
    while time.monotonic() < deadline:
        if query.lastProgress is not None:
            return False
        error = query.exception()
        if error is not None or not query.isActive:
            return error is not None and CONNECT_BACK in str(error) and query.lastProgress is None
        time.sleep(0.2)
    return False


def start_stream(start: Callable[[], StreamingQuery]) -> StreamingQuery:
    """``start()`` the query; again (at most :data:`ATTEMPTS` starts) while it ends before its first
    batch because Spark's Python runner did not connect back (see the module docstring)."""
    for attempt in range(1, ATTEMPTS + 1):
        query = start()
        if attempt == ATTEMPTS or not _failed_at_start(query):
            return query
        print(
            f"the streaming query's Python runner did not connect back within Spark's 10 s: start {attempt + 1}"
        )
    raise AssertionError("unreachable")


def drain_available_now(
    stream: DataFrame, checkpoint: Path, collect: Callable[[DataFrame, int], Any], timeout: float = 300
) -> StreamingQuery:
    """Run ``stream`` under ``Trigger.AvailableNow`` into ``foreachBatch(collect)`` with its
    checkpoint in ``checkpoint`` (started by :func:`start_stream`) until it ends, at most ``timeout``
    seconds; the query ended without an exception."""
    query = start_stream(
        lambda: (
            stream.writeStream.foreachBatch(collect)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
    )
    query.awaitTermination(timeout=timeout)
    assert query.exception() is None
    return query
