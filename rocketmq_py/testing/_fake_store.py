"""Placeholder (filled in below)."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rocketmq_py.testing._fake_broker import BrokerHandler, FakeBroker


@dataclass(frozen=True, slots=True)
class StoredEntry:
    topic: str


class FakeStore:
    def __init__(self, broker: FakeBroker) -> None:
        self.queues: dict[tuple[str, int], list[StoredEntry]] = {}

    def install(self, handlers: MutableMapping[int, BrokerHandler]) -> None:
        pass

    def add_topic(self, topic: str, *, queues: int, perm: int) -> None:
        pass

    def append(self, topic: str, queue_id: int, **kw: Any) -> None:
        pass
