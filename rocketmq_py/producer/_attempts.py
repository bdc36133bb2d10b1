"""How a send spends its deadline over attempts, and how a failed send names them (pure).

A synchronous send has one deadline (``send_timeout``) for the route lookup and every attempt. Each
attempt but the last is cut at ``attempt_timeout`` so that a broker that stopped answering (paused,
black-holed) leaves time to retry on another broker; the last attempt may use whatever is left, as
Java's ``sendDefaultImpl`` caps only attempts that can still be retried
(``sendMsgMaxTimeoutPerRequest``). The cut covers the whole attempt: master address, connect and
request.

A send that fails names every attempt it made: which broker, and what went wrong there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rocketmq_py.errors import RocketMQError

__all__ = ["FailedAttempt", "attempt_timeout", "describe_attempts"]


@dataclass(frozen=True, slots=True)
class FailedAttempt:
    """One attempt of a send that did not store the message.

    Attributes:
        number: 1 for the first attempt.
        broker: the broker name the attempt went to.
        error: what the attempt raised.
    """

    number: int
    broker: str
    error: RocketMQError

    def __str__(self) -> str:
        return f"attempt {self.number} to {self.broker}: {self.error}"


def attempt_timeout(per_attempt: float | None, remaining: float, *, last: bool) -> float:
    """Seconds the next attempt may take.

    Args:
        per_attempt: the producer's ``attempt_timeout`` (``None``: no cap).
        remaining: seconds left of the send's deadline.
        last: no attempt may follow this one.

    Returns:
        ``remaining`` for the last attempt or without a cap, else the smaller of the two.
    """
    if last or per_attempt is None:
        return remaining
    return min(per_attempt, remaining) if remaining > 0 else remaining


def describe_attempts(failed: Sequence[FailedAttempt]) -> str:
    """Every failed attempt, in order: ``"attempt 1 to broker-b: ...; attempt 2 to broker-a: ..."``."""
    return "; ".join(map(str, failed)) if failed else "no attempt was made"
