"""NameServer endpoints as hosted RocketMQ services hand them out (Java ``NameServerAddressUtils``).

A hosted instance gives its users one address such as
``http://MQ_INST_1234_abcd.cn-hangzhou.mq-internal.aliyuncs.com:8080``. The Java client strips the
``http://`` (the remoting protocol is spoken there, not HTTP), and a client given no namespace takes
the instance id, ``MQ_INST_1234_abcd``, as its namespace (``ClientConfig.getNamespace``). An explicit
namespace wins, an empty one included: that is how a client asks for none.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["ENDPOINT_SCHEME", "namespace_of_endpoint", "strip_endpoint_scheme"]

#: The scheme a hosted endpoint may carry (only this one: Java strips nothing else).
ENDPOINT_SCHEME: Final = "http://"

# Java NameServerAddressUtils.INST_ENDPOINT_PATTERN: an optional scheme, the instance id, a dot.
_INSTANCE_ENDPOINT: Final = re.compile(r"(?:\w+://)?(MQ_INST_\w+_\w+)\..*")


def strip_endpoint_scheme(address: str) -> str:
    """``address`` without a leading ``http://`` (any other text is returned as it is)."""
    return address[len(ENDPOINT_SCHEME) :] if address.startswith(ENDPOINT_SCHEME) else address


def namespace_of_endpoint(namesrv: str | None) -> str | None:
    """The instance id a hosted endpoint names (``MQ_INST_<id>_<suffix>``), else ``None``."""
    if not namesrv:
        return None
    match = _INSTANCE_ENDPOINT.fullmatch(namesrv.strip())
    return match.group(1) if match else None
