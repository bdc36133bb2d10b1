"""Driver-side questions to the cluster: topics, routes, queue bounds, offsets for timestamps.

Async functions over :class:`~rocketmq_py.lowlevel.RemotingApi`, and :func:`run_with_api`,
which opens a connection pool for one short ``trio.run`` -- the driver is synchronous Python,
and no trio loop outlives a planning call.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar

import trio

from rocketmq_py.errors import (
    BrokerError,
    RocketMQError,
    RouteNotFound,
    SubscriptionGroupNotExist,
    TransportError,
    leaf_exceptions,
)
from rocketmq_py.lowlevel import (
    AclRPCHook,
    ConnectionPool,
    RemotingApi,
    find_broker_address,
    offset_for_timestamp,
    subscribe_queues,
)
from rocketmq_py.protocol import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    MessageQueue,
    RequestCode,
    SerializeType,
    TopicRouteData,
    namespace_of,
    parse_fastjson,
    pull_request_header,
    unwrap_name,
)
from spark_connector._assign import assigned
from spark_connector._options import ReadOptions
from spark_connector._planning import QueueState

__all__ = [
    "broker_addresses",
    "commit_group_offsets",
    "connection_pool",
    "list_topics",
    "pool_keywords",
    "queue_states",
    "reader_api",
    "resolve_topics",
    "retrying",
    "route",
    "run_with_api",
    "run_with_retries",
    "search_offsets",
    "search_queue_offsets",
    "transport_failures",
]

T = TypeVar("T")

log = logging.getLogger("spark_connector")

#: At most this many offset queries in flight during planning.
_PLANNING_CONCURRENCY = 16


#: The ``ClientConfig`` keywords a reader takes under ``client.``, by the pool's name for each.
_POOL_KEYWORDS: Final = {
    "serialize_type": "serialize_type",
    "close_connection_on_timeout": "close_on_timeout",
}


def pool_keywords(options: ReadOptions) -> dict[str, Any]:
    """The keyword arguments of the :class:`ConnectionPool` of every reader client (planning on the
    driver, pulls on the executors, offset commits): the ACL signing hook with the security token,
    the TLS context (built now, its files read) and the ``client.`` options.

    Raises:
        SparkOptionError: a TLS file does not load (naming its option).
    """
    client = options.client
    hooks = []
    if options.access_key is not None and options.secret_key is not None:
        hooks.append(AclRPCHook(options.access_key, options.secret_key, client.security_token))
    keywords: dict[str, Any] = {"hooks": hooks, "ssl_context": client.ssl_context()}
    for name, value in client.keywords.items():
        keywords[_POOL_KEYWORDS[name]] = value
    return keywords


def connection_pool(options: ReadOptions) -> ConnectionPool:
    """A pool with the options' ACL signing, TLS and client settings (see :func:`pool_keywords`)."""
    return ConnectionPool(**pool_keywords(options))


def reader_api(pool: ConnectionPool, options: ReadOptions) -> RemotingApi:
    """The reader's calls over ``pool``: ``pullTimeoutMs`` each, headers as ``client.serializeType``."""
    serialize_type = options.client.keywords.get("serialize_type", SerializeType.JSON)
    return RemotingApi(pool, timeout=options.pull_timeout, serialize_type=serialize_type)


def run_with_api(options: ReadOptions, fn: Callable[[RemotingApi], Awaitable[T]]) -> T:
    """Run ``fn(api)`` in a fresh trio loop with its own connection pool; returns its result.

    A lone exception out of a nursery is unwrapped from its ExceptionGroup, so Spark shows it plainly.
    """

    async def main() -> T:
        async with connection_pool(options) as pool:
            return await fn(reader_api(pool, options))

    try:
        return trio.run(main)
    except BaseExceptionGroup as group:
        leaves = leaf_exceptions(group)
        if len(leaves) == 1 and isinstance(leaves[0], Exception):
            raise leaves[0] from None
        raise


def transport_failures(exc: BaseException) -> list[TransportError] | None:
    """The failures inside ``exc`` when each is the connection's (refused, reset, timed out), so
    another attempt may find the broker or its successor; ``None`` when a broker answered."""
    leaves = leaf_exceptions(exc)
    found = [e for e in leaves if isinstance(e, TransportError)]
    return found if len(found) == len(leaves) else None


def run_with_retries(options: ReadOptions, what: str, attempt: Callable[[], T]) -> T:
    """``attempt()``, tried again up to ``fetchOffset.numRetries`` times after a transport failure.

    A planning step ends in a transport failure when a broker of the route it read is gone: killed,
    or failing over to a replica. The next attempt reads the route anew, which by then names the
    broker that took over (the NameServer drops a broker when its connection closes). Spark's Kafka
    source retries its offset fetches the same way, with the same option names and defaults
    (``KafkaOffsetReaderConsumer.withRetriesWithoutInterrupt``). A broker's answer (no route, no
    permission) is raised at once. When the retries are spent, the first transport failure is
    raised, noting how many more queries failed with it.

    Args:
        what: names the step in the warning logged before each retry.
    """
    for n in range(options.fetch_offset_retries + 1):
        try:
            return attempt()
        except Exception as exc:
            error = _after_failure(options, what, n, exc)
            if error is exc:
                raise
            if error is not None:
                raise error from None
        time.sleep(options.fetch_offset_retry_interval_ms / 1000.0)
    raise AssertionError("unreachable")  # pragma: no cover - the last attempt returns or raises


async def retrying(options: ReadOptions, what: str, attempt: Callable[[], Awaitable[T]]) -> T:
    """:func:`run_with_retries` for a step of an executor's trio loop (its route reads)."""
    for n in range(options.fetch_offset_retries + 1):
        try:
            return await attempt()
        except Exception as exc:
            error = _after_failure(options, what, n, exc)
            if error is exc:
                raise
            if error is not None:
                raise error from None
        await trio.sleep(options.fetch_offset_retry_interval_ms / 1000.0)
    raise AssertionError("unreachable")  # pragma: no cover - the last attempt returns or raises


def _after_failure(options: ReadOptions, what: str, attempt: int, exc: Exception) -> BaseException | None:
    """What attempt ``attempt`` (from 0) failing with ``exc`` ends in: the error to raise (``exc``
    itself when no other attempt can mend it), or ``None`` to try again (logged)."""
    failures = transport_failures(exc)
    if failures is None:
        return exc
    first = failures[0]
    retries = options.fetch_offset_retries
    if attempt == retries:
        if len(failures) > 1:
            first.add_note(f"{len(failures) - 1} more queries of the same step failed too")
        return first
    log.warning(
        "%s failed (%s: %s); trying again in %d ms (retry %d of %d)",
        what,
        type(first).__name__,
        first,
        options.fetch_offset_retry_interval_ms,
        attempt + 1,
        retries,
    )
    return None


async def _each_namesrv(options: ReadOptions, call: Callable[[str], Awaitable[T]]) -> T:
    last: RocketMQError | None = None
    for address in options.namesrv:
        try:
            return await call(address)
        except TransportError as exc:  # try the next NameServer, as the Java client does
            last = exc
    assert last is not None
    raise last


async def list_topics(api: RemotingApi, options: ReadOptions) -> list[str]:
    """Every topic the NameServer knows (GET_ALL_TOPIC_LIST_FROM_NAMESERVER)."""

    async def call(address: str) -> list[str]:
        reply = await api.call(address, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        body = parse_fastjson(reply.body) if reply.body else {}
        return sorted(str(t) for t in body.get("topicList", ()))

    return await _each_namesrv(options, call)


async def resolve_topics(api: RemotingApi, options: ReadOptions) -> list[str]:
    """The topics to read: ``topic``'s list, or those ``topicPattern`` matches in full.

    With a namespace, the pattern is matched against the plain names of the namespace's topics.
    """
    if options.topic_pattern is None:
        return list(options.topics)
    pattern = re.compile(options.topic_pattern)
    ns = options.namespace
    if ns is None:
        return [t for t in await list_topics(api, options) if pattern.fullmatch(t)]
    return [
        t
        for t in await list_topics(api, options)
        if namespace_of(t) == ns and pattern.fullmatch(unwrap_name(ns, t))
    ]


async def route(api: RemotingApi, options: ReadOptions, topic: str) -> TopicRouteData:
    """The topic's route from the first NameServer that answers."""
    return await _each_namesrv(options, lambda address: api.get_route_info(address, topic))


def broker_addresses(topic_route: TopicRouteData) -> dict[str, str]:
    """broker name -> the address to pull from (the master, else any replica)."""
    table = {data.broker_name: dict(data.broker_addrs) for data in topic_route.broker_datas}
    found = {}
    for name in table:
        hit = find_broker_address(table, name)
        if hit is not None:
            found[name] = hit.address
    return found


async def queue_states(
    api: RemotingApi, options: ReadOptions, topics: Sequence[str], *, with_min: bool = True
) -> list[QueueState]:
    """Every readable queue of ``topics`` with its broker address and ``[min, max)`` offsets
    (with option ``assign``, those of its queues the routes have).

    Args:
        with_min: also ask GET_MIN_OFFSET (otherwise ``min_offset`` is 0).

    Raises:
        RouteNotFound: a topic has no route or no readable queue.
    """
    queues: list[tuple[MessageQueue, str]] = []
    for topic in topics:
        try:
            topic_route = await route(api, options, topic)
        except BrokerError as exc:
            raise RouteNotFound(f"topic {topic!r}: no route ({exc})") from None
        addresses = broker_addresses(topic_route)
        found = [
            (q, addresses[q.broker_name])
            for q in subscribe_queues(topic, topic_route)
            if q.broker_name in addresses
        ]
        if options.assign is not None:  # only those; one the route lacks: check_assigned
            queues.extend(assigned(found, options.assign))
            continue
        if not found:
            raise RouteNotFound(f"topic {topic!r}: the route has no readable queue with a reachable broker")
        queues.extend(found)
    results: dict[MessageQueue, QueueState] = {}
    limiter = trio.CapacityLimiter(_PLANNING_CONCURRENCY)

    async def one(q: MessageQueue, address: str) -> None:
        async with limiter:
            low = await api.get_min_offset(address, q.topic, q.queue_id, q.broker_name) if with_min else 0
            high = await api.get_max_offset(address, q.topic, q.queue_id, q.broker_name)
        results[q] = QueueState(q, address, low, high)

    async with trio.open_nursery() as nursery:
        for q, address in queues:
            nursery.start_soon(one, q, address)
    return [results[q] for q in sorted(results)]


async def search_offsets(
    api: RemotingApi, states: Iterable[QueueState], timestamp_ms: int, *, group: str
) -> dict[MessageQueue, int]:
    """Per queue, the offset of the first message stored at or after ``timestamp_ms``, within ``[min, max]``.

    The same on every broker release: an older broker's answer is corrected with pulls under
    ``group`` (:func:`~rocketmq_py.lowlevel.offset_for_timestamp`).
    """
    listed = list(states)
    return await search_queue_offsets(api, listed, {s.queue: timestamp_ms for s in listed}, group=group)


async def search_queue_offsets(
    api: RemotingApi, states: Iterable[QueueState], times: Mapping[MessageQueue, int], *, group: str
) -> dict[MessageQueue, int]:
    """:func:`search_offsets` with a time per queue: the queues of ``states`` that ``times`` names.

    A queue's answer is its max offset when no message was stored at or after its time (an empty
    queue's too).
    """
    found: dict[MessageQueue, int] = {}
    limiter = trio.CapacityLimiter(_PLANNING_CONCURRENCY)

    async def one(state: QueueState, timestamp_ms: int) -> None:
        q = state.queue
        if state.max_offset <= state.min_offset:
            found[q] = state.max_offset
            return
        async with limiter:
            offset = await offset_for_timestamp(api, state.address, q, timestamp_ms, group=group)
        found[q] = min(max(offset, state.min_offset), state.max_offset)

    async with trio.open_nursery() as nursery:
        for state in states:
            if state.queue in times:
                nursery.start_soon(one, state, times[state.queue])
    return found


def by_queue(states: Iterable[QueueState]) -> Mapping[MessageQueue, QueueState]:
    return {s.queue: s for s in states}


#: The client id under which :func:`commit_group_offsets` declares a group it must create.
COMMIT_CLIENT_ID = "spark-rocketmq-commit"


async def _declare_group(
    api: RemotingApi, address: str, group: str, queue: MessageQueue, offset: int
) -> None:
    """Make the broker of ``queue`` create ``group``, then leave the group again.

    A broker reached directly creates it on a heartbeat, as a Java consumer's first one does. A 5.x
    Proxy keeps heartbeats to itself, so the group is declared with a pull too: the broker's first
    check of a PULL_MESSAGE finds the group's config, creating it (``PullMessageProcessor.processRequest``
    via ``SubscriptionGroupManager.findSubscriptionGroupConfig``, ``autoCreateSubscriptionGroup``). The
    pull asks for one message at ``offset`` with its own subscription and is not held; its answer is
    not used.
    """
    data = ConsumerData(
        group_name=group,
        consume_type=ConsumeType.CONSUME_ACTIVELY,
        message_model=MessageModel.CLUSTERING,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
    )
    await api.heartbeat(address, HeartbeatData(client_id=COMMIT_CLIENT_ID, consumer_data_set=(data,)))
    await api.unregister_client(address, COMMIT_CLIENT_ID, consumer_group=group)
    header = pull_request_header(
        group, queue, offset=offset, max_msgs=1, expression_type="TAG", subscription="*"
    )
    with contextlib.suppress(RocketMQError):  # the commit after it says whether the group exists
        await api.pull_message(address, header, timeout=api.timeout)


async def commit_group_offsets(
    api: RemotingApi, group: str, offsets: Iterable[tuple[str, MessageQueue, int]]
) -> None:
    """Store ``(address, queue, offset)`` as ``group``'s consumer offsets (UPDATE_CONSUMER_OFFSET).

    A broker refuses offsets of a group it does not know (5.x, SUBSCRIPTION_GROUP_NOT_EXIST); the
    group is then declared on that broker (:func:`_declare_group`) and the update retried. Brokers
    are told apart by name: through a Proxy one address serves them all.
    """
    declared: set[tuple[str, str]] = set()
    for address, q, offset in offsets:
        try:
            await api.update_consumer_offset(address, group, q.topic, q.queue_id, offset, q.broker_name)
        except SubscriptionGroupNotExist:
            if (address, q.broker_name) in declared:
                raise
            declared.add((address, q.broker_name))
            await _declare_group(api, address, group, q, offset)
            await api.update_consumer_offset(address, group, q.topic, q.queue_id, offset, q.broker_name)
