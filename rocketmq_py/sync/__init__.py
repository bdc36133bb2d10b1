"""Blocking clients: the classes of :mod:`rocketmq_py` with the same names and methods, no ``await``.

Each client runs its async counterpart in a background trio thread (one per client) and blocks
the calling thread until the call is done::

    from rocketmq_py.sync import Message, Producer

    with Producer("my-group", namesrv="127.0.0.1:9876") as producer:
        producer.send(Message("orders", b"hello", tags="new"))

Lifecycle follows Java: ``start()`` and ``shutdown()`` (or ``with``); ``close()`` is the blocking
``aclose()``. Errors are the async client's, of the same types. Methods may be called from any
number of threads, but not from inside an async callback running in the client's own loop.

The other names of :mod:`rocketmq_py` (``Message``, ``ConsumeStatus``, the errors, ...) are
exported here too, the same objects; only ``send_many`` and ``SendCounts`` are trio's alone.
"""

from rocketmq_py import (
    BrokerError,
    ClientConfig,
    ClientError,
    ConsumeContext,
    ConsumeFromWhere,
    ConsumeOrderlyStatus,
    ConsumeStatus,
    FaultConfig,
    Hook,
    InvalidMessage,
    LocalTransactionState,
    Message,
    MessageExt,
    MessageModel,
    MessageQueue,
    PopQueueStatistics,
    ProtocolError,
    QueueChangeListener,
    QueueStatistics,
    RebalanceListener,
    RequestTimeout,
    RocketMQError,
    RouteNotFound,
    SendContext,
    SendResult,
    SendStatus,
    StateError,
    TransactionSendResult,
    TransportError,
    create_reply,
    errors,
    select_by_hash,
    select_by_random,
    select_by_sharding_key,
)
from rocketmq_py.sync._generated import LitePullConsumer, Producer, PushConsumer, TransactionProducer

__all__ = [
    "BrokerError",
    "ClientConfig",
    "ClientError",
    "ConsumeContext",
    "ConsumeFromWhere",
    "ConsumeOrderlyStatus",
    "ConsumeStatus",
    "FaultConfig",
    "Hook",
    "InvalidMessage",
    "LitePullConsumer",
    "LocalTransactionState",
    "Message",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "PopQueueStatistics",
    "Producer",
    "ProtocolError",
    "PushConsumer",
    "QueueChangeListener",
    "QueueStatistics",
    "RebalanceListener",
    "RequestTimeout",
    "RocketMQError",
    "RouteNotFound",
    "SendContext",
    "SendResult",
    "SendStatus",
    "StateError",
    "TransactionProducer",
    "TransactionSendResult",
    "TransportError",
    "create_reply",
    "errors",
    "select_by_hash",
    "select_by_random",
    "select_by_sharding_key",
]
