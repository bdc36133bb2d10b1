"""Deterministic UNIQ_KEYs of the rocketmq sink: same inputs, same key; Java's 32-hex layout."""

from __future__ import annotations

import re

from rocketmq_py.protocol._ids import uniq_key_timestamp
from spark_connector._sink import deterministic_uniq_key


def test_same_write_partition_and_row_give_the_same_key() -> None:
    assert deterministic_uniq_key("q1/5", 3, 17) == deterministic_uniq_key("q1/5", 3, 17)


def test_layout_is_a_32_hex_uniq_key_with_the_row_in_the_counter() -> None:
    key = deterministic_uniq_key("q1/5", 3, 0x1_2345)
    assert re.fullmatch(r"[0-9A-F]{32}", key)
    assert key[20:28] == "00000000"  # ms since the month start: 0
    assert key[28:] == "2345"  # the row's low 16 bits
    # Java's getNearlyTimeFromID reads the month's start, so a msgId lookup searches from there.
    now = 1_795_339_309_000
    assert uniq_key_timestamp(key, now_ms=now) <= now


def test_rows_of_one_task_share_a_prefix_per_65536_rows() -> None:
    keys = [deterministic_uniq_key("w", 0, row) for row in (0, 1, 65535, 65536)]
    assert keys[0][:20] == keys[1][:20] == keys[2][:20] != keys[3][:20]
    assert [k[28:] for k in keys] == ["0000", "0001", "FFFF", "0000"]


def test_keys_differ_across_writes_partitions_and_rows() -> None:
    keys = {
        deterministic_uniq_key(write, partition, row)
        for write in ("query-a/0", "query-a/1", "query-b/0")
        for partition in range(4)
        for row in range(300)
    }
    assert len(keys) == 3 * 4 * 300
