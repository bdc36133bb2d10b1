"""asyncio clients: the classes of :mod:`rocketmq_py` with the same names and methods, for asyncio.

The trio clients run on the asyncio loop itself (trio's guest mode): no thread per client, no
hand-off between threads per call. ``async def`` listeners and callbacks are asyncio coroutines
run on the same loop, so they may use asyncio libraries (asyncpg, aiohttp, ...)::

    from rocketmq_py.aio import Message, Producer

    async def main() -> None:
        async with Producer("my-group", namesrv="127.0.0.1:9876") as producer:
            await producer.send(Message("orders", b"hello", tags="new"))

    asyncio.run(main())

Cancelling an asyncio task cancels the call it awaits; errors are the trio clients', of the same
types. When the last client of a loop is closed, the trio run on that loop ends too (no task,
thread or socket is left behind). Use one loop per client: a client is opened and closed on the
loop it runs on.

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
from rocketmq_py.aio._generated import LitePullConsumer, Producer, PushConsumer, TransactionProducer

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
