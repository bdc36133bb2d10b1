"""Integration tests run against a real Apache RocketMQ cluster (two brokers) started once per run
(once for all of a run's pytest-xdist workers, by its controller: integration/_session.py).

When ``CI`` is set or ``RMQ_REQUIRE_BROKER=1``, a cluster that cannot start fails the run; elsewhere
those tests are skipped with the reason. ``ROCKETMQ_NAMESRV=host:port`` uses an external cluster.
The Spark tests are likewise skipped without the ``spark`` extra, and fail in CI (../conftest.py).

``RMQ_THROUGH_PROXY=1`` (``make proxy``) puts a Proxy in front of the session cluster and gives it to
every client as its NameServer; a test marked ``direct_route(reason)`` needs what a Proxy does not
serve and is skipped there with that reason (docs/proxy.md lists the same limits).
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import trio

from integration._session import (
    SessionClusterOwner,
    SharedCluster,
    shared_cluster_file,
    start_session_cluster,
    wait_for_shared,
)
from rocketmq_py._transport import ConnectionPool
from rocketmq_py.errors import ClusterError
from rocketmq_py.protocol import (
    GetRouteInfoRequestHeader,
    MessageExt,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    TopicRouteData,
    decode_body,
    decode_messages,
    from_ext_fields,
    to_ext_fields,
)
from rocketmq_py.protocol._versions import release_ordinal
from rocketmq_py.testing import Cluster, loopback_conf, worker_python
from rocketmq_py.testing._report_process import ReportingProcess

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def through_proxy() -> bool:
    """True in the run through a Proxy (``RMQ_THROUGH_PROXY=1``, ``make proxy``): the session cluster
    has a Proxy in front, and every client the tests make takes it as its NameServer."""
    return os.environ.get("RMQ_THROUGH_PROXY") == "1"


def _broker_required() -> bool:
    return bool(os.environ.get("CI")) or os.environ.get("RMQ_REQUIRE_BROKER") == "1"


#: Modules that take a minute or more on their own (`--durations`, one worker): scheduled right after
#: the Spark session group, so that none of them starts last while the other workers run out of work.
#: The Spark standalone cluster and Connect files start Spark processes of their own and are groups
#: of their own: with every Spark file on one worker, that worker took 1,190 s, the whole run 1,020 s.
LONG_MODULES = (
    "test_spark_cluster.py",
    "test_spark_connect.py",
    "test_master_slave.py",
    "test_pop.py",
    "test_producer.py",
    "test_chaos.py",
    "test_pop_modes.py",
    "test_cli_group.py",
    "test_push_orderly_cluster.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark integration items; on pytest-xdist workers, order the work units heaviest first.

    ``make test`` runs the suite on several pytest-xdist workers (``--dist loadgroup``): a work unit
    (../conftest.py, ``work_group``) runs whole on one worker, so a module's own cluster
    (module-scoped fixtures) starts once, and the modules sharing the ``spark`` session run on one
    worker, which builds the run's one session.
    The workers share one session cluster, which the pytest-xdist controller starts
    (integration/_session.py); module clusters take ports from each worker's own slice
    (:func:`rocketmq_py.testing._settings.port_range`). The order is the schedule: the
    Spark session group, the long modules, the other integration modules, then the fast tests/ (many short
    groups that fill the workers up at the end); pytest-xdist hands the next group to the first idle
    worker.
    """
    here = os.path.dirname(__file__)
    session_modules = {item.path for item in items if "spark" in getattr(item, "fixturenames", ())}

    def rank(item: pytest.Item) -> tuple[int, int]:
        if item.path in session_modules:
            return (0, 0)
        if not str(item.path).startswith(here):
            return (3, 0)
        if item.path.name in LONG_MODULES:
            return (1, LONG_MODULES.index(item.path.name))
        return (2, 0)

    proxied = through_proxy()
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(pytest.mark.integration)
        direct = item.get_closest_marker("direct_route")
        if proxied and direct is not None:
            item.add_marker(pytest.mark.skip(reason=f"through a Proxy: {direct.args[0]}"))
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return  # a plain run keeps the files' order: the fast tests/ first
    items.sort(key=rank)  # stable: the modules' own order within each rank


def pytest_configure(config: pytest.Config) -> None:
    """On a pytest-xdist controller, own the run's shared session cluster (integration/_session.py)."""
    xdist_controller = (
        getattr(config, "workerinput", None) is None
        and config.pluginmanager.hasplugin("xdist")
        and bool(config.getoption("numprocesses", None))
        and config.getoption("dist", "no") != "no"
    )
    if xdist_controller and SessionClusterOwner.wanted():
        config.pluginmanager.register(
            SessionClusterOwner(Path(__file__).resolve().parent, config.rootpath), "rmq-session-cluster"
        )


def _start_or_report(start: Callable[[], Cluster]) -> Cluster:
    """``start()``, or fail the test (a real broker required) or skip it with the reason."""
    try:
        return start()
    except ClusterError as exc:
        if _broker_required():
            pytest.fail(
                f"a real RocketMQ cluster is required here and could not start:\n{exc}", pytrace=False
            )
        pytest.skip(f"no RocketMQ cluster: {exc}")


@pytest.fixture(scope="session")
def session_cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """A NameServer and brokers ``broker-a`` and ``broker-b``, for the whole test run: the one the
    pytest-xdist controller started for all of its workers (integration/_session.py), or one of
    this process's own."""
    shared = shared_cluster_file(request.config)
    if shared is not None:
        yield _start_or_report(lambda: wait_for_shared(shared))
        return
    with _start_or_report(start_session_cluster) as started:
        yield started


@pytest.fixture(scope="session")
def cluster(session_cluster: Cluster) -> Cluster:
    """The session cluster; a module that pauses, kills or reconfigures brokers overrides this with
    :func:`exclusive_cluster`."""
    return session_cluster


@pytest.fixture(scope="module")
def exclusive_cluster(session_cluster: Cluster) -> Iterator[Cluster]:
    """A cluster no other worker's tests use, of the session cluster's shape: the session cluster
    itself when it is this process's own, else one started for the module. A module whose tests
    pause, kill or restart brokers, stop the NameServer or change broker settings uses it::

        @pytest.fixture(scope="module")
        def cluster(exclusive_cluster: Cluster) -> Cluster:
            return exclusive_cluster
    """
    if not isinstance(session_cluster, SharedCluster):
        yield session_cluster
        return
    with _start_or_report(start_session_cluster) as started:
        yield started


@pytest.fixture(scope="session")
def broker_version(session_cluster: Cluster) -> int:
    """The session cluster's release as the wire carries it: the ``MQVersion`` ordinal.

    Driven by ``ROCKETMQ_VERSION`` (default 5.3.3); ``test_remoting_raw`` checks that the brokers'
    replies carry it. Compare with :mod:`rocketmq_py.protocol._versions` (``V5_0_0``, ...).
    """
    return release_ordinal(session_cluster.version)


@pytest.fixture
def create_topic(cluster: Cluster) -> Callable[..., str]:
    """Create a fresh topic with N queues on every broker; returns its name. ``message_type``
    (``DELAY``, ``TRANSACTION``) types it, as a 5.x Proxy needs for such messages."""

    def create(
        queues: int = 8, *, prefix: str = "it", order: bool = False, message_type: str | None = None
    ) -> str:
        topic = f"{prefix}-{uuid.uuid4().hex[:12]}"
        cluster.create_topic(topic, queues, order=order, message_type=message_type)
        return topic

    return create


@pytest.fixture(scope="session")
def spark(spark_extra: None) -> Iterator[SparkSession]:
    """The run's one SparkSession: local[2], no UI, few shuffle partitions, the venv's Python on workers.

    Built on first use (about 10 s or more on two cores) and stopped at the end of the run. Without
    the spark extra, a test using it is skipped, or fails in CI (``spark_extra``, ../conftest.py).
    """
    python = worker_python()  # this venv (pyarrow, our packages), importing its compiled pyspark
    os.environ["PYSPARK_PYTHON"] = python
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName("rocketmq-py-tests")
    for key, value in loopback_conf(python).items():  # SPARK_LOCAL_IP and the driver on 127.0.0.1
        builder = builder.config(key, value)
    session = (
        builder.config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


CONSUMER_SCRIPT = Path(__file__).with_name("_consumer_proc.py")
SpawnProcess = Callable[..., Awaitable[Any]]


@pytest.fixture
async def spawn_process(cluster: Cluster, nursery: trio.Nursery) -> AsyncIterator[SpawnProcess]:
    """``await spawn_process(cls, *script_args, **fields)``: a ``_consumer_proc.py`` child on the cluster.

    ``cls`` is a :class:`ReportingProcess` subclass that keeps what the test checks; children still
    running at the end of the test are killed.
    """
    children: list[ReportingProcess] = []

    async def spawn(cls: type[ReportingProcess], *args: str, **fields: Any) -> ReportingProcess:
        argv = [sys.executable, str(CONSUMER_SCRIPT), "--namesrv", cluster.namesrv_addr, *args]
        child = await cls.start(argv, nursery, **fields)
        children.append(child)
        return child

    yield spawn
    for child in children:
        await child.close()


PullAll = Callable[..., Awaitable[list[MessageExt]]]


@pytest.fixture
def pull_all(cluster: Cluster) -> PullAll:
    """Read every message of a topic back with raw PULL_MESSAGE requests (no consumer group state).

    ``await pull_all(topic)`` returns the messages of every queue of every broker, in (broker,
    queue, offset) order; ``expect=N`` keeps pulling (up to ``wait`` seconds) until N are there.
    """

    async def pull(topic: str, *, expect: int | None = None, wait: float = 15.0) -> list[MessageExt]:
        deadline = trio.current_time() + wait
        async with ConnectionPool() as pool:
            while True:
                found = await _pull_once(pool, cluster, topic)
                if expect is None or len(found) >= expect or trio.current_time() > deadline:
                    return found
                await trio.sleep(0.3)

    return pull


async def _pull_once(pool: ConnectionPool, cluster: Cluster, topic: str) -> list[MessageExt]:
    route_cmd = RemotingCommand.request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        to_ext_fields(GetRouteInfoRequestHeader(topic=topic, accept_standard_json_only=True)),
    )
    reply = await pool.request(cluster.namesrv_addr, route_cmd, timeout=10)
    if reply.code != ResponseCode.SUCCESS:
        return []
    route = decode_body(TopicRouteData, reply.body)
    masters = {b.broker_name: b.broker_addrs[0] for b in route.broker_datas if 0 in b.broker_addrs}
    found: list[MessageExt] = []
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
        for queue_id in range(qd.read_queue_nums):
            offset = 0
            while True:
                header = PullMessageRequestHeader(
                    consumer_group="it-raw-reader",
                    topic=topic,
                    queue_id=queue_id,
                    queue_offset=offset,
                    max_msg_nums=32,
                    sys_flag=0x4,  # SUBSCRIPTION from this request; no commit, no suspend
                    commit_offset=0,
                    suspend_timeout_millis=0,
                    sub_version=0,
                    subscription="*",
                    expression_type="TAG",
                    broker_name=qd.broker_name,
                )
                cmd = RemotingCommand.request(RequestCode.PULL_MESSAGE, to_ext_fields(header))
                pulled = await pool.request(masters[qd.broker_name], cmd, timeout=10)
                if pulled.code != ResponseCode.SUCCESS:
                    break
                found.extend(decode_messages(pulled.body))
                offset = from_ext_fields(PullMessageResponseHeader, pulled.ext_fields).next_begin_offset
    return found
