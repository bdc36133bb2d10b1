"""Recalling a timer message (RocketMQ 5.3.2+): the handle a send returns, and RECALL_MESSAGE.

When a broker stores a message with a delivery time (``TIMER_DELIVER_MS``, ``TIMER_DELAY_SEC`` or
``TIMER_DELAY_MS``) sent by SEND_MESSAGE(_V2), its reply carries ``recallHandle``: URL-safe base64
of five words joined by single spaces, ``v1 <topic> <broker name> <delivery ms + 1> <message id>``
(the message id is the client's ``UNIQ_KEY``). A producer hands the handle back in RECALL_MESSAGE
(:class:`RecallMessageRequestHeader`) to the broker named in it, before the delivery time; the
broker then stores a delete marker for the timer wheel, and the message is never delivered.
The reply's header carries the message id (:class:`RecallMessageResponseHeader`).

Brokers answer with ``ILLEGAL_OPERATION`` for a handle they cannot read or that names another
topic or broker, or whose time has passed; with ``NO_PERMISSION`` while their
``recallMessageEnable`` is false (the default); brokers before 5.3.2 do not know the request.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Final

from rocketmq_py.protocol._codes import RequestCode
from rocketmq_py.protocol._ext_fields import extra_field, prepare_headers, wire_key

__all__ = ["RecallHandle", "RecallMessageRequestHeader", "RecallMessageResponseHeader"]

_VERSION_1: Final = "v1"


@dataclass(frozen=True, slots=True)
class RecallHandle:
    """A decoded recall handle (version 1).

    Attributes:
        topic: the message's topic (as the broker stored it).
        broker_name: the broker holding the message.
        timestamp: the delivery time in epoch ms, plus one (as the broker writes it).
        message_id: the message's client id (``UNIQ_KEY``).
    """

    topic: str
    broker_name: str
    timestamp: str
    message_id: str

    @classmethod
    def parse(cls, handle: str) -> RecallHandle:
        """Decode a handle as a send returned it.

        Raises:
            ValueError: not URL-safe base64 of ``v1 topic broker timestamp id``.
        """
        try:
            padded = handle + "=" * (-len(handle) % 4)  # Java's decoder takes it unpadded too
            text = base64.b64decode(padded.encode("ascii"), altchars=b"-_", validate=True).decode("utf-8")
        except (UnicodeError, binascii.Error, ValueError):
            raise ValueError(f"recall handle {handle!r} is not base64 text") from None
        words = text.split(" ")
        if len(words) < 5 or words[0] != _VERSION_1 or not all(words[1:5]):
            raise ValueError(f"recall handle {handle!r} is not a version-1 handle")
        return cls(words[1], words[2], words[3], words[4])

    def encode(self) -> str:
        """The handle's text form (what a 5.3.2+ broker returns for this message)."""
        text = " ".join((_VERSION_1, self.topic, self.broker_name, self.timestamp, self.message_id))
        return base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii")


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallMessageRequestHeader:
    """RECALL_MESSAGE (370) request header."""

    REQUEST_CODE: ClassVar[int | None] = RequestCode.RECALL_MESSAGE

    topic: str
    recall_handle: str
    producer_group: str | None = None
    broker_name: str | None = field(default=None, metadata=wire_key("bname"))
    extra: Mapping[str, str] = extra_field()


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallMessageResponseHeader:
    """Reply to RECALL_MESSAGE: the recalled message's id."""

    REQUEST_CODE: ClassVar[int | None] = None

    msg_id: str | None = None
    extra: Mapping[str, str] = extra_field()


prepare_headers(RecallMessageRequestHeader, RecallMessageResponseHeader)
