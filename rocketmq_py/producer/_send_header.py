"""The SEND_MESSAGE_V2 header of one send: its short-key ``extFields``, split for the frame template.

The V2 header (Java ``SendMessageRequestHeaderV2``) names its fields ``a`` .. ``n``. Per producer,
four never change (group, default topic, its queue count, ``k`` unit mode); per send, the topic,
queue, flags and broker come back again and again (they are cached once encoded by
:class:`~rocketmq_py.protocol._template.RequestTemplate`), and the born timestamp and properties
are new every time. ``tests/producer`` checks :meth:`SendHeader.fields` against the typed header.
"""

from __future__ import annotations

import time
from typing import Final

from rocketmq_py._client._route import AUTO_CREATE_TOPIC_KEY
from rocketmq_py.protocol import MessageQueue, RequestCode
from rocketmq_py.protocol._template import RequestTemplate

__all__ = ["Entries", "SendHeader"]

#: ``((key, value), ...)`` pairs of a header's varying part.
Entries = tuple[tuple[str, str], ...]

_BATCH: Final = (("m", "true"),)
_SINGLE: Final = (("m", "false"),)


class SendHeader:
    """A producer's V2 send header: the constant entries, and the varying ones of each send.

    Args:
        group: the producer group (``a``).
        default_topic_queue_nums: queues of an auto-created topic (``d``).
    """

    __slots__ = ("_batch_template", "_single_template", "constant")

    def __init__(self, group: str, default_topic_queue_nums: int) -> None:
        #: The entries every send carries.
        self.constant: dict[str, str] = {
            "a": group,
            "c": AUTO_CREATE_TOPIC_KEY,
            "d": str(default_topic_queue_nums),
            "k": "false",
        }
        self._single_template: RequestTemplate | None = None
        self._batch_template: RequestTemplate | None = None

    def template(self, *, batch: bool) -> RequestTemplate:
        """The binary frame template of SEND_MESSAGE_V2, or SEND_BATCH_MESSAGE for a batch."""
        if batch:
            if self._batch_template is None:
                self._batch_template = RequestTemplate(RequestCode.SEND_BATCH_MESSAGE, self.constant)
            return self._batch_template
        if self._single_template is None:
            self._single_template = RequestTemplate(RequestCode.SEND_MESSAGE_V2, self.constant)
        return self._single_template

    @staticmethod
    def recurring(
        mq: MessageQueue,
        *,
        sys_flag: int,
        flag: int,
        reconsume_times: str,
        max_reconsume_times: str | None,
        batch: bool,
    ) -> Entries:
        """The entries whose values come back send after send (``b e f h j m n``, ``l`` if set)."""
        entries: Entries = (
            ("b", mq.topic),
            ("e", str(mq.queue_id)),
            ("f", str(sys_flag)),
            ("h", str(flag)),
            ("j", reconsume_times),
            *(_BATCH if batch else _SINGLE),
            ("n", mq.broker_name),
        )
        if max_reconsume_times:
            entries += (("l", max_reconsume_times),)
        return entries

    @staticmethod
    def fresh(properties: str) -> Entries:
        """The entries new on every send: the born timestamp ``g`` and the properties ``i``."""
        return (("g", str(int(time.time() * 1000))), ("i", properties))

    def fields(self, recurring: Entries, fresh: Entries) -> dict[str, str]:
        """The whole header as an ``extFields`` map (the path of connections with RPC hooks)."""
        fields = dict(self.constant)
        fields.update(recurring)
        fields.update(fresh)
        return fields
