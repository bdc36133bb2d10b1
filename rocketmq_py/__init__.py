"""rocketmq-py: a pure-Python, wire-compatible Apache RocketMQ client on trio."""

from rocketmq_py import errors
from rocketmq_py.errors import (
    BrokerError,
    ClientError,
    ProtocolError,
    RocketMQError,
    StateError,
    TransportError,
)

__version__ = "0.1.0.dev0"

__all__ = [
    "BrokerError",
    "ClientError",
    "ProtocolError",
    "RocketMQError",
    "StateError",
    "TransportError",
    "__version__",
    "errors",
]
