"""rocketmq-py: a pure-Python, wire-compatible Apache RocketMQ client on trio.

The async API (``async with Producer(...)``) is here; ``rocketmq_py.sync`` has the same classes
with blocking methods. ``rocketmq_py.protocol`` is the sans-IO codec, ``rocketmq_py.testing`` starts
a real local cluster for tests.

The client classes are imported on first use, so that ``import rocketmq_py.protocol`` (the sans-IO
codec) does not pull in trio and sockets.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rocketmq_py import errors
from rocketmq_py.errors import (
    BrokerError,
    ClientError,
    InvalidMessage,
    InvalidOption,
    ProtocolError,
    RequestTimeout,
    RocketMQError,
    RouteNotFound,
    StateError,
    TransportError,
)

if TYPE_CHECKING:
    from rocketmq_py._client._config import ClientConfig
    from rocketmq_py.consumer._listener import ConsumeOrderlyStatus
    from rocketmq_py.consumer._lite_pull import LitePullConsumer
    from rocketmq_py.consumer._push import (
        ConsumeStatus,
        PopQueueStatistics,
        PushConsumer,
        QueueStatistics,
        RebalanceListener,
    )
    from rocketmq_py.consumer._queue_watch import QueueChangeListener
    from rocketmq_py.hooks import ConsumeContext, Hook, SendContext
    from rocketmq_py.producer._fault import FaultConfig
    from rocketmq_py.producer._producer import Producer
    from rocketmq_py.producer._selectors import select_by_hash, select_by_random, select_by_sharding_key
    from rocketmq_py.producer._send_many import SendCounts, send_many
    from rocketmq_py.producer._transaction import TransactionProducer, TransactionSendResult
    from rocketmq_py.producer._types import LocalTransactionState, SendResult, SendStatus
    from rocketmq_py.protocol import (
        ConsumeFromWhere,
        Message,
        MessageExt,
        MessageModel,
        MessageQueue,
        create_reply,
    )

#: The package version (as in pyproject.toml).
__version__ = "0.1.0.dev0"

_LAZY = {
    "ClientConfig": "rocketmq_py._client._config",
    "ConsumeStatus": "rocketmq_py.consumer._push",
    "ConsumeContext": "rocketmq_py.hooks",
    "Hook": "rocketmq_py.hooks",
    "SendContext": "rocketmq_py.hooks",
    "PushConsumer": "rocketmq_py.consumer._push",
    "LitePullConsumer": "rocketmq_py.consumer._lite_pull",
    "ConsumeOrderlyStatus": "rocketmq_py.consumer._orderly",
    "QueueStatistics": "rocketmq_py.consumer._push",
    "PopQueueStatistics": "rocketmq_py.consumer._push",
    "RebalanceListener": "rocketmq_py.consumer._push",
    "QueueChangeListener": "rocketmq_py.consumer._queue_watch",
    "ConsumeFromWhere": "rocketmq_py.protocol",
    "MessageModel": "rocketmq_py.protocol",
    "FaultConfig": "rocketmq_py.producer._fault",
    "LocalTransactionState": "rocketmq_py.producer._types",
    "Producer": "rocketmq_py.producer._producer",
    "SendResult": "rocketmq_py.producer._types",
    "SendStatus": "rocketmq_py.producer._types",
    "TransactionProducer": "rocketmq_py.producer._transaction",
    "TransactionSendResult": "rocketmq_py.producer._transaction",
    "select_by_hash": "rocketmq_py.producer._selectors",
    "select_by_random": "rocketmq_py.producer._selectors",
    "select_by_sharding_key": "rocketmq_py.producer._selectors",
    "SendCounts": "rocketmq_py.producer._send_many",
    "send_many": "rocketmq_py.producer._send_many",
    "Message": "rocketmq_py.protocol",
    "MessageExt": "rocketmq_py.protocol",
    "MessageQueue": "rocketmq_py.protocol",
    "create_reply": "rocketmq_py.protocol",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rocketmq_py' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


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
    "InvalidOption",
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
    "SendCounts",
    "SendResult",
    "SendStatus",
    "StateError",
    "TransactionProducer",
    "TransactionSendResult",
    "TransportError",
    "__version__",
    "create_reply",
    "errors",
    "select_by_hash",
    "select_by_random",
    "select_by_sharding_key",
    "send_many",
]
