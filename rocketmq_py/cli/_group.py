"""``group inspect``: gather a group's members and their running info from the brokers.

1. The masters: those of the topic's route when a topic is given, else every master the NameServer
   knows (GET_BROKER_CLUSTER_INFO). The cluster table is asked for either way: a 5.x Proxy given
   as the NameServer refuses it (:class:`~rocketmq_py.errors.UnsupportedByProxy`), before its
   consumer list, which holds only the clients connected to that Proxy, and its refusal of
   GET_CONSUMER_RUNNING_INFO could make a report of members that "did not answer".
2. The member ids: GET_CONSUMER_LIST_BY_GROUP (38) on every master, merged (a member registers with
   each broker by heartbeat; a broker may lag a heartbeat behind).
3. Each member's running info: GET_CONSUMER_RUNNING_INFO (307) with ``consumerGroup`` and
   ``clientId`` to a master, which forwards it to the member's connection and returns its answer;
   the next master is tried when one fails (e.g. the member is not connected to it).
4. The topics (the given one, or every topic a member subscribes to) and their readable queues.

The comparison itself is :func:`rocketmq_py.cli._inspect.inspect_group`.
"""

from __future__ import annotations

import trio

from rocketmq_py.cli._inspect import GroupReport, inspect_group
from rocketmq_py.errors import BrokerError, RocketMQError, RouteNotFound, TransportError
from rocketmq_py.lowlevel import MASTER_ID, AdminCalls, subscribe_queues
from rocketmq_py.protocol import (
    ConsumerRunningInfo,
    MessageQueue,
)

__all__ = ["collect_group", "consumer_ids", "group_masters"]


async def group_masters(admin: AdminCalls, topic: str | None) -> dict[str, str]:
    """Broker name -> master address: the topic's brokers, or every broker the NameServer knows.

    Raises:
        UnsupportedByProxy: the NameServer given is a 5.x Proxy (see the module docstring).
        RouteNotFound: the given topic has no route.
    """
    info = await admin.get_broker_cluster_info()
    if topic is not None:
        route = await admin.route(topic)
        return {
            b.broker_name: b.broker_addrs[MASTER_ID]
            for b in route.broker_datas
            if MASTER_ID in b.broker_addrs
        }
    return {
        name: b.broker_addrs[MASTER_ID] for name, b in info.brokers.items() if MASTER_ID in b.broker_addrs
    }


async def consumer_ids(admin: AdminCalls, group: str, addresses: list[str]) -> set[str]:
    """The group's client ids according to every broker in ``addresses`` (merged).

    A broker with no member answers SYSTEM_ERROR ("no consumer for this group"), which counts as none.

    Raises:
        TransportError: no broker could be reached.
    """
    ids: set[str] = set()
    reached = 0
    last: TransportError | None = None
    for address in addresses:
        try:
            ids.update(await admin.api.get_consumer_list(address, group))
            reached += 1
        except BrokerError:
            reached += 1
        except TransportError as exc:
            last = exc
    if not reached and last is not None:
        raise last
    return ids


async def collect_group(admin: AdminCalls, group: str, topic: str | None) -> GroupReport:
    """Ask the brokers about ``group`` (see the module docstring) and compare.

    Raises:
        UnsupportedByProxy: the NameServer given is a 5.x Proxy.
        RouteNotFound: the given topic has no route.
        TransportError: no broker could be reached.
    """
    masters = await group_masters(admin, topic)
    addresses = [masters[name] for name in sorted(masters)]
    ids = await consumer_ids(admin, group, addresses)
    infos: dict[str, ConsumerRunningInfo | str] = {}

    async def ask(client_id: str) -> None:
        try:
            infos[client_id] = await admin.running_info(group, client_id, addresses)
        except RocketMQError as exc:  # the last broker's answer: say which one it was
            infos[client_id] = f"{addresses[-1]}: {exc}" if addresses else str(exc)

    async with trio.open_nursery() as nursery:
        for client_id in sorted(ids):
            nursery.start_soon(ask, client_id)
    if topic is not None:
        topics = {topic}
    else:
        topics = {
            sub.topic for info in infos.values() if not isinstance(info, str) for sub in info.subscription_set
        }
    topic_queues: dict[str, frozenset[MessageQueue]] = {}
    for name in sorted(topics):
        try:
            topic_queues[name] = subscribe_queues(name, await admin.route(name))
        except RouteNotFound:
            topic_queues[name] = frozenset()
    return inspect_group(group, ids, infos, topic_queues)
