"""The admin calls under :class:`rocketmq_py.admin.Admin` and the CLI: routes, the cluster table,
topic creation (mqadmin ``updateTopic``), a member's running info. The CLI reaches them through
:mod:`rocketmq_py.lowlevel` (``AdminCalls``, ``open_admin_calls``).

:class:`AdminCalls` asks the NameServers in order, moving on when one cannot be reached (an answer,
even an error, ends the search), and talks to brokers through one connection pool.

GET_BROKER_CLUSTER_INFO (code 106) answers with a fastjson body whose broker address maps have
bare int keys::

    {"brokerAddrTable": {"broker-a": {"brokerAddrs": {0: "10.0.0.1:10911"},
                                      "brokerName": "broker-a", "cluster": "DefaultCluster"}},
     "clusterAddrTable": {"DefaultCluster": ["broker-a"]}}

Creating a topic follows mqadmin ``updateTopic -c CLUSTER``: UPDATE_AND_CREATE_TOPIC (code 17)
to every master of the cluster; for an order topic, PUT_KV_CONFIG (code 100) of the
``ORDER_TOPIC_CONFIG`` entry ``"brokerA:n;brokerB:n"`` on every NameServer; then wait until the
NameServer's route shows the queues (brokers register the new topic right away).

A 5.x Proxy given as the NameServer serves routes but none of these admin calls (its
``RemotingProtocolServer`` registers neither GET_BROKER_CLUSTER_INFO nor UPDATE_AND_CREATE_TOPIC
nor PUT_KV_CONFIG): its refusal becomes :class:`~rocketmq_py.errors.UnsupportedByProxy`, which
says which command needs the call and to give the NameServer instead.

A broker can leave the NameServer with a stale queue count for an existing topic whose queues
changed: its periodic registration may copy the topic table before the update and the data
version after it, and the NameServer then drops the update's own registration as "same version"
(and every later one, until the broker's version moves again). :func:`stale_brokers` spots it and
:func:`reregistering_headers` gives the two updates (another filter type, then the asked one)
that make the broker register the topic again with a new version.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Final, TypeVar

import trio

from rocketmq_py._client._api import RemotingApi
from rocketmq_py._client._route import AUTO_CREATE_TOPIC_KEY, MASTER_ID, PERM_READ, PERM_WRITE
from rocketmq_py._transport import AclRPCHook, ConnectionPool, RPCHook
from rocketmq_py.errors import (
    ClientError,
    MalformedBody,
    RequestCodeNotSupported,
    RocketMQError,
    RouteNotFound,
    TopicNotExist,
    TransportError,
    UnsupportedByProxy,
)
from rocketmq_py.protocol import (
    BrokerData,
    ConsumerRunningInfo,
    CustomHeader,
    GetConsumerRunningInfoRequestHeader,
    RemotingCommand,
    RequestCode,
    TopicRouteData,
    UpdateAndCreateTopicRequestHeader,
    parse_fastjson,
)

__all__ = [
    "DEFAULT_TOPIC_PERM",
    "NOT_THROUGH_A_PROXY",
    "ORDER_TOPIC_CONFIG",
    "AdminCalls",
    "ClusterInfo",
    "CreatedQueues",
    "PutKVConfigRequestHeader",
    "open_admin_calls",
    "order_conf",
    "parse_cluster_info",
    "reregistering_headers",
    "route_has_queues",
    "stale_brokers",
    "topic_header",
]

T = TypeVar("T")

#: The NameServer KV namespace of order topics (Java ``NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG``).
ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"
#: Read and write (Java ``TopicConfig`` default perm, ``PermName.PERM_READ | PERM_WRITE``).
DEFAULT_TOPIC_PERM = PERM_READ | PERM_WRITE
#: Why the CLI makes each admin call a 5.x Proxy does not serve (see the module docstring).
NOT_THROUGH_A_PROXY: Final[Mapping[int, str]] = {
    RequestCode.GET_BROKER_CLUSTER_INFO: "`topic create` and `group inspect` list the brokers with it",
    RequestCode.UPDATE_AND_CREATE_TOPIC: "`topic create` creates the topic on each broker with it",
    RequestCode.PUT_KV_CONFIG: "`topic create --order` stores the order conf on the NameServer with it",
}
#: What to use instead, after the reason.
_USE_THE_NAMESRV = "give the NameServer (-n HOST:PORT, port 9876 by default) instead of the Proxy"
#: Seconds between route polls while waiting for a new topic to appear.
ROUTE_POLL_INTERVAL = 0.2
#: Seconds a broker may show other queue counts than asked before it is made to register again (a
#: broker registers a topic within the update request, so a healthy update shows on the first poll).
ROUTE_REREGISTER_AFTER = 3.0


@dataclass(frozen=True, slots=True, kw_only=True)
class PutKVConfigRequestHeader:
    """PUT_KV_CONFIG (to a NameServer); Java's ``PutKVConfigRequestHeader``."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.PUT_KV_CONFIG

    namespace: str
    key: str
    value: str
    extra: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """GET_BROKER_CLUSTER_INFO: the brokers the NameServer knows, and the clusters they form.

    Attributes:
        brokers: broker name -> its addresses (0 is the master).
        clusters: cluster name -> broker names, sorted.
    """

    brokers: Mapping[str, BrokerData]
    clusters: Mapping[str, tuple[str, ...]]

    def masters(self, cluster: str) -> dict[str, str]:
        """Broker name -> master address, for the brokers of ``cluster`` that have a master.

        Raises:
            ClientError: no such cluster (the message lists the known ones).
        """
        names = self.clusters.get(cluster)
        if names is None:
            known = ", ".join(sorted(self.clusters)) or "none"
            raise ClientError(f"no cluster named {cluster!r} (clusters: {known})")
        out: dict[str, str] = {}
        for name in names:
            broker = self.brokers.get(name)
            if broker is not None and MASTER_ID in broker.broker_addrs:
                out[name] = broker.broker_addrs[MASTER_ID]
        return out

    def only_cluster(self) -> str:
        """The cluster's name when there is exactly one.

        Raises:
            ClientError: none, or several (then ``--cluster`` must choose).
        """
        if len(self.clusters) == 1:
            return next(iter(self.clusters))
        known = ", ".join(sorted(self.clusters)) or "none"
        raise ClientError(f"choose a cluster with --cluster (clusters: {known})")


def parse_cluster_info(body: bytes) -> ClusterInfo:
    """Decode a GET_BROKER_CLUSTER_INFO body (fastjson: bare int keys).

    Raises:
        MalformedBody: not JSON, or not the expected shape.
    """
    data = parse_fastjson(body)
    if not isinstance(data, dict):
        raise MalformedBody("ClusterInfo: expected a JSON object")
    brokers_raw = _mapping(data.get("brokerAddrTable", {}), "brokerAddrTable")
    clusters_raw = _mapping(data.get("clusterAddrTable", {}), "clusterAddrTable")
    brokers = {str(name): BrokerData.from_json(value) for name, value in brokers_raw.items()}
    clusters: dict[str, tuple[str, ...]] = {}
    for name, members in clusters_raw.items():
        if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
            raise MalformedBody(f"ClusterInfo.clusterAddrTable[{name!r}]: expected a list of names")
        clusters[str(name)] = tuple(sorted(members))
    return ClusterInfo(brokers=brokers, clusters=clusters)


def _mapping(value: Any, where: str) -> Mapping[Any, Any]:
    if value is None:  # fastjson leaves out null fields; an explicit null means the same
        return {}
    if not isinstance(value, Mapping):
        raise MalformedBody(f"ClusterInfo.{where}: expected a JSON object")
    return value


@dataclass(frozen=True, slots=True)
class CreatedQueues:
    """What ``create_topic`` did on one broker."""

    broker_name: str
    address: str
    queues: int
    perm: int
    order: bool = False


def order_conf(brokers: Mapping[str, int]) -> str:
    """``"broker-a:4;broker-b:4"``: an order topic's queues per broker, in broker-name order."""
    return ";".join(f"{name}:{brokers[name]}" for name in sorted(brokers))


def route_has_queues(route: TopicRouteData, brokers: Mapping[str, int]) -> bool:
    """Whether ``route`` shows, for each broker name, at least the given read and write queues."""
    shown = {q.broker_name: q for q in route.queue_datas}
    return all(
        name in shown and shown[name].read_queue_nums >= n and shown[name].write_queue_nums >= n
        for name, n in brokers.items()
    )


def topic_header(topic: str, queues: int, *, perm: int, order: bool) -> UpdateAndCreateTopicRequestHeader:
    """UPDATE_AND_CREATE_TOPIC's header as mqadmin ``updateTopic`` sends it (``queues`` read and write)."""
    return UpdateAndCreateTopicRequestHeader(
        topic=topic,
        default_topic=AUTO_CREATE_TOPIC_KEY,
        read_queue_nums=queues,
        write_queue_nums=queues,
        perm=perm,
        topic_filter_type="SINGLE_TAG",
        order=order,
    )


def stale_brokers(route: TopicRouteData | None, brokers: Mapping[str, int]) -> list[str]:
    """The names in ``brokers`` whose read or write queue count in ``route`` is not the given one (sorted)."""
    shown = {} if route is None else {q.broker_name: q for q in route.queue_datas}
    return sorted(
        name
        for name, n in brokers.items()
        if name not in shown or shown[name].read_queue_nums != n or shown[name].write_queue_nums != n
    )


def reregistering_headers(
    header: UpdateAndCreateTopicRequestHeader,
) -> tuple[UpdateAndCreateTopicRequestHeader, UpdateAndCreateTopicRequestHeader]:
    """Two updates that make a broker register ``header``'s topic again, ending as ``header`` asks.

    A broker ignores an update equal to its config (no registration), so the first one differs only
    in the filter type, which no broker or client of today reads; each update moves the broker's data
    version and registers the topic with it.
    """
    other = "MULTI_TAG" if header.topic_filter_type == "SINGLE_TAG" else "SINGLE_TAG"
    return replace(header, topic_filter_type=other), header


class AdminCalls:
    """Typed admin calls against a set of NameServers (see the module docstring).

    Args:
        api: typed calls over an open pool.
        namesrv_addrs: the NameServers, in preference order.
    """

    def __init__(self, api: RemotingApi, namesrv_addrs: list[str]) -> None:
        self.api = api
        self.namesrv_addrs = namesrv_addrs

    async def _ask_namesrv(self, call: Callable[[str], Awaitable[T]]) -> T:
        last: TransportError | None = None
        for address in self.namesrv_addrs:
            try:
                return await call(address)
            except TransportError as exc:
                last = exc
        assert last is not None
        raise type(last)(f"no NameServer answered ({', '.join(self.namesrv_addrs)}): {last}") from last

    async def call(self, address: str, code: int, header: CustomHeader | None = None) -> RemotingCommand:
        """One admin request; a refusal of a code in :data:`NOT_THROUGH_A_PROXY` says why it is needed.

        Raises:
            UnsupportedByProxy: ``address`` does not serve ``code`` (a 5.x Proxy).
            BrokerError: any other refusal.
        """
        try:
            return await self.api.call(address, code, header)
        except RequestCodeNotSupported:
            reason = NOT_THROUGH_A_PROXY.get(code)
            if reason is None:
                raise
            raise UnsupportedByProxy(address, code, f"{reason}; {_USE_THE_NAMESRV}") from None

    async def route(self, topic: str) -> TopicRouteData:
        """The NameServer's route for ``topic``.

        Raises:
            RouteNotFound: the NameServer knows no such topic.
        """
        try:
            return await self._ask_namesrv(lambda addr: self.api.get_route_info(addr, topic))
        except TopicNotExist:
            raise RouteNotFound(topic, self.namesrv_addrs) from None

    async def running_info(
        self, group: str, client_id: str, addresses: Sequence[str], *, jstack: bool = False
    ) -> ConsumerRunningInfo:
        """GET_CONSUMER_RUNNING_INFO (code 307): the member's running info, through the first of
        ``addresses`` (the group's masters) that gets an answer; a broker hands the request to the
        member if it holds the member's connection.

        Raises:
            RocketMQError: the last broker's (``addresses[-1]``) refusal or transport failure, when
                none got an answer (``ClientError`` when ``addresses`` is empty).
        """
        header = GetConsumerRunningInfoRequestHeader(
            consumer_group=group, client_id=client_id, jstack_enable=jstack
        )
        last: RocketMQError | None = None
        for address in addresses:
            try:
                reply = await self.call(address, RequestCode.GET_CONSUMER_RUNNING_INFO, header)
            except RocketMQError as exc:
                last = exc
                continue
            return ConsumerRunningInfo.decode(reply.body)
        if last is None:
            raise ClientError(f"no broker of group {group!r} to ask {client_id!r}")
        raise last

    async def get_broker_cluster_info(self) -> ClusterInfo:
        """GET_BROKER_CLUSTER_INFO (code 106): every broker and cluster the NameServer knows."""

        async def call(address: str) -> ClusterInfo:
            reply = await self.call(address, RequestCode.GET_BROKER_CLUSTER_INFO)
            return parse_cluster_info(reply.body)

        return await self._ask_namesrv(call)

    async def create_topic(
        self,
        topic: str,
        queues: int,
        *,
        cluster: str | None = None,
        order: bool = False,
        perm: int = DEFAULT_TOPIC_PERM,
    ) -> list[CreatedQueues]:
        """Create (or update) ``topic`` with ``queues`` read and write queues on every master of ``cluster``.

        Args:
            cluster: default: the only cluster the NameServer knows.
            order: an order topic: also register ``broker:queues;...`` as its order conf.

        Returns:
            One entry per broker, in name order.

        Raises:
            ClientError: no such cluster, no cluster chosen among several, or no master in it.
            BrokerError: a broker refused (e.g. the topic name).
        """
        info = await self.get_broker_cluster_info()
        chosen = cluster if cluster is not None else info.only_cluster()
        masters = info.masters(chosen)
        if not masters:
            raise ClientError(f"cluster {chosen!r} has no master broker")
        header = topic_header(topic, queues, perm=perm, order=order)
        created = []
        for name in sorted(masters):
            await self.call(masters[name], RequestCode.UPDATE_AND_CREATE_TOPIC, header)
            created.append(CreatedQueues(name, masters[name], queues, perm, order))
        if order:
            conf = order_conf({name: queues for name in masters})
            kv = PutKVConfigRequestHeader(namespace=ORDER_TOPIC_CONFIG, key=topic, value=conf)
            for address in self.namesrv_addrs:  # Java: every NameServer, not just one
                await self.call(address, RequestCode.PUT_KV_CONFIG, kv)
        return created

    async def wait_for_route(
        self,
        topic: str,
        brokers: Mapping[str, int],
        timeout: float,  # noqa: ASYNC109
        *,
        created: Sequence[CreatedQueues] = (),
    ) -> TopicRouteData:
        """Poll the route until every broker in ``brokers`` shows its queue count.

        Args:
            created: what :meth:`create_topic` did; a broker among them that still shows other
                counts after :data:`ROUTE_REREGISTER_AFTER` seconds is made to register the topic
                again (see :func:`reregistering_headers`), every that many seconds.

        Raises:
            RouteNotFound: not within ``timeout`` seconds (the message says what was seen).
        """
        route: TopicRouteData | None = None
        by_name = {item.broker_name: item for item in created}
        reregister_at = trio.current_time() + ROUTE_REREGISTER_AFTER
        with trio.move_on_after(timeout):
            while True:
                try:
                    route = await self.route(topic)
                except RouteNotFound:
                    route = None
                if route is not None and route_has_queues(route, brokers):
                    return route
                if by_name and trio.current_time() >= reregister_at:
                    for name in stale_brokers(route, brokers):
                        if name in by_name:
                            item = by_name[name]
                            header = topic_header(topic, item.queues, perm=item.perm, order=item.order)
                            for update in reregistering_headers(header):
                                await self.api.create_topic(item.address, update)
                    reregister_at = trio.current_time() + ROUTE_REREGISTER_AFTER
                await trio.sleep(ROUTE_POLL_INTERVAL)
        seen = "no route" if route is None else f"{sum(q.read_queue_nums for q in route.queue_datas)} queues"
        raise RouteNotFound(
            topic, self.namesrv_addrs, f"the route of {topic!r} shows {seen} after {timeout:g} s"
        )


@asynccontextmanager
async def open_admin_calls(
    namesrv_addrs: list[str],
    *,
    timeout: float,  # noqa: ASYNC109
    access_key: str | None = None,
    secret_key: str | None = None,
    security_token: str | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> AsyncIterator[AdminCalls]:
    """:class:`AdminCalls` over a fresh connection pool (closed at the end of the block).

    Args:
        timeout: seconds per request.
        access_key: the ACL access key: every request is signed (with ``secret_key``; both or
            neither, as :class:`rocketmq_py.admin.Admin` takes them).
        secret_key: the ACL secret key.
        security_token: an ACL STS token, sent with each signed request.
        ssl_context: TLS for every connection.
    """
    hooks: list[RPCHook] = []
    if access_key and secret_key:
        hooks.append(AclRPCHook(access_key, secret_key, security_token))
    async with ConnectionPool(ssl_context=ssl_context, hooks=hooks) as pool:
        yield AdminCalls(RemotingApi(pool, timeout=timeout), namesrv_addrs)
