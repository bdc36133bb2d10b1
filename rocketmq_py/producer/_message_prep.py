"""What a producer does to the user's messages before its send loop, without I/O.

Which properties a send may carry (:func:`reserved_for`: a reply to a request carries the
request's correlation properties; ``request`` sets :data:`REQUEST_PROPERTY_KEYS` itself), and a
batch as the one wrapper message that is sent (:func:`batch_request`: every message validated and
given its UNIQ_KEY, the batch encoded and its size checked) and the result the caller sees
(:func:`batch_result`: the inner ids, the user's queue).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from rocketmq_py.errors import MessageTooLarge
from rocketmq_py.producer._send_path import send_result
from rocketmq_py.producer._types import SendResult
from rocketmq_py.producer._validation import validate_message
from rocketmq_py.protocol import (
    REPLY_MESSAGE_FLAG,
    Message,
    PropertyKey,
    encode_batch,
    encode_keyed_batch,
    unwrap_queue,
    validate_batch,
    wrap_name,
)

__all__ = ["REPLY_PROPERTY_KEYS", "REQUEST_PROPERTY_KEYS", "batch_request", "batch_result", "reserved_for"]

#: The properties ``request`` sets on a request.
REQUEST_PROPERTY_KEYS: Final = frozenset(
    {PropertyKey.CORRELATION_ID, PropertyKey.REPLY_TO_CLIENT, PropertyKey.MESSAGE_TTL}
)
#: The properties a reply (``create_reply``) carries that other messages may not set.
REPLY_PROPERTY_KEYS: Final = frozenset(
    {
        PropertyKey.MESSAGE_TYPE,
        PropertyKey.CORRELATION_ID,
        PropertyKey.REPLY_TO_CLIENT,
        PropertyKey.MESSAGE_TTL,
    }
)


def reserved_for(reserved: frozenset[str], message: Message) -> frozenset[str]:
    """The property keys ``message`` may not carry, given the producer's ``reserved`` set."""
    # A reply (see create_reply) carries the request's correlation properties.
    if message.properties.get(PropertyKey.MESSAGE_TYPE) == REPLY_MESSAGE_FLAG:
        return reserved - REPLY_PROPERTY_KEYS
    return reserved


def batch_request(
    messages: Sequence[Message],
    namespace: str | None,
    max_size: int,
    reserved: frozenset[str],
    new_keys: Callable[[int], list[str]],
) -> tuple[Message, list[str]]:
    """The wrapper message a batch is sent as, and the UNIQ_KEYs of its messages (made where missing).

    ``new_keys(n)`` makes ``n`` new UNIQ_KEYs; each message without one gets one (as Java's
    ``MessageClientIDSetter.setUniqID``).

    Raises:
        InvalidMessage: empty batch, mixed topics, delay or retry topics, a message that fails
            validation, or the batch's encoded size over ``max_size``.
    """
    validate_batch(messages)
    validate_message(messages[0], max_size, reserved=reserved)  # the topic, once: it is theirs all
    keyless = True  # no message has a UNIQ_KEY yet: all get a new one, in encode_keyed_batch
    uniq_key = PropertyKey.UNIQ_KEY
    for message in messages:
        body = message.body
        if properties := message.properties:
            keyless = keyless and uniq_key not in properties
            validate_message(message, max_size, reserved=reserved)
        elif not body or len(body) > max_size:
            validate_message(message, max_size, reserved=reserved)
    wrapper = Message(wrap_name(namespace, messages[0].topic), b"")
    wrapper.properties[PropertyKey.WAIT_STORE_MSG_OK] = messages[0].properties.get(
        PropertyKey.WAIT_STORE_MSG_OK, "true"
    )
    # No UNIQ_KEY on the batch itself: the broker appends the batch's properties to every stored
    # entry and the last UNIQ_KEY wins on decode, so consumers would see one id for the whole
    # batch (the Java client did this until apache/rocketmq#9416).
    if keyless:  # a batch of plain messages is encoded in one pass (see encode_keyed_batch)
        inner_ids = new_keys(len(messages))
        wrapper.body = encode_keyed_batch(messages, inner_ids)
    else:
        inner_ids = _give_uniq_keys(messages, new_keys)
        wrapper.body = encode_batch(messages)
    if len(wrapper.body) > max_size:
        raise MessageTooLarge(len(wrapper.body), max_size)
    return wrapper, inner_ids


def _give_uniq_keys(messages: Sequence[Message], new_keys: Callable[[int], list[str]]) -> list[str]:
    """Every message's UNIQ_KEY: its own, or a new one (made at once for all that lack one)."""
    uniq_key = PropertyKey.UNIQ_KEY
    keys = [message.properties.get(uniq_key) or "" for message in messages]
    missing = keys.count("")
    if missing:
        fresh = iter(new_keys(missing))
        for index, message in enumerate(messages):
            if not keys[index]:
                keys[index] = message.properties[uniq_key] = next(fresh)
    return keys


def batch_result(result: SendResult, inner_ids: list[str], namespace: str | None) -> SendResult:
    """What ``send_batch`` returns for the wrapper's ``result``: the messages' ids, the user's queue."""
    return send_result(
        result.status,
        ",".join(inner_ids),
        result.offset_msg_id,
        unwrap_queue(namespace, result.queue),
        result.queue_offset,
        result.transaction_id,
        result.region_id,
        None,  # brokers give batches no recall handle
        result.trace_on,
    )
