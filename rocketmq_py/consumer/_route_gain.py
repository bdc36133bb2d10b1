"""A member rebalances at once when a subscribed topic's route names a broker its last route did not.

A broker that was killed leaves its topics' routes and comes back when it registers again; a
broker added to the cluster appears the same way. Java's member takes the broker's queues at its
next rebalance round (``RebalanceService``, every 20 s), and the restarted broker, which lost every
registration, only asks the group to rebalance once some heartbeat reaches it (its next one, up
to 30 s). Ours starts a round as soon as the route shows the broker: with the route service's
recheck of a lost broker (every 2 s) the queues of a restarted broker are read again seconds after
it serves. A broker that leaves a route starts no round: the queues stay owned, and if the broker
is back before the next round, consumption goes on from the member's own offsets (a round would
forget them, and a killed broker may have lost the last seconds of its committed ones).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from rocketmq_py._client._route import serving_brokers
from rocketmq_py.protocol import TopicRouteData

__all__ = ["RouteGainWatch"]


class RouteGainWatch:
    """A route listener (``RouteService.add_listener``) that calls ``on_gain(topic, brokers)`` when
    a topic in ``topics()`` has a route with queues on ``brokers`` that its previous route (as this
    watch saw it) had none on. The first route seen of a topic is only remembered."""

    def __init__(
        self, topics: Callable[[], Collection[str]], on_gain: Callable[[str, frozenset[str]], None]
    ) -> None:
        self._topics = topics
        self._on_gain = on_gain
        self._serving: dict[str, frozenset[str]] = {}

    def __call__(self, topic: str, route: TopicRouteData) -> None:
        serving = serving_brokers(route)
        before = self._serving.get(topic)
        self._serving[topic] = serving
        if before is None or topic not in self._topics():
            return
        gained = serving - before
        if gained:
            self._on_gain(topic, gained)
