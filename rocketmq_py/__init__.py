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
    from rocketmq_py._health import BrokerHealth, Health, QueueHealth
    from rocketmq_py.admin import (
        Admin,
        BrokerInfo,
        GroupMember,
        GroupMembers,
        GroupProgress,
        QueueProgress,
        QueueStats,
    )
    from rocketmq_py.consumer._allocate import (
        AllocateAveragely,
        AllocateAveragelyByCircle,
        AllocateByConfig,
        AllocateByMachineRoom,
        AllocateConsistentHash,
        AllocateMachineRoomNearby,
        AllocateStrategy,
        HashFunction,
        get_strategy,
    )
    from rocketmq_py.consumer._flow import FlowLimits
    from rocketmq_py.consumer._lag import QueueLag
    from rocketmq_py.consumer._listener import ConsumeOrderlyStatus, Listener
    from rocketmq_py.consumer._lite_pull import LitePullConsumer
    from rocketmq_py.consumer._push import (
        ConsumeStatus,
        PopQueueStatistics,
        PushConsumer,
        QueueStatistics,
        RebalanceListener,
    )
    from rocketmq_py.consumer._queue_watch import QueueChangeListener
    from rocketmq_py.hooks import ClientEvent, ConsumeContext, Hook, SendContext
    from rocketmq_py.producer._batcher import Chunk
    from rocketmq_py.producer._fault import FaultConfig, FaultItem, LatencyFaultTolerance
    from rocketmq_py.producer._producer import Producer
    from rocketmq_py.producer._selectors import (
        SelectQueue,
        select_by_hash,
        select_by_random,
        select_by_sharding_key,
    )
    from rocketmq_py.producer._send_many import SendCounts, send_many
    from rocketmq_py.producer._statistics import ProducerStatistics
    from rocketmq_py.producer._transaction import (
        CheckTransaction,
        ExecuteLocalTransaction,
        TransactionProducer,
        TransactionSendResult,
    )
    from rocketmq_py.producer._types import LocalTransactionState, SendResult, SendStatus
    from rocketmq_py.protocol import (
        BrokerData,
        CompressionType,
        ConsumeFromWhere,
        ConsumeMessageDirectlyResult,
        ConsumeRateStatus,
        ConsumeResult,
        ConsumerRunningInfo,
        ConsumeType,
        ExpressionType,
        Message,
        MessageExt,
        MessageModel,
        MessageQueue,
        PopProcessQueueInfo,
        ProcessQueueInfo,
        QueueData,
        SerializeType,
        SubscriptionData,
        TopicRouteData,
        create_reply,
    )

#: The package version (as in pyproject.toml).
__version__ = "0.1.0.dev0"

# Where each lazily imported name lives, by theme.
_LAZY = {
    # messages and their addresses
    "Message": "rocketmq_py.protocol",
    "MessageExt": "rocketmq_py.protocol",
    "MessageQueue": "rocketmq_py.protocol",
    "CompressionType": "rocketmq_py.protocol",
    "create_reply": "rocketmq_py.protocol",
    # client settings and hooks
    "ClientConfig": "rocketmq_py._client._config",
    "SerializeType": "rocketmq_py.protocol",
    "ConsumeContext": "rocketmq_py.hooks",
    "ClientEvent": "rocketmq_py.hooks",
    "Hook": "rocketmq_py.hooks",
    "SendContext": "rocketmq_py.hooks",
    # administration (rocketmq_py.admin)
    "Admin": "rocketmq_py.admin",
    "BrokerInfo": "rocketmq_py.admin",
    "GroupMember": "rocketmq_py.admin",
    "GroupMembers": "rocketmq_py.admin",
    "GroupProgress": "rocketmq_py.admin",
    "QueueProgress": "rocketmq_py.admin",
    "QueueStats": "rocketmq_py.admin",
    # health (readiness probes)
    "Health": "rocketmq_py._health",
    "BrokerHealth": "rocketmq_py._health",
    "QueueHealth": "rocketmq_py._health",
    # producing
    "Producer": "rocketmq_py.producer._producer",
    "ProducerStatistics": "rocketmq_py.producer._statistics",
    "SendResult": "rocketmq_py.producer._types",
    "SendStatus": "rocketmq_py.producer._types",
    "FaultConfig": "rocketmq_py.producer._fault",
    "FaultItem": "rocketmq_py.producer._fault",
    "LatencyFaultTolerance": "rocketmq_py.producer._fault",
    "SelectQueue": "rocketmq_py.producer._selectors",
    "select_by_hash": "rocketmq_py.producer._selectors",
    "select_by_random": "rocketmq_py.producer._selectors",
    "select_by_sharding_key": "rocketmq_py.producer._selectors",
    "Chunk": "rocketmq_py.producer._batcher",
    "SendCounts": "rocketmq_py.producer._send_many",
    "send_many": "rocketmq_py.producer._send_many",
    # transactions
    "TransactionProducer": "rocketmq_py.producer._transaction",
    "TransactionSendResult": "rocketmq_py.producer._transaction",
    "LocalTransactionState": "rocketmq_py.producer._types",
    "ExecuteLocalTransaction": "rocketmq_py.producer._transaction",
    "CheckTransaction": "rocketmq_py.producer._transaction",
    # consuming
    "PushConsumer": "rocketmq_py.consumer._push",
    "LitePullConsumer": "rocketmq_py.consumer._lite_pull",
    "Listener": "rocketmq_py.consumer._listener",
    "ConsumeStatus": "rocketmq_py.consumer._push",
    "ConsumeOrderlyStatus": "rocketmq_py.consumer._orderly",
    "ConsumeFromWhere": "rocketmq_py.protocol",
    "ConsumeType": "rocketmq_py.protocol",
    "MessageModel": "rocketmq_py.protocol",
    "FlowLimits": "rocketmq_py.consumer._flow",
    "QueueStatistics": "rocketmq_py.consumer._push",
    "PopQueueStatistics": "rocketmq_py.consumer._push",
    "QueueLag": "rocketmq_py.consumer._lag",
    "RebalanceListener": "rocketmq_py.consumer._push",
    "QueueChangeListener": "rocketmq_py.consumer._queue_watch",
    "ExpressionType": "rocketmq_py.protocol",
    # what a consumer reports about itself (to admin tools, and when a broker asks)
    "ConsumerRunningInfo": "rocketmq_py.protocol",
    "SubscriptionData": "rocketmq_py.protocol",
    # routes (what Admin.route answers)
    "TopicRouteData": "rocketmq_py.protocol",
    "QueueData": "rocketmq_py.protocol",
    "BrokerData": "rocketmq_py.protocol",
    "ProcessQueueInfo": "rocketmq_py.protocol",
    "PopProcessQueueInfo": "rocketmq_py.protocol",
    "ConsumeRateStatus": "rocketmq_py.protocol",
    "ConsumeMessageDirectlyResult": "rocketmq_py.protocol",
    "ConsumeResult": "rocketmq_py.protocol",
    # queue allocation (consumer groups)
    "AllocateStrategy": "rocketmq_py.consumer._allocate",
    "AllocateAveragely": "rocketmq_py.consumer._allocate",
    "AllocateAveragelyByCircle": "rocketmq_py.consumer._allocate",
    "AllocateByConfig": "rocketmq_py.consumer._allocate",
    "AllocateByMachineRoom": "rocketmq_py.consumer._allocate",
    "AllocateConsistentHash": "rocketmq_py.consumer._allocate",
    "AllocateMachineRoomNearby": "rocketmq_py.consumer._allocate",
    "HashFunction": "rocketmq_py.consumer._allocate",
    "get_strategy": "rocketmq_py.consumer._allocate",
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
    "Admin",
    "AllocateAveragely",
    "AllocateAveragelyByCircle",
    "AllocateByConfig",
    "AllocateByMachineRoom",
    "AllocateConsistentHash",
    "AllocateMachineRoomNearby",
    "AllocateStrategy",
    "BrokerData",
    "BrokerError",
    "BrokerHealth",
    "BrokerInfo",
    "CheckTransaction",
    "Chunk",
    "ClientConfig",
    "ClientError",
    "ClientEvent",
    "CompressionType",
    "ConsumeContext",
    "ConsumeFromWhere",
    "ConsumeMessageDirectlyResult",
    "ConsumeOrderlyStatus",
    "ConsumeRateStatus",
    "ConsumeResult",
    "ConsumeStatus",
    "ConsumeType",
    "ConsumerRunningInfo",
    "ExecuteLocalTransaction",
    "ExpressionType",
    "FaultConfig",
    "FaultItem",
    "FlowLimits",
    "GroupMember",
    "GroupMembers",
    "GroupProgress",
    "HashFunction",
    "Health",
    "Hook",
    "InvalidMessage",
    "InvalidOption",
    "LatencyFaultTolerance",
    "Listener",
    "LitePullConsumer",
    "LocalTransactionState",
    "Message",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "PopProcessQueueInfo",
    "PopQueueStatistics",
    "ProcessQueueInfo",
    "Producer",
    "ProducerStatistics",
    "ProtocolError",
    "PushConsumer",
    "QueueChangeListener",
    "QueueData",
    "QueueHealth",
    "QueueLag",
    "QueueProgress",
    "QueueStatistics",
    "QueueStats",
    "RebalanceListener",
    "RequestTimeout",
    "RocketMQError",
    "RouteNotFound",
    "SelectQueue",
    "SendContext",
    "SendCounts",
    "SendResult",
    "SendStatus",
    "SerializeType",
    "StateError",
    "SubscriptionData",
    "TopicRouteData",
    "TransactionProducer",
    "TransactionSendResult",
    "TransportError",
    "__version__",
    "create_reply",
    "errors",
    "get_strategy",
    "select_by_hash",
    "select_by_random",
    "select_by_sharding_key",
    "send_many",
]
