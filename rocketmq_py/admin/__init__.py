"""Administration of a RocketMQ cluster: topics, consumer groups, offsets and messages.

:class:`Admin` asks the NameServers and brokers what ``mqadmin`` asks them, and answers with frozen
dataclasses::

    from rocketmq_py.admin import Admin

    async with Admin(namesrv="127.0.0.1:9876") as admin:
        await admin.create_topic("orders", 8)
        for queue in await admin.topic_stats("orders"):
            print(queue.queue, queue.min_offset, queue.max_offset)
        progress = await admin.group_progress("order-workers")
        print(progress.lag, "messages behind")

The same class is :class:`rocketmq_py.aio.Admin` on asyncio and :class:`rocketmq_py.sync.Admin`
blocking.
"""

from rocketmq_py.admin._admin import Admin
from rocketmq_py.admin._results import (
    BrokerInfo,
    GroupMember,
    GroupMembers,
    GroupProgress,
    QueueProgress,
    QueueStats,
)

__all__ = [
    "Admin",
    "BrokerInfo",
    "GroupMember",
    "GroupMembers",
    "GroupProgress",
    "QueueProgress",
    "QueueStats",
]
