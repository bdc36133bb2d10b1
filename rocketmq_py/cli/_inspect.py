"""``group inspect``'s diagnosis: what each consumer owns against what its group's strategy computes.

Pure: the input is the group's consumer ids (from a broker), each consumer's
:class:`~rocketmq_py.protocol.ConsumerRunningInfo` (or why it did not answer) and each topic's
readable queues (from the route); the output is a :class:`GroupReport` with these flags:

=====================  ======================================================================
``shared-queue``       a queue owned by two or more consumers (clustering groups only)
``unowned-queue``      a readable queue nobody owns
``allocation-differs`` a consumer whose owned set differs from the computed allocation
``strategy-differs``   a consumer whose strategy differs from the group's (the most common one)
``no-answer``          a consumer that did not answer GET_CONSUMER_RUNNING_INFO
``unknown-consumer``   a consumer that owns queues but is not in the broker's consumer list
=====================  ======================================================================

The strategy of a consumer comes from its properties: ``allocateMessageQueueStrategyName`` (our
consumers) or the class in ``allocateMessageQueueStrategy`` (Java writes the object's
``toString()``, ``org.apache...AllocateMessageQueueAveragely@1b2c3d``), mapped to the Java names
``AVG``, ``AVG_BY_CIRCLE``, ``CONSISTENT_HASH``... The computed allocation uses the group's strategy
over the sorted queues and sorted client ids, exactly as a rebalance does; strategies that need
configuration (``CONFIG``, ``MACHINE_ROOM``...) cannot be recomputed, which the report says.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from rocketmq_py import get_strategy
from rocketmq_py.errors import ClientError
from rocketmq_py.lowlevel import sort_consumers, sort_queues, strategy_class
from rocketmq_py.protocol import PROP_ALLOCATE_STRATEGY, ConsumerRunningInfo, MessageModel, MessageQueue

__all__ = [
    "FLAG_KINDS",
    "STRATEGY_NAME_PROPERTY",
    "Flag",
    "GroupReport",
    "MemberView",
    "TopicReport",
    "inspect_group",
    "member_view",
    "strategy_of",
]

#: Our consumers' property with the strategy's Java name (``AVG``...).
STRATEGY_NAME_PROPERTY: Final = "allocateMessageQueueStrategyName"

FLAG_KINDS: Final = (
    "shared-queue",
    "unowned-queue",
    "allocation-differs",
    "strategy-differs",
    "no-answer",
    "unknown-consumer",
)

#: Java's strategy classes (``org.apache.rocketmq.client.consumer.rebalance``) by Java name.
_JAVA_CLASSES: Final[Mapping[str, str]] = {
    "AllocateMessageQueueAveragely": "AVG",
    "AllocateMessageQueueAveragelyByCircle": "AVG_BY_CIRCLE",
    "AllocateMessageQueueConsistentHash": "CONSISTENT_HASH",
    "AllocateMessageQueueByConfig": "CONFIG",
    "AllocateMessageQueueByMachineRoom": "MACHINE_ROOM",
    "AllocateMachineRoomNearby": "MACHINE_ROOM_NEARBY",
}
_JAVA_NAMES: Final = (
    "AVG",
    "AVG_BY_CIRCLE",
    "CONSISTENT_HASH",
    "CONFIG",
    "MACHINE_ROOM",
    "MACHINE_ROOM_NEARBY",
)
_OBJECT_SUFFIX = re.compile(r"@[0-9a-fA-F]+$")


def strategy_of(properties: Mapping[str, str]) -> str | None:
    """A consumer's strategy as a Java name (``AVG``), the raw text if unknown, or ``None``."""
    named = properties.get(STRATEGY_NAME_PROPERTY)
    if named:
        return _canonical(named) or named
    raw = properties.get(PROP_ALLOCATE_STRATEGY)
    if not raw:
        return None
    simple = _OBJECT_SUFFIX.sub("", raw.strip()).rsplit(".", 1)[-1]
    simple = simple.split("$", 1)[0]
    if simple in _JAVA_CLASSES:
        return _JAVA_CLASSES[simple]
    for java_name in _JAVA_NAMES:
        if strategy_class(java_name).__name__ == simple:  # our class names (AllocateAveragely...)
            return java_name
    return raw


def _canonical(name: str) -> str | None:
    head = name.split("-", 1)[0] if name.upper().startswith("MACHINE_ROOM_NEARBY") else name
    try:
        cls = strategy_class(head)
    except ClientError:
        return None
    for java_name in _JAVA_NAMES:
        if strategy_class(java_name) is cls:
            return java_name
    return None  # pragma: no cover - every class has a Java name


@dataclass(frozen=True, slots=True)
class MemberView:
    """One consumer as it described itself (``error`` set when it did not answer)."""

    client_id: str
    strategy: str | None = None
    message_model: str | None = None
    topics: frozenset[str] = frozenset()
    owned: frozenset[MessageQueue] = frozenset()
    error: str | None = None

    @property
    def answered(self) -> bool:
        return self.error is None


def member_view(client_id: str, info: ConsumerRunningInfo | str) -> MemberView:
    """A consumer's view from its running info, or from the error text when it did not answer.

    Queues marked dropped (being released) do not count as owned.
    """
    if isinstance(info, str):
        return MemberView(client_id, error=info)
    return MemberView(
        client_id,
        strategy=strategy_of(info.properties),
        message_model=info.properties.get("messageModel"),
        topics=frozenset(sub.topic for sub in info.subscription_set),
        owned=frozenset(mq for mq, pq in info.mq_table.items() if not pq.dropped),
    )


@dataclass(frozen=True, slots=True)
class Flag:
    """One problem found: its kind (see :data:`FLAG_KINDS`), a sentence, who and what it concerns."""

    kind: str
    message: str
    client_ids: tuple[str, ...] = ()
    queues: tuple[MessageQueue, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "message": self.message,
            "clientIds": list(self.client_ids),
            "queues": [_queue_json(mq) for mq in self.queues],
        }


@dataclass(frozen=True, slots=True)
class TopicReport:
    """One topic: its queues, who owns each, and who should (``None`` when it cannot be computed)."""

    topic: str
    queues: tuple[MessageQueue, ...]
    owners: Mapping[MessageQueue, tuple[str, ...]]
    expected: Mapping[str, tuple[MessageQueue, ...]] | None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "queues": [
                {
                    **_queue_json(mq),
                    "owners": list(self.owners.get(mq, ())),
                    "expectedOwner": self.expected_owner(mq),
                }
                for mq in self.queues
            ],
            "expected": None
            if self.expected is None
            else {cid: [_queue_json(mq) for mq in mqs] for cid, mqs in self.expected.items()},
            "note": self.note,
        }

    def expected_owner(self, mq: MessageQueue) -> str | None:
        if self.expected is None:
            return None
        owners = [cid for cid, mqs in self.expected.items() if mq in mqs]
        return ",".join(owners) if owners else None


@dataclass(frozen=True, slots=True)
class GroupReport:
    """Everything ``group inspect`` shows."""

    group: str
    consumer_ids: tuple[str, ...]
    members: tuple[MemberView, ...]
    strategy: str | None
    broadcasting: bool
    topics: tuple[TopicReport, ...]
    flags: tuple[Flag, ...] = field(default=())

    @property
    def healthy(self) -> bool:
        return not self.flags

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "consumerIds": list(self.consumer_ids),
            "strategy": self.strategy,
            "messageModel": MessageModel.BROADCASTING.value
            if self.broadcasting
            else MessageModel.CLUSTERING.value,
            "members": [
                {
                    "clientId": m.client_id,
                    "answered": m.answered,
                    "error": m.error,
                    "strategy": m.strategy,
                    "messageModel": m.message_model,
                    "topics": sorted(m.topics),
                    "owned": [_queue_json(mq) for mq in sort_queues(m.owned)],
                }
                for m in self.members
            ],
            "topics": [t.to_json() for t in self.topics],
            "flags": [f.to_json() for f in self.flags],
            "healthy": self.healthy,
        }


def _queue_json(mq: MessageQueue) -> dict[str, Any]:
    return {"topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id}


def _queue_text(mqs: Iterable[MessageQueue]) -> str:
    return ", ".join(f"{mq.broker_name}:{mq.queue_id}" for mq in sort_queues(mqs))


def _group_strategy(members: Sequence[MemberView]) -> str | None:
    # The most common strategy among the members that answered; a tie goes to the one of the
    # first client id in sorted order.
    counts = Counter(m.strategy for m in members if m.answered and m.strategy is not None)
    if not counts:
        return None
    best = max(counts.values())
    for member in members:
        if member.strategy is not None and counts.get(member.strategy) == best:
            return member.strategy
    return None  # pragma: no cover - counts came from members


def inspect_group(
    group: str,
    consumer_ids: Iterable[str],
    infos: Mapping[str, ConsumerRunningInfo | str],
    topic_queues: Mapping[str, Iterable[MessageQueue]],
) -> GroupReport:
    """Compare what each consumer owns with what the group's strategy computes.

    Args:
        group: the consumer group.
        consumer_ids: the group's members according to the broker.
        infos: client id -> its running info, or the reason it did not answer. Ids here but not
            in ``consumer_ids`` are reported (``unknown-consumer`` if they own queues).
        topic_queues: topic -> its readable queues (the topics to check).
    """
    cids = sort_consumers(set(consumer_ids))
    members = tuple(
        member_view(cid, infos.get(cid, "no answer")) for cid in sort_consumers(set(cids) | set(infos))
    )
    answered = [m for m in members if m.answered]
    strategy = _group_strategy(members)
    broadcasting = bool(answered) and all(
        m.message_model == MessageModel.BROADCASTING.value for m in answered
    )
    flags: list[Flag] = []

    for m in members:
        if not m.answered:
            flags.append(Flag("no-answer", f"{m.client_id} did not answer: {m.error}", (m.client_id,)))
        elif m.client_id not in cids and m.owned:
            flags.append(
                Flag(
                    "unknown-consumer",
                    f"{m.client_id} owns {len(m.owned)} queue(s) but is not in the broker's consumer list",
                    (m.client_id,),
                    tuple(sort_queues(m.owned)),
                )
            )
    odd = [m for m in answered if strategy is not None and m.strategy != strategy]
    for m in odd:
        flags.append(
            Flag(
                "strategy-differs",
                f"{m.client_id} allocates with {m.strategy or 'an unknown strategy'}, the group with {strategy}",
                (m.client_id,),
            )
        )

    topics: list[TopicReport] = []
    differs: dict[str, set[MessageQueue]] = {}
    for topic in sorted(topic_queues):
        queues = tuple(sort_queues(set(topic_queues[topic])))
        owners: dict[MessageQueue, list[str]] = {}
        for m in answered:
            for mq in m.owned:
                if mq.topic == topic:
                    owners.setdefault(mq, []).append(m.client_id)
        expected, note = _expected(group, topic, queues, cids, strategy, broadcasting)
        topics.append(
            TopicReport(topic, queues, {mq: tuple(sorted(o)) for mq, o in owners.items()}, expected, note)
        )
        if not broadcasting:
            shared = [mq for mq in queues if len(owners.get(mq, ())) > 1]
            for mq in shared:
                flags.append(
                    Flag(
                        "shared-queue",
                        f"{topic} {mq.broker_name}:{mq.queue_id} is owned by {len(owners[mq])} consumers: "
                        + ", ".join(sorted(owners[mq])),
                        tuple(sorted(owners[mq])),
                        (mq,),
                    )
                )
        unowned = [mq for mq in queues if mq not in owners]
        if unowned:
            flags.append(
                Flag(
                    "unowned-queue",
                    f"{topic}: {len(unowned)} queue(s) owned by no consumer: {_queue_text(unowned)}",
                    (),
                    tuple(unowned),
                )
            )
        if expected is not None:
            for m in answered:
                if m.client_id not in cids:
                    continue
                mine = {mq for mq in m.owned if mq.topic == topic}
                if mine != set(expected.get(m.client_id, ())):
                    differs.setdefault(m.client_id, set()).update(mine ^ set(expected.get(m.client_id, ())))

    for cid in sorted(differs):
        member = next(m for m in members if m.client_id == cid)
        wrong = sort_queues(differs[cid])
        flags.append(
            Flag(
                "allocation-differs",
                f"{cid} ({member.strategy or 'unknown strategy'}) owns a different set than {strategy} computes; "
                f"differing queues: {_queue_text(wrong)}",
                (cid,),
                tuple(wrong),
            )
        )
    return GroupReport(
        group=group,
        consumer_ids=tuple(cids),
        members=members,
        strategy=strategy,
        broadcasting=broadcasting,
        topics=tuple(topics),
        flags=tuple(sorted(flags, key=lambda f: FLAG_KINDS.index(f.kind))),
    )


def _expected(
    group: str,
    topic: str,
    queues: Sequence[MessageQueue],
    cids: Sequence[str],
    strategy: str | None,
    broadcasting: bool,
) -> tuple[dict[str, tuple[MessageQueue, ...]] | None, str | None]:
    if not cids:
        return None, "the broker lists no consumer"
    if broadcasting:
        return {cid: tuple(queues) for cid in cids}, None
    if strategy is None:
        return None, "no consumer reported its strategy"
    if not queues:
        return {cid: () for cid in cids}, None
    try:
        algorithm = get_strategy(strategy)
    except ClientError as exc:
        return None, f"cannot recompute {strategy}: {exc}"
    return {cid: tuple(algorithm.allocate(group, cid, queues, cids)) for cid in cids}, None
