"""The public Admin client: the cluster, topics, consumer groups and messages, as ``mqadmin`` sees them.

:class:`Admin` opens a connection pool of its own (no heartbeat, no group: it is not a member of
anything) and asks the NameServers and brokers directly, with the requests ``mqadmin`` sends:

=====================================  ==========================================================
method                                 requests (to whom)
=====================================  ==========================================================
``brokers()``                          GET_BROKER_CLUSTER_INFO (a NameServer)
``topics()``                           GET_ALL_TOPIC_LIST_FROM_NAMESERVER (a NameServer)
``route(topic)``                       GET_ROUTEINFO_BY_TOPIC (a NameServer)
``create_topic(...)``                  UPDATE_AND_CREATE_TOPIC (each master of the cluster)
``delete_topic(topic)``                DELETE_TOPIC_IN_BROKER (each master), DELETE_TOPIC_IN_NAMESRV
``topic_stats(topic)``                 GET_TOPIC_STATS_INFO (each master of the topic)
``group_progress(group)``              GET_CONSUME_STATS (each master of the group's retry topic)
``groups()``                           GET_ALL_SUBSCRIPTIONGROUP_CONFIG (each master)
``group_members(group)``               GET_CONSUMER_CONNECTION_LIST (those masters)
``running_info(group, client_id)``     GET_CONSUMER_RUNNING_INFO (a master, to the member); with
                                       ``group_progress(owners=True)``, to each member
``reset_offsets(group, topic, ms)``    INVOKE_BROKER_TO_RESET_OFFSET (each master of the topic);
                                       for a group with no member online on a broker that
                                       refuses it, the offsets found by time, committed directly
``message(msg_id)``                    VIEW_MESSAGE_BY_ID (the broker the offset id names)
``message_by_unique_key(topic, key)``  QUERY_MESSAGE, unique-key flag (each master of the topic)
``messages_by_key(topic, key)``        QUERY_MESSAGE (each master of the topic)
``consume_directly(group, id, msg)``   CONSUME_MESSAGE_DIRECTLY (the broker storing the message,
                                       which hands it to that member)
=====================================  ==========================================================

Answers are frozen dataclasses (:mod:`rocketmq_py.admin._results`); a broker's refusal is its
:class:`~rocketmq_py.errors.BrokerError`, unchanged. Through a 5.x Proxy, the calls the Proxy does
not serve raise :class:`~rocketmq_py.errors.UnsupportedByProxy` naming what to use instead.
"""

from __future__ import annotations

import ssl
from contextlib import AsyncExitStack
from dataclasses import replace
from types import TracebackType
from typing import Self

from rocketmq_py._client._api import RemotingApi
from rocketmq_py._client._config import DEFAULT_REQUEST_TIMEOUT, ClientConfig
from rocketmq_py._client._route import master_addresses
from rocketmq_py._transport import AclRPCHook, ConnectionPool, RPCHook
from rocketmq_py.admin import _groups, _messages
from rocketmq_py.admin._calls import DEFAULT_TOPIC_PERM
from rocketmq_py.admin._calls import AdminCalls as _Calls
from rocketmq_py.admin._messages import query, store_address
from rocketmq_py.admin._results import (
    BrokerInfo,
    GroupMember,
    GroupMembers,
    GroupProgress,
    QueueProgress,
    QueueStats,
)
from rocketmq_py.errors import (
    BrokerError,
    ConsumerNotOnline,
    RouteNotFound,
    StateError,
)
from rocketmq_py.protocol import (
    ConsumeMessageDirectlyResult,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    DeleteTopicRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
    GetTopicStatsInfoRequestHeader,
    MessageExt,
    MessageQueue,
    RequestCode,
    ResetOffsetBody,
    ResetOffsetRequestHeader,
    ResponseCode,
    SubscriptionGroupWrapper,
    TopicList,
    TopicRouteData,
    TopicStatsTable,
    decode_body,
    retry_topic,
)

__all__ = ["Admin"]

#: Messages one QUERY_MESSAGE returns at most, as ``mqadmin queryMsgByKey`` asks.
DEFAULT_MAX_MESSAGES = 64
#: Seconds ``create_topic`` waits for the route to show the new queues.
CREATE_WAIT = 30.0


class Admin:
    """Administration of a RocketMQ cluster: ``async with Admin(namesrv="127.0.0.1:9876") as admin``.

    Args:
        namesrv: ``host:port`` of the NameServers, ``;``-separated (default ``$ROCKETMQ_NAMESRV``),
            or a 5.x Proxy's remoting address.
        timeout: seconds per request.
        access_key: the ACL access key: every request is signed (with ``secret_key``).
        secret_key: the ACL secret key.
        security_token: an ACL STS token, sent with each signed request.
        ssl_context: TLS for every connection.

    Raises:
        InvalidOption: no NameServer given, or one that is not ``host:port``.
    """

    def __init__(
        self,
        namesrv: str | None = None,
        *,
        timeout: float = DEFAULT_REQUEST_TIMEOUT,
        access_key: str | None = None,
        secret_key: str | None = None,
        security_token: str | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.config = ClientConfig(
            namesrv=namesrv,
            request_timeout=timeout,
            access_key=access_key,
            secret_key=secret_key,
            security_token=security_token,
            ssl_context=ssl_context,
        )
        self.namesrv_addrs = self.config.namesrv_addrs()
        self._stack: AsyncExitStack | None = None
        self._calls: _Calls | None = None

    # --- lifecycle ---------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._stack is not None:
            raise StateError("this Admin is already open")
        config = self.config
        hooks: list[RPCHook] = []
        if config.access_key and config.secret_key:
            hooks.append(AclRPCHook(config.access_key, config.secret_key, config.security_token))
        stack = AsyncExitStack()
        pool = await stack.enter_async_context(ConnectionPool(ssl_context=config.ssl_context, hooks=hooks))
        self._calls = _Calls(RemotingApi(pool, timeout=config.request_timeout), self.namesrv_addrs)
        self._stack = stack
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        stack, self._stack, self._calls = self._stack, None, None
        if stack is None:
            return None
        return await stack.__aexit__(exc_type, exc, tb)

    async def aclose(self) -> None:
        """Close the connections (as leaving ``async with`` does); nothing if not open."""
        await self.__aexit__(None, None, None)

    @property
    def _admin(self) -> _Calls:
        if self._calls is None:
            raise StateError("the Admin is not open (use `async with`)")
        return self._calls

    # --- the cluster ---------------------------------------------------------------------------------

    async def brokers(self) -> list[BrokerInfo]:
        """Every broker process the NameServer knows, by cluster, name and id (``mqadmin clusterList``)."""
        info = await self._admin.get_broker_cluster_info()
        found: list[BrokerInfo] = []
        for cluster, names in sorted(info.clusters.items()):
            for name in names:
                broker = info.brokers.get(name)
                if broker is not None:
                    found.extend(
                        BrokerInfo(cluster, name, broker_id, address)
                        for broker_id, address in sorted(broker.broker_addrs.items())
                    )
        return found

    # --- topics ------------------------------------------------------------------------------------

    async def topics(self) -> list[str]:
        """Every topic the NameServer knows, system topics included, sorted (``mqadmin topicList``)."""
        admin = self._admin

        async def ask(address: str) -> list[str]:
            reply = await admin.call(address, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
            return sorted(decode_body(TopicList, reply.body).topic_list)

        return await admin._ask_namesrv(ask)

    async def route(self, topic: str) -> TopicRouteData:
        """``topic``'s route.

        Raises:
            RouteNotFound: the NameServer knows no such topic.
        """
        return await self._admin.route(topic)

    async def create_topic(
        self,
        topic: str,
        queues: int = 8,
        *,
        cluster: str | None = None,
        order: bool = False,
        perm: int = DEFAULT_TOPIC_PERM,
        wait: float | None = CREATE_WAIT,
    ) -> TopicRouteData | None:
        """Create (or update) ``topic`` with ``queues`` read and write queues on every master of ``cluster``
        (``mqadmin updateTopic``).

        Args:
            cluster: default: the only cluster the NameServer knows.
            order: an order topic (its ``broker:queues`` conf is registered with the NameServers).
            perm: 6 read and write, 4 read only, 2 write only.
            wait: seconds to wait until the route shows the queues (``None``: do not wait).

        Returns:
            The route showing the queues, or ``None`` when not waiting.

        Raises:
            ClientError: no such cluster, none chosen among several, or no master in it.
            BrokerError: a broker refused (e.g. the topic's name).
            RouteNotFound: the route did not show the queues within ``wait`` seconds.
        """
        admin = self._admin
        created = await admin.create_topic(topic, queues, cluster=cluster, order=order, perm=perm)
        if wait is None:
            return None
        return await admin.wait_for_route(
            topic, {item.broker_name: queues for item in created}, wait, created=created
        )

    async def delete_topic(self, topic: str, *, cluster: str | None = None) -> list[str]:
        """Delete ``topic`` from the masters that serve it (of ``cluster`` only, if given) and from
        every NameServer (``mqadmin deleteTopic``); returns the brokers it was deleted from.

        Raises:
            RouteNotFound: the NameServer knows no such topic.
            BrokerError: a broker or NameServer refused.
        """
        admin = self._admin
        found = master_addresses(await admin.route(topic))
        if cluster is not None:
            in_cluster = (await admin.get_broker_cluster_info()).masters(cluster)
            found = {name: addr for name, addr in found.items() if name in in_cluster}
        header = DeleteTopicRequestHeader(topic=topic)
        for name in sorted(found):
            await admin.call(found[name], RequestCode.DELETE_TOPIC_IN_BROKER, header)
        for address in self.namesrv_addrs:
            await admin.call(address, RequestCode.DELETE_TOPIC_IN_NAMESRV, header)
        return sorted(found)

    async def topic_stats(self, topic: str) -> list[QueueStats]:
        """Each queue of ``topic``: first and next offsets, the last message's store time
        (``mqadmin topicStatus``), in queue order.

        Raises:
            RouteNotFound: the NameServer knows no such topic.
        """
        admin = self._admin
        header = GetTopicStatsInfoRequestHeader(topic=topic)
        found: list[QueueStats] = []
        for _, address in sorted(master_addresses(await admin.route(topic)).items()):
            reply = await admin.call(address, RequestCode.GET_TOPIC_STATS_INFO, header)
            table = decode_body(TopicStatsTable, reply.body)
            found.extend(
                QueueStats(mq, o.min_offset, o.max_offset, o.last_update_timestamp)
                for mq, o in table.offset_table.items()
            )
        return sorted(found, key=lambda q: q.queue)

    # --- groups ------------------------------------------------------------------------------------

    async def _group_masters(self, group: str, topic: str | None) -> dict[str, str]:
        """The masters that know ``group``: those of its retry topic (Java's ``examineConsumeStats``),
        else of ``topic``, else every master the NameServer knows."""
        admin = self._admin
        for name in (retry_topic(group), topic):
            if name is None:
                continue
            try:
                return master_addresses(await admin.route(name))
            except RouteNotFound:
                continue
        info = await admin.get_broker_cluster_info()
        return {name: addr for cluster in info.clusters for name, addr in info.masters(cluster).items()}

    async def groups(self) -> list[str]:
        """Every consumer group the masters know (their subscription group configs), system groups
        included, sorted; a group exists once a member heartbeated or an operator created it."""
        admin = self._admin
        info = await admin.get_broker_cluster_info()
        found: set[str] = set()
        for cluster in sorted(info.clusters):
            for _, address in sorted(info.masters(cluster).items()):
                reply = await admin.call(address, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
                found.update(decode_body(SubscriptionGroupWrapper, reply.body).subscription_group_table)
        return sorted(found)

    async def group_progress(
        self, group: str, topic: str | None = None, *, owners: bool = False
    ) -> GroupProgress:
        """The group's committed offset and lag on each queue of its topics (of ``topic`` only, if
        given), and its consume rate (``mqadmin consumerProgress``).

        Args:
            owners: also ask each member which queues it owns (GET_CONSUMER_RUNNING_INFO, as
                ``consumerProgress -s true``) and set each queue's ``client_id``; a member that does
                not answer owns nothing.

        Raises:
            BrokerError: a broker refused (``SubscriptionGroupNotExist``: it knows no such group).
        """
        admin = self._admin
        header = GetConsumeStatsRequestHeader(consumer_group=group, topic=topic)
        queues: list[QueueProgress] = []
        tps = 0.0
        addresses = [address for _, address in sorted((await self._group_masters(group, topic)).items())]
        for address in addresses:
            reply = await admin.call(address, RequestCode.GET_CONSUME_STATS, header)
            stats = decode_body(ConsumeStats, reply.body)
            tps += stats.consume_tps
            queues.extend(
                QueueProgress(mq, o.broker_offset, o.consumer_offset, o.last_timestamp)
                for mq, o in stats.offset_table.items()
            )
        if owners:
            members = (await self.group_members(group)).members
            owner = await _groups.allocation(admin, group, [m.client_id for m in members], addresses)
            queues = [replace(q, client_id=owner.get(q.queue)) for q in queues]
        return GroupProgress(group, tuple(sorted(queues, key=lambda q: q.queue)), tps)

    async def running_info(self, group: str, client_id: str, *, jstack: bool = False) -> ConsumerRunningInfo:
        """What the member ``client_id`` of ``group`` says about itself (``mqadmin consumerStatus -g
        group -i client_id``): its settings, subscriptions, each owned queue's state, consume rates;
        a thread dump when ``jstack`` and the member is a Java one. Asked through the group's
        brokers, which hand the request to the member.

        Raises:
            BrokerError: no broker got an answer (the last one's refusal: the member is not
                connected to it, or did not answer in time).
        """
        addresses = [address for _, address in sorted((await self._group_masters(group, None)).items())]
        return await self._admin.running_info(group, client_id, addresses, jstack=jstack)

    async def group_members(self, group: str) -> GroupMembers:
        """The group's members as its brokers know them, and what they subscribe (``mqadmin
        consumerConnection``); no member: an empty ``members``.

        Raises:
            BrokerError: a broker refused in another way than "no member online".
        """
        admin = self._admin
        header = GetConsumerConnectionListRequestHeader(consumer_group=group)
        members: dict[str, GroupMember] = {}
        last: ConsumerConnection | None = None
        for _, address in sorted((await self._group_masters(group, None)).items()):
            try:
                reply = await admin.call(address, RequestCode.GET_CONSUMER_CONNECTION_LIST, header)
            except ConsumerNotOnline:
                continue
            last = decode_body(ConsumerConnection, reply.body)
            for c in last.connection_set:
                members.setdefault(
                    c.client_id, GroupMember(c.client_id, c.client_addr, c.language, c.version)
                )
        if last is None:
            return GroupMembers(group, ())
        return GroupMembers(
            group,
            tuple(members[k] for k in sorted(members)),
            subscriptions=dict(last.subscription_table),
            consume_type=last.consume_type,
            message_model=last.message_model,
            consume_from_where=last.consume_from_where,
        )

    async def reset_offsets(
        self, group: str, topic: str, timestamp_ms: int, *, force: bool = True
    ) -> dict[MessageQueue, int]:
        """Move ``group``'s offsets on ``topic`` to the first message stored at or after
        ``timestamp_ms`` (0: the earliest; ``2**63 - 1``: the latest), as ``mqadmin
        resetOffsetByTime``: each broker resets the offsets and tells the group's online members
        (RESET_CONSUMER_CLIENT_OFFSET). A broker that answers that no member is online gets the
        offsets found by time committed directly, as mqadmin's fallback does.

        Args:
            force: also move an offset back (forward only when false).

        Returns:
            Each queue's new offset.

        Raises:
            RouteNotFound: the NameServer knows no such topic.
            BrokerError: a broker refused.
        """
        admin = self._admin
        route = await admin.route(topic)
        header = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp_ms, is_force=force)
        done: dict[MessageQueue, int] = {}
        for name, address in sorted(master_addresses(route).items()):
            try:
                reply = await admin.call(address, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header)
            except ConsumerNotOnline:
                done.update(
                    await _groups.commit_by_time(
                        admin, address, group, topic, name, route, timestamp_ms, force
                    )
                )
                continue
            if reply.body:
                done.update(decode_body(ResetOffsetBody, reply.body).offset_table)
        return dict(sorted(done.items()))

    # --- messages ----------------------------------------------------------------------------------

    async def message(self, msg_id: str) -> MessageExt:
        """The message an offset message id names (``SendResult.offset_msg_id``; ``mqadmin
        queryMsgById``); for the id a producer gives (its UNIQ_KEY), use :meth:`message_by_unique_key`.

        Raises:
            ClientError: ``msg_id`` is not an offset message id.
            BrokerError: the broker has no message there.
        """
        address, offset = store_address(msg_id)
        return await self._admin.api.view_message(address, offset)

    async def message_by_unique_key(self, topic: str, key: str) -> MessageExt:
        """The message of ``topic`` whose UNIQ_KEY (``SendResult.msg_id``, ``MessageExt.msg_id``) is
        ``key`` (``mqadmin queryMsgByUniqueKey``); the first stored copy when a retry stored two.

        Raises:
            RouteNotFound: the NameServer knows no such topic.
            BrokerError: no broker has it (``QueryNotFound``).
        """
        found = [m for m in await query(self._admin, topic, key, 32, unique=True) if m.msg_id == key]
        if not found:
            raise BrokerError(
                ResponseCode.QUERY_NOT_FOUND, f"no message of {topic!r} has the unique key {key!r}"
            )
        return min(found, key=lambda m: m.store_timestamp)

    async def messages_by_key(
        self,
        topic: str,
        key: str,
        *,
        max_messages: int = DEFAULT_MAX_MESSAGES,
        begin_ms: int = 0,
        end_ms: int | None = None,
    ) -> list[MessageExt]:
        """The messages of ``topic`` with ``key`` among their keys, stored between ``begin_ms`` and
        ``end_ms`` (default now), oldest first (``mqadmin queryMsgByKey``); none: empty.

        Raises:
            RouteNotFound: the NameServer knows no such topic.
        """
        found = await query(self._admin, topic, key, max_messages, begin_ms=begin_ms, end_ms=end_ms)
        return sorted((m for m in found if key in m.keys), key=lambda m: (m.store_timestamp, m.queue_offset))

    async def consume_directly(
        self, group: str, client_id: str, msg_id: str, *, topic: str | None = None
    ) -> ConsumeMessageDirectlyResult:
        """Have the member ``client_id`` of ``group`` consume the stored message ``msg_id`` once more,
        outside its queues (``mqadmin queryMsgById -g group -d client_id``): its listener is
        called with that message alone; no retry, no offset moves. ``msg_id`` is an offset id or,
        with ``topic``, a unique key of ``topic`` (``SendResult.msg_id``), as mqadmin takes either.

        Returns:
            The member's answer: its listener's outcome and time.

        Raises:
            ClientError: ``msg_id`` is neither a unique key of ``topic`` nor an offset id.
            BrokerError: the broker refused (the member is not connected to it, the message is not
                there), or the member's answer was an error.
        """
        if topic is not None:
            # Both ids are 32 hex digits: a unique key decodes as an offset id of no broker. Look
            # it up as a unique key first; not found there, it is taken as an offset id.
            try:
                msg_id = (await self.message_by_unique_key(topic, msg_id)).offset_msg_id
            except BrokerError as exc:
                if exc.code != ResponseCode.QUERY_NOT_FOUND:
                    raise
        return await _messages.consume_directly(self._admin, group, client_id, msg_id, topic)
