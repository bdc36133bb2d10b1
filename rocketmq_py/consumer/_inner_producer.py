"""The consumer's inner producer: re-sends through the consumer's own client instance.

Java's ``MQClientInstance`` holds a producer of group ``CLIENT_INNER_PRODUCER`` that its consumers
use to put a failed message in ``%RETRY%group`` when CONSUMER_SEND_MSG_BACK fails, and (orderly) to
send a message that reached its reconsume limit towards ``%DLQ%group``. It shares the instance's
connections, RPC hooks (ACL signatures), TLS and timeouts, and its group rides on the instance's
heartbeats. :func:`inner_producer` gives a consumer the same: a :class:`Producer` attached to the
consumer's :class:`ClientInstance`, never a second client.

In a namespace, the consumer hands it wire names (``%RETRY%ns%group``); its own group stays
``CLIENT_INNER_PRODUCER``, unwrapped, as Java's.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Final

from rocketmq_py._client._instance import ClientInstance
from rocketmq_py.producer._producer import Producer

__all__ = ["INNER_PRODUCER_GROUP", "inner_producer"]

#: Java ``MixAll.CLIENT_INNER_PRODUCER_GROUP``.
INNER_PRODUCER_GROUP: Final = "CLIENT_INNER_PRODUCER"


@contextmanager
def inner_producer(instance: ClientInstance) -> Iterator[Producer]:
    """A producer sending through ``instance`` for as long as the ``with`` block runs.

    Its sends have no per-attempt timeout (as Java): an attempt abandoned early that the broker
    stored anyway would put a second copy of a failed message in the retry topic. It may set the
    properties a retry copy carries (``RETRY_TOPIC``, ``RECONSUME_TIME``, ...), which user
    producers may not.
    """
    # No namespace, not even one a hosted endpoint names: the retry topic is wrapped already.
    config = replace(instance.config, namespace="")
    producer = Producer(INNER_PRODUCER_GROUP, config=config, attempt_timeout=None)
    producer._reserved = frozenset()
    producer._attach(instance)
    try:
        yield producer
    finally:
        producer._detach()
