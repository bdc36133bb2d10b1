"""Consume offsets of a broadcasting consumer, kept in a local JSON file (Java ``LocalFileOffsetStore``).

Every broadcasting consumer consumes every queue on its own, so the brokers keep no offset for it:
the offsets live in ``<directory>/<client_id>/<group>/offsets.json`` (Java's layout under
``~/.rocketmq_offsets``; the directory defaults to ``$ROCKETMQ_PY_OFFSETS_DIR`` or
``~/.rocketmq_offsets``). Our format, not Java's::

    {"version": 1, "clientId": "...", "group": "...",
     "offsetTable": [{"topic": "T", "brokerName": "broker-a", "queueId": 0, "offset": 42}, ...]}

A write never leaves a half-written file: the new content goes to a temporary file in the same
directory, is fsynced, the current file becomes ``offsets.json.bak`` (a hard link, so the current
file never disappears), and the temporary file replaces ``offsets.json`` with ``os.replace``.
Reading falls back to the ``.bak`` when the file is missing or does not parse; when neither
parses, :class:`OffsetFileCorrupt` names the file (Java would silently start over).

The async methods do their file I/O in a worker thread and serialise writes with a lock.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import shutil
import tempfile
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

import trio

from rocketmq_py.errors import InvalidOption, OffsetFileCorrupt, OffsetStoreError
from rocketmq_py.protocol import MessageQueue

__all__ = [
    "OFFSETS_DIR_ENV",
    "LocalOffsetStore",
    "OffsetFileCorrupt",
    "OffsetStoreError",
    "default_directory",
]

log = logging.getLogger("rocketmq_py.offsets")

#: Environment variable naming the offsets directory (Java: system property ``rocketmq.client.localOffsetStoreDir``).
OFFSETS_DIR_ENV = "ROCKETMQ_PY_OFFSETS_DIR"
#: Default directory under the home directory (Java: ``~/.rocketmq_offsets``).
DEFAULT_DIR_NAME = ".rocketmq_offsets"
FILE_NAME = "offsets.json"
FORMAT_VERSION = 1


def default_directory() -> Path:
    """``$ROCKETMQ_PY_OFFSETS_DIR`` or ``~/.rocketmq_offsets``."""
    env = os.environ.get(OFFSETS_DIR_ENV)
    return Path(env) if env else Path.home() / DEFAULT_DIR_NAME


def _check_component(kind: str, value: str) -> str:
    if not value or value in (".", "..") or "/" in value or "\\" in value or "\0" in value:
        raise InvalidOption(f"{kind} {value!r} cannot name a directory for the local offset store")
    return value


def encode_table(client_id: str, group: str, table: dict[MessageQueue, int]) -> bytes:
    """The file content for ``table`` (sorted, so equal tables give equal bytes)."""
    entries = [
        {"topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id, "offset": offset}
        for mq, offset in sorted(table.items())
    ]
    doc = {"version": FORMAT_VERSION, "clientId": client_id, "group": group, "offsetTable": entries}
    return json.dumps(doc, indent=1).encode()


def decode_table(data: bytes) -> dict[MessageQueue, int]:
    """Parse a file's content.

    Raises:
        ValueError: it is not our format.
    """
    doc: Any = json.loads(data)
    if not isinstance(doc, dict) or not isinstance(doc.get("offsetTable"), list):
        raise ValueError("no offsetTable list")
    table: dict[MessageQueue, int] = {}
    for entry in doc["offsetTable"]:
        if not isinstance(entry, dict):
            raise ValueError(f"entry is not an object: {entry!r}")
        topic, broker, queue_id, offset = (
            entry.get("topic"),
            entry.get("brokerName"),
            entry.get("queueId"),
            entry.get("offset"),
        )
        if not (isinstance(topic, str) and isinstance(broker, str)):
            raise ValueError(f"entry without topic/brokerName: {entry!r}")
        if type(queue_id) is not int or type(offset) is not int or queue_id < 0 or offset < 0:
            raise ValueError(f"entry with a bad queueId/offset: {entry!r}")
        table[MessageQueue(topic, broker, queue_id)] = offset
    return table


class LocalOffsetStore:
    """Offsets of one broadcasting consumer (one client id, one group), kept in a local file.

    Args:
        group: the consumer group.
        client_id: the consumer's client id (one file per client id and group).
        directory: the root directory (default :func:`default_directory`).

    Raises:
        InvalidOption: ``group`` or ``client_id`` cannot name a directory.
    """

    def __init__(
        self, group: str, client_id: str, *, directory: str | os.PathLike[str] | None = None
    ) -> None:
        self.group = _check_component("group", group)
        self.client_id = _check_component("client id", client_id)
        root = Path(directory) if directory is not None else default_directory()
        self.path = root / client_id / group / FILE_NAME
        self._table: dict[MessageQueue, int] = {}
        self._write_lock = trio.Lock()

    @property
    def backup_path(self) -> Path:
        return self.path.with_name(FILE_NAME + ".bak")

    # --- in memory ---------------------------------------------------------------------------

    def get(self, mq: MessageQueue) -> int:
        """The offset in memory (-1 when none)."""
        return self._table.get(mq, -1)

    def update(self, mq: MessageQueue, offset: int, *, increase_only: bool = True) -> None:
        if offset < 0:
            return
        current = self._table.get(mq)
        if current is None or not increase_only or offset > current:
            self._table[mq] = offset

    def remove(self, mq: MessageQueue) -> None:
        self._table.pop(mq, None)

    def snapshot(self) -> dict[MessageQueue, int]:
        return dict(self._table)

    # --- the file ----------------------------------------------------------------------------

    def read_file(self) -> dict[MessageQueue, int]:
        """The table in the file (the ``.bak`` when the file is missing or corrupt); blocking.

        Returns:
            The stored table; empty when neither file exists.

        Raises:
            OffsetFileCorrupt: the file (or, when the file is missing, the ``.bak``) does not
                parse and no ``.bak`` parses either.
            OffsetStoreError: a file exists but cannot be read.
        """
        problems: list[str] = []
        for path in (self.path, self.backup_path):
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise OffsetStoreError(path, f"cannot be read: {exc}") from exc
            try:
                table = decode_table(data)
            except (ValueError, UnicodeDecodeError) as exc:
                problems.append(f"{path.name}: {exc}")
                log.warning("offset file %s is corrupt (%s), trying its backup", path, exc)
                continue
            if path == self.backup_path:
                log.warning("offsets of group %s read from the backup %s", self.group, path)
            return table
        if problems:
            raise OffsetFileCorrupt(self.path, "does not parse, nor does its .bak: " + "; ".join(problems))
        return {}

    def load(self) -> int:
        """Read the file into memory (blocking; call it once, before consuming).

        Returns:
            How many offsets were loaded.

        Raises:
            OffsetFileCorrupt: neither the file nor its ``.bak`` parses.
        """
        table = self.read_file()
        self._table.update(table)
        return len(table)

    async def read_from_broker(self, mq: MessageQueue) -> int:
        """The offset stored in the file (>= 0), -1 when it has none; also kept in memory.

        Named like :meth:`RemoteOffsetStore.read_from_broker` so both satisfy ``OffsetStore``.

        Raises:
            OffsetStoreError: the file cannot be read or neither it nor its ``.bak`` parses.
        """
        offset = await self.read_persisted(mq)
        if offset >= 0:
            self.update(mq, offset, increase_only=False)
        return offset

    async def read_persisted(self, mq: MessageQueue) -> int:
        """The offset stored in the file (>= 0), -1 when it has none; the table in memory is untouched.

        Raises:
            OffsetStoreError: the file cannot be read or neither it nor its ``.bak`` parses.
        """
        table = await trio.to_thread.run_sync(self.read_file)
        return table.get(mq, -1)

    def write_file(self, table: dict[MessageQueue, int]) -> None:
        """Replace the file atomically with ``table``, keeping the previous file as ``.bak``; blocking.

        Raises:
            OffsetStoreError: the directory or file could not be written.
        """
        data = encode_table(self.client_id, self.group, table)
        directory = self.path.parent
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(prefix=FILE_NAME + ".", suffix=".tmp", dir=directory)
        except OSError as exc:
            raise OffsetStoreError(self.path, f"cannot be written: {exc}") from exc
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            if self.path.exists():
                self._keep_backup(directory)
            os.replace(tmp, self.path)
            _fsync_directory(directory)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise OffsetStoreError(self.path, f"cannot be written: {exc}") from exc

    def _keep_backup(self, directory: Path) -> None:
        # A hard link keeps offsets.json in place until os.replace swaps in the new one; copy where
        # the file system has no hard links.
        bak_tmp = directory / f"{FILE_NAME}.bak.{secrets.token_hex(6)}.tmp"
        try:
            try:
                os.link(self.path, bak_tmp)
            except OSError:
                shutil.copyfile(self.path, bak_tmp)
            os.replace(bak_tmp, self.backup_path)
        except OSError:
            with contextlib.suppress(OSError):
                bak_tmp.unlink()
            raise

    async def persist(self, mq: MessageQueue) -> None:
        """Write the file now (it holds every offset in memory, ``mq``'s included).

        Raises:
            OffsetStoreError: the file could not be written.
        """
        if mq not in self._table:
            return
        await self._write()

    async def persist_all(
        self,
        owned: Iterable[MessageQueue] | None = None,
        *,
        acknowledged: bool = False,
        hold: Collection[MessageQueue] = (),
    ) -> int:
        """Write every offset in memory to the file, first dropping entries of queues not owned.

        The write is done when this returns, ``acknowledged`` or not. ``hold`` changes nothing
        here: the file is written whole, and in order (a lock), so no older write lands last.

        A failed write is logged, not raised (the next round retries), as the remote store does.

        Returns:
            How many offsets were written (0 when the write failed).
        """
        if owned is not None:
            keep = set(owned)
            for mq in [mq for mq in self._table if mq not in keep]:
                del self._table[mq]
        try:
            return await self._write()
        except OffsetStoreError as exc:
            log.warning("persisting the offsets of group %s failed: %s", self.group, exc)
            return 0

    async def _write(self) -> int:
        async with self._write_lock:
            # The snapshot is taken under the lock, so a later write never loses to an earlier one.
            table = dict(self._table)
            await trio.to_thread.run_sync(self.write_file, table)
            return len(table)


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
