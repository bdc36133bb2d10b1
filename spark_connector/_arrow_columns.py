"""The Arrow kernels the Spark reader's columnar path is built from (see :mod:`._columns`).

Cutting parts out of the reply bytes without copying them one by one (:func:`cut`,
:func:`every`), host and timestamp columns, and the properties: one pass finds the entries of
every message's properties text (:func:`plain_entries` for the layout brokers write,
:func:`any_entries` for anything else), and the map column, single property values (tags,
UNIQ_KEY) and the keys list are cut from the same text (:func:`split_properties`).
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rocketmq_py.protocol import format_socket_address

__all__ = [
    "Entries",
    "PropertySplit",
    "any_entries",
    "cut",
    "every",
    "host_text",
    "hosts_column",
    "int32_column",
    "keys_column",
    "offsets_from_parents",
    "plain_entries",
    "property_map",
    "property_values",
    "split_properties",
    "timestamps_column",
]

_TS_MS: Final = pa.timestamp("ms", tz="UTC")
_TS: Final = pa.timestamp("us", tz="UTC")
_MAP: Final = pa.map_(pa.string(), pa.string())
_LIST: Final = pa.list_(pa.string())
_STRING: Final = pa.string()


def cut(data: pa.Buffer, bounds: np.ndarray) -> pa.Array:
    """``data`` cut at ``bounds`` (ascending): element ``i`` is ``data[bounds[i] : bounds[i + 1]]``, not copied."""
    cuts = pa.py_buffer(bounds.astype(np.int32, copy=False))
    return pa.Array.from_buffers(pa.binary(), len(bounds) - 1, [None, cuts, data])


def every(pieces: pa.Array, first: int, step: int) -> pa.Array:
    """Elements ``first``, ``first + step``, ... of ``pieces``, copied end to end by Arrow."""
    return pieces.take(pa.array(np.arange(first, len(pieces), step, dtype=np.int32)))


def hosts_column(raw: np.ndarray) -> pa.Array:
    """``ip:port`` strings of raw IPv4 addresses (big-endian uint64), formatted once per distinct one."""
    if bool((raw == raw[0]).all()):  # the usual store host: one per broker
        return pa.repeat(pa.scalar(host_text(raw[0]), _STRING), len(raw))
    distinct, inverse = np.unique(raw, return_inverse=True)
    names = [host_text(d) for d in distinct]
    return pa.array(names, _STRING).take(pa.array(inverse.reshape(-1).astype(np.int32)))


def host_text(raw: Any) -> str:
    return format_socket_address(int(raw).to_bytes(8, "big"))


def offsets_from_parents(n: int, parents: np.ndarray) -> pa.Array:
    """List offsets of ``n`` rows whose row ``parents[i]`` holds element ``i`` (parents ascending)."""
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(np.bincount(parents, minlength=n), out=offsets[1:])
    return pa.array(offsets)


Entries = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def plain_entries(text: np.ndarray, rows: np.ndarray) -> Entries | None:
    """:func:`any_entries` when every row is ``name\\x01value\\x02`` repeated (as brokers store them), else None.

    Then the separators alternate \\x01, \\x02 and every row ends at a \\x02: entry ``i`` runs from
    just after \\x02 number ``i - 1`` to \\x02 number ``i``, its \\x01 is separator ``2 i``, and
    a row's entries are the \\x02 inside it (one pass over the text, one search per row).
    """
    seps = np.flatnonzero(text - np.uint8(1) < 2)  # the \x01 and \x02 (a \x00 wraps to 255)
    kinds = text[seps]
    nonempty = rows[1:] > rows[:-1]
    if (
        len(seps) % 2
        or not bool(np.all(kinds[0::2] == 1))
        or not bool(np.all(kinds[1::2] == 2))
        or not bool(np.all(text[rows[1:][nonempty] - 1] == 2))
    ):
        return None
    first, ends = seps[0::2], seps[1::2]
    starts = np.empty_like(ends)
    starts[:1] = 0
    starts[1:] = ends[:-1] + 1
    keep = (first > starts) & (first + 1 < ends)
    if not bool(keep.all()):
        starts, first, ends = starts[keep], first[keep], ends[keep]
    offsets = np.searchsorted(ends, rows)  # entries ending before each row's start
    return starts, first, ends, offsets


def any_entries(text: np.ndarray, rows: np.ndarray) -> Entries:
    """The entries' starts, \\x01 positions and ends (non-empty name and value), and each row's first entry."""
    seps = np.flatnonzero(text == 2)
    # Entries [start, end): they run between row boundaries and separators, in order, so the
    # sorted starts and sorted ends pair up (merging sorted runs: the stable sort is linear).
    starts = np.sort(np.concatenate([rows[:-1], seps + 1]), kind="stable")
    ends = np.sort(np.concatenate([seps, rows[1:]]), kind="stable")
    ones = np.flatnonzero(text == 1)
    if len(ones) == 0:
        first = np.full(len(starts), len(text), np.int64)
    else:
        found = np.searchsorted(ones, starts)
        first = np.where(found < len(ones), ones[np.minimum(found, len(ones) - 1)], len(text))
    keep = (first > starts) & (first + 1 < ends)
    starts, first, ends = starts[keep], first[keep], ends[keep]
    owners = np.searchsorted(rows, starts, side="right") - 1
    offsets = np.zeros(len(rows), np.int64)
    np.cumsum(np.bincount(owners, minlength=len(rows) - 1), out=offsets[1:])
    return starts, first, ends, offsets


class PropertySplit(NamedTuple):
    """The properties of a batch's rows cut into entries (non-empty name and value), in text order."""

    #: Row ``i`` holds entries ``offsets[i]`` to ``offsets[i + 1]``.
    offsets: np.ndarray
    #: The row of each entry.
    owners: np.ndarray
    names: pa.Array
    values: pa.Array
    #: Each entry's name as a number: ``position[name]``.
    codes: np.ndarray
    position: dict[str, int]


def split_properties(props: pa.Array, rows: np.ndarray) -> PropertySplit | None:
    """The property strings ``props`` (row bounds ``rows``) cut into entries; None when a message has a name twice.

    Entries are separated by \\x02; an entry is ``name\\x01value`` (the value is everything after
    the first \\x01) and counts when both are non-empty. Both separators are ASCII, so cutting the
    bytes is cutting the (valid UTF-8) text.
    """
    n = len(rows) - 1
    text_buffer = props.buffers()[2]  # props is fresh from a take: offset 0, bounds ``rows``
    text = np.frombuffer(text_buffer, np.uint8, count=int(rows[-1])) if rows[-1] else np.zeros(0, np.uint8)
    starts, first, ends, offsets = plain_entries(text, rows) or any_entries(text, rows)
    if len(starts) == 0:
        empty = pa.array([], _STRING)
        none = np.zeros(0, np.int64)
        return PropertySplit(offsets, none, empty, empty, none, {})
    owners = np.repeat(np.arange(n), np.diff(offsets))
    # name, \x01, value, what lies up to the next entry: four pieces an entry, in text order.
    pieces = cut(text_buffer, np.stack([starts, first, first + 1, ends], axis=1).reshape(-1))
    names = every(pieces, 0, 4).view(_STRING)
    values = every(pieces, 2, 4).view(_STRING)
    encoded = pc.dictionary_encode(names)
    codes = np.asarray(encoded.indices).astype(np.int64)
    distinct = encoded.dictionary
    pairs = owners * len(distinct) + codes
    if n * len(distinct) <= 1 << 22:
        twice = bool(np.bincount(pairs).max() > 1)
    else:
        twice = len(np.unique(pairs)) != len(pairs)
    if twice:
        return None
    position = {name: i for i, name in enumerate(distinct.to_pylist())}
    return PropertySplit(offsets, owners, names, values, codes, position)


def property_map(split: PropertySplit) -> pa.Array:
    """The ``properties`` column: every row's entries as a map."""
    return pa.MapArray.from_arrays(pa.array(split.offsets.astype(np.int32)), split.names, split.values).cast(
        _MAP
    )


def property_values(split: PropertySplit, name: str) -> pa.Array:
    """Each row's value of property ``name`` (null where the row has none)."""
    n = len(split.offsets) - 1
    code = split.position.get(name)
    if code is None:
        return pa.nulls(n, _STRING)
    at = np.flatnonzero(split.codes == code)
    index = np.full(n, -1, np.int64)
    index[split.owners[at]] = at
    return split.values.take(pa.array(index, mask=index < 0))


def keys_column(joined: pa.Array) -> pa.Array:
    """The KEYS values split at spaces, empty keys dropped (no KEYS: an empty list)."""
    n = len(joined)
    if not pc.any(pc.match_substring(joined, " ")).as_py():  # one key a message (or none): no split
        present = np.asarray(pc.fill_null(pc.greater(pc.binary_length(joined), 0), False))
        values = joined.filter(pa.array(present))
        return pa.ListArray.from_arrays(offsets_from_parents(n, np.flatnonzero(present)), values).cast(_LIST)
    split = pc.split_pattern(pc.fill_null(joined, ""), " ")
    parents = np.asarray(pc.list_parent_indices(split))
    flat = split.flatten()
    nonempty = np.asarray(pc.greater(pc.binary_length(flat), 0))
    return pa.ListArray.from_arrays(
        offsets_from_parents(n, parents[nonempty]), flat.filter(pa.array(nonempty))
    ).cast(_LIST)


def timestamps_column(millis: np.ndarray) -> pa.Array:
    return pa.array(millis.astype(np.int64), _TS_MS).cast(_TS)


def int32_column(values: np.ndarray) -> pa.Array:
    return pa.array(values.astype(np.int32), pa.int32())
