"""``Producer.request``: send a message and wait for the reply a responder sends back.

Java ``DefaultMQProducer.request`` (``DefaultMQProducerImpl.request`` and ``prepareSendRequest``):

1. the request gets ``CORRELATION_ID`` (a fresh UUID), ``REPLY_TO_CLIENT`` (this client's id)
   and ``TTL`` (the timeout in ms) and a slot in the client instance's
   :class:`~rocketmq_py._client._replies.ReplyWaiters`, before anything is sent;
2. the first request to a topic fetches its route and heartbeats every broker at once (Java does
   the same): a broker can push a reply only to a client whose heartbeat it has seen;
3. the request is sent as any message (retries included), then the reply, pushed by a broker
   with PUSH_REPLY_MESSAGE_TO_CLIENT, fills the slot.

One deadline covers all three. When it passes, :class:`~rocketmq_py.errors.RequestReplyTimeout`
says whether the request was stored; the slot is removed however the call ends, so a reply that
comes later is dropped (:meth:`ReplyWaiters.deliver`).

:func:`send_request` gets its collaborators, not the producer: the client instance (its id, routes,
heartbeats and reply slots) and a function that sends the request within the time left.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

import trio

from rocketmq_py._client._instance import ClientInstance
from rocketmq_py.errors import RequestReplyTimeout, RequestTimeout
from rocketmq_py.protocol import Message, MessageExt, PropertyKey

__all__ = ["SendAttempts", "new_correlation_id", "send_request"]

#: Sends a request as any message (retries included) within the seconds given; returns once the
#: broker stored it (raises RequestTimeout when the seconds run out).
SendAttempts = Callable[[Message, float], Awaitable[object]]


def new_correlation_id() -> str:
    """A fresh ``CORRELATION_ID`` (a random UUID, as Java's ``CorrelationIdUtil``)."""
    return str(uuid.uuid4())


async def send_request(
    instance: ClientInstance,
    message: Message,
    send: SendAttempts,
    *,
    timeout: float,  # noqa: ASYNC109 - the whole request's deadline, as Java's
) -> MessageExt:
    """The body of :meth:`Producer.request` (``message`` is validated; ``send`` sends it)."""
    correlation_id = new_correlation_id()
    properties = message.properties
    properties[PropertyKey.CORRELATION_ID] = correlation_id
    properties[PropertyKey.REPLY_TO_CLIENT] = instance.client_id
    properties[PropertyKey.MESSAGE_TTL] = str(max(0, round(timeout * 1000)))
    waiters = instance.replies
    slot = waiters.register(correlation_id)
    sent = False
    try:
        with trio.move_on_after(timeout) as scope:
            if instance.routes.cached_publish_info(message.topic) is None:
                await instance.routes.publish_info(message.topic)
                await instance.heartbeat_all()
            remaining = max(0.0, scope.deadline - trio.current_time())
            try:
                await send(message, remaining)
            except RequestTimeout as exc:
                raise RequestReplyTimeout(message.topic, correlation_id, timeout, sent=False) from exc
            sent = True
            return await slot.wait()
        raise RequestReplyTimeout(message.topic, correlation_id, timeout, sent=sent)
    finally:
        waiters.discard(correlation_id)
