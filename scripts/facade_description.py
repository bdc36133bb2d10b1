"""The facades' description: how each trio client's members cross into asyncio and blocking code.

:data:`CLIENTS` names, for each client, the trio class it wraps, its docstring in each facade, the
hand-written base it inherits there, and for every public member of the trio class how each facade
bridges it (:class:`Member`, :class:`Bridge`). :data:`NOT_IN_FACADES` names the package's public names the
facade packages do not re-export, each with its reason. ``scripts/gen_facades.py`` renders them;
this module only declares (it imports nothing of the project, so tests may read it too).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

#: How a member crosses into a facade (``Bridge.kind``), per facade:
#:
#: asyncio (the guest shares the loop's thread)
#:   ``await``       ``await self._call(self._client.m, ...)``: the trio coroutine runs in the guest
#:   ``direct``      ``self._client.m(...)``: reads or sets state, no await
#:   ``property``    ``self._client.p``
#: blocking (the trio client lives in a portal thread)
#:   ``call``        ``self._call(self._client.m, ...)``: the coroutine runs in the portal's loop
#:   ``call_sync``   ``self._call_sync(self._client.m, ...)``: in the loop thread; the client must run
#:   ``read``        ``self._read(self._client.m, ...)``: in the loop thread while it runs, else directly
#:   ``property``    ``self._client.p``
#:   ``read_property`` ``self._read(lambda: self._client.p)``
#: both
#:   ``auto``        async method: ``await`` / ``call``; property: ``property``; other: ``direct`` / ``read``
#:   ``hand``        written by hand in the facade's base class (the generator checks it is there)
#:   ``lifecycle``   the facade's own (``aclose``: :class:`AioClient`; ``close`` of :class:`SyncClient`)
#:   ``trio_only``   not in the facade (loop-bound internals; the surface tests name them too)
KINDS: Final = {
    "aio": {"auto", "await", "direct", "property", "hand", "lifecycle", "trio_only"},
    "sync": {
        "auto",
        "call",
        "call_sync",
        "read",
        "property",
        "read_property",
        "hand",
        "lifecycle",
        "trio_only",
    },
}
#: The trio class's dunders a facade has too (async iteration); the blocking name is in the base.
PROTOCOL_DUNDERS: Final = ("__aiter__", "__anext__")
SYNC_NAMES: Final = {"__aiter__": "__iter__", "__anext__": "__next__", "aclose": "close"}


@dataclass(frozen=True)
class Bridge:
    """How one facade bridges one member of the trio class.

    Args:
        kind: one of :data:`KINDS` for that facade.
        adapt: parameter -> a callable (``list``, or a method of the base: ``self._on_loop``) the
            argument goes through first; an argument whose default is ``None`` passes ``None`` as is.
        on_lost: (``await``) a base method given the result a cancelled caller never got.
        fast_path: (``await``) call with the positional arguments alone when every keyword-only
            argument is ``None`` (their defaults): a send costs a little less.
        note: a paragraph added to the trio docstring, where the facade behaves differently.
    """

    kind: str = "auto"
    adapt: Mapping[str, str] = field(default_factory=dict)
    on_lost: str | None = None
    fast_path: bool = False
    note: str | None = None


@dataclass(frozen=True)
class Member:
    """One member of the trio class in both facades.

    Args:
        aio: the asyncio bridge.
        sync: the blocking bridge.
        result: a callable (a dotted name: ``dataclasses.replace``) applied to the trio method's
            result (``direct`` / ``read`` methods only).
        alias_of: the member is a deprecated alias of this one: the facade method warns
            (``DeprecationWarning`` at the caller's line, "<Class>.<old> is deprecated; use <new>",
            the trio alias's own message) and then bridges the new name, with the alias's
            signature and docstring, so the trio alias is not called and does not warn again.
        deprecated: the method is a deprecated alias: the facade warns with this message (a
            DeprecationWarning at its caller) and calls the trio class's ``_<name>``, the alias's
            implementation, which does not warn (methods only).
    """

    aio: Bridge = field(default_factory=Bridge)
    sync: Bridge = field(default_factory=Bridge)
    result: str | None = None
    alias_of: str | None = None
    deprecated: str | None = None


@dataclass(frozen=True)
class Client:
    """One client class, in both facades.

    Args:
        trio: ``module:Class`` of the trio class.
        aio_doc, sync_doc: the facade class's docstring (how it is used there).
        members: every public member of the trio class (and its async iteration), in the order the
            generated class lists them. With ``parent``: only those the trio class adds to its parent's.
        parent: the facade class this one extends (as the trio class extends the parent's trio class).
        aio_base, sync_base: the hand-written base class in ``aio/_bases.py`` / ``sync/_bases.py``.
        init_aio, init_sync: the constructor's argument adapters (as :attr:`Bridge.adapt`).
    """

    trio: str
    aio_doc: str
    sync_doc: str
    members: Mapping[str, Member]
    parent: str | None = None
    aio_base: str | None = None
    sync_base: str | None = None
    init_aio: Mapping[str, str] = field(default_factory=dict)
    init_sync: Mapping[str, str] = field(default_factory=dict)


AUTO: Final = Member()
LIFECYCLE: Final = Member(aio=Bridge("lifecycle"), sync=Bridge("lifecycle"))
TRIO_ONLY: Final = Member(aio=Bridge("trio_only"), sync=Bridge("trio_only"))
HAND: Final = Member(aio=Bridge("hand"), sync=Bridge("hand"))
#: Plain methods the blocking client runs in the loop thread, and only while it runs.
IN_LOOP: Final = Member(sync=Bridge("call_sync"))
#: An ``async def`` callback is an asyncio coroutine on the client's loop (``AioClient._on_loop``).
ON_LOOP_NOTE: Final = (
    "In :mod:`rocketmq_py.aio` an ``async def`` callback is an asyncio coroutine, run on the "
    "client's loop; a plain function is called as in the trio API."
)


def _handler_deprecated(cls: str, name: str, request: str) -> str:
    """The warning of a deprecated broker-request entry point (as the trio class words it)."""
    return (
        f"{cls}.{name}() is deprecated and will be removed: only the broker's {request} request "
        f"calls it (privately, as {cls}._{name})"
    )


def _rebalance_deprecated(cls: str) -> str:
    """The warning of a consumer's deprecated ``rebalance()`` (as the trio class words it)."""
    return (
        f"{cls}.rebalance() is deprecated and will be removed: the consumer rebalances on its own "
        "(every rebalance_interval seconds, and at once when the group's members change)"
    )


CLIENTS: Final[Mapping[str, Client]] = {
    "Producer": Client(
        trio="rocketmq_py.producer._producer:Producer",
        aio_doc="""\
Sends messages to RocketMQ topics from asyncio code (Java ``DefaultMQProducer``).

The same producer as :class:`rocketmq_py.Producer`, hosted on the running asyncio loop::

    async with Producer("my-group", namesrv="127.0.0.1:9876") as producer:
        result = await producer.send(Message("orders", b"hello", tags="new"))

Any number of asyncio tasks may send at once; errors are those of the trio producer, unchanged.
Cancelling a task cancels its send (a message already written may still be stored).

Args: as :class:`rocketmq_py.Producer`.
""",
        sync_doc="""\
Sends messages to RocketMQ topics, blocking (Java ``DefaultMQProducer``).

The same producer as :class:`rocketmq_py.Producer`, run in a background trio thread::

    with Producer("my-group", namesrv="127.0.0.1:9876") as producer:
        result = producer.send(Message("orders", b"hello", tags="new"))

or ``producer = Producer(...).start()`` ... ``producer.shutdown()``. Every method may be called
from several threads at once; errors are those of the async producer, unchanged.

Args: as :class:`rocketmq_py.Producer`.
""",
        members={
            "aclose": LIFECYCLE,
            "instance": TRIO_ONLY,
            "register_hook": AUTO,
            "client_id": AUTO,
            "statistics": AUTO,  # a frozen snapshot, built at each call (in the loop thread when blocking)
            "health": AUTO,
            "fetch_publish_queues": AUTO,
            "send": Member(aio=Bridge(fast_path=True)),
            "send_oneway": AUTO,
            "send_batch": AUTO,
            "request": AUTO,
            "recall": AUTO,
        },
    ),
    "TransactionProducer": Client(
        trio="rocketmq_py.producer._transaction:TransactionProducer",
        parent="Producer",
        aio_doc="""\
Transactional messages from asyncio code (Java ``TransactionMQProducer``).

Callbacks may be ``async def`` (asyncio coroutines run on the producer's loop) or plain
functions (run in a worker thread).

Args: as :class:`rocketmq_py.TransactionProducer`.
""",
        sync_doc="""\
Transactional messages, blocking (Java ``TransactionMQProducer``).

Callbacks may be plain functions (run in a worker thread of the client's loop) or async
functions. They must not call this producer's blocking methods.

Args: as :class:`rocketmq_py.TransactionProducer`.
""",
        init_aio={
            "check_local_transaction": "self._on_loop",
            "execute_local_transaction": "self._on_loop",
        },
        members={
            "send_message_in_transaction": Member(
                aio=Bridge(adapt={"execute_local_transaction": "self._on_loop"}, note=ON_LOOP_NOTE)
            ),
        },
    ),
    "PushConsumer": Client(
        trio="rocketmq_py.consumer._push:PushConsumer",
        aio_base="PushConsumerBase",
        aio_doc="""\
Consumes topics with a listener, from asyncio code (Java ``DefaultMQPushConsumer``).

An ``async def`` listener is an asyncio coroutine run on the consumer's loop (it may use any
asyncio library); a plain function runs in a worker thread::

    async def handle(msgs: list[MessageExt]) -> None:
        await db.insert_many(msgs)

    consumer = PushConsumer("my-group", namesrv="127.0.0.1:9876", listener=handle)
    consumer.subscribe("orders", "TagA || TagB")
    async with consumer:
        await stop.wait()

A consume timeout or a shutdown cancels a running listener task and waits for it to end.
``on_assigned`` / ``on_revoked`` of a rebalance listener may be ``async def`` too (asyncio).

Args: as :class:`rocketmq_py.PushConsumer`.
""",
        sync_doc="""\
Consumes topics with a listener, blocking API (Java ``DefaultMQPushConsumer``).

The listener runs in the consumer's trio thread (async) or a worker thread (plain function)::

    consumer = PushConsumer("my-group", namesrv="127.0.0.1:9876", listener=handle)
    consumer.subscribe("orders", "TagA || TagB")
    consumer.start()
    ...
    consumer.shutdown()

Args: as :class:`rocketmq_py.PushConsumer`.
""",
        init_aio={"listener": "self._on_loop", "rebalance_listener": "self._rebalance_on_loop"},
        members={
            "aclose": LIFECYCLE,
            "instance": TRIO_ONLY,
            "offsets": TRIO_ONLY,
            "register_hook": AUTO,
            "subscribe": AUTO,
            "register_listener": Member(aio=Bridge(adapt={"listener": "self._on_loop"}, note=ON_LOOP_NOTE)),
            "client_id": Member(sync=Bridge("read_property")),
            "assignment": AUTO,
            "owned_queues": Member(
                deprecated="PushConsumer.owned_queues() is deprecated: use sorted(PushConsumer.assignment())"
            ),
            "statistics": IN_LOOP,
            "pop_statistics": IN_LOOP,
            "health": IN_LOOP,
            "lag": AUTO,
            "rebalance": Member(deprecated=_rebalance_deprecated("PushConsumer")),
            "broadcasting": AUTO,
            "consumed": AUTO,
            "failed": AUTO,
            "running_info": Member(
                sync=Bridge("call_sync"),
                deprecated=_handler_deprecated("PushConsumer", "running_info", "GET_CONSUMER_RUNNING_INFO"),
            ),
            "reset_offsets": Member(
                deprecated=_handler_deprecated(
                    "PushConsumer", "reset_offsets", "RESET_CONSUMER_CLIENT_OFFSET"
                )
            ),
            "consume_directly": Member(
                deprecated=_handler_deprecated("PushConsumer", "consume_directly", "CONSUME_MESSAGE_DIRECTLY")
            ),
        },
    ),
    "LitePullConsumer": Client(
        trio="rocketmq_py.consumer._lite_pull:LitePullConsumer",
        aio_base="LitePullConsumerBase",
        sync_base="LitePullConsumerBase",
        aio_doc="""\
Pulls topics on demand from asyncio code (Java ``DefaultLitePullConsumer``)::

    async with LitePullConsumer("my-group", namesrv="127.0.0.1:9876") as consumer:
        consumer.subscribe("orders")
        async for msg in consumer:  # ends when the consumer is closed
            await handle(msg)

Cancelling a task waiting in ``poll`` or ``getmany`` cancels the wait; messages not yet
handed out stay buffered for the next call.

Args: as :class:`rocketmq_py.LitePullConsumer`.
""",
        sync_doc="""\
Pulls topics on demand, blocking API (Java ``DefaultLitePullConsumer``)::

    with LitePullConsumer("my-group", namesrv="127.0.0.1:9876") as consumer:
        consumer.subscribe("orders")
        for msg in consumer:  # ends when the consumer is shut down
            handle(msg)

Args: as :class:`rocketmq_py.LitePullConsumer`.
""",
        members={
            "aclose": LIFECYCLE,
            "instance": TRIO_ONLY,
            "offsets": TRIO_ONLY,
            "register_hook": AUTO,
            "subscribe": AUTO,
            "assign": Member(aio=Bridge(adapt={"queues": "list"}), sync=Bridge(adapt={"queues": "list"})),
            "register_queue_change_listener": Member(
                aio=Bridge(
                    adapt={"listener": "self._on_loop"},
                    note=(
                        "In :mod:`rocketmq_py.aio` an ``async def`` listener is an asyncio coroutine "
                        "run on this loop; a plain function is called on the loop too (it should not "
                        "block), so either may call this consumer's methods, e.g. ``assign``."
                    ),
                ),
                sync=Bridge(
                    adapt={"listener": "self._in_worker_thread"},
                    note=(
                        "In :mod:`rocketmq_py.sync` a plain function runs in a worker thread, so it "
                        "may block and call this consumer's methods (``assign``); an ``async def`` "
                        "runs in the consumer's trio thread."
                    ),
                ),
            ),
            "client_id": Member(sync=Bridge("read_property")),
            "broadcasting": AUTO,
            "assignment": AUTO,
            # Deprecated (trio property warns; reading it is thread-safe: never in the loop thread).
            "pull_threshold_for_all": Member(sync=Bridge("property")),
            "fetch_message_queues": AUTO,
            "rebalance": Member(deprecated=_rebalance_deprecated("LitePullConsumer")),
            "poll": Member(aio=Bridge(on_lost="self._unpoll")),
            "getmany": Member(aio=Bridge(on_lost="self._ungetmany")),
            "__aiter__": HAND,
            "__anext__": HAND,
            "pause": Member(
                aio=Bridge(adapt={"queues": "list"}), sync=Bridge("call_sync", adapt={"queues": "list"})
            ),
            "resume": Member(
                aio=Bridge(adapt={"queues": "list"}), sync=Bridge("call_sync", adapt={"queues": "list"})
            ),
            "paused": AUTO,
            "seek": IN_LOOP,
            "seek_to_beginning": AUTO,
            "seek_to_begin": Member(alias_of="seek_to_beginning"),
            "seek_to_end": AUTO,
            "seek_to_timestamp": AUTO,
            "offset_for_timestamp": AUTO,
            "running_info": Member(
                sync=Bridge("call_sync"),
                deprecated=_handler_deprecated(
                    "LitePullConsumer", "running_info", "GET_CONSUMER_RUNNING_INFO"
                ),
            ),
            "reset_offsets": Member(
                deprecated=_handler_deprecated(
                    "LitePullConsumer", "reset_offsets", "RESET_CONSUMER_CLIENT_OFFSET"
                )
            ),
            "committed": AUTO,
            "commit": AUTO,
            "lag": AUTO,
            "health": IN_LOOP,
            "end_offsets": Member(
                aio=Bridge(adapt={"queues": "list"}), sync=Bridge(adapt={"queues": "list"})
            ),
            "beginning_offsets": Member(
                aio=Bridge(adapt={"queues": "list"}), sync=Bridge(adapt={"queues": "list"})
            ),
        },
    ),
    "Admin": Client(
        trio="rocketmq_py.admin._admin:Admin",
        aio_doc="""\
Administration of a RocketMQ cluster from asyncio code: topics, groups, offsets, messages.

The same client as :class:`rocketmq_py.admin.Admin`, hosted on the running asyncio loop::

    async with Admin(namesrv="127.0.0.1:9876") as admin:
        stats = await admin.topic_stats("orders")

Args: as :class:`rocketmq_py.admin.Admin`.
""",
        sync_doc="""\
Administration of a RocketMQ cluster, blocking: topics, groups, offsets, messages.

The same client as :class:`rocketmq_py.admin.Admin`, run in a background trio thread::

    with Admin(namesrv="127.0.0.1:9876") as admin:
        stats = admin.topic_stats("orders")

Args: as :class:`rocketmq_py.admin.Admin`.
""",
        members={
            "aclose": LIFECYCLE,
            "brokers": AUTO,
            "topics": AUTO,
            "route": AUTO,
            "create_topic": AUTO,
            "delete_topic": AUTO,
            "topic_stats": AUTO,
            "groups": AUTO,
            "group_progress": AUTO,
            "group_members": AUTO,
            "running_info": AUTO,
            "reset_offsets": AUTO,
            "message": AUTO,
            "message_by_unique_key": AUTO,
            "messages_by_key": AUTO,
            "consume_directly": AUTO,
        },
    ),
}


#: Names of ``rocketmq_py.__all__`` that ``rocketmq_py.aio`` and ``rocketmq_py.sync`` do not re-export,
#: and why. The generator re-exports every other name in the facade packages' ``__init__.py`` (the
#: clients from their generated modules); the surface tests read this too.
NOT_IN_FACADES: Final[Mapping[str, str]] = {
    "send_many": "a trio coroutine over a trio Producer",
    "SendCounts": "what send_many returns",
    "__version__": "the package's, not an API name",
}
