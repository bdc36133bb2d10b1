"""What :class:`~rocketmq_py.admin.Admin` answers: frozen snapshots, one type per question."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rocketmq_py.protocol import MessageQueue, SubscriptionData

__all__ = ["BrokerInfo", "GroupMember", "GroupMembers", "GroupProgress", "QueueProgress", "QueueStats"]


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """One broker process the NameServer knows (``mqadmin clusterList``).

    Attributes:
        cluster: its cluster's name.
        broker_name: its group's name.
        broker_id: 0 for the master.
        address: ``host:port``.
    """

    cluster: str
    broker_name: str
    broker_id: int
    address: str


@dataclass(frozen=True, slots=True)
class QueueStats:
    """One queue of a topic (``mqadmin topicStatus``).

    Attributes:
        queue: the queue.
        min_offset: its first message still stored.
        max_offset: the offset after its last message.
        last_update_ms: the store time (epoch ms) of its last message; 0 when it has none.
    """

    queue: MessageQueue
    min_offset: int
    max_offset: int
    last_update_ms: int

    @property
    def messages(self) -> int:
        """Messages it holds now."""
        return self.max_offset - self.min_offset


@dataclass(frozen=True, slots=True)
class QueueProgress:
    """One queue of a group (``mqadmin consumerProgress``).

    Attributes:
        queue: the queue (the group's retry queues too).
        broker_offset: the queue's max offset.
        consumer_offset: the group's committed offset on it.
        last_timestamp_ms: the store time (epoch ms) of the last message the group consumed; 0 none.
        client_id: (when the group's members answer) the member that owns the queue.
    """

    queue: MessageQueue
    broker_offset: int
    consumer_offset: int
    last_timestamp_ms: int
    client_id: str | None = None

    @property
    def lag(self) -> int:
        """Messages stored past the committed offset."""
        return max(0, self.broker_offset - self.consumer_offset)


@dataclass(frozen=True, slots=True)
class GroupProgress:
    """A group's progress over its topics' queues (``mqadmin consumerProgress``).

    Attributes:
        group: the group.
        queues: per queue, in queue order.
        consume_tps: the brokers' measure of its consume rate, summed.
    """

    group: str
    queues: tuple[QueueProgress, ...]
    consume_tps: float

    @property
    def lag(self) -> int:
        """Messages stored past the committed offsets, over every queue."""
        return sum(q.lag for q in self.queues)


@dataclass(frozen=True, slots=True)
class GroupMember:
    """One member of a consumer group, as the brokers know it (``mqadmin consumerConnection``).

    Attributes:
        client_id: its client id.
        client_addr: the address of its connection.
        language: the client's language (``JAVA``, ``PYTHON``, ...).
        version: the ``MQVersion`` ordinal it reports.
    """

    client_id: str
    client_addr: str
    language: str
    version: int


@dataclass(frozen=True, slots=True)
class GroupMembers:
    """A group's members and what they subscribe (``mqadmin consumerConnection``).

    Attributes:
        group: the group.
        members: the members, by client id.
        subscriptions: topic -> the subscription.
        consume_type: ``CONSUME_PASSIVELY`` (push) or ``CONSUME_ACTIVELY`` (pull).
        message_model: ``CLUSTERING`` or ``BROADCASTING``.
        consume_from_where: where a new member of the group starts.
    """

    group: str
    members: tuple[GroupMember, ...]
    subscriptions: Mapping[str, SubscriptionData] = field(default_factory=dict)
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None
