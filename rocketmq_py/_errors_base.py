"""The root of the error tree and the protocol and transport errors (public in :mod:`rocketmq_py.errors`)."""

from __future__ import annotations


class RocketMQError(Exception):
    """Base of every error rocketmq-py raises on purpose."""


# --- protocol ------------------------------------------------------------------------------------


class ProtocolError(RocketMQError):
    """Bytes that are not valid RocketMQ remoting protocol."""


class LocalProtocolError(ProtocolError):
    """We were asked to encode something the protocol cannot carry."""


class RemoteProtocolError(ProtocolError):
    """The peer sent bytes we cannot decode."""


class FrameTooLarge(RemoteProtocolError):
    """A frame's length prefix is above the configured maximum frame size."""


class MalformedFrame(RemoteProtocolError):
    """A frame whose lengths are negative, lie, or end early."""


class UnknownSerializeType(RemoteProtocolError):
    """The header's serialize-type byte is neither JSON (0) nor ROCKETMQ (1)."""


class MalformedHeader(RemoteProtocolError):
    """A JSON or binary header that does not parse."""


class MalformedBody(RemoteProtocolError):
    """A JSON body that does not parse into the expected schema."""


class MalformedMessage(RemoteProtocolError):
    """A stored-message body that ends mid-message or whose lengths lie."""


class CompressionUnavailable(MalformedMessage):
    """A body compressed with lz4/zstd while the optional codec is not installed."""


# --- transport -----------------------------------------------------------------------------------


class TransportError(RocketMQError):
    """The connection failed (not the broker's answer)."""


class RequestTimeout(TransportError):
    """No reply arrived within the call's deadline."""


class RequestReplyTimeout(RequestTimeout):
    """``Producer.request``: no reply message arrived within the timeout (Java ``RequestTimeoutException``).

    The request itself may have been stored (``sent`` tells): the responder may still run it,
    and its late reply is dropped.

    Attributes:
        topic: the request's topic.
        correlation_id: the request's ``CORRELATION_ID``.
        timeout: the seconds waited.
        sent: whether the broker had stored the request.
    """

    def __init__(self, topic: str, correlation_id: str, timeout: float, *, sent: bool) -> None:
        self.topic = topic
        self.correlation_id = correlation_id
        self.timeout = timeout
        self.sent = sent
        what = "sent, but no reply came" if sent else "not sent"
        super().__init__(f"request {correlation_id} to {topic}: {what} within {timeout:g} s")


class ConnectionFailed(TransportError):
    """Connecting failed, or the connection closed while a request was pending."""


class TlsMismatch(ConnectionFailed):
    """The connection failed the way a TLS/plaintext mismatch makes it fail.

    Raised when a TLS handshake ends because the server closed the connection or answered
    without TLS ("is the server plaintext?"), and when a plaintext server closes the connection
    right after our first request without a byte in reply, or answers with TLS records ("does
    the server require TLS?"). The message names the address and what was seen.
    """
