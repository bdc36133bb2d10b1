"""Replies pushed by brokers, matched to the requests waiting for them (Java ``RequestFutureHolder``).

A ``Producer.request`` registers its ``CORRELATION_ID`` here before it sends, waits for the slot,
and removes it when it leaves (reply, timeout, error or cancellation). A broker pushes a reply with
PUSH_REPLY_MESSAGE_TO_CLIENT on any connection of the client: :meth:`ReplyWaiters.on_push_reply`
decodes it, hands it to the request with the same correlation id and answers SUCCESS. A reply no
request waits for (it came after the timeout, or twice) is answered SUCCESS too and dropped with a
debug log: the requester gave up on it, the broker has nothing to retry.
"""

from __future__ import annotations

import logging
import time

import trio

from rocketmq_py.errors import RocketMQError, StateError
from rocketmq_py.protocol import (
    MessageExt,
    PropertyKey,
    RemotingCommand,
    ReplyMessageRequestHeader,
    ResponseCode,
    decode_pushed_reply,
    from_ext_fields,
)

__all__ = ["ReplySlot", "ReplyWaiters"]

log = logging.getLogger("rocketmq_py.request")


class ReplySlot:
    """Where one request's reply lands: set once, read after :meth:`wait`."""

    __slots__ = ("_arrived", "reply")

    def __init__(self) -> None:
        self.reply: MessageExt | None = None
        self._arrived = trio.Event()

    def put(self, reply: MessageExt) -> None:
        """Hand over the reply and wake the waiting request (a second reply is ignored)."""
        if self.reply is None:
            self.reply = reply
            self._arrived.set()

    async def wait(self) -> MessageExt:
        """Wait until the reply is there."""
        await self._arrived.wait()
        assert self.reply is not None
        return self.reply


class ReplyWaiters:
    """The requests of one client instance waiting for replies, by ``CORRELATION_ID``."""

    def __init__(self) -> None:
        self._slots: dict[str, ReplySlot] = {}
        #: Replies that found no waiting request (late, unknown or repeated).
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._slots)

    def register(self, correlation_id: str) -> ReplySlot:
        """A slot for ``correlation_id``; :meth:`discard` it when the request ends.

        Raises:
            StateError: a request with this correlation id is already waiting.
        """
        if correlation_id in self._slots:
            raise StateError(f"a request with correlation id {correlation_id} is already waiting")
        slot = self._slots[correlation_id] = ReplySlot()
        return slot

    def discard(self, correlation_id: str) -> None:
        """Forget the request (done, timed out or cancelled): its reply, if any comes, is dropped."""
        self._slots.pop(correlation_id, None)

    def deliver(self, reply: MessageExt) -> bool:
        """Hand ``reply`` to the request with its correlation id; ``False`` if none waits."""
        correlation_id = reply.properties.get(PropertyKey.CORRELATION_ID, "")
        slot = self._slots.pop(correlation_id, None)
        if slot is None:
            self.dropped += 1
            log.debug(
                "reply %s from %s matches no waiting request (late or unknown): dropped",
                correlation_id or "without a correlation id",
                reply.born_host,
            )
            return False
        slot.put(reply)
        return True

    async def on_push_reply(self, request: RemotingCommand) -> RemotingCommand:
        """PUSH_REPLY_MESSAGE_TO_CLIENT from a broker: deliver the reply, answer SUCCESS."""
        try:
            header = from_ext_fields(ReplyMessageRequestHeader, request.ext_fields)
            reply = decode_pushed_reply(header, request.body, arrive_time_ms=time.time_ns() // 1_000_000)
        except (RocketMQError, ValueError) as exc:
            log.warning("cannot read a pushed reply: %s", exc)
            return RemotingCommand.response(
                request, ResponseCode.SYSTEM_ERROR, remark=f"process reply message fail: {exc}"
            )
        self.deliver(reply)
        return RemotingCommand.response(request, ResponseCode.SUCCESS)
