"""``integration/_spark_streams.start_stream``: a query that ended before its first batch because
Spark's Python runner did not connect back in time is started again; any other end is the
query's own. No cluster and no Spark: a stand-in for StreamingQuery."""

from __future__ import annotations

from typing import Any

import pytest

from integration import _spark_streams
from integration._spark_streams import CONNECT_BACK, start_stream


class Query:
    """What start_stream reads of a StreamingQuery."""

    def __init__(self, error: str | None = None, progress: dict[str, Any] | None = None) -> None:
        self._error = error
        self.lastProgress = progress
        self.isActive = error is None

    def exception(self) -> str | None:
        return self._error


def starts(*queries: Query) -> tuple[list[Query], Any]:
    started: list[Query] = []
    pending = list(queries)

    def start() -> Query:
        started.append(pending.pop(0))
        return started[-1]

    return started, start


def test_a_runner_that_did_not_connect_back_is_started_again() -> None:
    ok = Query(progress={"batchId": 0})
    started, start = starts(Query(f"{CONNECT_BACK}.\n=== Streaming Query ==="), ok)
    assert start_stream(start) is ok  # type: ignore[arg-type]
    assert len(started) == 2


def test_at_most_three_starts() -> None:
    failing = [Query(f"{CONNECT_BACK}.") for _ in range(3)]
    started, start = starts(*failing)
    assert start_stream(start) is failing[-1]  # type: ignore[arg-type]
    assert len(started) == 3


@pytest.mark.parametrize(
    "query",
    [
        Query("TopicNotExist: no route"),  # another failure: the query's own
        Query(CONNECT_BACK, progress={"batchId": 3}),  # after a batch: not a start failure
        Query(progress={"batchId": 0}),  # running
    ],
)
def test_anything_else_is_the_querys_own(query: Query) -> None:
    started, start = starts(query, Query())
    assert start_stream(start) is query  # type: ignore[arg-type]
    assert len(started) == 1


def test_a_query_neither_failing_nor_progressing_is_left_after_the_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_spark_streams, "FIRST_BATCH_WAIT", 0.5)
    quiet = Query()
    _started, start = starts(quiet)
    assert start_stream(start) is quiet  # type: ignore[arg-type]
