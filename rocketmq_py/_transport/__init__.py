"""The trio transport: connections, the connection pool, and RPC hooks (ACL signing).

Private to rocketmq-py: ``_client`` is its only user. Everything here moves bytes; what a
command means is the business of :mod:`rocketmq_py.protocol` and the layers above.
"""

from rocketmq_py._transport._connection import Connection
from rocketmq_py._transport._diagnosis import DEFAULT_CLOSE_ON_TIMEOUT
from rocketmq_py._transport._hooks import AclRPCHook, RPCHook, acl_signature
from rocketmq_py._transport._inbound import RequestHandler
from rocketmq_py._transport._open import (
    DEFAULT_CONNECT_TIMEOUT,
    open_connection,
    parse_address,
    start_connection,
)
from rocketmq_py._transport._pool import ConnectionPool, PoolStatistics
from rocketmq_py._transport._statistics import ConnectionStatistics

__all__ = [
    "DEFAULT_CLOSE_ON_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "AclRPCHook",
    "Connection",
    "ConnectionPool",
    "ConnectionStatistics",
    "PoolStatistics",
    "RPCHook",
    "RequestHandler",
    "acl_signature",
    "open_connection",
    "parse_address",
    "start_connection",
]
