"""The Admin's requests about a consumer group past its stats: GET_CONSUMER_RUNNING_INFO to a member
through its brokers (``mqadmin consumerStatus -g G -i ID``; the request itself is
:meth:`rocketmq_py.admin._calls.AdminCalls.running_info`, shared with ``group inspect``), which member owns which queue from
those answers (``mqadmin consumerProgress -g G -s true``), and an offline group's offsets reset by
time, committed queue by queue (``mqadmin resetOffsetByTime``'s fallback)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import trio

from rocketmq_py._client._timestamp import offset_for_timestamp
from rocketmq_py.errors import RocketMQError
from rocketmq_py.protocol import (
    MessageQueue,
    TopicRouteData,
)

if TYPE_CHECKING:
    from rocketmq_py.admin._calls import AdminCalls as Calls

__all__ = ["allocation", "commit_by_time"]


async def allocation(
    calls: Calls, group: str, client_ids: Iterable[str], addresses: Sequence[str]
) -> dict[MessageQueue, str]:
    """Queue -> the client id of the member that owns it (pulled or popped), from each member's
    running info, asked of all members at once. A member that does not answer owns nothing here,
    as mqadmin leaves its queues without a client."""
    owners: dict[MessageQueue, str] = {}

    async def ask(client_id: str) -> None:
        try:
            info = await calls.running_info(group, client_id, addresses)
        except RocketMQError:
            return
        for mq in (*info.mq_table, *info.mq_pop_table):
            owners.setdefault(mq, client_id)

    async with trio.open_nursery() as nursery:
        for client_id in sorted(set(client_ids)):
            nursery.start_soon(ask, client_id)
    return owners


async def commit_by_time(
    calls: Calls,
    address: str,
    group: str,
    topic: str,
    broker: str,
    route: TopicRouteData,
    timestamp_ms: int,
    force: bool,
) -> dict[MessageQueue, int]:
    """The offline group's reset on one broker: each queue's offset by time, committed (not moved
    back unless ``force``); queue -> the offset committed."""
    api = calls.api
    queue_nums = max((q.read_queue_nums for q in route.queue_datas if q.broker_name == broker), default=0)
    done = {}
    for queue_id in range(queue_nums):
        mq = MessageQueue(topic, broker, queue_id)
        offset = await offset_for_timestamp(api, address, mq, timestamp_ms, group=group)
        if not force:
            current = await api.query_consumer_offset(address, group, topic, queue_id, broker)
            if current > offset:
                continue
        await api.update_consumer_offset(address, group, topic, queue_id, offset, broker)
        done[mq] = offset
    return done
