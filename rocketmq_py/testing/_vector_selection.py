"""Which recorded exchanges become golden vectors: the :data:`WANTED` table and its matchers.

The record-vectors session (``_record_vectors``) records every frame between the Java client,
the NameServer and the broker; :func:`select_vectors` pairs each request with its response
(:func:`pair_exchanges`: same connection, opposite direction, same opaque) and keeps, for each
:class:`Want`, the first exchange of its phase and request code that its matcher accepts. No I/O:
the tests run it on recordings they build.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from rocketmq_py.errors import ClusterError
from rocketmq_py.protocol._bodies import ConsumerListBody, LockBatchRequestBody
from rocketmq_py.protocol._codes import RequestCode, ResponseCode, SerializeType
from rocketmq_py.protocol._json_body import decode_body
from rocketmq_py.protocol._stored import decode_messages
from rocketmq_py.testing._recording import FrameInfo

__all__ = ["TOPIC", "WANTED", "Exchange", "Want", "pair_exchanges", "select_vectors"]

#: The topic the session's Java driver sends to and consumes from.
TOPIC: Final = "VectorTopic"


@dataclass(frozen=True, slots=True)
class Exchange:
    """A request and its response (None for a oneway request or a missing reply)."""

    request: FrameInfo
    response: FrameInfo | None


def pair_exchanges(infos: Sequence[FrameInfo]) -> list[Exchange]:
    """Every request with its response, in request order."""
    responses = {}
    for info in infos:
        if info.is_response:
            asked_by = "s2c" if info.frame.direction == "c2s" else "c2s"
            responses[(info.frame.connection, asked_by, info.command.opaque)] = info
    return [
        Exchange(info, responses.get((info.frame.connection, info.frame.direction, info.command.opaque)))
        for info in infos
        if not info.is_response
    ]


Match = Callable[[Exchange, Sequence[Exchange]], bool]


def _any(_: Exchange, __: Sequence[Exchange]) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class Want:
    """One exchange to keep: the first in ``phase`` with request ``code`` that ``match`` accepts."""

    key: str
    phase: str
    code: int
    description: str
    match: Match = _any
    direction: str = "c2s"
    #: Keep the response too (when there is one).
    with_response: bool = True
    #: A race the session provokes but cannot guarantee: kept when it happened.
    required: bool = True


def _ext(ex: Exchange, key: str) -> str | None:
    return ex.request.command.ext_fields.get(key)


def _response_code(ex: Exchange, code: int) -> bool:
    return ex.response is not None and ex.response.command.code == code


def _route_ok(ex: Exchange, _: Sequence[Exchange]) -> bool:
    return _ext(ex, "topic") == TOPIC and _response_code(ex, ResponseCode.SUCCESS)


def _route_missing(ex: Exchange, _: Sequence[Exchange]) -> bool:
    return _response_code(ex, ResponseCode.TOPIC_NOT_EXIST)


def _send_small(ex: Exchange, _: Sequence[Exchange]) -> bool:
    return ex.request.command.body == b"hello, golden vectors"


def _send_compressed(ex: Exchange, _: Sequence[Exchange]) -> bool:
    return int(_ext(ex, "f") or 0) & 1 == 1


def _send_unicode(ex: Exchange, _: Sequence[Exchange]) -> bool:
    return "名前" in (_ext(ex, "i") or "")


def _consumer_heartbeat(ex: Exchange, _: Sequence[Exchange]) -> bool:
    return b'"consumerDataSet":[{' in ex.request.command.body


def _two_consumers(ex: Exchange, _: Sequence[Exchange]) -> bool:
    if not _response_code(ex, ResponseCode.SUCCESS):
        return False
    assert ex.response is not None
    return len(decode_body(ConsumerListBody, ex.response.command.body).consumer_id_list) >= 2


def _pull_found(min_messages: int, queue_id: int) -> Match:
    def match(ex: Exchange, _: Sequence[Exchange]) -> bool:
        if not _response_code(ex, ResponseCode.SUCCESS) or _ext(ex, "queueId") != str(queue_id):
            return False
        assert ex.response is not None
        return len(decode_messages(ex.response.command.body, decompress=False)) >= min_messages

    return match


def _query_offset(code: int) -> Match:
    return lambda ex, _: _response_code(ex, code)


def _oneway(ex: Exchange, _: Sequence[Exchange]) -> bool:
    return ex.request.command.is_oneway


def _sync(ex: Exchange, _: Sequence[Exchange]) -> bool:
    return not ex.request.command.is_oneway and _response_code(ex, ResponseCode.SUCCESS)


def _notify_after_second_member(ex: Exchange, exchanges: Sequence[Exchange]) -> bool:
    """A NOTIFY sent to a member that was there before another member's heartbeat."""
    seq = ex.request.frame.seq
    members = [
        e.request.frame.connection
        for e in exchanges
        if e.request.command.code == RequestCode.HEART_BEAT
        and e.request.frame.phase == ex.request.frame.phase
        and e.request.frame.seq < seq
        and _consumer_heartbeat(e, exchanges)
    ]
    return len(set(members)) >= 2 and members[0] == ex.request.frame.connection


def _lock_two_queues(ex: Exchange, _: Sequence[Exchange]) -> bool:
    return len(decode_body(LockBatchRequestBody, ex.request.command.body).mq_set) >= 2


def _lock_any(ex: Exchange, _: Sequence[Exchange]) -> bool:
    return _response_code(ex, ResponseCode.SUCCESS)


def _binary(ex: Exchange, _: Sequence[Exchange]) -> bool:
    return ex.request.command.serialize_type == SerializeType.ROCKETMQ


_C: Final = RequestCode

#: The exchanges kept, each under a key the tests look vectors up by (``<key>/request`` and
#: ``<key>/response``). Alternatives for one key are tried in order.
WANTED: Final[tuple[Want, ...]] = (
    Want("route", "produce", _C.GET_ROUTEINFO_BY_TOPIC, "route query for the test topic", _route_ok),
    Want(
        "route-missing",
        "consume",
        _C.GET_ROUTEINFO_BY_TOPIC,
        "route query for the consumer's %RETRY% topic before it exists: TOPIC_NOT_EXIST with a remark",
        _route_missing,
    ),
    Want("heartbeat-producer", "produce", _C.HEART_BEAT, "producer heartbeat (producerDataSet only)"),
    Want("send-small", "produce", _C.SEND_MESSAGE_V2, "sync send of a 21-byte message", _send_small),
    Want(
        "send-compressed",
        "produce",
        _C.SEND_MESSAGE_V2,
        "send of a 6800-byte body the client zlib-compressed (sysFlag 0x301)",
        _send_compressed,
    ),
    Want(
        "send-unicode",
        "produce",
        _C.SEND_MESSAGE_V2,
        "send with non-ASCII tags, keys, user properties and body",
        _send_unicode,
    ),
    Want("send-batch", "produce", _C.SEND_BATCH_MESSAGE, "batch of three messages to queue 1"),
    Want("unregister-producer", "produce", _C.UNREGISTER_CLIENT, "producer shutdown: UNREGISTER_CLIENT"),
    Want(
        "heartbeat-consumer",
        "consume",
        _C.HEART_BEAT,
        "push-consumer heartbeat with subscriptions (topic and %RETRY% topic)",
        _consumer_heartbeat,
    ),
    Want(
        "notify-ids-changed",
        "consume",
        _C.NOTIFY_CONSUMER_IDS_CHANGED,
        "broker -> client, oneway: a second member joined the group",
        _notify_after_second_member,
        direction="s2c",
        with_response=False,
    ),
    Want(
        "consumer-list",
        "consume",
        _C.GET_CONSUMER_LIST_BY_GROUP,
        "consumer list of the group with both members",
        _two_consumers,
    ),
    Want(
        "query-offset",
        "consume",
        _C.QUERY_CONSUMER_OFFSET,
        "consumer offset query answered with an offset",
        _query_offset(ResponseCode.SUCCESS),
    ),
    Want(
        "query-offset-missing",
        "consume",
        _C.QUERY_CONSUMER_OFFSET,
        "consumer offset query answered QUERY_NOT_FOUND (with a remark)",
        _query_offset(ResponseCode.QUERY_NOT_FOUND),
    ),
    Want(
        "pull-found",
        "consume",
        _C.PULL_MESSAGE,
        "pull of queue 0: FOUND with three messages (plain, zlib-compressed, non-ASCII properties)",
        _pull_found(3, 0),
    ),
    Want(
        "pull-found-batch",
        "consume",
        _C.PULL_MESSAGE,
        "pull of queue 1: FOUND with the three messages of the batch",
        _pull_found(3, 1),
    ),
    Want(
        "pull-not-latest",
        "consume",
        _C.PULL_MESSAGE,
        "pull answered SUBSCRIPTION_NOT_LATEST (the new member pulled before its heartbeat landed)",
        lambda ex, _: _response_code(ex, ResponseCode.SUBSCRIPTION_NOT_LATEST),
        required=False,
    ),
    Want(
        "consumer-list-empty",
        "consume",
        _C.GET_CONSUMER_LIST_BY_GROUP,
        "consumer list asked while the group had no live member (start/shutdown race): SYSTEM_ERROR",
        lambda ex, _: _response_code(ex, ResponseCode.SYSTEM_ERROR),
        required=False,
    ),
    Want(
        "update-offset-oneway",
        "consume",
        _C.UPDATE_CONSUMER_OFFSET,
        "periodic offset persist: oneway (flag 2), no reply",
        _oneway,
        with_response=False,
    ),
    Want(
        "update-offset-sync",
        "consume",
        _C.UPDATE_CONSUMER_OFFSET,
        "synchronous offset update and its SUCCESS reply",
        _sync,
    ),
    Want(
        "lock-batch",
        "orderly",
        _C.LOCK_BATCH_MQ,
        "orderly consumer locks its queues (LockBatchRequestBody)",
        _lock_two_queues,
    ),
    Want(
        "lock-batch",
        "orderly",
        _C.LOCK_BATCH_MQ,
        "orderly consumer locks its queues (LockBatchRequestBody)",
        _lock_any,
    ),
    Want("unlock-batch", "orderly", _C.UNLOCK_BATCH_MQ, "orderly consumer shutdown unlocks its queues"),
    Want(
        "route-binary",
        "single",
        _C.GET_ROUTEINFO_BY_TOPIC,
        "route query with a ROCKETMQ binary header (the reply is still JSON)",
        _binary,
    ),
    Want("heartbeat-binary", "single", _C.HEART_BEAT, "producer heartbeat, binary header", _binary),
    Want(
        "send-binary",
        "single",
        _C.SEND_MESSAGE_V2,
        "send with a ROCKETMQ binary header and non-ASCII properties (the reply is JSON)",
        _binary,
    ),
)


def select_vectors(
    infos: Sequence[FrameInfo], wanted: Sequence[Want] = WANTED
) -> list[tuple[FrameInfo, str, str]]:
    """The frames to keep, in recording order, each with its key and description.

    Raises:
        ClusterError: a wanted exchange is not in the recording.
    """
    exchanges = pair_exchanges(infos)
    chosen: dict[int, tuple[FrameInfo, str, str]] = {}
    found: set[str] = set()
    for want in wanted:
        if want.key in found:
            continue
        for ex in exchanges:
            req = ex.request
            if (
                req.frame.phase == want.phase
                and req.command.code == want.code
                and req.frame.direction == want.direction
                and want.match(ex, exchanges)
            ):
                found.add(want.key)
                chosen[req.frame.seq] = (req, f"{want.key}/request", want.description)
                if want.with_response and ex.response is not None:
                    chosen[ex.response.frame.seq] = (ex.response, f"{want.key}/response", want.description)
                break
    missing = sorted({w.key for w in wanted if w.required} - found)
    if missing:
        raise ClusterError(f"the recording lacks the exchanges {', '.join(missing)}")
    return [chosen[seq] for seq in sorted(chosen)]
