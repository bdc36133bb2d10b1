"""Waiting until a NameServer lists every running broker, and asking a late one to register now.

A broker registers at boot and then on its own timer; it skips a registration while its client has not
yet seen the NameServer reachable (seen with TLS at boot, and after a NameServer restart). Rather than
wait for the timer, :func:`await_registration` asks a broker still missing after a grace period to
register at once: a change of its ``brokerPermission`` makes 4.x and 5.x brokers register with every
NameServer, so the broker's own value is written back unchanged.
"""

from __future__ import annotations

import contextlib
import logging
import re
import ssl
import time
from collections.abc import Callable

from rocketmq_py.errors import RocketMQError
from rocketmq_py.testing._acl import Credentials
from rocketmq_py.testing._cluster import BrokerInfo, _call

__all__ = ["NAMESRV_REREGISTER_TIMEOUT", "ask_to_register", "await_registration"]

#: Seconds :func:`await_registration` waits for every running broker to be listed.
NAMESRV_REREGISTER_TIMEOUT = 60.0
_PERMISSION = re.compile(r"^brokerPermission=(\d+)$", re.MULTILINE)

log = logging.getLogger(__name__)


def await_registration(
    missing: Callable[[], list[BrokerInfo]],
    ask: Callable[[BrokerInfo], None],
    give_up: Callable[[], None],
    *,
    namesrv: str,
    ask_after: float,
) -> None:
    """Poll ``missing()`` until it is empty; ``ask`` each missing broker to register once
    ``ask_after`` seconds have passed, then every 3 s; call ``give_up`` (which raises, naming the
    missing brokers) after :data:`NAMESRV_REREGISTER_TIMEOUT`."""
    deadline = time.monotonic() + NAMESRV_REREGISTER_TIMEOUT
    ask_at = time.monotonic() + ask_after
    absent = missing()
    while absent:
        now = time.monotonic()
        if now > deadline:
            give_up()
        if now >= ask_at:
            log.info(
                "brokers %s not registered with %s after %.0f s; asking them to register",
                ", ".join(f"{b.name}/{b.broker_id}" for b in absent),
                namesrv,
                ask_after,
            )
            for broker in absent:
                ask(broker)
            ask_at = now + 3.0
        time.sleep(0.2)
        absent = missing()


def ask_to_register(
    broker: BrokerInfo, *, ssl_context: ssl.SSLContext | None, credentials: Credentials | None
) -> None:
    """Make ``broker`` register with its NameServers now; errors are left for the next try."""
    from rocketmq_py.protocol._codes import RequestCode

    with contextlib.suppress(OSError, RocketMQError):
        code, body = _call(
            broker.address, RequestCode.GET_BROKER_CONFIG, ssl_context=ssl_context, credentials=credentials
        )
        found = _PERMISSION.search(body.decode("utf-8", "replace")) if code == 0 else None
        if found is not None:
            update = f"brokerPermission={found.group(1)}\n".encode()
            _call(
                broker.address,
                RequestCode.UPDATE_BROKER_CONFIG,
                body=update,
                timeout=10.0,
                ssl_context=ssl_context,
                credentials=credentials,
            )
