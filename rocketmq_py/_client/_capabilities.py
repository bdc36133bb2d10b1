"""What a broker can do, by the release its replies carry: checked before a send it cannot honour.

Every reply's ``version`` header is the server's ``MQVersion`` ordinal
(:mod:`rocketmq_py.protocol._versions`); :class:`~rocketmq_py._client._api.RemotingApi` keeps the
last one per address. A message with a delivery time (``TIMER_DELIVER_MS``, ``TIMER_DELAY_SEC``,
``TIMER_DELAY_MS``) needs a 5.0+ broker: a 4.x broker stores the properties and delivers the
message at once. The Java client sends it anyway; we refuse it before anything is stored
(:class:`~rocketmq_py.errors.DeliveryTimeNotSupported`), because an early delivery cannot be
taken back and a warning after the fact would come too late. When no reply from the broker has
been seen yet, one heartbeat (the one the heartbeat loop would send) tells its release.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from rocketmq_py._client._instance import ClientInstance
from rocketmq_py.errors import DeliveryTimeNotSupported
from rocketmq_py.protocol import PropertyKey
from rocketmq_py.protocol._versions import release_name, supports_timer_messages

__all__ = ["DELIVERY_TIME_KEYS", "broker_version", "require_timer_support"]

#: The properties that ask a 5.x broker to hold a message until a time (Java ``Message``
#: ``setDeliverTimeMs`` / ``setDelayTimeSec`` / ``setDelayTimeMs``).
DELIVERY_TIME_KEYS: Final = frozenset(
    {PropertyKey.TIMER_DELIVER_MS, PropertyKey.TIMER_DELAY_SEC, PropertyKey.TIMER_DELAY_MS}
)


async def broker_version(instance: ClientInstance, address: str) -> int:
    """The ``MQVersion`` ordinal of the server at ``address``: from its last reply, else a heartbeat.

    Raises:
        RocketMQError: the heartbeat failed.
    """
    api = instance.api
    known = api.peer_versions.get(address)
    if known is None:
        await api.heartbeat(address, instance.heartbeat_data())
        known = api.peer_versions[address]
    return known


async def require_timer_support(
    instance: ClientInstance, address: str, broker_name: str, properties: Mapping[str, str]
) -> None:
    """Refuse a message with a delivery time for a broker older than 5.0 (see the module docstring).

    Raises:
        DeliveryTimeNotSupported: the message has a delivery time and the broker cannot honour it.
        RocketMQError: the broker's release could not be learnt.
    """
    key = min(DELIVERY_TIME_KEYS & properties.keys(), default=None)
    if key is None:
        return
    version = await broker_version(instance, address)
    if not supports_timer_messages(version):
        raise DeliveryTimeNotSupported(broker_name, release_name(version) or f"version {version}", key)
