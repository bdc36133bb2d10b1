"""Settings of local test brokers: broker.conf entries, properties text, free port blocks."""

from __future__ import annotations

import os
import random
import re
import socket
from collections.abc import Mapping, Sequence
from pathlib import PurePath

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._cluster import CLUSTER_NAME

__all__ = [
    "REGISTER_PERIOD_MS",
    "broker_config",
    "claim_shared_ports",
    "pick_port_block",
    "port_range",
    "render_properties",
]

#: ``registerNameServerPeriod`` of test brokers (Java: 30 s; brokers clamp it to 10-60 s). A
#: restarted NameServer knows no broker until each registers again, so this bounds that gap.
REGISTER_PERIOD_MS = 10_000
#: ``timerFlushIntervalMs`` of test brokers (Java: 1 s); see ``_BROKER_DEFAULTS``.
TIMER_FLUSH_INTERVAL_MS = 30_000
# Shrunken store files: the defaults pre-allocate 1 GiB of commit log and 100 MiB of timer log.
_BROKER_DEFAULTS: dict[str, str] = {
    "mappedFileSizeCommitLog": str(64 * 1024 * 1024),
    "mappedFileSizeConsumeQueue": str(300_000 * 20 // 10),
    "mappedFileSizeConsumeQueueExt": str(4 * 1024 * 1024),
    "mappedFileSizeTimerLog": str(8 * 1024 * 1024),
    "diskMaxUsedSpaceRatio": "95",
    "flushDiskType": "ASYNC_FLUSH",
    "autoCreateTopicEnable": "true",
    "autoCreateSubscriptionGroup": "true",
    "enablePropertyFilter": "true",
    # RMQ_SYS_TRACE_TOPIC exists from the start, so message traces (ours, Java's) have a place.
    "traceTopicEnable": "true",
    # A loaded 2-core CI box stalls for a moment now and then; Java's 200 ms default makes the broker
    # answer SYSTEM_BUSY to sends that would have succeeded a little later.
    "waitTimeMillsInSendQueue": "1000",
    # Transaction check-back within seconds instead of a minute (defaults: 6 s timeout, 30 s
    # interval), so tests of the check callback stay short.
    "transactionTimeOut": "2000",
    "transactionCheckInterval": "3000",
    "registerNameServerPeriod": str(REGISTER_PERIOD_MS),
    # 5.x's timer store writes its whole wheel (7 days of 1 s slots, 19 MB) back to its file every
    # timerFlushIntervalMs, comparing it byte by byte (TimerWheel.flush): at Java's 1 s an idle broker
    # spent a quarter of a core on it (33% of a core in all, 9% with these three). The wheel on disk
    # only matters to a broker restarted with timer messages pending; three timer threads of each kind
    # (Java's default) poll where one will do for a test's load.
    "timerFlushIntervalMs": str(TIMER_FLUSH_INTERVAL_MS),
    "timerGetMessageThreadNum": "1",
    "timerPutMessageThreadNum": "1",
}
_PORT_RANGE = (12000, 30000)  # below Linux's ephemeral range, so connect() does not take them
#: The top of the range: the cluster one process starts for all of its pytest-xdist workers to share
#: (integration/conftest.py) takes its ports from here, where the workers' own clusters never pick.
_SHARED_PORTS = (28000, 30000)
_shared_owner = False


def claim_shared_ports() -> None:
    """From now on this process picks cluster ports from the part kept for a cluster its
    pytest-xdist workers share (:func:`port_range`)."""
    global _shared_owner
    _shared_owner = True


def port_range(environ: Mapping[str, str] | None = None) -> tuple[int, int]:
    """Where this process picks cluster ports: a slice of its own under pytest-xdist.

    A port is checked free when picked but bound only when the JVM starts, seconds later, so two
    processes starting clusters at once could pick the same block. pytest-xdist workers
    (``PYTEST_XDIST_WORKER=gw<N>`` of ``PYTEST_XDIST_WORKER_COUNT``) therefore each take a disjoint
    slice of the range below the part kept for the cluster they share, which the process that
    starts it takes (:func:`claim_shared_ports`); any other process takes all of the range.
    """
    if _shared_owner:
        return _SHARED_PORTS
    env = os.environ if environ is None else environ
    found = re.fullmatch(r"gw(\d+)", env.get("PYTEST_XDIST_WORKER", ""))
    if found is None:
        return _PORT_RANGE
    count = max(1, int(env.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0))
    low, high = _PORT_RANGE[0], _SHARED_PORTS[0]
    index = int(found.group(1)) % count
    width = (high - low) // count
    return low + index * width, low + (index + 1) * width


def _port_free(port: int) -> bool:
    for host in ("127.0.0.1", "0.0.0.0"):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                return False
    return True


def pick_port_block(offsets: Sequence[int], taken: set[int], rng: random.Random | None = None) -> int:
    """A base port such that ``base + o`` is free (and not in ``taken``) for every offset."""
    rng = rng or random.Random()
    for _ in range(500):
        base = rng.randrange(*port_range())
        ports = [base + o for o in offsets]
        if all(p not in taken and _port_free(p) for p in ports):
            taken.update(ports)
            return base
    raise ClusterError("no free block of loopback ports found")


def render_properties(values: Mapping[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in values.items())


def broker_config(
    name: str,
    *,
    namesrv: str,
    port: int,
    store: PurePath,
    extra: Mapping[str, str] | None = None,
    broker_id: int = 0,
) -> dict[str, str]:
    """The broker.conf of one broker listening on 127.0.0.1:``port``: a master, or (``broker_id`` > 0)
    a slave of the master of the same ``name``, which it finds through the NameServer."""
    conf = {
        "brokerClusterName": CLUSTER_NAME,
        "brokerName": name,
        "brokerId": str(broker_id),
        "brokerRole": "SLAVE" if broker_id else "ASYNC_MASTER",
        "brokerIP1": "127.0.0.1",
        "namesrvAddr": namesrv,
        "listenPort": str(port),
        "haListenPort": str(port + 1),
        "storePathRootDir": str(store),
        "storePathCommitLog": str(store / "commitlog"),
        **_BROKER_DEFAULTS,
    }
    conf.update(extra or {})
    return conf
