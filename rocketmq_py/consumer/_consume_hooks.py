"""The consume side of the hooks (:mod:`rocketmq_py.hooks`): a listener call's context, its end.

Push consumers call :func:`consume_context` and ``before_consume`` only when hooks are
registered; :func:`end_consume` fills in the outcome (Java's status, ``ConsumeReturnType`` and
elapsed time) and calls ``after_consume``. The lite pull consumer reports what a poll returned
with :func:`report_polled`, both calls at once, as Java's ``DefaultLitePullConsumerImpl.poll``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import trio

from rocketmq_py.consumer._listener import Listener, S, consume_call
from rocketmq_py.consumer._pull_result import restore_retry_topic
from rocketmq_py.hooks import ConsumeContext, Hook, call_hooks
from rocketmq_py.protocol import ConsumeType, MessageExt, MessageQueue

__all__ = ["consume_context", "consume_with_hooks", "end_consume", "report_polled"]


def consume_context(
    hooks: Sequence[Hook],
    group: str,
    msgs: Sequence[MessageExt],
    mq: MessageQueue,
    *,
    orderly: bool,
    namespace: str | None = None,
    client_id: str = "",
    arrived: float | None = None,
) -> ConsumeContext:
    """A push consumer's context for a listener call on ``msgs``, after ``before_consume``.

    ``arrived``: when the oldest of ``msgs`` came into the local cache (trio clock), for the
    context's ``await_time``.
    """
    ctx = ConsumeContext(
        consumer_group=group,
        messages=msgs,
        queue=mq,
        orderly=orderly,
        namespace=namespace or "",
        client_id=client_id,
        await_time=None if arrived is None else max(0.0, trio.current_time() - arrived),
    )
    call_hooks(hooks, "before_consume", ctx)
    return ctx


def end_consume(
    hooks: Sequence[Hook],
    ctx: ConsumeContext,
    started: float,
    *,
    ok: bool,
    status: str,
    return_type: str,
    exception: BaseException | None = None,
) -> None:
    """Record how the call begun at ``started`` (trio clock) ended, then call ``after_consume``."""
    ctx.elapsed = trio.current_time() - started
    ctx.success = ok
    ctx.status = status
    ctx.return_type = return_type
    ctx.exception = exception
    call_hooks(hooks, "after_consume", ctx)


def report_polled(
    hooks: Sequence[Hook],
    group: str,
    taken: Mapping[MessageQueue, list[MessageExt]],
    namespace: str | None = None,
    client_id: str = "",
) -> None:
    """``before_consume`` then ``after_consume`` (a success) per queue of what a poll returns."""
    for mq, msgs in taken.items():
        ctx = ConsumeContext(
            consumer_group=group,
            messages=msgs,
            queue=mq,
            consume_type=ConsumeType.CONSUME_ACTIVELY,
            namespace=namespace or "",
            client_id=client_id,
        )
        call_hooks(hooks, "before_consume", ctx)
        ctx.elapsed = 0.0
        ctx.success = True
        ctx.status = "CONSUME_SUCCESS"
        ctx.return_type = "SUCCESS"
        call_hooks(hooks, "after_consume", ctx)


async def consume_with_hooks(
    hooks: Sequence[Hook],
    listener: Listener,
    msgs: list[MessageExt],
    *,
    group: str,
    namespace: str | None,
    queue: MessageQueue,
    timeout: float,  # noqa: ASYNC109 - the listener's deadline, as consume_call's
    read: Callable[[object], S],
    failed: S,
    success: S,
    orderly: bool,
    started: float,
    client_id: str = "",
    arrived: float | None = None,
) -> S:
    """:func:`~rocketmq_py.consumer._listener.consume_call` between ``before_consume`` and
    ``after_consume`` (the orderly and POP services; no context is built without ``hooks``).
    ``arrived``: as :func:`consume_context`'s.

    The hooks see the topics the listener sees. A call cut short by the consumer stopping ends as
    ``TIME_OUT`` with ``failed``'s status before the cancellation goes on.
    """
    if not hooks:
        return await consume_call(
            listener,
            msgs,
            group=group,
            namespace=namespace,
            queue=queue,
            timeout=timeout,
            read=read,
            failed=failed,
        )
    restore_retry_topic(msgs, group, namespace)
    ctx = consume_context(
        hooks,
        group,
        msgs,
        queue,
        orderly=orderly,
        namespace=namespace,
        client_id=client_id,
        arrived=arrived,
    )
    try:
        status = await consume_call(
            listener,
            msgs,
            group=group,
            namespace=namespace,
            queue=queue,
            timeout=timeout,
            read=read,
            failed=failed,
            context=ctx,
        )
    except BaseException as exc:  # the consumer stops mid-call
        end_consume(hooks, ctx, started, ok=False, status=failed.value, return_type="TIME_OUT", exception=exc)
        raise
    ok = status is success
    kind = ctx.return_type or ("SUCCESS" if ok else "FAILED")
    end_consume(hooks, ctx, started, ok=ok, status=status.value, return_type=kind, exception=ctx.exception)
    return status
