"""Settings for every fast test, and the fake two-broker cluster of the bulk-send tests.

``bulk_cluster`` routes topic ``SinkTopic`` (and ``OtherTopic``) to fake brokers ``broker-a`` and
``broker-b`` with four queues each; ``bulk_cluster.producer()`` builds a producer pointed at its fake
NameServer (no JVM).
"""

from __future__ import annotations

import importlib.util
import socket
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import settings

from rocketmq_py.producer._producer import Producer
from rocketmq_py.protocol import (
    BrokerData,
    MessageExt,
    QueueData,
    RemotingCommand,
    RequestCode,
    TopicRouteData,
)
from rocketmq_py.testing._fake_broker import FakeBroker

# No per-example deadline: hypothesis's default (200 ms) is a timed assertion, and `make test` runs
# these tests while the session's brokers share the two cores; test_headers.py::test_round_trip
# failed on it under that load. The examples' content is what is checked, not their speed.
settings.register_profile("rocketmq-py", deadline=None)
settings.load_profile("rocketmq-py")


QUEUES = 4


def _spark_batches(schema: Any, rows: list[tuple[Any, ...]], per_batch: int = 2) -> Iterator[Any]:
    """``rows`` (tuples in the order of the Spark ``schema``) as the Arrow record batches Spark hands
    an Arrow writer (``per_batch`` rows each, and an empty one first, as Spark may send)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow = to_arrow_schema(schema)
    yield pa.RecordBatch.from_pylist([], schema=arrow)
    for start in range(0, len(rows), per_batch):
        chunk = rows[start : start + per_batch]
        yield pa.RecordBatch.from_pylist(
            [dict(zip(arrow.names, row, strict=True)) for row in chunk], schema=arrow
        )


BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` imported as a module (a script next to the helpers it imports)."""
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", BENCHMARKS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


@pytest.fixture(scope="session")
def load_benchmark() -> Callable[[str], ModuleType]:
    """``load_benchmark(name)``: a benchmark script imported as a module, for its pure parts."""
    return _load_benchmark


@pytest.fixture
def spark_batches() -> Callable[..., Iterator[Any]]:
    """``spark_batches(schema, rows)``: rows as the Arrow batches Spark hands the sink's writers."""
    return _spark_batches


@pytest.fixture(autouse=True)
def _close_spark_executor_clients() -> Iterator[None]:
    """The Spark connector's executor clients a test opened (its reads and writes run without Spark,
    as a worker's tasks do) are closed after it, as an idle executor's are after their timeout."""
    yield
    executor = sys.modules.get("spark_connector._executor")
    if executor is not None:
        executor.CLIENTS.close_idle()


@dataclass
class BulkCluster:
    namesrv: FakeBroker
    a: FakeBroker
    b: FakeBroker
    topics: tuple[str, ...] = ("SinkTopic", "OtherTopic")

    def producer(self, **options: Any) -> Producer:
        return Producer("bulk-test", namesrv=self.namesrv.address, **options)

    def sends(self) -> list[RemotingCommand]:
        """Every send request (single and batch) the two brokers received."""
        codes = (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE)
        return [cmd for fb in (self.a, self.b) for cmd in fb.requests() if cmd.code in codes]

    def stored(self, topic: str) -> dict[tuple[str, int], list[MessageExt]]:
        """(broker, queue id) -> what the queue holds, for every queue of ``topic``."""
        return {(fb.broker_name, q): fb.messages(topic, q) for fb in (self.a, self.b) for q in range(QUEUES)}


@pytest.fixture
async def bulk_cluster() -> AsyncIterator[BulkCluster]:
    async with (
        FakeBroker(broker_name="namesrv") as namesrv,
        FakeBroker(broker_name="broker-a") as a,
        FakeBroker(broker_name="broker-b") as b,
    ):
        cluster = BulkCluster(namesrv, a, b)
        route = TopicRouteData(
            queue_datas=tuple(
                QueueData(broker_name=fb.broker_name, read_queue_nums=QUEUES, write_queue_nums=QUEUES, perm=6)
                for fb in (a, b)
            ),
            broker_datas=tuple(
                BrokerData(cluster="DefaultCluster", broker_name=fb.broker_name, broker_addrs={0: fb.address})
                for fb in (a, b)
            ),
        )
        for topic in cluster.topics:
            for fb in (a, b):
                fb.add_topic(topic, queues=QUEUES)
            namesrv.set_route(topic, route)
        yield cluster


@pytest.fixture
def refused_address() -> Iterator[str]:
    """``127.0.0.1:<port>`` where connecting is refused at once: the port is bound but not listening
    (held for the test, so nothing else takes it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        host, port = sock.getsockname()
        yield f"{host}:{port}"
