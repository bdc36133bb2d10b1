"""The client instance: one connection pool, route service and heartbeat for one client object.

``async with ClientInstance(config) as instance`` opens the connection pool and, inside it, a
nursery that runs the route refresh loop and the heartbeat loop. Leaving the block unregisters the
client's groups from every broker it knows (bounded by the request timeout), cancels the loops and
closes every connection; an error raised in the block leaves it as raised. Producers and
consumers register their groups, and handlers for the requests brokers send us (transaction
checks, rebalance notifications, ...). The instance itself answers PUSH_REPLY_MESSAGE_TO_CLIENT:
replies to the requests of its producers (:attr:`ClientInstance.replies`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, Self

import trio

from rocketmq_py._client._api import RemotingApi
from rocketmq_py._client._config import ClientConfig
from rocketmq_py._client._replies import ReplyWaiters
from rocketmq_py._client._route_service import RouteService
from rocketmq_py._transport import AclRPCHook, ConnectionPool, RequestHandler, RPCHook
from rocketmq_py._transport._nursery import open_service_nursery
from rocketmq_py.errors import RocketMQError, StateError
from rocketmq_py.hooks import ClientEvent
from rocketmq_py.protocol import (
    ConsumerData,
    HeartbeatData,
    ProducerData,
    RequestCode,
    TopicRouteData,
    unwrap_name,
)

__all__ = ["ClientInstance"]

log = logging.getLogger("rocketmq_py.client")

ConsumerDataProvider = Callable[[], ConsumerData]


class ClientInstance:
    """Everything one producer or consumer shares: id, pool, routes, heartbeats, broker handlers."""

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self.namesrv_addrs = config.namesrv_addrs()
        self.client_id = config.resolve_client_id()
        self._handlers: dict[int, RequestHandler] = {}
        #: Requests (``Producer.request``) waiting for the replies brokers push to this client.
        self.replies = ReplyWaiters()
        self._handlers[RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT] = self.replies.on_push_reply
        self._producer_groups: set[str] = set()
        self._consumers: dict[str, ConsumerDataProvider] = {}
        self._stack: AsyncExitStack | None = None
        self._nursery: trio.Nursery | None = None
        self._pool: ConnectionPool | None = None
        self._api: RemotingApi | None = None
        self._routes: RouteService | None = None
        self._heartbeat_now = trio.Event()
        self._known_brokers: set[str] = set()
        #: Broker address -> its last heartbeat: (trio clock time, None if accepted, else the error).
        self.heartbeats: dict[str, tuple[float, str | None]] = {}
        #: Where the instance's events go (the hooks of the client that owns it); ``None``: nowhere.
        self.on_event: Callable[[ClientEvent], None] | None = None
        self._routed: set[str] = set()  # topics with a route already (the first one is no change)

    # --- parts -----------------------------------------------------------------------------------------

    @property
    def api(self) -> RemotingApi:
        if self._api is None:
            raise StateError("the client is not started (use `async with`)")
        return self._api

    @property
    def routes(self) -> RouteService:
        if self._routes is None:
            raise StateError("the client is not started (use `async with`)")
        return self._routes

    @property
    def nursery(self) -> trio.Nursery:
        if self._nursery is None:
            raise StateError("the client is not started (use `async with`)")
        return self._nursery

    def _hooks(self) -> list[RPCHook]:
        cfg = self.config
        if cfg.access_key and cfg.secret_key:
            return [AclRPCHook(cfg.access_key, cfg.secret_key, cfg.security_token)]
        return []

    # --- registration ------------------------------------------------------------------------------------

    def register_handler(self, code: int, handler: RequestHandler) -> None:
        """Answer broker->client requests with ``code`` (read per request: may be set after start)."""
        self._handlers[code] = handler

    def add_producer_group(self, group: str) -> None:
        self._producer_groups.add(group)
        self.heartbeat_soon()

    def remove_producer_group(self, group: str) -> None:
        """Stop naming ``group`` in heartbeats (an attached producer left; no I/O)."""
        self._producer_groups.discard(group)

    def add_consumer(self, group: str, data: ConsumerDataProvider) -> None:
        self._consumers[group] = data
        self.heartbeat_soon()

    def heartbeat_soon(self) -> None:
        """Wake the heartbeat loop now (after a subscription change, a new broker, ...)."""
        self._heartbeat_now.set()

    # --- lifecycle -------------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._stack is not None:
            raise StateError("a ClientInstance can be entered only once")
        stack = AsyncExitStack()
        try:
            # The pool first, the services' nursery inside it: leaving cancels the services, then
            # closes the pool outside any cancelled scope. (The other way round, the pool's
            # nursery would exit under the outer cancel and wrap the body's error in groups.)
            self._pool = await stack.enter_async_context(
                ConnectionPool(
                    ssl_context=self.config.ssl_context,
                    hooks=self._hooks(),
                    serialize_type=self.config.serialize_type,
                    handlers=self._handlers,
                    close_on_timeout=self.config.close_connection_on_timeout,
                    on_connection=self._connection_event,
                )
            )
            self._nursery = await stack.enter_async_context(open_service_nursery())
            self._api = RemotingApi(
                self._pool, timeout=self.config.request_timeout, serialize_type=self.config.serialize_type
            )
            self._routes = RouteService(
                self._api, self.namesrv_addrs, poll_interval=self.config.poll_namesrv_interval
            )
            self._routes.add_listener(self._on_route)
            self._routes.add_offline_listener(self._on_offline)
            await self._nursery.start(self._routes.run)
            await self._nursery.start(self._heartbeat_loop)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._stack is not None
        assert self._nursery is not None
        try:
            if exc_type is None or not issubclass(exc_type, trio.Cancelled):
                await self.unregister_all()
        except BaseException as error:
            self._nursery.cancel_scope.cancel()
            if await self._stack.__aexit__(type(error), error, error.__traceback__):
                return None
            raise
        self._nursery.cancel_scope.cancel()
        return await self._stack.__aexit__(exc_type, exc, tb)

    # --- events ----------------------------------------------------------------------------------------

    def emit(self, kind: str, **fields: Any) -> None:
        """Give a :class:`~rocketmq_py.hooks.ClientEvent` of ``kind`` to :attr:`on_event`."""
        if self.on_event is not None:
            self.on_event(ClientEvent(kind=kind, client_id=self.client_id, **fields))

    def _connection_event(self, address: str, closed: str | None) -> None:
        if closed is None:
            self.emit("connected", address=address)
        else:
            self.emit("disconnected", address=address, detail=closed)

    def _broker_name(self, address: str) -> str | None:
        if self._routes is None:
            return None
        for name, addrs in self._routes.broker_table.items():
            if address in addrs.values():
                return name
        return None

    def _heartbeat_answered(self, address: str, error: str | None) -> None:
        before = self.heartbeats.get(address)
        self.heartbeats[address] = (trio.current_time(), error)
        was_ok = None if before is None else before[1] is None
        if error is not None and was_ok is not False:
            self.emit(
                "broker_unavailable", address=address, broker_name=self._broker_name(address), detail=error
            )
        elif error is None and was_ok is False:
            self.emit("broker_available", address=address, broker_name=self._broker_name(address))

    def _on_route(self, topic: str, route: TopicRouteData) -> None:
        if topic in self._routed:
            queues = ", ".join(
                f"{q.broker_name} {q.read_queue_nums}r/{q.write_queue_nums}w"
                for q in sorted(route.queue_datas, key=lambda q: q.broker_name)
            )
            name = unwrap_name(self.config.namespace or None, topic)
            self.emit("route_changed", topic=name, detail=f"queues now: {queues or 'none'}")
        else:
            self._routed.add(topic)
        new = {b.broker_name for b in route.broker_datas} - self._known_brokers
        if new:
            self._known_brokers |= new
            self.heartbeat_soon()

    def _on_offline(self, addresses: set[str]) -> None:
        # A broker that left the table is new again when it comes back: greet it at once then.
        self._known_brokers &= set(self.routes.broker_table)

    # --- heartbeats --------------------------------------------------------------------------------------

    def heartbeat_data(self) -> HeartbeatData:
        return HeartbeatData(
            client_id=self.client_id,
            producer_data_set=tuple(ProducerData(group_name=g) for g in sorted(self._producer_groups)),
            consumer_data_set=tuple(provider() for provider in self._consumers.values()),
        )

    def _heartbeat_targets(self) -> list[str]:
        table = self.routes.broker_table
        if self._consumers:  # consumers register with every broker of a group, slaves included
            return sorted({addr for addrs in table.values() for addr in addrs.values()})
        return sorted(addrs[0] for addrs in table.values() if 0 in addrs)

    async def heartbeat_all(self) -> int:
        """Send one heartbeat to every broker; returns how many accepted it (failures are logged)."""
        if not self._producer_groups and not self._consumers:
            return 0
        data = self.heartbeat_data()
        ok = 0
        for address in self._heartbeat_targets():
            try:
                await self.api.heartbeat(address, data)
                ok += 1
            except RocketMQError as exc:
                log.warning("heartbeat to %s failed: %s", address, exc)
                self._heartbeat_answered(address, f"{type(exc).__name__}: {exc}")
            else:
                self._heartbeat_answered(address, None)
        return ok

    async def _heartbeat_loop(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            with trio.move_on_after(self.config.heartbeat_interval):
                await self._heartbeat_now.wait()
            self._heartbeat_now = trio.Event()
            await self.heartbeat_all()

    async def unregister_all(self) -> None:
        """Tell every known broker that this client's groups are gone (best effort, bounded)."""
        if self._routes is None:
            return
        groups = [(g, None) for g in sorted(self._producer_groups)] + [
            (None, g) for g in sorted(self._consumers)
        ]
        if not groups:
            return
        with trio.move_on_after(self.config.request_timeout):
            for address in self._heartbeat_targets():
                for producer_group, consumer_group in groups:
                    try:
                        await self.api.unregister_client(
                            address,
                            self.client_id,
                            producer_group=producer_group,
                            consumer_group=consumer_group,
                        )
                    except RocketMQError as exc:
                        log.debug("unregister from %s failed: %s", address, exc)
