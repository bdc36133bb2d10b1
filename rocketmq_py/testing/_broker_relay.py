"""Local brokers behind a :class:`~rocketmq_py.testing._relay.TcpRelay`, so that a test can cut one off.

A relayed broker listens on :data:`RELAYED_BROKER_HOST` (its ``bindAddress``) and advertises
127.0.0.1 (its ``brokerIP1``) with the same ports; the relay listens on 127.0.0.1 and forwards. So
every client, ours, the Java tools and the broker's peers alike, reaches the broker through the
relay, which :meth:`LocalCluster.block_broker <rocketmq_py.testing.LocalCluster.block_broker>` cuts.
Only 5.x brokers have a ``bindAddress``: a 4.x broker listens on every address, and no relay can
take its ports on 127.0.0.1.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Final

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._relay import TcpRelay

__all__ = ["RELAYED_BROKER_HOST", "relay_problem", "start_broker_relay"]

#: Where a relayed broker listens. Linux routes all of 127.0.0.0/8 to the loopback interface; macOS
#: needs an alias for it.
RELAYED_BROKER_HOST: Final = "127.0.0.2"


def relay_problem(version: str, *, detached: bool, broker_config: Mapping[str, str]) -> str | None:
    """Why a cluster of this shape cannot have its brokers relayed, or ``None`` when it can."""
    if version.startswith("4."):
        return f"relay=True needs a 5.x broker: a {version} broker listens on every address (no bindAddress)"
    if detached:
        return "relay=True cannot be detached: the relay lives in the process that started the cluster"
    if "brokerIP1" in broker_config:
        return "relay=True takes brokerIP1 (127.0.0.1, the relay's address): leave it out of broker_config"
    return None


def start_broker_relay(name: str, broker_ports: Mapping[str, int]) -> TcpRelay:
    """A started relay with a route per broker node: its ``listenPort`` and VIP channel (``- 2``).

    Args:
        name: the relay thread's name.
        broker_ports: each node's ``listenPort``.

    Raises:
        ClusterError: :data:`RELAYED_BROKER_HOST` is not usable here, or a port is taken.
    """
    try:
        with socket.socket() as probe:
            probe.bind((RELAYED_BROKER_HOST, 0))
    except OSError as exc:
        raise ClusterError(
            f"relay=True needs the loopback address {RELAYED_BROKER_HOST} ({exc}); Linux has it, "
            f"macOS needs `sudo ifconfig lo0 alias {RELAYED_BROKER_HOST}`"
        ) from exc
    relay = TcpRelay(name).start()
    try:
        for node, port in broker_ports.items():
            for client_port in (port - 2, port):
                relay.forward(node, ("127.0.0.1", client_port), (RELAYED_BROKER_HOST, client_port))
    except BaseException:
        relay.close()
        raise
    return relay
