"""The copy of a failed message that a consumer re-sends to its group's retry topic (pure).

Java builds it in ``DefaultMQPushConsumerImpl.sendMessageBack`` (concurrent consumption, when
CONSUMER_SEND_MSG_BACK failed) and in ``ConsumeMessageOrderlyService.sendMessageBack`` (orderly
consumption, a message that reached its reconsume limit, which the broker then stores in
``%DLQ%group``): a new message to ``%RETRY%group`` with the original body, flag and properties,
plus

- ``RETRY_TOPIC``: the topic the message came from;
- ``ORIGIN_MESSAGE_ID``: the id of the first copy (kept across retries);
- ``RECONSUME_TIME`` / ``MAX_RECONSUME_TIMES``: how often it was consumed, and the limit (the
  producer moves both into the send header for ``%RETRY%`` topics);
- ``DELAY``: level ``3 + reconsume times`` (10 s, 30 s, 1 min, ...);

and **without** ``TRAN_MSG``: a committed transactional message keeps that property when
stored, and a copy sent with it would be a prepared (half) message the broker never delivers.
"""

from __future__ import annotations

from rocketmq_py.protocol._message import Message, MessageExt
from rocketmq_py.protocol._names import retry_topic
from rocketmq_py.protocol._namespace import wrap_name
from rocketmq_py.protocol._properties import PropertyKey

__all__ = ["retry_message"]

#: Java ``sendMessageBack``'s delay: level 3 (10 s) for the first retry, one level more each time.
_FIRST_RETRY_DELAY_LEVEL = 3


def retry_message(
    msg: MessageExt,
    group: str,
    *,
    reconsume_times: int,
    max_reconsume_times: int,
    namespace: str | None = None,
) -> Message:
    """The copy of ``msg`` to send to ``%RETRY%<group>``.

    Args:
        msg: the consumed message (its topic already restored from a retry topic).
        group: the consumer group.
        reconsume_times: the ``RECONSUME_TIME`` the copy carries (concurrent: one more than the
            message's; orderly: the message's, already counted).
        max_reconsume_times: the group's limit, sent along so the broker can move the copy to
            ``%DLQ%<group>`` once it is reached.
        namespace: the consumer's namespace: ``group`` is wrapped already, ``msg.topic`` (as the
            listener saw it) is wrapped for ``RETRY_TOPIC``.
    """
    copy = Message(retry_topic(group), msg.body, flag=msg.flag, properties=dict(msg.properties))
    properties = copy.properties
    properties[PropertyKey.RETRY_TOPIC] = wrap_name(namespace, msg.topic)
    properties[PropertyKey.ORIGIN_MESSAGE_ID] = (
        msg.properties.get(PropertyKey.ORIGIN_MESSAGE_ID) or msg.msg_id
    )
    properties[PropertyKey.RECONSUME_TIME] = str(reconsume_times)
    properties[PropertyKey.MAX_RECONSUME_TIMES] = str(max_reconsume_times)
    properties[PropertyKey.DELAY_TIME_LEVEL] = str(_FIRST_RETRY_DELAY_LEVEL + msg.reconsume_times)
    properties.pop(PropertyKey.TRANSACTION_PREPARED, None)
    return copy
