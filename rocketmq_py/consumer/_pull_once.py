"""One pull of one queue, shared by the push and the lite pull consumer's pull loops.

:func:`pull_once` finds the broker (the one the queue's last answer suggested, else the master,
else a slave), builds the PULL_MESSAGE request, sends it, decodes the answer
(:func:`read_pull_reply`: FOUND / NO_NEW_MSG / NO_MATCHED_MSG / OFFSET_ILLEGAL, or an error) with the
topic's client-side filter, and lets the pure
:func:`~rocketmq_py.consumer._pull_result.next_pull_action` say what comes next. It returns a
frozen :class:`PullOnce`; each loop keeps its own policy: the push loop its flow control, hand-over
and offset-store updates, the lite loop its buffer and consumed position. What differs between
the two on the wire (suspend time, RPC timeout, subscription in the request, commit offset) is a
parameter.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

import trio

from rocketmq_py._client._api import RemotingApi
from rocketmq_py._client._route import MASTER_ID
from rocketmq_py._client._route_service import RouteService
from rocketmq_py.consumer._filter import MessageFilter
from rocketmq_py.consumer._flow import PULL_TIME_DELAY_WHEN_EXCEPTION_MS
from rocketmq_py.consumer._group_client import refresh_quietly
from rocketmq_py.consumer._offset_store_api import OffsetStore
from rocketmq_py.consumer._process_queue import ProcessQueue
from rocketmq_py.consumer._pull_result import (
    PullAction,
    PullResult,
    PullStatus,
    interpret_pull_response,
    next_pull_action,
    process_found_messages,
    pull_error_delay_ms,
)
from rocketmq_py.errors import RocketMQError, SubscriptionNotExist, SubscriptionNotLatest, TransportError
from rocketmq_py.protocol import (
    MessageExt,
    MessageQueue,
    PullMessageResponseHeader,
    RemotingCommand,
    SubscriptionData,
    decode_messages,
    from_ext_fields,
    pull_request_header,
)

__all__ = ["PullOnce", "pull_once", "read_pull_reply"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PullOnce:
    """What one :func:`pull_once` came to.

    Attributes:
        broker_id: the broker to ask next for this queue (the answer's ``suggestWhichBrokerId``;
            unchanged when there was no answer).
        action: what the loop does with the answer; ``None`` when there was none (no
            subscription or no broker, the route was refreshed; or the pull failed, logged):
            wait :attr:`retry_delay_ms` and try again.
        retry_delay_ms: without an answer, the wait before the next attempt.
        result: the answer's status and offsets (``None`` without one).
        msgs: FOUND: the messages that passed the filter, in queue order.
        started: ``trio.current_time()`` just before the request was sent (0 when none was).
        registration_lost: the broker refused the pull because it knows no (current) subscription
            of the group for the topic (SUBSCRIPTION_NOT_EXIST / SUBSCRIPTION_NOT_LATEST): it, or
            the Proxy in front of it, restarted since the member's last heartbeat.
    """

    broker_id: int
    action: PullAction | None = None
    retry_delay_ms: int = 0
    result: PullResult | None = None
    msgs: list[MessageExt] = field(default_factory=list)
    started: float = 0.0
    registration_lost: bool = False


async def pull_once(
    api: RemotingApi,
    routes: RouteService,
    *,
    group: str,
    mq: MessageQueue,
    pq: ProcessQueue,
    offset: int,
    broker_id: int,
    batch_size: int,
    subscriptions: Mapping[str, SubscriptionData],
    filters: Mapping[str, MessageFilter],
    suspend_ms: int,
    timeout_ms: int,
    send_subscription: bool,
    commit_from: OffsetStore | None,
    log: logging.Logger,
) -> PullOnce:
    """Pull ``mq`` once from ``offset`` and decide the next step.

    Args:
        api, routes: the client's broker calls and routes.
        group: the consumer group pulling.
        mq: the queue; ``pq``: its cache (``msg_count`` read once the answer is in, before the
            caller adds what was found).
        offset: the first queue offset wanted.
        broker_id: the broker the last answer suggested (``MASTER_ID`` at first).
        batch_size: at most this many messages.
        subscriptions, filters: the consumer's tables by wire topic, read now (the subscription)
            and once the answer is in (the filter).
        suspend_ms: how long the broker may hold the pull; ``timeout_ms``: the RPC timeout.
        send_subscription: carry the subscription's expression in the request (lite: nothing is
            registered in ``assign`` mode), rather than rely on the registered one (push).
        commit_from: the store whose in-memory offset the pull asks a master to commit (push,
            CLUSTERING); ``None``: commit nothing.
        log: where a failed pull is logged (info).
    """
    sub = subscriptions.get(mq.topic)
    found = routes.find_broker(mq.broker_name, broker_id)
    if found is not None and broker_id == MASTER_ID and found.broker_id != MASTER_ID:
        found = await routes.recheck_masterless(mq.topic, mq.broker_name) or found  # an election?
    if sub is None or found is None:
        await refresh_quietly(routes, mq.topic)
        return PullOnce(broker_id=broker_id, retry_delay_ms=PULL_TIME_DELAY_WHEN_EXCEPTION_MS)
    # Java asks the broker to store the group's progress with the pull in CLUSTERING only, and
    # never a slave.
    commit = commit_from.get(mq) if commit_from is not None and found.broker_id == MASTER_ID else 0
    header = pull_request_header(
        group,
        mq,
        offset=offset,
        max_msgs=batch_size,
        expression_type=sub.expression_type.value,
        sub_version=sub.sub_version,
        subscription=sub.sub_string if send_subscription else None,
        commit_offset=commit,
        suspend_ms=suspend_ms,
    )
    started = trio.current_time()
    try:
        reply = await api.pull_message(found.address, header, timeout=timeout_ms / 1000)
        result, msgs = read_pull_reply(
            reply, msg_filter=filters.get(mq.topic), broker_name=mq.broker_name, queue_id=mq.queue_id
        )
    except RocketMQError as exc:
        log.info("pull of %s from %s failed: %s", mq, found.address, exc)
        if isinstance(exc, TransportError):  # a dead master replaced under the same name?
            await routes.recheck(mq.topic)
        return PullOnce(
            broker_id=broker_id,
            retry_delay_ms=pull_error_delay_ms(exc),
            started=started,
            registration_lost=isinstance(exc, SubscriptionNotExist | SubscriptionNotLatest),
        )
    action = next_pull_action(
        result,
        request_offset=offset,
        found_count=len(msgs),
        first_message_offset=msgs[0].queue_offset if msgs else None,
        process_queue_empty=pq.msg_count == 0,
    )
    return PullOnce(
        broker_id=result.suggest_which_broker_id, action=action, result=result, msgs=msgs, started=started
    )


_PULL_REPLY_KEYS: Final = ("nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId")


def read_pull_reply(
    reply: RemotingCommand, *, msg_filter: MessageFilter | None, broker_name: str, queue_id: int
) -> tuple[PullResult, list[MessageExt]]:
    """A PULL_MESSAGE answer: its status and offsets, and (FOUND) the messages that pass the filter.

    The messages get the queue pulled: ``broker_name`` (given to the decoder, as Java's
    ``processPullResult`` sets ``brokerName``) and ``queue_id``.

    Raises:
        RocketMQError: the answer is an error, or its body does not decode.
    """
    fields = reply.ext_fields
    try:  # the usual answer read directly: non-negative decimals (what the typed header accepts)
        texts = [fields[key] for key in _PULL_REPLY_KEYS]
        if not all(len(text) <= 18 and text.isascii() and text.isdigit() for text in texts):
            raise ValueError
        next_begin, min_offset, max_offset, suggest = map(int, texts)
        delta_text = fields.get("offsetDelta")
        if delta_text is not None and not (
            len(delta_text) <= 18 and delta_text.isascii() and delta_text.isdigit()
        ):
            raise ValueError
        delta = None if delta_text is None else int(delta_text)
    except (KeyError, ValueError):  # anything else: the typed header, with its precise error
        ext = from_ext_fields(PullMessageResponseHeader, fields)
        next_begin, min_offset, max_offset = ext.next_begin_offset, ext.min_offset, ext.max_offset
        suggest, delta = ext.suggest_which_broker_id, ext.offset_delta
    result = interpret_pull_response(
        reply.code,
        remark=reply.remark,
        next_begin_offset=next_begin,
        min_offset=min_offset,
        max_offset=max_offset,
        suggest_which_broker_id=suggest,
        offset_delta=delta,
    )
    msgs: list[MessageExt] = []
    if result.status is PullStatus.FOUND:
        msgs = process_found_messages(
            decode_messages(reply.body, broker_name=broker_name),
            result,
            msg_filter=msg_filter,
            queue_id=queue_id,
        )
    return result, msgs
