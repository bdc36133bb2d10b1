"""What the lite pull consumer answers the broker's requests with.

GET_CONSUMER_RUNNING_INFO (``mqadmin consumerStatus`` / ``consumerProgress``): properties named as
Java's ``DefaultLitePullConsumer`` fields, the subscriptions (in ``assign`` mode those the pulls
carry, with their expressions) and one line per assigned queue. RESET_CONSUMER_CLIENT_OFFSET: each
named assigned queue is sought to its new offset, which is committed at once. CONSUME_MESSAGE_DIRECTLY
gets SYSTEM_ERROR, as there is no listener (:class:`~rocketmq_py.consumer._member.GroupMember`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping

import trio

from rocketmq_py.consumer._flow import FlowLimits
from rocketmq_py.consumer._group_client import process_queue_info
from rocketmq_py.consumer._lite_buffer import LiteQueue
from rocketmq_py.consumer._lite_pull_loop import (
    LITE_BROKER_SUSPEND_MAX_TIME_MS,
    LITE_CONSUMER_TIMEOUT_WHEN_SUSPEND_MS,
)
from rocketmq_py.consumer._offset_store_api import OffsetStore
from rocketmq_py.errors import RocketMQError
from rocketmq_py.protocol import PROP_CONSUME_ORDERLY, ConsumerRunningInfo, MessageQueue, SubscriptionData

__all__ = ["lite_properties", "lite_running_info", "reset_lite_offsets"]

log = logging.getLogger("rocketmq_py.consumer.lite")


def lite_properties(
    member: Mapping[str, str],
    *,
    mode: str | None,
    auto_commit: bool,
    auto_commit_interval: float,
    pull_batch_size: int,
    limits: FlowLimits,
    poll_timeout_ms: int,
    topic_metadata_check_interval: float,
) -> dict[str, str]:
    """The ``properties`` of the running info: the member's own, then the lite consumer's settings."""
    return {
        **member,
        PROP_CONSUME_ORDERLY: "false",
        "subscriptionType": (mode or "none").upper(),
        "autoCommit": "true" if auto_commit else "false",
        "autoCommitIntervalMillis": str(int(auto_commit_interval * 1000)),
        "pullBatchSize": str(pull_batch_size),
        "pullThresholdForAll": str(limits.pull_threshold_for_all),
        "pullThresholdForQueue": str(limits.pull_threshold_for_queue),
        "pullThresholdSizeForQueue": str(limits.pull_threshold_size_for_queue_mib),
        "consumeMaxSpan": str(limits.consume_max_span),
        "pollTimeoutMillis": str(poll_timeout_ms),
        "brokerSuspendMaxTimeMillis": str(LITE_BROKER_SUSPEND_MAX_TIME_MS),
        "consumerTimeoutMillisWhenSuspend": str(LITE_CONSUMER_TIMEOUT_WHEN_SUSPEND_MS),
        "topicMetadataCheckIntervalMillis": str(int(topic_metadata_check_interval * 1000)),
    }


def lite_running_info(
    properties: dict[str, str],
    queues: Mapping[MessageQueue, LiteQueue],
    store: OffsetStore,
    subscriptions: Iterable[SubscriptionData],
) -> ConsumerRunningInfo:
    """GET_CONSUMER_RUNNING_INFO's answer (``mqadmin consumerStatus`` / ``consumerProgress``).

    Properties, subscriptions and one line per assigned queue: its buffered messages, last pull
    and last poll, and the offset held in the offset store (committed, or about to be). No rates
    (``statusTable``): Java's lite consumer sends none either.
    """
    now = trio.current_time()
    wall_ms = time.time() * 1000
    mq_table = {
        mq: process_queue_info(state.pq, store.get(mq), now=now, wall_ms=wall_ms, dropped=state.dropped)
        for mq, state in queues.items()
    }
    return ConsumerRunningInfo(
        properties=properties, subscription_set=tuple(subscriptions), mq_table=mq_table
    )


async def reset_lite_offsets(
    group: str,
    queues: Mapping[MessageQueue, LiteQueue],
    seek: Callable[[MessageQueue, int], None],
    store: OffsetStore,
    topic: str,
    offsets: Mapping[MessageQueue, int],
) -> None:
    """RESET_CONSUMER_CLIENT_OFFSET (e.g. ``mqadmin resetOffsetByTime``): seek and commit.

    Each assigned queue of ``topic`` named in ``offsets`` is sought there (its buffered messages
    are discarded, its next pull and consumed offset move) and the offset is written to the broker
    (or the local file) at once, even without auto-commit. Queues assigned to other members are
    left alone (their owners get the same request). A failed write is logged: the next
    auto-commit (or ``commit``) writes it again.
    """
    moved: list[tuple[MessageQueue, int]] = []
    for mq, state in list(queues.items()):
        offset = offsets.get(mq, -1) if mq.topic == topic else -1
        if offset < 0 or state.dropped:
            continue
        seek(mq, offset)
        moved.append((mq, offset))
    for mq, offset in moved:
        store.update(mq, offset, increase_only=False)
        try:
            await store.persist(mq)
        except RocketMQError as exc:
            log.warning("%s: committing the reset offset of %s failed: %s", group, mq, exc)
    log.info("%s: offsets of %d queues of %s reset: %s", group, len(moved), topic, dict(moved))
