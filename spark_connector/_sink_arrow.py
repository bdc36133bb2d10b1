"""The sink's input as Arrow batches (pyspark's ``DataSourceArrowWriter``) turned into rows.

Spark hands a Python data source writer its partition either as ``Row`` objects, one built in
the worker per row, or (``DataSourceArrowWriter``, ``DataSourceStreamArrowWriter``) as the Arrow
record batches it ships to the worker anyway. The sink takes the batches: each column the sink
reads becomes a Python list in one call (``to_pylist``), and the rows are tuples of those values
in schema order, which :func:`~spark_connector._sink_rows.row_to_message` reads as it reads a ``Row``;
the columns it does not read stay ``None``. A ``MAP<STRING,STRING>`` value comes out of Arrow as
(key, value) pairs and is made the dict a ``Row`` holds.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from spark_connector._sink_rows import SinkColumns

__all__ = ["arrow_rows"]


def arrow_rows(batches: Iterable[pa.RecordBatch], columns: SinkColumns) -> Iterator[tuple[Any, ...]]:
    """The rows of ``batches``, in order, as tuples in schema order (see the module docstring)."""
    used = columns.positions()
    for batch in batches:
        n = batch.num_rows
        if not n:
            continue
        values: list[Iterable[Any]] = []
        for i in range(batch.num_columns):
            if i not in used:
                values.append(itertools.repeat(None, n))
                continue
            column = batch.column(i).to_pylist()
            if i == columns.properties:
                column = [None if pairs is None else dict(pairs) for pairs in column]
            values.append(column)
        yield from zip(*values, strict=False)
