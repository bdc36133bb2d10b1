"""Building blocks under the client classes, for tools that talk to brokers without them.

``Producer`` and ``PushConsumer`` own a client instance (route refresh, heartbeats, a consumer
group); a tool that reads queues directly, as the Spark connector does (it plans offset ranges on
the driver and pulls them on executors, with no consumer group), or that asks the NameServer and
brokers admin questions, as the ``rocketmq-py`` command line does, needs the parts underneath
instead. They are public here so that such a tool imports no private module:

* the wire: :class:`ConnectionPool` (connections, optionally signed by an :class:`AclRPCHook`) and
  :class:`RemotingApi` (one typed async call per request code over the pool);
* routes and positions: :func:`subscribe_queues` (a route's readable queues),
  :func:`find_broker_address` (an address with the client's master/slave fallbacks) and
  :func:`offset_for_timestamp` (the same answer from every broker release), with the route's
  constants: :data:`MASTER_ID` (a master's broker id), the permission bits :data:`PERM_READ`,
  :data:`PERM_WRITE` and :data:`PERM_INHERIT`, and :data:`AUTO_CREATE_TOPIC_KEY` (the topic
  whose route stands in for topics not created yet);
* what a consumer group member decides alone: :func:`allocate` with :func:`sort_queues` and
  :func:`sort_consumers` (the client's allocation, identical to Java's), :func:`strategy_class`
  (a strategy's class from its Java or Python name) and :class:`MessageFilter` (the client-side
  tag re-check of a pull);
* admin requests: :class:`AdminCalls` (what :class:`rocketmq_py.admin.Admin` and the command line
  ask the NameServers and brokers: routes, the cluster table as a :class:`ClusterInfo`, topic
  creation as ``mqadmin updateTopic`` does it, with :class:`CreatedQueues` and :func:`order_conf`,
  a member's running info), over a pool of its own from :func:`open_admin_calls`;
* the client's rules and defaults, for wrappers that expose the same options:
  :func:`parse_namesrv_addrs`, :func:`namespace_of_endpoint`, :func:`strip_endpoint_scheme`,
  :func:`validate_topic`, :func:`validate_group`, :func:`validate_producer_group`,
  :func:`validate_message`, :data:`DEFAULT_REQUEST_TIMEOUT`, :data:`MAX_MESSAGE_SIZE`,
  :data:`DEFAULT_SEND_TIMEOUT`, :data:`DEFAULT_BATCH_SIZE` and :data:`DEFAULT_MAX_IN_FLIGHT`.

As ``trio.lowlevel`` is to ``trio``: these names follow the client's internals and may change
between minor releases more freely than the names :mod:`rocketmq_py` exports. The codec they speak
is :mod:`rocketmq_py.protocol`.
"""

from __future__ import annotations

from typing import Final

from rocketmq_py._client import _route
from rocketmq_py._client._api import RemotingApi
from rocketmq_py._client._config import DEFAULT_REQUEST_TIMEOUT, parse_namesrv_addrs
from rocketmq_py._client._endpoint import namespace_of_endpoint, strip_endpoint_scheme
from rocketmq_py._client._route import (
    AUTO_CREATE_TOPIC_KEY,
    MASTER_ID,
    FoundBroker,
    find_broker_address,
    subscribe_queues,
)
from rocketmq_py._client._timestamp import offset_for_timestamp
from rocketmq_py._transport import AclRPCHook, ConnectionPool, RPCHook
from rocketmq_py.admin._calls import AdminCalls, ClusterInfo, CreatedQueues, open_admin_calls, order_conf
from rocketmq_py.consumer._allocate import allocate, sort_consumers, sort_queues, strategy_class
from rocketmq_py.consumer._filter import MessageFilter
from rocketmq_py.producer._producer import DEFAULT_SEND_TIMEOUT
from rocketmq_py.producer._send_many import DEFAULT_BATCH_SIZE, DEFAULT_MAX_IN_FLIGHT
from rocketmq_py.producer._validation import (
    MAX_MESSAGE_SIZE,
    validate_group,
    validate_message,
    validate_producer_group,
    validate_topic,
)

# The PermName bits of a queue's ``perm`` in a route, re-bound here to carry their comments.
#: Permission bit: the queues can be read (Java ``PermName.PERM_READ``).
PERM_READ: Final = _route.PERM_READ
#: Permission bit: the queues can be written (Java ``PermName.PERM_WRITE``).
PERM_WRITE: Final = _route.PERM_WRITE
#: Permission bit: the topic's configuration is inherited (Java ``PermName.PERM_INHERIT``).
PERM_INHERIT: Final = _route.PERM_INHERIT

__all__ = [
    "AUTO_CREATE_TOPIC_KEY",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_MAX_IN_FLIGHT",
    "DEFAULT_REQUEST_TIMEOUT",
    "DEFAULT_SEND_TIMEOUT",
    "MASTER_ID",
    "MAX_MESSAGE_SIZE",
    "PERM_INHERIT",
    "PERM_READ",
    "PERM_WRITE",
    "AclRPCHook",
    "AdminCalls",
    "ClusterInfo",
    "ConnectionPool",
    "CreatedQueues",
    "FoundBroker",
    "MessageFilter",
    "RPCHook",
    "RemotingApi",
    "allocate",
    "find_broker_address",
    "namespace_of_endpoint",
    "offset_for_timestamp",
    "open_admin_calls",
    "order_conf",
    "parse_namesrv_addrs",
    "sort_consumers",
    "sort_queues",
    "strategy_class",
    "strip_endpoint_scheme",
    "subscribe_queues",
    "validate_group",
    "validate_message",
    "validate_producer_group",
    "validate_topic",
]
