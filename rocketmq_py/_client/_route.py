"""Route decisions: which queues a topic's route offers for sending and for consuming.

Pure functions over :class:`~rocketmq_py.protocol.TopicRouteData`, no I/O (protocol.md §6):

* :func:`publish_info` -- the queues a producer may send to. An order topic (``orderTopicConf``
  ``"brokerA:4;brokerB:4"``) lists its queues in the configured order; otherwise the queue datas
  are taken in broker-name order and a broker contributes ``0..writeQueueNums-1`` only if it is
  writable and the route knows its master (broker id 0): a send can only go to a master.
* :func:`subscribe_queues` -- the queues a consumer may pull from: every readable broker's
  ``0..readQueueNums-1``, master or not (pulls may be served by a slave).
* :func:`route_changed` -- whether a freshly fetched route differs from the cached one, ignoring
  the order in which the name server listed brokers; the route service rebuilds its tables only
  on a change, so a producer's send index survives an unchanged refresh.
* :func:`default_topic_route` -- the ``TBW102`` route clamped to the producer's default queue
  count, used to send to a topic the name server does not know yet (auto-create).
* :func:`broker_addresses`, :func:`master_address`, :func:`find_broker_address` -- the broker
  address table and the Java lookup with its fallbacks (the asked id, the next slave, any).
* :func:`drop_offline_brokers` -- the table without the addresses no cached route names any more
  (Java ``MQClientInstance.cleanOfflineBroker``).

Static topics (``topicQueueMappingByBroker``, 5.x) are not interpreted: their route is read
through the queue datas like any other topic's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Final

from rocketmq_py.errors import MalformedBody
from rocketmq_py.protocol._bodies import BrokerData, MessageQueue, QueueData, TopicRouteData

__all__ = [
    "AUTO_CREATE_TOPIC_KEY",
    "DEFAULT_TOPIC_QUEUE_NUMS",
    "MASTER_ID",
    "PERM_INHERIT",
    "PERM_PRIORITY",
    "PERM_READ",
    "PERM_WRITE",
    "FoundBroker",
    "TopicPublishInfo",
    "broker_addresses",
    "default_topic_route",
    "drop_offline_brokers",
    "find_broker_address",
    "master_address",
    "publish_info",
    "route_changed",
    "serving_brokers",
    "sorted_queues",
    "subscribe_queues",
]

# PermName bits (Java ``PermName``).
PERM_PRIORITY: Final = 8
PERM_READ: Final = 4
PERM_WRITE: Final = 2
PERM_INHERIT: Final = 1

#: The broker id of a master (Java ``MixAll.MASTER_ID``); slaves have ids >= 1.
MASTER_ID: Final = 0

#: The topic whose route stands in for topics the name server does not know yet
#: (Java ``TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC`` / ``DefaultMQProducer.createTopicKey``).
AUTO_CREATE_TOPIC_KEY: Final = "TBW102"

#: Queues per broker for an auto-created topic (Java ``DefaultMQProducer.defaultTopicQueueNums`` = 4).
DEFAULT_TOPIC_QUEUE_NUMS: Final = 4


@dataclass(frozen=True, slots=True)
class TopicPublishInfo:
    """The queues a producer may send a topic's messages to, in selection order.

    Attributes:
        topic: the topic.
        queues: the writable queues (see :func:`publish_info`).
        order_topic: the route carried an ``orderTopicConf``.
        route: the route the queues were computed from (``None`` when there is none).
    """

    topic: str
    queues: tuple[MessageQueue, ...] = ()
    order_topic: bool = False
    route: TopicRouteData | None = None

    @property
    def have_queues(self) -> bool:
        """At least one queue to send to."""
        return bool(self.queues)


def publish_info(topic: str, route: TopicRouteData) -> TopicPublishInfo:
    """The queues of ``topic`` a producer may send to (Java ``topicRouteData2TopicPublishInfo``).

    Args:
        topic: the topic the queues are named for (with a ``TBW102`` route, the new topic).
        route: the topic's route.

    Returns:
        With a non-empty ``orderTopicConf``: ``(topic, broker, 0..n-1)`` for each ``broker:n``
        entry, in the configured order, and ``order_topic`` true. Otherwise: for each queue data in
        broker-name order that is writable and whose broker has a master address,
        ``(topic, broker, 0..writeQueueNums-1)``.

    Raises:
        MalformedBody: an ``orderTopicConf`` entry is not ``name:count``.
    """
    if route.order_topic_conf:
        queues = [
            MessageQueue(topic, broker, queue_id)
            for broker, count in _parse_order_conf(route.order_topic_conf)
            for queue_id in range(count)
        ]
        return TopicPublishInfo(topic, tuple(queues), order_topic=True, route=route)
    brokers = _broker_datas_by_name(route)
    queues = []
    for data in sorted(route.queue_datas, key=_by_broker_name):
        if not data.perm & PERM_WRITE:
            continue
        broker = brokers.get(data.broker_name)
        if broker is None or MASTER_ID not in broker.broker_addrs:
            continue
        queues.extend(MessageQueue(topic, data.broker_name, i) for i in range(data.write_queue_nums))
    return TopicPublishInfo(topic, tuple(queues), order_topic=False, route=route)


def _parse_order_conf(conf: str) -> list[tuple[str, int]]:
    entries = []
    for entry in conf.split(";"):
        if not entry:  # Java's split drops trailing empties; a stray ";;" is as harmless
            continue
        broker, sep, count = entry.partition(":")
        if not sep or not broker or not count.isdigit():
            raise MalformedBody(f"orderTopicConf {conf!r}: entry {entry!r} is not 'brokerName:queueCount'")
        entries.append((broker, int(count)))
    return entries


def _by_broker_name(data: QueueData | BrokerData) -> str:
    return data.broker_name


def _broker_datas_by_name(route: TopicRouteData) -> dict[str, BrokerData]:
    found: dict[str, BrokerData] = {}
    for data in route.broker_datas:
        found.setdefault(data.broker_name, data)  # Java takes the first match
    return found


def subscribe_queues(topic: str, route: TopicRouteData) -> frozenset[MessageQueue]:
    """The queues of ``topic`` a consumer may pull from (Java ``topicRouteData2TopicSubscribeInfo``).

    Args:
        topic: the topic the queues are named for.
        route: the topic's route.

    Returns:
        ``(topic, broker, 0..readQueueNums-1)`` for every readable queue data; no master needed.
    """
    return frozenset(
        MessageQueue(topic, data.broker_name, queue_id)
        for data in route.queue_datas
        if data.perm & PERM_READ
        for queue_id in range(data.read_queue_nums)
    )


def serving_brokers(route: TopicRouteData) -> frozenset[str]:
    """The names of the brokers that hold queues of ``route``."""
    return frozenset(q.broker_name for q in route.queue_datas)


def sorted_queues(queues: Iterable[MessageQueue]) -> tuple[MessageQueue, ...]:
    """``queues`` in Java's ``MessageQueue`` order: topic, broker name, queue id (protocol.md §9).

    Args:
        queues: any iterable of queues, e.g. :func:`subscribe_queues`.

    Returns:
        The queues sorted, as the allocation strategies expect ``mqAll``.
    """
    return tuple(sorted(queues))


def route_changed(old: TopicRouteData | None, new: TopicRouteData) -> bool:
    """Whether ``new`` differs from the cached ``old`` route (Java ``topicRouteDataChanged``).

    Both are compared with their queue datas and broker datas sorted by broker name, field by
    field, including each broker's address map: a master moving to another address is a change,
    the name server listing brokers in another order is not. The route service must still
    rebuild a topic's tables when its publish/subscribe info is missing, even if unchanged.

    Args:
        old: the cached route, or ``None`` if there is none yet.
        new: the route just fetched.

    Returns:
        ``True`` if there was no cached route or the two differ.
    """
    if old is None:
        return True
    return _normalised(old) != _normalised(new)


def _normalised(route: TopicRouteData) -> TopicRouteData:
    # Sorting on every field (not just the name) keeps the comparison order-insensitive even for
    # a route that lists the same broker twice.
    return replace(
        route,
        queue_datas=tuple(
            sorted(
                route.queue_datas,
                key=lambda d: (
                    d.broker_name,
                    d.read_queue_nums,
                    d.write_queue_nums,
                    d.perm,
                    d.topic_sys_flag,
                ),
            )
        ),
        broker_datas=tuple(
            sorted(
                route.broker_datas,
                key=lambda d: (
                    d.broker_name,
                    d.cluster,
                    sorted(d.broker_addrs.items()),
                    d.zone_name or "",
                    d.enable_acting_master,
                ),
            )
        ),
    )


def default_topic_route(
    route: TopicRouteData, default_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS
) -> TopicRouteData:
    """The ``TBW102`` route, clamped for sending to a topic that does not exist yet.

    Every queue data gets ``read = write = min(default_queue_nums, readQueueNums)``, as Java's
    ``updateTopicRouteInfoFromNameServer(topic, isDefault=true, producer)`` does; the broker then
    auto-creates the topic with that many queues on the first send.

    Args:
        route: the route of :data:`AUTO_CREATE_TOPIC_KEY`.
        default_queue_nums: the producer's ``defaultTopicQueueNums``.

    Returns:
        A copy of ``route`` with the queue counts clamped.
    """
    return replace(
        route,
        queue_datas=tuple(
            replace(data, read_queue_nums=nums, write_queue_nums=nums)
            for data in route.queue_datas
            for nums in (min(default_queue_nums, data.read_queue_nums),)
        ),
    )


def broker_addresses(route: TopicRouteData) -> dict[str, dict[int, str]]:
    """The route's broker address table: broker name -> {broker id: ``"host:port"``}.

    Args:
        route: a topic route.

    Returns:
        A fresh table (a later broker data with the same name replaces an earlier one, as the
        Java client's ``brokerAddrTable.put`` does).
    """
    return {data.broker_name: dict(data.broker_addrs) for data in route.broker_datas}


def master_addresses(route: TopicRouteData) -> dict[str, str]:
    """Each broker name of ``route`` that has a master, with the master's address."""
    found = {data.broker_name: master_address(data.broker_addrs) for data in route.broker_datas}
    return {name: address for name, address in found.items() if address is not None}


def master_address(addrs: Mapping[int, str]) -> str | None:
    """The master's address (broker id 0) in one broker's address map, or ``None``.

    Args:
        addrs: one broker's ``{broker id: address}`` map.

    Returns:
        The address of id :data:`MASTER_ID`, or ``None`` when the broker has no master.
    """
    return addrs.get(MASTER_ID)


@dataclass(frozen=True, slots=True)
class FoundBroker:
    """An address found by :func:`find_broker_address` (Java ``FindBrokerResult``).

    Attributes:
        address: ``"host:port"``.
        broker_id: the id it is registered under.
    """

    address: str
    broker_id: int

    @property
    def slave(self) -> bool:
        """The address is not the master's."""
        return self.broker_id != MASTER_ID


def find_broker_address(
    table: Mapping[str, Mapping[int, str]],
    broker_name: str,
    broker_id: int = MASTER_ID,
    only_this: bool = False,
) -> FoundBroker | None:
    """Look up a broker's address with Java's fallbacks (``findBrokerAddressInSubscribe``).

    Tries ``broker_id``; for a slave id, then ``broker_id + 1``; then, unless ``only_this``,
    any address of the broker (the lowest id, which is what iterating Java's ``HashMap`` of
    small ids yields: the master if there is one).

    Args:
        table: the broker address table (see :func:`broker_addresses`).
        broker_name: the broker group.
        broker_id: the preferred id (:data:`MASTER_ID`, or a slave the broker suggested).
        only_this: do not fall back to another id.

    Returns:
        The address found, or ``None`` if the broker is unknown or nothing matches.
    """
    addrs = table.get(broker_name)
    if not addrs:
        return None
    candidates = [broker_id]
    if broker_id != MASTER_ID:
        candidates.append(broker_id + 1)
    for candidate in candidates:
        address = addrs.get(candidate)
        if address is not None:
            return FoundBroker(address, candidate)
    if only_this:
        return None
    lowest = min(addrs)
    return FoundBroker(addrs[lowest], lowest)


def drop_offline_brokers(
    table: Mapping[str, Mapping[int, str]], routes: Iterable[TopicRouteData]
) -> tuple[dict[str, dict[int, str]], set[str]]:
    """The broker address table without the addresses that no route names (Java ``cleanOfflineBroker``).

    As in Java, an address stays while any route names it (under any broker name), and a broker
    with no address left goes.

    Args:
        table: the broker address table (not modified).
        routes: every cached route.

    Returns:
        The new table, and the addresses dropped from it.
    """
    live = {
        address for route in routes for data in route.broker_datas for address in data.broker_addrs.values()
    }
    kept: dict[str, dict[int, str]] = {}
    offline: set[str] = set()
    for name, addrs in table.items():
        still = {broker_id: address for broker_id, address in addrs.items() if address in live}
        offline.update(address for address in addrs.values() if address not in live)
        if still:
            kept[name] = still
    return kept, offline
