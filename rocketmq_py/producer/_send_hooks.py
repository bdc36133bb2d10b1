"""The send hooks around one attempt (Java ``SendMessageHook``): what they see, and when.

A hook sees each attempt as a :class:`~rocketmq_py.hooks.SendContext`: the message and the queue
chosen, the broker's address when known, whether it is a batch, a oneway send, a half message of a
transaction or a delayed one. ``before_send`` runs before the attempt's request is built (so the
properties it adds are sent); ``after_send`` runs once the attempt ended, with the seconds it took
and its result or the exception that ended it (a cancellation included). The producer builds no
context at all when it has no hook.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio

from rocketmq_py._client._capabilities import DELIVERY_TIME_KEYS
from rocketmq_py._client._instance import ClientInstance
from rocketmq_py.hooks import Hook, SendContext, call_hooks
from rocketmq_py.producer._types import SendResult
from rocketmq_py.protocol import Message, MessageQueue, PropertyKey

__all__ = ["oneway_with_hooks", "send_context", "send_with_hooks"]


def send_context(
    instance: ClientInstance,
    group: str,
    namespace: str | None,
    message: Message,
    mq: MessageQueue,
    *,
    batch: bool,
    oneway: bool,
    attempt: int = 1,
) -> SendContext:
    """What the hooks get for one attempt of sending ``message`` to ``mq``."""
    properties = message.properties
    return SendContext(
        producer_group=group,
        message=message,
        queue=mq,
        broker_address=instance.routes.master_address(mq.broker_name),
        born_host=instance.config.client_ip or "",
        attempt=attempt,
        batch=batch,
        oneway=oneway,
        transactional=properties.get(PropertyKey.TRANSACTION_PREPARED) == "true",
        delayed=PropertyKey.DELAY_TIME_LEVEL in properties or not DELIVERY_TIME_KEYS.isdisjoint(properties),
        namespace=namespace or "",
        client_id=instance.client_id,
    )


async def send_with_hooks(
    hooks: list[Hook], ctx: SendContext, send: Callable[[], Awaitable[SendResult]]
) -> SendResult:
    """``send()`` (one attempt) between the hooks' ``before_send`` and ``after_send`` (Java ``sendKernelImpl``)."""
    call_hooks(hooks, "before_send", ctx)
    started = trio.current_time()
    try:
        result = await send()
    except BaseException as exc:
        ctx.elapsed = trio.current_time() - started
        ctx.exception = exc
        call_hooks(hooks, "after_send", ctx)
        raise
    ctx.elapsed = trio.current_time() - started
    ctx.result = result
    ctx.success = True
    call_hooks(hooks, "after_send", ctx)
    return result


async def oneway_with_hooks(
    hooks: list[Hook], ctx: SendContext, write: Callable[[], Awaitable[None]]
) -> None:
    """``write()`` (a oneway attempt: no result) between the hooks' ``before_send`` and ``after_send``."""
    call_hooks(hooks, "before_send", ctx)
    started = trio.current_time()
    try:
        await write()
    except BaseException as exc:
        ctx.exception = exc
        raise
    else:
        ctx.success = True
    finally:
        ctx.elapsed = trio.current_time() - started
        call_hooks(hooks, "after_send", ctx)
