"""Blocking clients: the classes of :mod:`rocketmq_py` with the same names and methods, no ``await``.

Each client runs its async counterpart in a background trio thread (one per client) and blocks
the calling thread until the call is done::

    from rocketmq_py.sync import Message, Producer

    with Producer("my-group", namesrv="127.0.0.1:9876") as producer:
        producer.send(Message("orders", b"hello", tags="new"))

Lifecycle follows Java: ``start()`` and ``shutdown()`` (or ``with``); ``close()`` is the blocking
``aclose()``. Errors are the async client's, of the same types. Methods may be called from any
number of threads, but not from inside an async callback running in the client's own loop.
"""

from rocketmq_py.producer._selectors import select_by_hash
from rocketmq_py.producer._types import SendResult, SendStatus
from rocketmq_py.protocol import Message, MessageQueue, create_reply
from rocketmq_py.sync._generated import LitePullConsumer, Producer, PushConsumer, TransactionProducer

__all__ = [
    "LitePullConsumer",
    "Message",
    "MessageQueue",
    "Producer",
    "PushConsumer",
    "SendResult",
    "SendStatus",
    "TransactionProducer",
    "create_reply",
    "select_by_hash",
]
