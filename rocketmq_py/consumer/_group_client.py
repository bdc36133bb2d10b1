"""What the push and the lite pull consumer both do as members of a group, as plain functions.

Each takes the client instance (or its API / routes) and the consumer's settings as arguments, so
either consumer calls it the same way:

- :func:`open_offset_store`: offsets on the brokers (CLUSTERING) or in a local file (BROADCASTING);
- :func:`allocate_topic`: a topic's readable queues and the group's client ids, both sorted, and
  this member's share of the queues (BROADCASTING: every queue);
- :func:`start_offset`: where a newly owned queue starts (the committed offset, else
  ``consume_from_where`` resolved against the broker);
- :func:`refresh_quietly`: a route refresh whose failure is only logged;
- :func:`next_subscription`: a (re-)subscription whose version the broker takes as newer;
- :func:`java_strategy_class` and :func:`process_queue_info`: the parts of GET_CONSUMER_RUNNING_INFO
  built the same way by both.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from os import PathLike

import trio

from rocketmq_py._client._instance import ClientInstance
from rocketmq_py._client._route_service import RouteService
from rocketmq_py._client._timestamp import offset_for_timestamp
from rocketmq_py.consumer._allocate import AllocateStrategy, sort_consumers, sort_queues
from rocketmq_py.consumer._local_offset_store import LocalOffsetStore
from rocketmq_py.consumer._offset_store import RemoteOffsetStore
from rocketmq_py.consumer._offset_store_api import OffsetStore
from rocketmq_py.consumer._process_queue import ProcessQueue
from rocketmq_py.consumer._start_offset import StartFrom, compute_pull_from_where
from rocketmq_py.errors import RocketMQError, StateError
from rocketmq_py.protocol import (
    ConsumeFromWhere,
    ExpressionType,
    MessageQueue,
    ProcessQueueInfo,
    SubscriptionData,
    build_subscription_data,
)

__all__ = [
    "Allocation",
    "allocate_topic",
    "find_consumer_ids",
    "java_strategy_class",
    "next_subscription",
    "open_offset_store",
    "process_queue_info",
    "refresh_quietly",
    "start_offset",
]

log = logging.getLogger("rocketmq_py.consumer")

_JAVA_STRATEGY_PACKAGE = "org.apache.rocketmq.client.consumer.rebalance"
#: Our strategy names -> the Java classes running info names (``allocateMessageQueueStrategy``).
_JAVA_STRATEGY_CLASSES = {
    "AVG": "AllocateMessageQueueAveragely",
    "AVG_BY_CIRCLE": "AllocateMessageQueueAveragelyByCircle",
    "CONSISTENT_HASH": "AllocateMessageQueueConsistentHash",
    "CONFIG": "AllocateMessageQueueByConfig",
    "MACHINE_ROOM": "AllocateMessageQueueByMachineRoom",
}


async def open_offset_store(
    instance: ClientInstance,
    group: str,
    *,
    broadcasting: bool,
    directory: str | PathLike[str] | None,
) -> OffsetStore:
    """The group's offset store: the brokers', or (broadcasting) a local file loaded now."""
    if not broadcasting:
        return RemoteOffsetStore(instance.api, instance.routes, group)
    store = LocalOffsetStore(group, instance.client_id, directory=directory)
    await trio.to_thread.run_sync(store.load)
    return store


async def find_consumer_ids(instance: ClientInstance, group: str, topic: str) -> list[str]:
    """The group's client ids, from one broker (chosen at random) of ``topic``'s cached route."""
    route = instance.routes.cached_route(topic)
    brokers = [b for b in (route.broker_datas if route else ()) if b.broker_addrs]
    if not brokers:
        return []
    broker = random.choice(brokers)
    address = broker.broker_addrs.get(0) or next(iter(broker.broker_addrs.values()))
    return await instance.api.get_consumer_list(address, group)


@dataclass(frozen=True, slots=True)
class Allocation:
    """One topic's rebalance input and this member's share.

    Attributes:
        mq_all: the readable queues, sorted.
        cid_all: the group's client ids, sorted (BROADCASTING: this client only; empty when
            there are no queues or the brokers list no member).
        allocated: this member's queues (empty when ``mq_all`` or ``cid_all`` is).
    """

    mq_all: list[MessageQueue]
    cid_all: list[str]
    allocated: set[MessageQueue]


async def allocate_topic(
    instance: ClientInstance,
    group: str,
    topic: str,
    strategy: AllocateStrategy,
    *,
    broadcasting: bool,
) -> Allocation | None:
    """This member's queues of ``topic``; ``None`` (logged) while the topic has no route.

    Raises:
        RocketMQError: asking a broker for the group's members failed.
    """
    try:
        mq_all = sort_queues(await instance.routes.subscribe_queues(topic))
    except RocketMQError as exc:
        log.debug("%s: no route for %s yet: %s", group, topic, exc)
        return None
    if broadcasting:
        return Allocation(mq_all, [instance.client_id], set(mq_all))
    cid_all = sort_consumers(await find_consumer_ids(instance, group, topic)) if mq_all else []
    if not mq_all or not cid_all:
        return Allocation(mq_all, cid_all, set())
    return Allocation(mq_all, cid_all, set(strategy.allocate(group, instance.client_id, mq_all, cid_all)))


async def start_offset(
    instance: ClientInstance,
    offsets: OffsetStore,
    group: str,
    mq: MessageQueue,
    consume_from_where: ConsumeFromWhere,
    consume_timestamp_ms: int | None,
) -> tuple[int, bool]:
    """Where a newly owned queue starts, and whether that is the committed offset.

    A failed read of the committed offset counts as none (logged); then ``consume_from_where``
    decides, asking the queue's master for its max offset or the offset of a timestamp.

    Raises:
        RocketMQError: the master could not be asked.
        StateError: the decision has no offset (none happens: the decision always names an offset here).
    """
    try:
        stored = await offsets.read_from_broker(mq)
    except RocketMQError as exc:
        log.warning("%s: reading the offset of %s failed: %s", group, mq, exc)
        stored = -2
    decision = compute_pull_from_where(
        consume_from_where, mq.topic, stored, consume_timestamp_ms=consume_timestamp_ms
    )
    if decision.start_from is StartFrom.STORED:
        return decision.offset, True
    if decision.start_from is StartFrom.ZERO:
        return 0, False
    api = instance.api
    address = await instance.routes.require_master(mq.topic, mq.broker_name)
    if decision.start_from is StartFrom.MAX_OFFSET:
        return await api.get_max_offset(address, mq.topic, mq.queue_id, mq.broker_name), False
    if decision.start_from is StartFrom.TIMESTAMP:
        return await offset_for_timestamp(api, address, mq, decision.timestamp_ms, group=group), False
    raise StateError(f"{mq}: {decision.reason}")


def next_subscription(
    old: SubscriptionData | None, topic: str, expression: str, kind: ExpressionType
) -> SubscriptionData:
    """The subscription to register for ``topic``; its version is the time in ms, above ``old``'s.

    The broker keeps a registered subscription unless the new subVersion is greater, so two
    subscribes within one millisecond still give strictly increasing versions.
    """
    version = time.time_ns() // 1_000_000
    if old is not None and version <= old.sub_version:
        version = old.sub_version + 1
    return build_subscription_data(topic, expression, sub_version=version, expression_type=kind)


async def refresh_quietly(routes: RouteService, topic: str) -> None:
    """Refresh ``topic``'s route; a failure is only logged (the caller retries later)."""
    try:
        await routes.update(topic)
    except RocketMQError as exc:
        log.debug("route refresh of %s failed: %s", topic, exc)


def java_strategy_class(strategy: AllocateStrategy) -> str:
    """The Java class running info names for ``strategy`` (our name when Java has no such class)."""
    java_class = _JAVA_STRATEGY_CLASSES.get(strategy.name)
    return f"{_JAVA_STRATEGY_PACKAGE}.{java_class}" if java_class else strategy.name


def process_queue_info(
    pq: ProcessQueue, commit_offset: int, *, now: float, wall_ms: float, dropped: bool | None = None
) -> ProcessQueueInfo:
    """One queue's line of running info (``mqTable``), Java ``ProcessQueue.fillProcessQueueInfo``.

    Args:
        pq: the queue's cache.
        commit_offset: the offset the consumer would commit (in memory).
        now: ``pq``'s clock now; ``wall_ms``: epoch ms now (the timestamps are converted).
        dropped: overrides ``pq.dropped`` when the consumer tracks it elsewhere.
    """
    info = pq.statistics()

    def epoch_ms(clock: float) -> int:
        return int(wall_ms - (now - clock) * 1000)

    return ProcessQueueInfo(
        commit_offset=commit_offset,
        cached_msg_min_offset=max(info.min_offset, 0),
        cached_msg_max_offset=max(info.max_offset, 0),
        cached_msg_count=info.msg_count,
        cached_msg_size_in_mib=info.msg_size // (1024 * 1024),
        locked=info.locked,
        try_unlock_times=info.try_unlock_times,
        last_lock_timestamp=epoch_ms(info.last_lock_time),
        dropped=info.dropped if dropped is None else dropped,
        last_pull_timestamp=epoch_ms(info.last_pull_time),
        last_consume_timestamp=epoch_ms(info.last_consume_time),
    )
