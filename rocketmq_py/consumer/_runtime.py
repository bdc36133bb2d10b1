"""What a started push consumer runs on, handed to its parts; and what its consume services share.

:class:`PushRuntime` exists only while the consumer is started (it is built once the client
instance, the offset store, the inner producer and the service nursery are open), so a part
holding one never asks "am I running?". The parts (consume services, pull loops, assignment) get
it with the :class:`~rocketmq_py.consumer._push_settings.PushSettings` and the
:class:`~rocketmq_py.consumer._queue_table.QueueTable`, never the public consumer; what they must
ask of the group member (rebalance again, a new subscription version) are callables here.

:class:`ConsumeService` is what the pull loops and the assignment use of the service consuming
pulled queues: the concurrent and the orderly service implement it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import trio

from rocketmq_py._client._api import RemotingApi
from rocketmq_py._client._instance import ClientInstance
from rocketmq_py._client._route_service import RouteService
from rocketmq_py.consumer._filter import MessageFilter
from rocketmq_py.consumer._offset_store_api import OffsetStore
from rocketmq_py.consumer._queue_state import QueueState
from rocketmq_py.consumer._statistics import ConsumeCounters
from rocketmq_py.hooks import Hook
from rocketmq_py.producer._producer import Producer
from rocketmq_py.protocol import MessageExt, MessageQueue, SubscriptionData

__all__ = ["ConsumeService", "PushRuntime"]


@dataclass(eq=False, kw_only=True)
class PushRuntime:
    """A started push consumer's client, offsets, nursery, hooks and counters."""

    instance: ClientInstance
    offsets: OffsetStore
    #: The service nursery: pull loops, consume tasks and late handoffs run here.
    nursery: trio.Nursery
    #: Re-sends failed messages to the retry topic (or the DLQ) through the consumer's own client.
    inner_producer: Producer
    #: Called around each consumption; replaced (not changed) when a hook is registered.
    hooks: list[Hook]
    counters: ConsumeCounters
    #: The group member's subscriptions and their filters, by wire topic (live views).
    subscriptions: Mapping[str, SubscriptionData]
    filters: Mapping[str, MessageFilter]
    #: Rebalance every topic now.
    request_rebalance: Callable[[], None]
    #: A round could not take every queue it was given (orderly locks): the next one in 1 s.
    retry_rebalance: Callable[[], None]
    #: A newer version of a topic's subscription (after a change of its queues, as Java).
    renew_subscription: Callable[[str], None]
    #: Commits go one at a time: a periodic commit never writes an older offset after a handoff's.
    persist_lock: trio.Lock = field(default_factory=trio.Lock)
    #: The run's trio token, for what other threads read of the consumer (the metrics' gauges).
    token: trio.lowlevel.TrioToken = field(default_factory=trio.lowlevel.current_trio_token)

    @property
    def api(self) -> RemotingApi:
        """The typed broker calls."""
        return self.instance.api

    @property
    def routes(self) -> RouteService:
        """Topic routes and broker addresses."""
        return self.instance.routes

    @property
    def client_id(self) -> str:
        """``ip@instance``: how the brokers know this member."""
        return self.instance.client_id


class ConsumeService(Protocol):
    """The service consuming what the pull loops pull (concurrent or orderly)."""

    def start(self, nursery: trio.Nursery) -> None:
        """Start the service's own tasks in ``nursery``."""

    def start_queue(self, nursery: trio.Nursery, state: QueueState) -> None:
        """A queue was taken (its pull loop starts now): start what consumes it, if anything."""

    async def hand_over(self, state: QueueState, msgs: Sequence[MessageExt]) -> None:
        """``msgs`` were just cached by ``state``'s pull loop: consume them."""

    async def lock(self, queues: Iterable[MessageQueue]) -> set[MessageQueue]:
        """Before queues are taken: those of ``queues`` this member may consume now."""

    async def release(self, queues: Sequence[MessageQueue]) -> None:
        """The end of a handoff of ``queues`` (after their commit): free what holds them."""

    def running_calls(self) -> list[tuple[MessageQueue, float]]:
        """The queue and start time (trio clock) of each listener call running now (health)."""
