"""The in-memory state of a :class:`~rocketmq_py.testing.FakeBroker`: topics, queues, offsets, groups.

One FakeBroker plays NameServer and broker at once: the routes it hands out point at itself. Its
default handlers answer like a real 5.x broker, minus persistence, replication and filters beyond
tags, from this store (which they take; none sees the broker):

- ``_fake_messages``: routes, sends, pulls, queue bounds and search by time;
- ``_fake_groups``: consumer offsets, heartbeats and group members, send-back, queue locks;
- ``_fake_pop``: POP consumption.

The store knows its broker only as a :class:`BrokerIdentity` (name, cluster, address, version).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Final, Protocol

import trio

from rocketmq_py.errors import broker_error_for
from rocketmq_py.protocol._bodies import BrokerData, MessageQueue, QueueData, TopicRouteData
from rocketmq_py.protocol._codes import ResponseCode
from rocketmq_py.protocol._message import Message, MessageExt
from rocketmq_py.protocol._stored import encode_stored_message

__all__ = ["DEFAULT_PERM", "GROUP_TOPIC_QUEUES", "BrokerIdentity", "FakeStore", "TopicConfig"]

#: Read and write permission (PermName.PERM_READ | PERM_WRITE), the broker's default.
DEFAULT_PERM: Final = 6
#: The born host the fake records: the handler does not see the client's address.
_BORN_HOST: Final = "127.0.0.1:0"
#: Queues of a group's retry and dead-letter topics (broker ``retryQueueNums``, ``DLQ_NUMS_PER_GROUP``).
GROUP_TOPIC_QUEUES: Final = 1


class BrokerIdentity(Protocol):
    """What the store reads of its broker (a FakeBroker is one); read at each use, as tests change it."""

    broker_name: str
    cluster_name: str
    version: int

    @property
    def address(self) -> str:
        """``host:port`` the broker serves on."""
        ...


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """A topic's queue count and permission."""

    queues: int
    perm: int


class FakeStore:
    """Topics, queues of stored messages, committed offsets, group members and locks of one FakeBroker."""

    def __init__(self, broker: BrokerIdentity, *, auto_create_topics: bool = False) -> None:
        #: Who the store belongs to: routes and stored messages name that broker.
        self.broker = broker
        self.auto_create_topics = auto_create_topics
        self.topics: dict[str, TopicConfig] = {}
        self.routes: dict[str, TopicRouteData] = {}
        self.queues: dict[tuple[str, int], list[MessageExt]] = {}
        self.consumer_offsets: dict[tuple[str, str, int], int] = {}
        #: Client ids per consumer group, as registered by heartbeats (in registration order).
        self.consumers: dict[str, list[str]] = {}
        #: Every stored message by its commit-log offset (CONSUMER_SEND_MSG_BACK looks them up).
        self.by_commit_log_offset: dict[int, MessageExt] = {}
        #: The stored-message records per queue, as pulls hand them out (parallel to ``queues``).
        self.records: dict[tuple[str, int], list[bytes]] = {}
        #: Set (and dropped) when a message arrives in the queue: wakes long-polling pulls and pops.
        self.arrivals: dict[tuple[str, int], trio.Event] = {}
        self._commit_log_offset = 0
        #: Queue locks: (group, queue) -> (client id, trio time of the last lock or renewal).
        self.locks: dict[tuple[str, MessageQueue], tuple[str, float]] = {}
        #: Whether each queue's first message is still in the broker's memory (page cache): true on
        #: a young broker. QUERY_CONSUMER_OFFSET then answers 0 for a group with no offset on a
        #: queue that holds messages, so a new group starts at the beginning whatever its
        #: consume-from-where; false models a broker whose first messages left memory.
        self.first_in_memory = True
        #: What send replies say in ``TRACE_ON`` (the broker's ``traceOn`` setting, default true).
        self.trace_on = True

    def add_topic(self, topic: str, *, queues: int, perm: int) -> None:
        """Make ``topic`` known with ``queues`` read and write queues."""
        self.topics[topic] = TopicConfig(queues, perm)

    def route(self, topic: str) -> TopicRouteData | None:
        """The route set for ``topic``, else one naming this broker for a known topic, else ``None``."""
        explicit = self.routes.get(topic)
        if explicit is not None:
            return explicit
        config = self.topics.get(topic)
        if config is None:
            return None
        broker = self.broker
        return TopicRouteData(
            queue_datas=(
                QueueData(
                    broker_name=broker.broker_name,
                    read_queue_nums=config.queues,
                    write_queue_nums=config.queues,
                    perm=config.perm,
                ),
            ),
            broker_datas=(
                BrokerData(
                    cluster=broker.cluster_name,
                    broker_name=broker.broker_name,
                    broker_addrs={0: broker.address},
                ),
            ),
        )

    def append(
        self,
        message: Message,
        queue_id: int,
        *,
        born_timestamp: int = 0,
        sys_flag: int = 0,
        reconsume_times: int = 0,
        store_timestamp: int | None = None,
    ) -> MessageExt:
        """Store ``message`` at the end of its queue and wake long-polling pulls.

        ``store_timestamp`` (epoch ms) defaults to the wall clock.
        """
        key = (message.topic, queue_id)
        queue = self.queues.setdefault(key, [])
        stored = MessageExt(
            message.topic,
            message.body,
            flag=message.flag,
            properties=message.properties,
            queue_id=queue_id,
            queue_offset=len(queue),
            commit_log_offset=self._commit_log_offset,
            sys_flag=sys_flag,
            born_timestamp=born_timestamp,
            born_host=_BORN_HOST,
            store_timestamp=int(time.time() * 1000) if store_timestamp is None else store_timestamp,
            store_host=self.broker.address,
            reconsume_times=reconsume_times,
        )
        # The body is stored as sent (already compressed when the COMPRESSED flag says so).
        record = encode_stored_message(stored, compress=False)
        self._commit_log_offset += len(record)
        queue.append(stored)
        self.by_commit_log_offset[stored.commit_log_offset] = stored
        self.records.setdefault(key, []).append(record)
        arrival = self.arrivals.pop(key, None)
        if arrival is not None:
            arrival.set()
        return stored

    def check_queue(self, topic: str, queue_id: int, *, default_queues: int | None = None) -> TopicConfig:
        """The topic's settings; TOPIC_NOT_EXIST (unless created, given ``default_queues``) or a bad queue id is an error."""
        config = self.topics.get(topic)
        if config is None:
            if default_queues is None or not self.auto_create_topics:
                raise broker_error_for(
                    ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!"
                )
            config = self.topics[topic] = TopicConfig(default_queues, DEFAULT_PERM)
        if not 0 <= queue_id < config.queues:
            raise broker_error_for(
                ResponseCode.SYSTEM_ERROR,
                f"queueId[{queue_id}] is illegal, topic:[{topic}] queues:[{config.queues}]",
            )
        return config
