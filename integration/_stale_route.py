"""Put the NameServer in the state a broker's registration race leaves: a stale topic, current version.

A 5.x broker's periodic registration can copy its topic table before an ``updateTopic`` and read its
data version after it. The NameServer then stores the old queue count with the new version, and drops
the update's own registration, and every later periodic one, as "same version". Nothing mends it until
the broker's version moves again. The race needs a millisecond-wide window (CI hit it once, on
``test_queue_change_listener_sees_the_topic_grow``: ``shows 7 queues after 30 s, not 10``); this
module makes the same state on purpose by registering for the broker (REGISTER_BROKER, code 103):

1. once with the stale queue count and another version, so the NameServer takes the queue count;
2. once more with the broker's own version (QUERY_DATA_VERSION, code 322), which the NameServer
   then stores: the broker's next registrations carry that version and change nothing.

The NameServer ties a registration to its connection and unregisters the broker when that connection
closes, so the connection stays open until the broker has registered again itself (seen as the
``__ZONE_NAME`` mark of our registrations leaving the route): then closing it changes nothing.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.protocol._fastjson import parse_fastjson
from rocketmq_py.protocol._frame import FrameBuffer
from rocketmq_py.testing import Cluster, topic_route

REGISTER_BROKER = 103
QUERY_DATA_VERSION = 322
ZONE_MARK = "rmqpy-stale-route"


class StaleRegistrar:
    """Registers for one broker of ``cluster`` over one open NameServer connection."""

    def __init__(self, cluster: Cluster, sock: socket.socket, broker_name: str) -> None:
        self.cluster = cluster
        self.sock = sock
        self.broker_name = broker_name
        self.broker = next(b for b in cluster.brokers if b.name == broker_name)
        self.buf = FrameBuffer()

    def _ask(self, code: int, fields: dict[str, str], body: bytes = b"") -> RemotingCommand:
        self.sock.sendall(RemotingCommand.request(code, fields, body).encode())
        while True:
            chunk = self.sock.recv(65536)
            assert chunk, f"the NameServer closed the connection before answering code {code}"
            for reply in self.buf.feed(chunk):
                if reply.is_response:
                    assert reply.code == 0, (
                        f"code {code}: the NameServer answered {reply.code} {reply.remark}"
                    )
                    return reply

    def _fields(self) -> dict[str, str]:
        return {
            "brokerName": self.broker_name,
            "brokerAddr": self.broker.address,
            "clusterName": self.cluster.cluster_name,
            "brokerId": "0",
        }

    def data_version(self) -> dict[str, Any]:
        """The version the NameServer holds for the broker (the broker's own, once it registered)."""
        version = parse_fastjson(bytes(self._ask(QUERY_DATA_VERSION, self._fields()).body))
        assert isinstance(version, dict), version
        return version

    def register(self, topic: str, queues: int, version: dict[str, Any]) -> None:
        """Register the broker with only ``topic`` (``queues`` read and write) at ``version``."""
        config = {
            "topicName": topic,
            "readQueueNums": queues,
            "writeQueueNums": queues,
            "perm": 6,
            "topicFilterType": "SINGLE_TAG",
            "topicSysFlag": 0,
            "order": False,
            "attributes": {},
        }
        body = {
            "topicConfigSerializeWrapper": {"topicConfigTable": {topic: config}, "dataVersion": version},
            "filterServerList": [],
        }
        fields = {
            **self._fields(),
            "haServerAddr": self.broker.address,
            "compressed": "false",
            "bodyCrc32": "0",
            "__ZONE_NAME": ZONE_MARK,
        }
        self._ask(REGISTER_BROKER, fields, json.dumps(body).encode())

    def leave_stale(self, topic: str, queues: int) -> None:
        """Leave ``queues`` for ``topic`` on the broker in the NameServer, with the broker's own version."""
        version = self.data_version()
        self.register(topic, queues, {**version, "counter": int(version["counter"]) + 1_000_000})
        self.register(topic, queues, version)

    def marked(self, topic: str) -> bool:
        """Whether the route still shows our registration's zone mark (the broker has not registered since)."""
        route = topic_route(self.cluster.namesrv_addr, topic)
        assert route is not None
        return any(b.zone_name == ZONE_MARK for b in route.broker_datas if b.broker_name == self.broker_name)

    def wait_for_the_broker(self, topic: str, timeout: float) -> None:
        """Wait until the broker has registered itself again (our mark gone from the route)."""
        deadline = time.monotonic() + timeout
        while self.marked(topic):
            assert time.monotonic() < deadline, f"{self.broker_name} did not register within {timeout} s"
            time.sleep(0.2)


@contextmanager
def stale_registrar(cluster: Cluster, broker_name: str, *, topic: str) -> Iterator[StaleRegistrar]:
    """A :class:`StaleRegistrar`; at the end, waits for the broker's own registration, then closes."""
    host, port = cluster.namesrv_addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        registrar = StaleRegistrar(cluster, sock, broker_name)
        try:
            yield registrar
        finally:
            registrar.wait_for_the_broker(topic, timeout=60)
