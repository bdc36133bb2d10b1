"""LocalOffsetStore: the broadcasting consumer's offsets in a JSON file, written atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rocketmq_py.consumer._local_offset_store import (
    OFFSETS_DIR_ENV,
    LocalOffsetStore,
    OffsetFileCorrupt,
    OffsetStoreError,
    default_directory,
)
from rocketmq_py.consumer._offset_store import RemoteOffsetStore
from rocketmq_py.consumer._offset_store_api import OffsetStore
from rocketmq_py.errors import ClientError, RocketMQError
from rocketmq_py.protocol import MessageQueue

A0 = MessageQueue("T", "broker-a", 0)
A1 = MessageQueue("T", "broker-a", 1)
B0 = MessageQueue("T", "broker-b", 0)
U0 = MessageQueue("U", "broker-b", 0)


def store(tmp_path: Path, group: str = "g", client_id: str = "10.0.0.1@42") -> LocalOffsetStore:
    return LocalOffsetStore(group, client_id, directory=tmp_path)


def test_local_store_has_every_protocol_member(tmp_path: Path) -> None:
    # mypy checks the signatures (_offset_store_api._conforms); this checks nothing is missing at runtime.
    members = [name for name in vars(OffsetStore) if not name.startswith("_")]
    assert set(members) >= {
        "get",
        "update",
        "remove",
        "snapshot",
        "read_from_broker",
        "persist",
        "persist_all",
    }
    for name in members:
        assert callable(getattr(LocalOffsetStore, name))
        assert callable(getattr(RemoteOffsetStore, name))
    assert store(tmp_path).group == "g"


def test_path_layout_like_java(tmp_path: Path) -> None:
    s = store(tmp_path, "grp", "1.2.3.4@99")
    assert s.path == tmp_path / "1.2.3.4@99" / "grp" / "offsets.json"
    assert s.backup_path == tmp_path / "1.2.3.4@99" / "grp" / "offsets.json.bak"


def test_default_directory_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(OFFSETS_DIR_ENV, str(tmp_path / "x"))
    assert default_directory() == tmp_path / "x"
    assert LocalOffsetStore("g", "c").path == tmp_path / "x" / "c" / "g" / "offsets.json"
    monkeypatch.delenv(OFFSETS_DIR_ENV)
    assert default_directory() == Path.home() / ".rocketmq_offsets"


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "a\\b"])
def test_names_that_cannot_be_directories(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ClientError):
        LocalOffsetStore(bad, "c", directory=tmp_path)
    with pytest.raises(ClientError):
        LocalOffsetStore("g", bad, directory=tmp_path)


def test_update_increase_only_get_remove_snapshot(tmp_path: Path) -> None:
    s = store(tmp_path)
    assert s.get(A0) == -1
    s.update(A0, 10)
    s.update(A0, 5)
    assert s.get(A0) == 10
    s.update(A0, 5, increase_only=False)
    assert s.get(A0) == 5
    s.update(A0, -1, increase_only=False)
    assert s.get(A0) == 5
    s.update(A1, 0)
    snap = s.snapshot()
    assert snap == {A0: 5, A1: 0}
    snap[A0] = 99
    assert s.get(A0) == 5
    s.remove(A1)
    s.remove(B0)
    assert s.snapshot() == {A0: 5}


async def test_round_trip(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.update(A0, 7)
    s.update(B0, 3)
    s.update(U0, 0)
    assert await s.persist_all() == 3
    doc = json.loads(s.path.read_text())
    assert doc["group"] == "g"
    assert doc["clientId"] == "10.0.0.1@42"
    assert {(e["topic"], e["brokerName"], e["queueId"], e["offset"]) for e in doc["offsetTable"]} == {
        ("T", "broker-a", 0, 7),
        ("T", "broker-b", 0, 3),
        ("U", "broker-b", 0, 0),
    }
    again = store(tmp_path)
    assert again.load() == 3
    assert again.snapshot() == {A0: 7, B0: 3, U0: 0}
    fresh = store(tmp_path)
    assert await fresh.read_from_broker(B0) == 3
    assert fresh.snapshot() == {B0: 3}
    assert await fresh.read_from_broker(A1) == -1
    assert fresh.get(A1) == -1


async def test_read_from_broker_overrides_memory(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.update(A0, 7)
    await s.persist(A0)
    s.update(A0, 20)
    assert await s.read_from_broker(A0) == 7
    assert s.get(A0) == 7


def test_load_without_files_is_empty(tmp_path: Path) -> None:
    s = store(tmp_path)
    assert s.load() == 0
    assert s.snapshot() == {}
    assert not s.path.parent.exists()


async def test_atomic_replace_keeps_previous_as_bak(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.update(A0, 1)
    await s.persist(A0)
    assert not s.backup_path.exists()
    first_inode = os.stat(s.path).st_ino
    s.update(A0, 2)
    await s.persist(A0)
    # The new content replaced the file (a new inode); the old file became the .bak.
    assert os.stat(s.path).st_ino != first_inode
    assert os.stat(s.backup_path).st_ino == first_inode
    assert store(tmp_path).read_file() == {A0: 2}
    assert [e["offset"] for e in json.loads(s.backup_path.read_text())["offsetTable"]] == [1]
    # No temporary files are left behind.
    assert sorted(p.name for p in s.path.parent.iterdir()) == ["offsets.json", "offsets.json.bak"]


async def test_failed_write_leaves_the_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = store(tmp_path)
    s.update(A0, 1)
    await s.persist(A0)

    def broken_replace(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    s.update(A0, 2)
    with pytest.raises(OffsetStoreError) as info:
        await s.persist(A0)
    assert isinstance(info.value, RocketMQError)
    assert info.value.path == s.path
    assert await s.persist_all() == 0  # logged, not raised
    monkeypatch.undo()
    assert store(tmp_path).read_file() == {A0: 1}
    assert sorted(p.name for p in s.path.parent.iterdir()) == ["offsets.json"]


async def test_corrupt_file_falls_back_to_bak(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.update(A0, 1)
    await s.persist_all()
    s.update(A0, 2)
    await s.persist_all()
    s.path.write_bytes(b'{"offsetTable": [{"topic": "T", "brok')  # torn by a crash or an editor
    again = store(tmp_path)
    assert again.load() == 1
    assert again.get(A0) == 1


async def test_missing_file_with_bak_uses_bak(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.update(A0, 1)
    await s.persist_all()
    s.update(A0, 2)
    await s.persist_all()
    s.path.unlink()
    assert store(tmp_path).read_file() == {A0: 1}


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not json",
        b"[]",
        b'{"offsetTable": {}}',
        b'{"offsetTable": [1]}',
        b'{"offsetTable": [{"topic": "T", "brokerName": "b", "queueId": "0", "offset": 1}]}',
        b'{"offsetTable": [{"topic": "T", "brokerName": "b", "queueId": 0, "offset": -3}]}',
        b'{"offsetTable": [{"brokerName": "b", "queueId": 0, "offset": 1}]}',
        b"\xff\xfe",
    ],
)
def test_corrupt_file_and_bak_raise_a_typed_error(tmp_path: Path, content: bytes) -> None:
    s = store(tmp_path)
    s.path.parent.mkdir(parents=True)
    s.path.write_bytes(content)
    with pytest.raises(OffsetFileCorrupt) as info:
        s.load()
    assert info.value.path == s.path
    s.backup_path.write_bytes(content)
    with pytest.raises(OffsetFileCorrupt):
        s.load()
    assert isinstance(info.value, RocketMQError)


async def test_corrupt_file_error_from_read_from_broker(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.path.parent.mkdir(parents=True)
    s.path.write_bytes(b"{")
    with pytest.raises(OffsetFileCorrupt):
        await s.read_from_broker(A0)


async def test_two_groups_and_two_client_ids_are_separate(tmp_path: Path) -> None:
    stores = {(group, cid): store(tmp_path, group, cid) for group in ("g1", "g2") for cid in ("c1@1", "c2@2")}
    for n, s in enumerate(stores.values()):
        s.update(A0, n)
        await s.persist_all()
    assert len({s.path for s in stores.values()}) == 4
    for n, (group, cid) in enumerate(stores):
        assert store(tmp_path, group, cid).read_file() == {A0: n}


async def test_persist_all_subset_drops_unowned(tmp_path: Path) -> None:
    s = store(tmp_path)
    for n, mq in enumerate((A0, A1, B0, U0)):
        s.update(mq, n + 1)
    assert await s.persist_all([A1, U0, MessageQueue("T", "broker-c", 9)]) == 2
    assert s.snapshot() == {A1: 2, U0: 4}
    assert store(tmp_path).read_file() == {A1: 2, U0: 4}


async def test_persist_of_unknown_queue_writes_nothing(tmp_path: Path) -> None:
    s = store(tmp_path)
    await s.persist(A0)
    assert not s.path.exists()


async def test_concurrent_persists_end_with_the_latest_table(tmp_path: Path) -> None:
    import trio

    s = store(tmp_path)
    async with trio.open_nursery() as nursery:
        for offset in range(1, 21):
            s.update(A0, offset)
            nursery.start_soon(s.persist, A0)
    assert store(tmp_path).read_file() == {A0: 20}
    assert sorted(p.name for p in s.path.parent.iterdir()) == ["offsets.json", "offsets.json.bak"]
