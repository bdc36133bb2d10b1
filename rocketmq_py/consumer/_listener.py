"""What a push consumer calls: the message listener, its answers, and the rebalance listener.

A listener is an ``async def`` (awaited in the consume task) or a plain function (run in a worker
thread, so it may block). Concurrent consumption reads its answer as a :class:`ConsumeStatus`,
orderly consumption as a :class:`ConsumeOrderlyStatus`; ``None`` means success for both, and each
accepts the other's two values. CONSUME_MESSAGE_DIRECTLY (``mqadmin queryMsgById -d``) calls the
listener once through :func:`consume_directly`.
"""

from __future__ import annotations

import enum
import inspect
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

import trio

from rocketmq_py.consumer._pull_result import restore_retry_topic, set_consume_start_time
from rocketmq_py.errors import ClientError
from rocketmq_py.hooks import ConsumeContext
from rocketmq_py.protocol import ConsumeMessageDirectlyResult, ConsumeResult, MessageExt, MessageQueue

__all__ = [
    "ConsumeOrderlyStatus",
    "ConsumeStatus",
    "Listener",
    "RebalanceListener",
    "concurrent_status",
    "consume_call",
    "consume_directly",
    "invoke_listener",
    "is_async_listener",
    "notify_rebalance_listener",
]

log = logging.getLogger("rocketmq_py.consumer")

S = TypeVar("S", "ConsumeStatus", "ConsumeOrderlyStatus")


class ConsumeStatus(enum.Enum):
    """What a listener answers (Java ``ConsumeConcurrentlyStatus``); ``None`` counts as success."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeOrderlyStatus(enum.Enum):
    """What an orderly listener answers (Java ``ConsumeOrderlyStatus``); ``None`` counts as SUCCESS.

    ``SUSPEND_CURRENT_QUEUE_A_MOMENT`` puts the messages back and pauses their queue for
    ``suspend_current_queue_time`` seconds; the other queues go on. The concurrent statuses are
    accepted too: ``CONSUME_SUCCESS`` means SUCCESS, ``RECONSUME_LATER`` means SUSPEND.
    """

    SUCCESS = "SUCCESS"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"

    @classmethod
    def of(cls, result: object) -> ConsumeOrderlyStatus:
        """The status a listener's return value means.

        Raises:
            ClientError: a value that is no status.
        """
        if result is None or isinstance(result, ConsumeOrderlyStatus):
            return cls.SUCCESS if result is None else result
        name = getattr(result, "value", result)
        if name in ("SUCCESS", "CONSUME_SUCCESS"):
            return cls.SUCCESS
        if name in ("SUSPEND_CURRENT_QUEUE_A_MOMENT", "RECONSUME_LATER"):
            return cls.SUSPEND_CURRENT_QUEUE_A_MOMENT
        raise ClientError(f"an orderly listener returned {result!r}, not a ConsumeOrderlyStatus")


_Status = ConsumeStatus | ConsumeOrderlyStatus | None
#: ``listener(messages)``: an async function, or a plain one (run in a worker thread). It answers
#: a :class:`ConsumeStatus` (concurrent) or :class:`ConsumeOrderlyStatus` (orderly); ``None`` is success.
Listener = Callable[[list[MessageExt]], "Awaitable[_Status] | _Status"]


class RebalanceListener(Protocol):
    """Told about queues changing hands (like Kafka's ``ConsumerRebalanceListener``).

    Either method may be a plain or an ``async`` function; an exception is logged and ignored.
    ``on_revoked`` runs once the revoked queues' pulls stopped and their running listener calls
    finished (or ``handoff_timeout`` passed), *before* their offsets are committed and their
    locks released: it may flush or commit what the listener did. ``on_assigned`` runs when
    new queues were allocated, before their first pull.
    """

    def on_revoked(self, queues: list[MessageQueue]) -> Awaitable[None] | None:
        """``queues`` are leaving this member: their pulls stopped and their listener calls ended."""
        ...

    def on_assigned(self, queues: list[MessageQueue]) -> Awaitable[None] | None:
        """``queues`` were allocated to this member; called before their first pull."""
        ...


#: Whether each listener seen is async, so that it is inspected once rather than per message.
_ASYNC_LISTENERS: weakref.WeakKeyDictionary[object, bool] = weakref.WeakKeyDictionary()


def _inspect_async(listener: object) -> bool:
    # An async def, or an object whose __call__ is one (trio refuses to run either in a thread).
    return inspect.iscoroutinefunction(listener) or inspect.iscoroutinefunction(
        getattr(listener, "__call__", None)  # noqa: B004 - the method itself is inspected
    )


def is_async_listener(listener: object) -> bool:
    """Whether ``listener`` is awaited (an ``async def``, or an object whose ``__call__`` is one)."""
    try:
        return _ASYNC_LISTENERS[listener]
    except KeyError:
        found = _ASYNC_LISTENERS[listener] = _inspect_async(listener)
        return found
    except TypeError:  # not weakly referenceable (or unhashable): inspected every time
        return _inspect_async(listener)


async def invoke_listener(listener: Listener, msgs: list[MessageExt]) -> object:
    """Call ``listener`` with ``msgs``: awaited if it is async, else in a worker thread."""
    if is_async_listener(listener):
        pending = listener(msgs)
        assert inspect.isawaitable(pending)
        return await pending
    outcome = await trio.to_thread.run_sync(listener, msgs, abandon_on_cancel=True)
    return await outcome if inspect.isawaitable(outcome) else outcome


def concurrent_status(result: object) -> ConsumeStatus:
    """A listener's answer read as concurrent consumption does (``None`` and SUCCESS: success).

    Raises:
        ValueError: a value that is no status.
    """
    if result is None or result is ConsumeOrderlyStatus.SUCCESS:
        return ConsumeStatus.CONSUME_SUCCESS
    if result is ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT:
        return ConsumeStatus.RECONSUME_LATER
    return ConsumeStatus(result)


async def notify_rebalance_listener(
    listener: RebalanceListener | None, method: str, queues: list[MessageQueue], group: str
) -> None:
    """Call ``listener.<method>(queues)`` (awaited if async); a failure is logged, not raised."""
    callback = getattr(listener, method, None)
    if callback is None:
        return
    try:
        result = callback(queues)
        if inspect.isawaitable(result):
            await result
    except Exception:
        log.exception("%s: rebalance listener %s(%s) failed", group, method, queues)


async def consume_directly(
    listener: Listener, msg: MessageExt, *, group: str, orderly: bool, namespace: str | None = None
) -> ConsumeMessageDirectlyResult:
    """CONSUME_MESSAGE_DIRECTLY: call the listener once with ``[msg]`` (no retry, no send-back).

    A ``None`` answer counts as success here as everywhere in this client (Java would say
    CR_RETURN_NULL).
    """
    msgs = [msg]
    restore_retry_topic(msgs, group, namespace)
    set_consume_start_time(msgs, int(time.time() * 1000))
    started = time.monotonic()
    try:
        raw = await invoke_listener(listener, msgs)
        if orderly:
            ok = ConsumeOrderlyStatus.of(raw) is ConsumeOrderlyStatus.SUCCESS
        else:
            ok = concurrent_status(raw) is ConsumeStatus.CONSUME_SUCCESS
        result = ConsumeResult.CR_SUCCESS if ok else ConsumeResult.CR_LATER
        if raw is None:  # the name of the status None stands for, as Java names the status
            remark = (ConsumeOrderlyStatus.SUCCESS if orderly else ConsumeStatus.CONSUME_SUCCESS).value
        else:
            remark = getattr(raw, "value", None) or str(raw)
    except Exception as exc:
        log.warning("%s: direct consumption of %s failed: %r", group, msg.msg_id, exc)
        result, remark = ConsumeResult.CR_THROW_EXCEPTION, f"{type(exc).__name__}: {exc}"
    spent = int((time.monotonic() - started) * 1000)
    return ConsumeMessageDirectlyResult(
        order=orderly,
        auto_commit=True,
        consume_result=result,
        remark=remark,
        spent_time_mills=spent,
    )


async def consume_call(
    listener: Listener,
    msgs: list[MessageExt],
    *,
    group: str,
    namespace: str | None = None,
    queue: MessageQueue,
    timeout: float,  # noqa: ASYNC109 - the listener's deadline, Java's consumeTimeout
    read: Callable[[object], S],
    failed: S,
    context: ConsumeContext | None = None,
) -> S:
    """One consumption: the listener called on ``msgs`` (topics restored, start time set) under
    ``timeout``; its answer read by ``read``. An exception or the timeout is ``failed`` (logged).

    ``context`` (hooks registered): gets the exception and ``return_type`` of a failed call.
    """
    restore_retry_topic(msgs, group, namespace)
    set_consume_start_time(msgs, int(time.time() * 1000))
    status = failed
    try:
        # A bare CancelScope: move_on_after's generator wrapper costs per message here.
        scope = trio.CancelScope(deadline=trio.current_time() + timeout)
        cut: trio.Cancelled | None = None
        with scope:
            try:
                status = read(await invoke_listener(listener, msgs))
            except trio.Cancelled as exc:  # kept for the hooks: the concurrent service reports the same
                cut = exc
                raise
        if scope.cancelled_caught:
            log.warning(
                "%s: listener took more than %g s on %d messages of %s", group, timeout, len(msgs), queue
            )
            if context is not None:
                context.return_type, context.exception = "TIME_OUT", cut
    except Exception as exc:
        log.exception("%s: listener failed on %d messages of %s", group, len(msgs), queue)
        if context is not None:
            context.return_type, context.exception = "EXCEPTION", exc
    return status
