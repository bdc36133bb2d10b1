"""The PULL_MESSAGE request a consumer sends: its header, built in one place.

Push consumers, the lite pull consumer and the Spark reader all pull with the same header
(Java ``PullMessageRequestHeader``); what differs is carried by :func:`pull_request_header`'s
arguments and turned into the ``sysFlag`` bits here:

=================  =====================================================================
bit                set when
=================  =====================================================================
COMMIT_OFFSET 0x1  ``commit_offset > 0``: the broker also stores the group's progress
                   (a push consumer in CLUSTERING, pulling from a master)
SUSPEND 0x2        ``suspend_ms > 0``: the broker may hold the pull that long (long polling)
SUBSCRIPTION 0x4   ``subscription`` is given: the broker filters by the expression in the
                   request rather than by the group's registered subscription
CLASS_FILTER 0x8   never (the filter servers it served are gone)
LITE_PULL 0x10     never here (Java's request code 361)
=================  =====================================================================
"""

from __future__ import annotations

from typing import Final

from rocketmq_py.protocol._bodies import MessageQueue
from rocketmq_py.protocol._codes import RequestCode
from rocketmq_py.protocol._ext_fields import to_ext_fields
from rocketmq_py.protocol._headers import PullMessageRequestHeader
from rocketmq_py.protocol._template import RequestTemplate, encode_entry

__all__ = ["PullFrames", "PullSysFlag", "pull_request_header", "pull_sys_flag"]

#: Heads kept by a :class:`PullFrames`; past this the cache starts over.
PULL_HEAD_CACHE_LIMIT: Final = 4096
_VARYING: Final = ("queueOffset", "commitOffset")


class PullSysFlag:
    """Bits of a pull request's ``sysFlag`` (Java ``PullSysFlag``)."""

    COMMIT_OFFSET: Final = 0x1  # header commitOffset carries the consumer's progress
    SUSPEND: Final = 0x2  # the broker may hold the request (long polling)
    SUBSCRIPTION: Final = 0x4  # header subscription carries the expression
    CLASS_FILTER: Final = 0x8  # class-filter mode (deprecated filter servers)
    LITE_PULL: Final = 0x10  # a lite pull consumer (request code 361)


def pull_sys_flag(
    commit_offset: bool,
    suspend: bool,
    subscription: bool,
    class_filter: bool,
    lite_pull: bool = False,
) -> int:
    """Combine :class:`PullSysFlag` bits (Java ``PullSysFlag.buildSysFlag``)."""
    flag = 0
    if commit_offset:
        flag |= PullSysFlag.COMMIT_OFFSET
    if suspend:
        flag |= PullSysFlag.SUSPEND
    if subscription:
        flag |= PullSysFlag.SUBSCRIPTION
    if class_filter:
        flag |= PullSysFlag.CLASS_FILTER
    if lite_pull:
        flag |= PullSysFlag.LITE_PULL
    return flag


def pull_request_header(
    group: str,
    mq: MessageQueue,
    *,
    offset: int,
    max_msgs: int,
    expression_type: str,
    sub_version: int = 0,
    subscription: str | None = None,
    commit_offset: int = 0,
    suspend_ms: int = 0,
) -> PullMessageRequestHeader:
    """The header of one PULL_MESSAGE of ``mq`` from ``offset``.

    Args:
        group: the consumer group pulling.
        mq: the queue (its broker name goes in ``bname``).
        offset: the first queue offset wanted.
        max_msgs: at most this many messages.
        expression_type: ``TAG`` or ``SQL92``.
        sub_version: the subscription version registered by heartbeat (0 when ``subscription`` is sent).
        subscription: the expression to filter by, sent with the pull; ``None``: the broker uses the
            group's registered subscription.
        commit_offset: the group's progress to store with the pull; 0 or less stores nothing.
        suspend_ms: how long the broker may hold the pull when nothing is there; 0: answer at once.
    """
    return PullMessageRequestHeader(
        consumer_group=group,
        topic=mq.topic,
        queue_id=mq.queue_id,
        queue_offset=offset,
        max_msg_nums=max_msgs,
        sys_flag=pull_sys_flag(
            commit_offset=commit_offset > 0,
            suspend=suspend_ms > 0,
            subscription=subscription is not None,
            class_filter=False,
        ),
        commit_offset=max(commit_offset, 0),
        suspend_timeout_millis=suspend_ms,
        sub_version=sub_version,
        subscription=subscription,
        expression_type=expression_type,
        broker_name=mq.broker_name,
    )


class PullFrames:
    """PULL_MESSAGE frames in the binary header encoding, the recurring part encoded once.

    A queue's pulls differ in ``queueOffset`` and ``commitOffset`` only; everything else (group,
    topic, queue, flags, subscription version, broker) is encoded once per distinct combination
    and cached, so a pull costs two entries and one ``struct`` pack instead of a typed-header
    round trip and a JSON header. The broker reads the same ``extFields``
    (``tests/protocol/test_pull_frames.py`` decodes the frames back).
    """

    __slots__ = ("_heads", "_template")

    def __init__(self) -> None:
        self._template = RequestTemplate(RequestCode.PULL_MESSAGE, {})
        self._heads: dict[tuple[object, ...], bytes] = {}

    def frame(self, opaque: int, header: PullMessageRequestHeader) -> bytes:
        """The whole frame of one pull with ``header`` (without unknown ``extra`` keys).

        Raises:
            LocalProtocolError: a value this encoding cannot carry.
        """
        key = (
            header.consumer_group,
            header.topic,
            header.queue_id,
            header.max_msg_nums,
            header.sys_flag,
            header.suspend_timeout_millis,
            header.sub_version,
            header.subscription,
            header.expression_type,
            header.max_msg_bytes,
            header.request_source,
            header.proxy_forward_client_id,
            header.broker_name,
        )
        head = self._heads.get(key)
        if head is None:
            fields = to_ext_fields(header)
            for name in _VARYING:
                del fields[name]
            head = self._template.encode_entries(fields.items())
            if len(self._heads) >= PULL_HEAD_CACHE_LIMIT:
                self._heads.clear()
            self._heads[key] = head
        ext = b"".join(
            (
                head,
                encode_entry("queueOffset", str(header.queue_offset)),
                encode_entry("commitOffset", str(header.commit_offset)),
            )
        )
        return self._template.frame_from(opaque, ext, b"")
