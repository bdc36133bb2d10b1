"""The route service: topic routes from the NameServers, cached, refreshed, with failover.

- NameServers are tried in order starting with the last one that answered; a transport error
  moves on to the next, an answer (even TOPIC_NOT_EXIST) ends the search.
- Every topic in use is refreshed every ``poll_interval`` seconds; a changed route replaces the
  cached one and updates the broker address table. When no NameServer answers, the cached routes
  stay in use (a message is logged, nothing raised).
- A topic whose route lost a broker (one that served queues in the route before, killed or restarted,
  or not registered yet with a NameServer that was restarted) is asked for again every
  :data:`LOST_BROKER_RECHECK_INTERVAL` seconds until the broker is back, for at most
  :data:`LOST_BROKER_WATCH` seconds (ours: Java waits for the next poll, up to 30 s, so its queues
  stay unread that long after the broker is serving again).
- After each refresh, addresses that no cached route names any more leave the broker address table
  (Java ``cleanOfflineBroker``), so heartbeats and unregistering stop going to them, and their idle
  connections are closed (a busy one is closed on a later refresh, once idle). The brokers of the
  ``TBW102`` route a topic is being auto-created through count as routed until the topic has a
  route of its own.
- A topic the NameServer does not know is published through the ``TBW102`` route (the broker
  creates the topic on first send) when ``auto_create`` is on, as Java does; otherwise, and when
  even that route is missing, :class:`~rocketmq_py.errors.RouteNotFound` names the topic and the
  NameServers asked.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

import trio

from rocketmq_py._client._api import RemotingApi
from rocketmq_py._client._route import (
    AUTO_CREATE_TOPIC_KEY,
    DEFAULT_TOPIC_QUEUE_NUMS,
    MASTER_ID,
    FoundBroker,
    TopicPublishInfo,
    broker_addresses,
    default_topic_route,
    drop_offline_brokers,
    find_broker_address,
    publish_info,
    route_changed,
    serving_brokers,
    subscribe_queues,
)
from rocketmq_py.errors import BrokerError, ProtocolError, RouteNotFound, TopicNotExist, TransportError
from rocketmq_py.protocol import MessageQueue, TopicRouteData

__all__ = ["LOST_BROKER_RECHECK_INTERVAL", "LOST_BROKER_WATCH", "RECHECK_INTERVAL", "RouteService"]

log = logging.getLogger("rocketmq_py.route")

#: Seconds between two rechecks of one topic's route after a broker of it could not be reached (ours:
#: Java waits for the next poll; a 5.x controller-mode group's new master registers from another
#: address under the same name at once).
RECHECK_INTERVAL = 1.0
#: Seconds between refreshes of a topic whose route lost a broker, until the broker is back.
LOST_BROKER_RECHECK_INTERVAL = 2.0
#: Seconds a topic that lost a broker is refreshed at that pace (a broker taken out for good costs
#: this long; the poll goes on after it).
LOST_BROKER_WATCH = 300.0

RouteListener = Callable[[str, TopicRouteData], None]
OfflineListener = Callable[[set[str]], None]


class RouteService:
    """Routes of the topics a client uses.

    Args:
        api: typed calls.
        namesrv_addrs: the NameServers, in preference order.
        poll_interval: seconds between refreshes of every topic in use.
        auto_create: publish unknown topics through the ``TBW102`` route.
    """

    def __init__(
        self,
        api: RemotingApi,
        namesrv_addrs: list[str],
        *,
        poll_interval: float,
        auto_create: bool = True,
        default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS,
    ) -> None:
        self._api = api
        self.namesrv_addrs = list(namesrv_addrs)
        self._preferred = 0
        self.poll_interval = poll_interval
        self.auto_create = auto_create
        self.default_topic_queue_nums = default_topic_queue_nums
        self._routes: dict[str, TopicRouteData] = {}
        # topic -> the clamped TBW102 route it is published through until it has its own route.
        self._auto_routes: dict[str, TopicRouteData] = {}
        # Offline addresses whose connection was busy when they went offline.
        self._offline_busy: set[str] = set()
        self._publish: dict[str, TopicPublishInfo] = {}
        self._brokers: dict[str, dict[int, str]] = {}
        self._topics: set[str] = set()
        self._listeners: list[RouteListener] = []
        self._offline_listeners: list[OfflineListener] = []
        self._lock = trio.Lock()
        self._rechecked: dict[str, float] = {}  # topic -> when recheck() last asked
        # topic -> (brokers its route lost, until when it is refreshed every few seconds for them)
        self._lost: dict[str, tuple[frozenset[str], float]] = {}
        self._lost_noticed = trio.Event()  # wakes the refresh loop for a new loss
        #: (address, trio clock time) of the last NameServer answer (TOPIC_NOT_EXIST too); None yet.
        self.last_answer: tuple[str, float] | None = None
        #: (trio clock time, what happened) of the last route request no NameServer answered.
        self.last_failure: tuple[float, str] | None = None

    # --- queries (no I/O) ---------------------------------------------------------------------------

    @property
    def broker_table(self) -> dict[str, dict[int, str]]:
        """Broker name -> {broker id: address}, from every route seen."""
        return self._brokers

    def cached_publish_info(self, topic: str) -> TopicPublishInfo | None:
        """The cached publish info of ``topic`` when it has queues (no I/O), else ``None``."""
        info = self._publish.get(topic)
        return info if info is not None and info.have_queues else None

    def cached_route(self, topic: str) -> TopicRouteData | None:
        return self._routes.get(topic)

    def find_broker(
        self, broker_name: str, broker_id: int = 0, *, only_this: bool = False
    ) -> FoundBroker | None:
        return find_broker_address(self._brokers, broker_name, broker_id, only_this)

    def master_address(self, broker_name: str) -> str | None:
        """The master (id 0) address of ``broker_name``, ``None`` while unknown (runs per send)."""
        addrs = self._brokers.get(broker_name)
        return addrs.get(0) if addrs else None

    async def require_master(self, topic: str, broker_name: str) -> str:
        """The master address of ``broker_name``; the route of ``topic`` is fetched once if unknown.

        Raises:
            RouteNotFound: the broker has no master even after a fresh route.
            TransportError, BrokerError: the route could not be fetched.
        """
        address = self.master_address(broker_name)
        if address is None:
            await self.update(topic)
            address = self.master_address(broker_name)
        if address is None:
            raise RouteNotFound(topic, self.namesrv_addrs, f"broker {broker_name} has no master address")
        return address

    async def require_replica(self, topic: str, broker_name: str) -> str:
        """The master of ``broker_name``, else any slave of it; ``topic``'s route fetched once if none.

        Java's ``RemoteBrokerOffsetStore`` reads and commits consume offsets this way
        (``findBrokerAddressInSubscribe(name, MASTER_ID, false)``): while a master is down, its
        slave keeps the group's offsets.

        Raises:
            RouteNotFound: the broker has no address even after a fresh route.
            TransportError, BrokerError: the route could not be fetched.
        """
        found = self.find_broker(broker_name)
        if found is None:
            await self.update(topic)
            found = self.find_broker(broker_name)
        elif found.broker_id != MASTER_ID:
            found = await self.recheck_masterless(topic, broker_name) or found
        if found is None:
            raise RouteNotFound(topic, self.namesrv_addrs, f"broker {broker_name} has no address")
        return found.address

    async def recheck_masterless(self, topic: str, broker_name: str) -> FoundBroker | None:
        """While ``broker_name`` has no master in the cache, fetch ``topic``'s route again
        (:meth:`recheck`: at most once a second) and look again; ``None`` if nothing changed.

        In controller mode a route fetched during an election lists only the group's slaves, and
        nothing fails on them (a slave serves pulls and takes offsets), so no error would send the
        client to the NameServer before its next poll (30 s): its offsets went to a slave that the
        new master never reads (``integration/test_chaos.py``'s controller phase).
        """
        if self.master_address(broker_name) is not None:
            return None
        await self.recheck(topic)
        return self.find_broker(broker_name)

    def brokers_with_master(self) -> dict[str, str]:
        """Broker name -> master address, for heartbeats."""
        return {name: addrs[0] for name, addrs in self._brokers.items() if 0 in addrs}

    def add_listener(self, listener: RouteListener) -> None:
        """Call ``listener(topic, route)`` whenever a topic's route changes."""
        self._listeners.append(listener)

    def add_offline_listener(self, listener: OfflineListener) -> None:
        """Call ``listener(addresses)`` when addresses leave the broker table (no route names them)."""
        self._offline_listeners.append(listener)

    def use_topic(self, topic: str) -> None:
        """Keep ``topic``'s route fresh from now on."""
        self._topics.add(topic)

    # --- fetching -----------------------------------------------------------------------------------

    async def fetch(self, topic: str) -> TopicRouteData:
        """Ask the NameServers for ``topic``'s route, failing over on transport errors.

        Raises:
            TopicNotExist: a NameServer answered that it knows no such topic.
            BrokerError: a NameServer answered another error.
            TransportError: no NameServer answered (the last error is chained).
        """
        count = len(self.namesrv_addrs)
        last: TransportError | None = None
        for step in range(count):
            index = (self._preferred + step) % count
            address = self.namesrv_addrs[index]
            try:
                route = await self._api.get_route_info(address, topic)
            except TransportError as exc:
                log.warning("NameServer %s did not answer for %s: %s", address, topic, exc)
                last = exc
                continue
            except BrokerError:  # an answer: TOPIC_NOT_EXIST, or another refusal
                self.last_answer = (address, trio.current_time())
                raise
            self._preferred = index
            self.last_answer = (address, trio.current_time())
            return route
        assert last is not None
        self.last_failure = (trio.current_time(), str(last))
        raise type(last)(f"no NameServer answered ({', '.join(self.namesrv_addrs)}): {last}") from last

    async def update(self, topic: str) -> bool:
        """Fetch ``topic``'s route and store it; returns True when it changed (or is new)."""
        route = await self.fetch(topic)
        return self._store(topic, route)

    async def recheck(self, topic: str) -> None:
        """Fetch ``topic``'s route again because one of its brokers could not be reached: the address
        may be a dead master whose group a slave took over (controller mode), which the route poll
        would tell only up to ``poll_interval`` seconds later. At most once every
        :data:`RECHECK_INTERVAL` seconds a topic; errors are logged and the cached route kept.
        """
        now = trio.current_time()
        if now < self._rechecked.get(topic, -math.inf) + RECHECK_INTERVAL:
            return
        self._rechecked[topic] = now
        try:
            await self.update(topic)
        except (TransportError, BrokerError, ProtocolError) as exc:
            log.info("route recheck of %s failed, keeping the cached route: %s", topic, exc)

    def _store(self, topic: str, route: TopicRouteData) -> bool:
        old = self._routes.get(topic)
        changed = route_changed(old, route)
        self._auto_routes.pop(topic, None)
        for name, addrs in broker_addresses(route).items():
            self._brokers[name] = addrs
        self._note_lost_brokers(topic, old, route)
        if changed or topic not in self._publish:
            self._routes[topic] = route
            self._publish[topic] = publish_info(topic, route)
        if changed:
            if old is not None:
                log.info("route of %s changed: %s", topic, route)
            for listener in list(self._listeners):
                listener(topic, route)
        return changed

    def _note_lost_brokers(self, topic: str, old: TopicRouteData | None, new: TopicRouteData) -> None:
        """Remember the brokers ``topic``'s route lost (served queues in ``old``, none in ``new``)
        until a route names them again, and wake the refresh loop for a new loss."""
        serving = serving_brokers(new)
        missing, until = self._lost.get(topic, (frozenset(), 0.0))
        gone = serving_brokers(old) - serving if old is not None else frozenset()
        if gone:
            until = trio.current_time() + LOST_BROKER_WATCH
            log.info(
                "the route of %s lost %s: asking again every %.0f s until it is back",
                topic,
                ", ".join(sorted(gone)),
                LOST_BROKER_RECHECK_INTERVAL,
            )
            self._lost_noticed.set()
        back = missing & serving
        if back:
            log.info("the route of %s has %s again", topic, ", ".join(sorted(back)))
        missing = (missing | gone) - serving
        if missing:
            self._lost[topic] = (missing, until)
        else:
            self._lost.pop(topic, None)

    async def publish_info(self, topic: str) -> TopicPublishInfo:
        """The queues to send ``topic`` to: cached, else fetched (TBW102 for unknown topics).

        Raises:
            RouteNotFound: no route and no way to create one.
            TransportError: no NameServer answered and nothing is cached.
        """
        info = self._publish.get(topic)
        if info is not None and info.have_queues:
            return info
        self.use_topic(topic)
        async with self._lock:
            info = self._publish.get(topic)
            if info is not None and info.have_queues:
                return info
            try:
                await self.update(topic)
            except TopicNotExist:
                if not self.auto_create:
                    raise RouteNotFound(topic, self.namesrv_addrs) from None
                return await self._auto_create_info(topic)
            info = self._publish[topic]
            if not info.have_queues:
                raise RouteNotFound(
                    topic, self.namesrv_addrs, f"topic {topic!r} has no writable queue with a master"
                )
            return info

    async def _auto_create_info(self, topic: str) -> TopicPublishInfo:
        try:
            default = await self.fetch(AUTO_CREATE_TOPIC_KEY)
        except TopicNotExist:
            raise RouteNotFound(
                topic,
                self.namesrv_addrs,
                f"no route for {topic!r}, and no {AUTO_CREATE_TOPIC_KEY} route to create it",
            ) from None
        clamped = default_topic_route(default, self.default_topic_queue_nums)
        for name, addrs in broker_addresses(clamped).items():
            self._brokers[name] = addrs
        info = publish_info(topic, clamped)
        if not info.have_queues:
            raise RouteNotFound(
                topic, self.namesrv_addrs, f"the {AUTO_CREATE_TOPIC_KEY} route has no writable queue"
            )
        if topic not in self._routes:
            self._auto_routes[topic] = clamped
        # Not cached as the topic's own route: the next refresh picks up the real one once created.
        return info

    async def subscribe_queues(self, topic: str) -> frozenset[MessageQueue]:
        """The readable queues of ``topic`` (fetched if not cached)."""
        self.use_topic(topic)
        route = self._routes.get(topic)
        if route is None:
            await self.update(topic)
            route = self._routes[topic]
        return subscribe_queues(topic, route)

    def invalidate(self, topic: str) -> None:
        """Forget ``topic``'s publish info so the next send fetches its route again."""
        self._publish.pop(topic, None)

    # --- background refresh ---------------------------------------------------------------------------

    def clean_offline_brokers(self) -> set[str]:
        """Drop the addresses no cached route names from the broker table; returns them.

        Java ``MQClientInstance.cleanOfflineBroker``. No I/O; the offline listeners are called.
        """
        routes = [*self._routes.values(), *self._auto_routes.values()]
        self._brokers, offline = drop_offline_brokers(self._brokers, routes)
        if offline:
            log.info("brokers in no route any more, forgotten: %s", ", ".join(sorted(offline)))
            for listener in list(self._offline_listeners):
                listener(offline)
        return offline

    async def _close_offline_connections(self, offline: set[str]) -> None:
        live = {address for addrs in self._brokers.values() for address in addrs.values()}
        candidates = (self._offline_busy | offline) - live - set(self.namesrv_addrs)
        self._offline_busy = await self._api.pool.close_idle(candidates)

    async def refresh_all(self) -> None:
        """Refresh every topic in use (errors are logged and the cached routes kept), then forget
        the brokers no route names any more and close their idle connections."""
        for topic in sorted(self._topics):
            try:
                await self.update(topic)
            except TopicNotExist:
                log.debug("route refresh: %s does not exist (yet)", topic)
            except (TransportError, BrokerError, ProtocolError) as exc:
                # ProtocolError: a NameServer answered a route we cannot parse; that must not end
                # the refresh loop (and with it the client).
                log.warning("route refresh of %s failed, keeping the cached route: %s", topic, exc)
        await self._close_offline_connections(self.clean_offline_brokers())

    async def refresh_lost(self) -> None:
        """Refresh the topics in use whose route lost a broker (errors are logged at info level and
        the cached routes kept); a topic watched for :data:`LOST_BROKER_WATCH` seconds is left to
        the poll."""
        now = trio.current_time()
        for topic, (missing, until) in sorted(self._lost.items()):
            if topic not in self._topics or now >= until:
                if topic in self._topics:
                    log.info(
                        "%s of %s still missing; back to the route poll", ", ".join(sorted(missing)), topic
                    )
                del self._lost[topic]
                continue
            try:
                await self.update(topic)
            except (TransportError, BrokerError, ProtocolError) as exc:
                log.info("route recheck of %s failed, keeping the cached route: %s", topic, exc)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Refresh routes every ``poll_interval`` seconds until cancelled, and the topics that lost
        a broker every :data:`LOST_BROKER_RECHECK_INTERVAL` seconds in between."""
        task_status.started()
        next_poll = trio.current_time() + self.poll_interval
        recheck_at: float | None = None
        while True:
            deadline = next_poll
            if not self._lost:
                recheck_at = None
            elif recheck_at is None:
                recheck_at = trio.current_time() + LOST_BROKER_RECHECK_INTERVAL
            if recheck_at is not None:
                deadline = min(deadline, recheck_at)
            with trio.move_on_at(deadline):
                await self._lost_noticed.wait()
            self._lost_noticed = trio.Event()
            now = trio.current_time()
            if now >= next_poll:
                await self.refresh_all()
                next_poll = trio.current_time() + self.poll_interval
                recheck_at = None
            elif recheck_at is not None and now >= recheck_at:
                await self.refresh_lost()
                recheck_at = None
