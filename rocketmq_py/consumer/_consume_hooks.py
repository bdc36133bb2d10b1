"""The consume side of the hooks (:mod:`rocketmq_py.hooks`): a listener call's context, its end.

Push consumers call :func:`consume_context` and ``before_consume`` only when hooks are
registered; :func:`end_consume` fills in the outcome (Java's status, ``ConsumeReturnType`` and
elapsed time) and calls ``after_consume``. The lite pull consumer reports what a poll returned
with :func:`report_polled`, both calls at once, as Java's ``DefaultLitePullConsumerImpl.poll``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import trio

from rocketmq_py.hooks import ConsumeContext, Hook, call_hooks
from rocketmq_py.protocol import ConsumeType, MessageExt, MessageQueue

__all__ = ["consume_context", "end_consume", "report_polled"]


def consume_context(
    hooks: Sequence[Hook],
    group: str,
    msgs: Sequence[MessageExt],
    mq: MessageQueue,
    *,
    orderly: bool,
    namespace: str | None = None,
) -> ConsumeContext:
    """A push consumer's context for a listener call on ``msgs``, after ``before_consume``."""
    ctx = ConsumeContext(
        consumer_group=group, messages=msgs, queue=mq, orderly=orderly, namespace=namespace or ""
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
) -> None:
    """``before_consume`` then ``after_consume`` (a success) per queue of what a poll returns."""
    for mq, msgs in taken.items():
        ctx = ConsumeContext(
            consumer_group=group,
            messages=msgs,
            queue=mq,
            consume_type=ConsumeType.CONSUME_ACTIVELY,
            namespace=namespace or "",
        )
        call_hooks(hooks, "before_consume", ctx)
        ctx.elapsed = 0.0
        ctx.success = True
        ctx.status = "CONSUME_SUCCESS"
        ctx.return_type = "SUCCESS"
        call_hooks(hooks, "after_consume", ctx)
