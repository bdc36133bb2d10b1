"""Steady traffic for tests that change a consumer group under load: a producer task to poll on.

``SteadyProducer`` sends ``m-<n>`` bodies at about ``rate`` messages per second until stopped and
keeps the acknowledged ones in :attr:`~SteadyProducer.sent`; :meth:`~SteadyProducer.wait_sent`
lets a test wait for an amount of traffic (rather than for a fixed time, which a slow machine fills
with less).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import trio

from rocketmq_py.errors import ClusterError
from rocketmq_py.producer._producer import Producer
from rocketmq_py.protocol import Message

__all__ = ["SteadyProducer", "wait_grown"]

#: Seconds between two looks at a growing list.
_POLL = 0.05


async def wait_grown(items: list[str], count: int, *, timeout: float = 60.0) -> None:  # noqa: ASYNC109
    """Wait until ``items`` holds at least ``count`` entries (filled by another task).

    Raises:
        ClusterError: not within ``timeout`` seconds (the traffic stopped).
    """
    with trio.move_on_after(timeout):
        while len(items) < count:  # noqa: ASYNC110 - another task appends, there is no event
            await trio.sleep(_POLL)
        return
    raise ClusterError(f"only {len(items)} of {count} messages were sent within {timeout:g} s")


@dataclass
class SteadyProducer:
    """Sends ``m-<n>`` bodies at about ``rate`` messages per second until :meth:`stop`."""

    namesrv: str
    topic: str
    rate: float = 100.0
    group: str = "it-steady-producer"
    #: The bodies the brokers acknowledged, in send order.
    sent: list[str] = field(default_factory=list)
    _stop: trio.Event = field(default_factory=trio.Event)
    _done: trio.Event = field(default_factory=trio.Event)

    async def run(self) -> None:
        """Produce until stopped (start it in a nursery); a failed send ends the run with its error."""
        try:
            async with Producer(self.group, namesrv=self.namesrv) as producer:
                while not self._stop.is_set():
                    body = f"m-{len(self.sent)}"
                    await producer.send(Message(self.topic, body.encode()))
                    self.sent.append(body)
                    await trio.sleep(1 / self.rate)
        finally:
            self._done.set()

    async def wait_sent(self, more: int, *, timeout: float = 60.0) -> None:  # noqa: ASYNC109
        """Wait until ``more`` further messages were acknowledged."""
        await wait_grown(self.sent, len(self.sent) + more, timeout=timeout)

    async def stop(self) -> None:
        """Stop producing; returns once the last send finished."""
        self._stop.set()
        await self._done.wait()
