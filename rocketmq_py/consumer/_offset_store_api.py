"""What a consumer needs from an offset store, whoever keeps the offsets.

Clustering consumers keep their offsets on the brokers (:class:`RemoteOffsetStore`), broadcasting
consumers in a local file (:class:`LocalOffsetStore`); the consumers talk to either through
:class:`OffsetStore` (Java's ``OffsetStore`` interface).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, Protocol

from rocketmq_py.protocol import MessageQueue

__all__ = ["OffsetStore"]


class OffsetStore(Protocol):
    """Consume offsets of one group: an in-memory table plus the place it is persisted to."""

    group: str

    def get(self, mq: MessageQueue) -> int:
        """The offset in memory (-1 when none)."""
        ...

    def update(self, mq: MessageQueue, offset: int, *, increase_only: bool = True) -> None:
        """Set the offset in memory (negative offsets are ignored)."""
        ...

    def remove(self, mq: MessageQueue) -> None:
        """Forget a queue's offset in memory."""
        ...

    def snapshot(self) -> dict[MessageQueue, int]:
        """A copy of the in-memory table."""
        ...

    async def read_from_broker(self, mq: MessageQueue) -> int:
        """The persisted offset (>= 0) or -1 when none; also kept in memory.

        The name is the remote store's; the local store reads its file.
        """
        ...

    async def read_persisted(self, mq: MessageQueue) -> int:
        """The persisted offset (>= 0) or -1 when none; the offset in memory is left as it is."""
        ...

    async def persist(self, mq: MessageQueue) -> None:
        """Persist one queue's offset now, synchronously."""
        ...

    async def persist_all(
        self,
        owned: Iterable[MessageQueue] | None = None,
        *,
        acknowledged: bool = False,
        hold: Collection[MessageQueue] = (),
    ) -> int:
        """Persist every offset, first dropping entries of queues not in ``owned`` (when given).

        ``hold``: queues whose offset stays in memory but is not persisted now (a dropped queue
        whose offset the path that dropped it commits: a periodic commit of its older offset could
        reach the broker after that one).

        ``acknowledged``: return only once every offset is stored (by default a remote store sends
        them without waiting for answers).

        Returns:
            How many offsets were persisted.
        """
        ...


if TYPE_CHECKING:  # mypy proves both stores satisfy the protocol.
    from rocketmq_py.consumer._local_offset_store import LocalOffsetStore
    from rocketmq_py.consumer._offset_store import RemoteOffsetStore

    def _conforms(remote: RemoteOffsetStore, local: LocalOffsetStore) -> tuple[OffsetStore, OffsetStore]:
        return remote, local
