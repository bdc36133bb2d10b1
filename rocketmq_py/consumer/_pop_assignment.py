"""Which queues of a topic a member with ``client_rebalance=False`` pops, and which it pulls: a
broker's answer to QUERY_ASSIGNMENT.

A 5.x Proxy serves no QUERY_ASSIGNMENT: its ``RemotingProtocolServer`` does not register the code,
so it answers REQUEST_CODE_NOT_SUPPORTED, and Java's remoting client then consumes nothing
(``RebalanceImpl.getRebalanceResultFromBroker`` logs the error, round after round). POP itself
cannot work through it over remoting either: the Proxy registers ACK_MESSAGE and
CHANGE_MESSAGE_INVISIBLETIME but never answers them (``ConsumerManagerActivity.processRequest0``
has no case for them), so nothing popped could be acknowledged, and its ``PullMessageActivity``
reads POP_MESSAGE as a pull. Behind such an endpoint the member therefore reads the topic as a
group in PULL mode does, by client rebalance and pull, which the Proxy serves; the refusal is
logged once per address and not asked again.

One broker is asked per round, at random, as Java does (``RebalanceImpl.getRebalanceResultFromBroker``);
each answers in the mode *it* stores for the group. ``mqadmin setConsumeMode -c`` sets the masters
one after the other (``SetConsumeModeSubCommand.execute``), so for a moment they disagree, and a
broker added later has no mode stored (PULL). An answer in a mode other than the one the member
follows is therefore checked with the topic's other brokers: the member switches only when none
of those that answer says otherwise; else it keeps its mode and the queues it had. (Following
whichever broker was asked, a round to each side of a half-done switch took the member to POP and
back, cutting the pops in flight: their messages were hidden until revived, and pulled meanwhile.)
"""

from __future__ import annotations

import logging
import random

from rocketmq_py.consumer._pop_rules import QUERY_ASSIGNMENT_TIMEOUT
from rocketmq_py.consumer._push_settings import PushSettings
from rocketmq_py.consumer._runtime import PushRuntime
from rocketmq_py.errors import BrokerError, RocketMQError
from rocketmq_py.protocol import (
    MessageModel,
    MessageQueue,
    MessageRequestMode,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    RequestCode,
    ResponseCode,
    decode_body,
    encode_body,
)

__all__ = ["AssignmentQuery"]

log = logging.getLogger("rocketmq_py.consumer")

Assigned = tuple[set[MessageQueue], set[MessageQueue]]


class AssignmentQuery:
    """QUERY_ASSIGNMENT for one member, or PULL behind a Proxy (see the module docstring)."""

    def __init__(self, settings: PushSettings, runtime: PushRuntime) -> None:
        self._settings = settings
        self._runtime = runtime
        #: Addresses that answered REQUEST_CODE_NOT_SUPPORTED (a Proxy).
        self.refused: set[str] = set()
        #: topic -> the last assignment returned, whose mode the member follows.
        self._followed: dict[str, Assigned] = {}

    async def query(self, topic: str, brokers: list[tuple[str, str]]) -> Assigned:
        """``(popped, pulled)`` of ``topic``, whose brokers are ``(name, address)`` (address: the
        master's, else any); one is asked, at random. Behind a Proxy: nothing popped, and the
        topic's brokers (queue id -1) pulled.

        Raises:
            RocketMQError: the broker could not be asked (the next round asks again).
        """
        name, address = random.choice(brokers)
        answer = await self._ask(topic, name, address, brokers)
        followed = self._followed.get(topic)
        mode = _mode_of(answer)
        kept = _mode_of(followed) if followed is not None else None
        if followed is not None and kept is not None and mode is not None and kept is not mode:
            for other_name, other_address in brokers:
                if other_address == address:
                    continue
                try:
                    other = _mode_of(await self._ask(topic, other_name, other_address, brokers))
                except RocketMQError:
                    continue  # no word from it: the others decide
                if other not in (None, mode):
                    log.info(
                        "%s: %s says the group reads %s in %s mode, %s says %s (a switch under "
                        "way): staying in %s mode",
                        self._settings.group,
                        name,
                        topic,
                        mode.name,
                        other_name,
                        other.name,
                        kept.name,
                    )
                    return followed
        self._followed[topic] = answer
        return answer

    async def _ask(self, topic: str, name: str, address: str, brokers: list[tuple[str, str]]) -> Assigned:
        if address in self.refused:
            return set(), self._every_broker(topic, brokers)
        settings, runtime = self._settings, self._runtime
        body = QueryAssignmentRequestBody(
            topic=topic,
            consumer_group=settings.group,
            client_id=runtime.client_id,
            strategy_name=settings.strategy_name,
            message_model=MessageModel.CLUSTERING,
        )
        try:
            reply = await runtime.api.call(
                address,
                RequestCode.QUERY_ASSIGNMENT,
                None,
                encode_body(body),
                timeout=QUERY_ASSIGNMENT_TIMEOUT,
            )
        except BrokerError as exc:
            if exc.code != ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                raise
            self.refused.add(address)
            log.warning(
                "%s: %s (%s) serves no QUERY_ASSIGNMENT, as a 5.x Proxy, through which POP cannot "
                "work over remoting (it never answers ACK_MESSAGE): reading %s by client rebalance "
                "and pull instead, as a group in PULL mode",
                settings.group,
                address,
                name,
                topic,
            )
            return set(), self._every_broker(topic, brokers)
        assignments = decode_body(QueryAssignmentResponseBody, reply.body).message_queue_assignments
        popped = {
            a.message_queue for a in assignments if a.message_queue and a.mode is MessageRequestMode.POP
        }
        pulled = {
            a.message_queue for a in assignments if a.message_queue and a.mode is not MessageRequestMode.POP
        }
        return popped, pulled

    @staticmethod
    def _every_broker(topic: str, brokers: list[tuple[str, str]]) -> set[MessageQueue]:
        return {MessageQueue(topic, name, -1) for name, _ in brokers}


def _mode_of(assigned: Assigned) -> MessageRequestMode | None:
    """The mode an assignment says: POP, PULL, or ``None`` when it gives this member no queue."""
    popped, pulled = assigned
    if popped:
        return MessageRequestMode.POP
    return MessageRequestMode.PULL if pulled else None
