"""Orderly consumption helpers (Java ``ConsumeMessageOrderlyService``, ``RebalanceImpl.lock``).

An orderly :class:`~rocketmq_py.consumer._push.PushConsumer` holds a broker lock on each queue it
consumes (LOCK_BATCH_MQ to the queue's master), renews every lock every 20 s, counts a lock valid
for 30 s after its last renewal on the client side, consumes each queue with one task at a time in
offset order, and releases the locks (UNLOCK_BATCH_MQ) when a queue leaves. This module holds the
parts with no consumer state: the listener's answer, the lock calls grouped by broker and the
reconsume-times decision.
"""

from __future__ import annotations

import enum
import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from rocketmq_py._client._api import RemotingApi
from rocketmq_py._client._route_service import RouteService
from rocketmq_py.errors import ClientError, RocketMQError
from rocketmq_py.protocol import MessageExt, MessageQueue

__all__ = [
    "ConsumeOrderlyStatus",
    "ReconsumeDecision",
    "check_reconsume_times",
    "lock_queues",
    "unlock_queues",
]

log = logging.getLogger("rocketmq_py.consumer")


class ConsumeOrderlyStatus(enum.Enum):
    """What an orderly listener answers (Java ``ConsumeOrderlyStatus``); ``None`` counts as SUCCESS.

    ``SUSPEND_CURRENT_QUEUE_A_MOMENT`` puts the messages back and pauses their queue for
    ``suspend_current_queue_time`` seconds; the other queues go on. The concurrent statuses are
    accepted too: ``CONSUME_SUCCESS`` means SUCCESS, ``RECONSUME_LATER`` means SUSPEND.
    """

    SUCCESS = "SUCCESS"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"

    @classmethod
    def of(cls, result: object) -> ConsumeOrderlyStatus:
        """The status a listener's return value means.

        Raises:
            ClientError: a value that is no status.
        """
        if result is None or isinstance(result, ConsumeOrderlyStatus):
            return cls.SUCCESS if result is None else result
        name = getattr(result, "value", result)
        if name in ("SUCCESS", "CONSUME_SUCCESS"):
            return cls.SUCCESS
        if name in ("SUSPEND_CURRENT_QUEUE_A_MOMENT", "RECONSUME_LATER"):
            return cls.SUSPEND_CURRENT_QUEUE_A_MOMENT
        raise ClientError(f"an orderly listener returned {result!r}, not a ConsumeOrderlyStatus")


@dataclass(frozen=True, slots=True)
class ReconsumeDecision:
    """After a SUSPEND: which messages go to the DLQ, and whether the queue is suspended."""

    to_dlq: list[MessageExt]
    suspend: bool


def check_reconsume_times(msgs: Iterable[MessageExt], max_reconsume_times: int) -> ReconsumeDecision:
    """Java ``checkReconsumeTimes``: a message consumed ``max_reconsume_times`` times goes to the DLQ.

    Every other message is consumed again (its ``reconsume_times`` is raised by one here, as Java
    does in memory) and the queue is suspended. The caller sends the DLQ candidates; one whose
    send fails is consumed again as well (and suspends the queue).
    """
    to_dlq: list[MessageExt] = []
    suspend = False
    for msg in msgs:
        if msg.reconsume_times >= max_reconsume_times:
            to_dlq.append(msg)
        else:
            suspend = True
            msg.reconsume_times += 1
    return ReconsumeDecision(to_dlq, suspend)


def _by_broker(queues: Iterable[MessageQueue]) -> dict[str, list[MessageQueue]]:
    grouped: dict[str, list[MessageQueue]] = defaultdict(list)
    for mq in queues:
        grouped[mq.broker_name].append(mq)
    return grouped


async def lock_queues(
    api: RemotingApi, routes: RouteService, group: str, client_id: str, queues: Iterable[MessageQueue]
) -> set[MessageQueue]:
    """LOCK_BATCH_MQ ``queues``, one request per broker master; the queues now locked for us.

    A broker that cannot be asked locks nothing (logged); the queues it did not grant are
    simply not in the result.
    """
    locked: set[MessageQueue] = set()
    for broker_name, mqs in _by_broker(queues).items():
        try:
            address = await routes.require_master(mqs[0].topic, broker_name)
            granted = await api.lock_batch_mq(address, group, client_id, mqs)
        except RocketMQError as exc:
            log.warning("%s: locking %d queues on %s failed: %s", group, len(mqs), broker_name, exc)
            continue
        locked.update(mq for mq in mqs if mq in granted)
    return locked


async def unlock_queues(
    api: RemotingApi, routes: RouteService, group: str, client_id: str, queues: Iterable[MessageQueue]
) -> None:
    """UNLOCK_BATCH_MQ ``queues`` synchronously, one request per broker master (errors logged)."""
    for broker_name, mqs in _by_broker(queues).items():
        try:
            address = await routes.require_master(mqs[0].topic, broker_name)
            await api.unlock_batch_mq(address, group, client_id, mqs)
        except RocketMQError as exc:
            log.warning("%s: unlocking %d queues on %s failed: %s", group, len(mqs), broker_name, exc)
