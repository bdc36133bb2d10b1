"""Client-side re-check of pulled messages against the subscription, with no I/O.

Mirrors the tag filter in the Java client's ``PullAPIWrapper.processPullResult``
(protocol.md §8.6). The broker filters a TAG subscription by the 32-bit hash of each message's
TAGS property (the consume queue stores only that hash), so two tags with the same Java
``String.hashCode`` both pass. The client therefore re-checks every FOUND message: when the
subscription names tags (its ``tags_set`` is not empty) and is not in class-filter mode, a message
is kept only if its TAGS property is one of them; a message without TAGS is dropped. A ``"*"``
(or empty) subscription has no tags and keeps everything. SQL92 subscriptions are evaluated by
the broker alone (``enablePropertyFilter``), so everything that arrives is kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from rocketmq_py.protocol._bodies import ExpressionType, SubscriptionData
from rocketmq_py.protocol._message import Message
from rocketmq_py.protocol._properties import PropertyKey

__all__ = ["MessageFilter"]

M = TypeVar("M", bound=Message)

_TAGS = PropertyKey.TAGS


class MessageFilter:
    """The client-side check of one subscription.

    Args:
        subscription: the topic's subscription, as built by
            :func:`~rocketmq_py.protocol._bodies.build_subscription_data`.

    Attributes:
        subscription: that subscription.
        accepts_all: whether every message passes (``"*"``, SQL92, class-filter mode).
        tags: the accepted tags (empty when :attr:`accepts_all`).
    """

    __slots__ = ("accepts_all", "subscription", "tags")

    def __init__(self, subscription: SubscriptionData) -> None:
        self.subscription = subscription
        self.accepts_all = (
            subscription.expression_type != ExpressionType.TAG
            or subscription.class_filter_mode
            or not subscription.tags_set
        )
        self.tags: frozenset[str] = frozenset() if self.accepts_all else subscription.tags_set

    def accepts(self, msg: Message) -> bool:
        """Whether ``msg`` belongs to the subscription (its TAGS is one of :attr:`tags`)."""
        return self.accepts_all or msg.properties.get(_TAGS) in self.tags

    def filter_messages(self, msgs: Iterable[M]) -> list[M]:
        """The messages of ``msgs`` that :meth:`accepts`, in order (always a new list)."""
        if self.accepts_all:
            return list(msgs)
        tags = self.tags
        return [msg for msg in msgs if msg.properties.get(_TAGS) in tags]

    def __repr__(self) -> str:
        what = "all" if self.accepts_all else sorted(self.tags)
        return f"<MessageFilter topic={self.subscription.topic!r} accepts={what}>"
