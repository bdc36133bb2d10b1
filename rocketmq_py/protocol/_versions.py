"""Server release numbers as the wire carries them: ``MQVersion.Version`` ordinals.

Every remoting command has a ``version`` header field. A Java process fills it with the ordinal of
its ``MQVersion.CURRENT_VERSION`` (``BrokerStartup`` and ``NamesrvStartup`` set the system property
``rocketmq.remoting.version`` and every response is stamped with it), so any reply tells which
release answered. The enum is irregular before 4.0.0; from ``V4_0_0_SNAPSHOT`` (212) to ``V5_9_9``
(611) each release ``M.m.p`` is a ``_SNAPSHOT`` entry followed by the release entry, so::

    ordinal(M.m.p) = 213 + 2 * ((M - 4) * 100 + m * 10 + p)      4.0.0 <= M.m.p <= 5.9.9

e.g. 4.9.7 = 407, 5.0.0 = 413, 5.3.3 = 479, 5.5.0 = 513. Ordinals outside that range (3.x, or
``HIGHER_VERSION`` = 612 from a newer server) have no release name here.

What changes with the release, and which client code asks:

* :data:`V5_0_0`: timer messages (``TIMER_DELIVER_MS`` / ``TIMER_DELAY_SEC`` / ``TIMER_DELAY_MS``).
  Older brokers store the properties and deliver the message at once.
* :data:`V5_1_1`: SEARCH_OFFSET_BY_TIMESTAMP returns the first message stored at or after the
  timestamp (``BoundaryType.LOWER``; the request field exists from 5.1.4, LOWER is the default).
  Older brokers return the message *nearest* to the timestamp, which may be the one before it,
  or any of several sharing the timestamp.
* :data:`V5_1_3`: BATCH_ACK_MESSAGE acknowledges many popped messages in one request. Older
  brokers answer REQUEST_CODE_NOT_SUPPORTED; a POP consumer sends them ACK_MESSAGE per message.
* :data:`V5_3_2`: RECALL_MESSAGE takes a timer message back before its delivery time (the send's
  reply carries a recall handle). Older brokers answer REQUEST_CODE_NOT_SUPPORTED.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "V4_9_7",
    "V5_0_0",
    "V5_1_1",
    "V5_1_3",
    "V5_3_2",
    "V5_3_3",
    "V5_5_0",
    "release_name",
    "release_ordinal",
    "supports_batch_ack",
    "supports_boundary_search",
    "supports_recall",
    "supports_timer_messages",
]

_FIRST: Final = 213  # V4_0_0
_LAST: Final = 611  # V5_9_9
_RELEASE = re.compile(r"(\d)\.(\d)\.(\d)")


def release_ordinal(release: str) -> int:
    """The ``MQVersion.Version`` ordinal of a release ``"M.m.p"`` between 4.0.0 and 5.9.9.

    Raises:
        ValueError: the text is not such a release.
    """
    match = _RELEASE.fullmatch(release.strip())
    if match is None or match.group(1) not in "45":
        raise ValueError(f"not a RocketMQ release between 4.0.0 and 5.9.9: {release!r}")
    major, minor, patch = (int(g) for g in match.groups())
    return _FIRST + 2 * ((major - 4) * 100 + minor * 10 + patch)


def release_name(ordinal: int) -> str | None:
    """``"4.9.7"`` for 407, ``"4.9.7-SNAPSHOT"`` for 406; ``None`` outside 4.0.0-SNAPSHOT .. 5.9.9."""
    if not _FIRST - 1 <= ordinal <= _LAST:
        return None
    index, snapshot = divmod(ordinal - _FIRST + 1, 2)
    major, rest = divmod(index, 100)
    name = f"{major + 4}.{rest // 10}.{rest % 10}"
    return name if snapshot else f"{name}-SNAPSHOT"


#: ``MQVersion.Version.V4_9_7``: the newest 4.x release on Maven Central.
V4_9_7: Final = release_ordinal("4.9.7")
#: ``MQVersion.Version.V5_0_0``: the first release with timer messages.
V5_0_0: Final = release_ordinal("5.0.0")
#: ``MQVersion.Version.V5_1_1``: the first release whose timestamp search honours the boundary.
V5_1_1: Final = release_ordinal("5.1.1")
#: ``MQVersion.Version.V5_1_3``: the first release that takes BATCH_ACK_MESSAGE.
V5_1_3: Final = release_ordinal("5.1.3")
#: ``MQVersion.Version.V5_3_2``: the first release that recalls timer messages (RECALL_MESSAGE).
V5_3_2: Final = release_ordinal("5.3.2")
#: ``MQVersion.Version.V5_3_3``: the release our client announces (``DEFAULT_VERSION``).
V5_3_3: Final = release_ordinal("5.3.3")
#: ``MQVersion.Version.V5_5_0``: the newest 5.x broker on Maven Central.
V5_5_0: Final = release_ordinal("5.5.0")


def supports_timer_messages(ordinal: int) -> bool:
    """Whether a server of this version delays a message carrying a delivery time (5.0.0 and later)."""
    return ordinal >= V5_0_0


def supports_boundary_search(ordinal: int) -> bool:
    """Whether SEARCH_OFFSET_BY_TIMESTAMP returns the first message at or after the time (5.1.1+)."""
    return ordinal >= V5_1_1


def supports_batch_ack(ordinal: int) -> bool:
    """Whether a server of this version takes BATCH_ACK_MESSAGE (5.1.3 and later)."""
    return ordinal >= V5_1_3


def supports_recall(ordinal: int) -> bool:
    """Whether a server of this version recalls timer messages (RECALL_MESSAGE, 5.3.2 and later)."""
    return ordinal >= V5_3_2
