"""Send and consume hooks: code of yours called around every send attempt and every consumption.

Java ``SendMessageHook`` / ``ConsumeMessageHook``. Subclass :class:`Hook`, override the methods you
need, and give instances to a client::

    class Timing(Hook):
        def after_send(self, ctx: SendContext) -> None:
            print(ctx.message.topic, ctx.success, ctx.elapsed)

    producer = Producer("group", hooks=[Timing()])
    consumer = PushConsumer("group", hooks=[Timing()])  # or consumer.register_hook(Timing())

When they run:

- ``before_send`` / ``after_send``: around each attempt of a send (a retry is a new attempt with
  a new context), ``send_oneway`` and the half message of a transaction included. ``before_send``
  runs before the request is encoded: properties it adds to ``ctx.message`` travel with the
  message (that is how :mod:`rocketmq_py.otel` propagates a trace). ``after_send`` sees the
  result or the exception.
- ``before_consume`` / ``after_consume``: around each listener call of a push consumer (a batch
  of messages of one queue), concurrent, orderly or popped (``client_rebalance=False``); for a lite pull consumer, once per queue's
  messages returned by ``poll``, ``getmany`` or ``async for``, both at once (as Java).
- ``bind``: once per client the hook is given to, when it is given (a hook that observes the
  client itself, like :class:`rocketmq_py.otel.OpenTelemetryMetrics`'s gauges, keeps it there).
- ``on_event``: what happens to the client's connections, brokers, routes and queues, as a
  :class:`ClientEvent` of one of :data:`EVENT_KINDS` (nats.py's connection callbacks, aiokafka's
  rebalance listener, in one place).

Hooks are plain functions called in the client's task, in the order they were registered, and
must not block. An exception raised by a hook is logged and ignored: it never fails the send or
the consumption. With no hook registered, no context is built.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from rocketmq_py.protocol import ConsumeType, Message, MessageExt, MessageQueue

# call_hooks and hook_list are the clients' helpers, not API.
__all__ = ["EVENT_KINDS", "ClientEvent", "ConsumeContext", "Hook", "SendContext"]

log = logging.getLogger("rocketmq_py.hooks")


@dataclass(eq=False, slots=True, kw_only=True)
class SendContext:
    """One send attempt, as a hook sees it (Java ``SendMessageContext``).

    Attributes:
        producer_group: the producer's group.
        message: the message being sent (a batch's wrapper, whose body is the encoded batch,
            when ``batch``); properties added to it in ``before_send`` are sent.
        queue: the queue chosen for this attempt (``queue.broker_name`` is the broker's name).
        broker_address: the broker master's address, when known before the attempt.
        born_host: this client's IP address.
        attempt: 1 for the first attempt of a send, 2 for the first retry, ...
        batch: a ``send_batch``.
        oneway: a ``send_oneway`` (no result comes back).
        transactional: the half message of a transaction.
        delayed: the message has a delay level or a delivery time.
        namespace: the client's namespace (Java ``getNamespace()``), empty outside one.
        client_id: the producer's client id (as the brokers know it), empty before it started.
        start_time: wall-clock seconds (``time.time()``) when the attempt began.
        elapsed: seconds the attempt took (set before ``after_send``).
        result: the broker's answer (``None`` until ``after_send``, and for failures and oneway sends).
        exception: why the attempt failed (set before ``after_send``), else ``None``.
        success: the attempt got an answer (or a oneway send was written).
        state: scratch space shared by ``before_send`` and ``after_send`` of this attempt (Java's
            ``mqTraceContext``), e.g. a span; key it by something of your hook's own.
    """

    producer_group: str
    message: Message
    queue: MessageQueue
    broker_address: str | None = None
    born_host: str = ""
    attempt: int = 1
    batch: bool = False
    oneway: bool = False
    transactional: bool = False
    delayed: bool = False
    namespace: str = ""
    client_id: str = ""
    start_time: float = field(default_factory=time.time)
    elapsed: float | None = None
    result: Any = None  # SendResult (Any: keeps this module free of the producer package)
    exception: BaseException | None = None
    success: bool = False
    state: dict[Any, Any] = field(default_factory=dict)

    @property
    def broker_name(self) -> str:
        """The name of the broker this attempt goes to."""
        return self.queue.broker_name


@dataclass(eq=False, slots=True, kw_only=True)
class ConsumeContext:
    """One consumption of messages of one queue, as a hook sees it (Java ``ConsumeMessageContext``).

    Attributes:
        consumer_group: the consumer's group.
        messages: the messages handed to the listener (or returned by the poll), of one queue.
        queue: that queue.
        consume_type: ``CONSUME_PASSIVELY`` (push consumer) or ``CONSUME_ACTIVELY`` (lite pull).
        orderly: an orderly push consumer.
        namespace: the client's namespace (Java ``getNamespace()``), empty outside one.
        client_id: the consumer's client id (as the brokers know it).
        start_time: wall-clock seconds (``time.time()``) when the consumption began.
        await_time: seconds the oldest of ``messages`` waited in the consumer's local cache, from
            the pull (or pop) that brought it to this call; ``None`` where not measured (lite pull).
        elapsed: seconds the listener took (set before ``after_consume``).
        status: the listener's answer as Java names it (``"CONSUME_SUCCESS"``,
            ``"RECONSUME_LATER"``, ``"SUCCESS"``, ``"SUSPEND_CURRENT_QUEUE_A_MOMENT"``), set
            before ``after_consume``.
        return_type: how the call ended (Java ``ConsumeReturnType``): ``"SUCCESS"``,
            ``"FAILED"`` (the listener asked for a retry), ``"EXCEPTION"`` or ``"TIME_OUT"``.
        success: the messages were consumed (set before ``after_consume``).
        exception: what the listener raised (or the cancellation that cut it), else ``None``.
        state: scratch space shared by ``before_consume`` and ``after_consume`` of this call.
    """

    consumer_group: str
    messages: Sequence[MessageExt]
    queue: MessageQueue
    consume_type: ConsumeType = ConsumeType.CONSUME_PASSIVELY
    orderly: bool = False
    namespace: str = ""
    client_id: str = ""
    start_time: float = field(default_factory=time.time)
    await_time: float | None = None
    elapsed: float | None = None
    status: str | None = None
    return_type: str | None = None
    success: bool = False
    exception: BaseException | None = None
    state: dict[Any, Any] = field(default_factory=dict)


#: What a :class:`ClientEvent` can say happened:
#:
#: - ``connected`` / ``disconnected``: a connection to ``address`` (a NameServer, a broker, a
#:   Proxy) was opened, or ended (``detail``: why; it is opened again when next needed);
#: - ``broker_unavailable`` / ``broker_available``: ``broker_name`` at ``address`` did not accept a
#:   heartbeat (``detail``: the error), or accepted one again;
#: - ``route_changed``: ``topic``'s route changed (``detail``: its brokers and queue counts now; the
#:   first route of a topic is not a change);
#: - ``rebalanced``: a consumer's share of ``topic`` changed: queues ``added`` and ``removed``.
EVENT_KINDS: Final = (
    "connected",
    "disconnected",
    "broker_unavailable",
    "broker_available",
    "route_changed",
    "rebalanced",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientEvent:
    """Something that happened to a client (see :data:`EVENT_KINDS`), as :meth:`Hook.on_event` gets it.

    Attributes:
        kind: one of :data:`EVENT_KINDS`.
        client_id: the client's id.
        address: the peer (``connected``, ``disconnected``, the broker events).
        broker_name: the broker (the broker events).
        topic: the topic (``route_changed``, ``rebalanced``), as the application names it.
        added, removed: (``rebalanced``) the queues the consumer took and gave up.
        detail: why, or what now, in words.
        time: wall-clock seconds (``time.time()``) when it happened.
    """

    kind: str
    client_id: str
    address: str | None = None
    broker_name: str | None = None
    topic: str | None = None
    added: frozenset[MessageQueue] = frozenset()
    removed: frozenset[MessageQueue] = frozenset()
    detail: str | None = None
    time: float = field(default_factory=time.time)


class Hook:
    """Called around sends and consumptions; override the methods you need (all do nothing here).

    Each method runs in the client's task and must not block; what it raises is logged and
    ignored. :attr:`name` names the hook in those logs.
    """

    #: Shown in the log when the hook raises (default: the class name).
    name: str | None = None

    def bind(self, client: Any) -> None:
        """Called once for each client this hook is given to (``hooks=`` or ``register_hook``):
        a :class:`~rocketmq_py.Producer`, :class:`~rocketmq_py.PushConsumer` or
        :class:`~rocketmq_py.LitePullConsumer`, not started yet, or already running when the hook
        is registered later. The metrics hook observes a consumer's cache through it."""

    def before_send(self, ctx: SendContext) -> None:
        """Before a send attempt is encoded: may add properties to ``ctx.message``."""

    def after_send(self, ctx: SendContext) -> None:
        """After a send attempt: ``ctx.result`` or ``ctx.exception``, ``ctx.elapsed`` are set."""

    def before_consume(self, ctx: ConsumeContext) -> None:
        """Before the listener gets ``ctx.messages`` (lite pull: before they are returned)."""

    def after_consume(self, ctx: ConsumeContext) -> None:
        """After the listener returned: ``ctx.status``, ``ctx.success``, ``ctx.elapsed`` are set."""

    def on_event(self, event: ClientEvent) -> None:
        """A connection, broker, route or queue event of the client (:data:`EVENT_KINDS`)."""


def hook_list(hooks: Iterable[Hook], client: Any = None) -> list[Hook]:
    """``hooks`` as a list, each checked to be a :class:`Hook`, then bound to ``client`` if given
    (:meth:`Hook.bind`; what that raises is logged and ignored, as for every hook call).

    Raises:
        TypeError: an item is not a :class:`Hook`.
    """
    checked = list(hooks)
    for hook in checked:
        if not isinstance(hook, Hook):
            raise TypeError(f"a hook must be a rocketmq_py.Hook, got {type(hook).__name__}")
    if client is not None:
        for hook in checked:
            try:
                hook.bind(client)
            except Exception:
                log.exception("hook %s failed in bind", hook.name or type(hook).__name__)
    return checked


def call_hooks(hooks: Sequence[Hook], method: str, ctx: SendContext | ConsumeContext | ClientEvent) -> None:
    """Call ``method`` (e.g. ``"before_send"``) of every hook on ``ctx``, in order; log what raises."""
    for hook in hooks:
        try:
            getattr(hook, method)(ctx)
        except Exception:
            log.exception("hook %s failed in %s", hook.name or type(hook).__name__, method)
