"""Helpers of the production-shape tests (ACL, TLS, master + slave): their module clusters and read-backs.

Each shape runs its own small cluster for one test module, started here like the session cluster:
where a real broker is required (``CI``, ``RMQ_REQUIRE_BROKER=1``) a cluster that cannot start fails
the module, elsewhere it is skipped with the reason.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import trio

from rocketmq_py import LitePullConsumer, MessageExt
from rocketmq_py.errors import ClusterError
from rocketmq_py.lowlevel import MASTER_ID
from rocketmq_py.protocol import (
    CustomHeader,
    GetTopicStatsInfoRequestHeader,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    TopicStatsTable,
    decode_body,
    to_ext_fields,
)
from rocketmq_py.testing import Cluster, LocalCluster
from rocketmq_py.testing._cluster import _request, topic_route

#: Every delay level 1 s, so retries and DLQ moves take seconds (the broker default starts at 1 s, 5 s, 10 s ...).
FAST_DELAY_LEVELS = " ".join(["1s"] * 18)


def version_under_test() -> str:
    """The run's broker version (``ROCKETMQ_VERSION``, default 5.3.3), as the session cluster uses."""
    from rocketmq_py.testing import DEFAULT_VERSION

    return os.environ.get("ROCKETMQ_VERSION") or DEFAULT_VERSION


@contextmanager
def shape_cluster(brokers: int = 1, **shape: Any) -> Iterator[LocalCluster]:
    """Start a LocalCluster of ``shape`` for a module; fail or skip as the session cluster does."""
    started_at = time.monotonic()
    try:
        started = LocalCluster(brokers, **shape).start()
    except ClusterError as exc:
        if os.environ.get("CI") or os.environ.get("RMQ_REQUIRE_BROKER") == "1":
            pytest.fail(f"a {shape} cluster could not start:\n{exc}", pytrace=False)
        pytest.skip(f"no {shape} cluster: {exc}")
    print(f"{shape} cluster up in {time.monotonic() - started_at:.1f} s")
    with started:
        yield started


def new_topic(cluster: Cluster, queues: int = 4, prefix: str = "shape") -> str:
    """A fresh topic with ``queues`` queues on every master (created with mqadmin, signed / over TLS)."""
    topic = f"{prefix}-{uuid.uuid4().hex[:10]}"
    cluster.create_topic(topic, queues)
    return topic


async def read_topic(
    cluster: Cluster,
    topic: str,
    expect: int,
    *,
    wait: float = 60.0,
    until: Callable[[list[MessageExt]], bool] | None = None,
) -> list[MessageExt]:
    """Read ``topic`` from its first offsets with a LitePullConsumer of a fresh group until ``expect``
    messages came, or ``until(messages)`` holds when given (or ``wait`` seconds passed: the caller
    checks what it got)."""
    got: list[MessageExt] = []
    consumer = LitePullConsumer(
        f"shape-reader-{uuid.uuid4().hex[:8]}",
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        rebalance_interval=2,
        **cluster.client_options(),
    )
    consumer.subscribe(topic)
    async with consumer:
        with trio.move_on_after(wait):
            while not (until(got) if until is not None else len(got) >= expect):
                got.extend(await consumer.poll(timeout=1))
    return got


async def stored_per_queue(cluster: Cluster, topic: str) -> dict[tuple[str, int], int]:
    """The messages each queue of ``topic`` holds, (broker name, queue id) -> its max offset (a fresh
    LitePullConsumer's ``end_offsets``, no JVM)."""
    consumer = LitePullConsumer(f"shape-ends-{uuid.uuid4().hex[:8]}", **cluster.client_options())
    async with consumer:
        ends = await consumer.end_offsets(await consumer.fetch_message_queues(topic))
    return {(mq.broker_name, mq.queue_id): offset for mq, offset in ends.items()}


async def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:  # noqa: ASYNC109
    """Poll ``predicate`` every 0.1 s; fail the test naming ``what`` after ``timeout`` seconds."""
    with trio.move_on_after(timeout):
        while not predicate():  # noqa: ASYNC110 - the state is filled by listeners, no event to wait on
            await trio.sleep(0.1)
        return
    pytest.fail(f"{what}: not within {timeout:.0f} s")


def admin_request(
    cluster: Cluster, address: str, code: int, header: CustomHeader | None = None, *, body: bytes = b""
) -> RemotingCommand:
    """One blocking admin request to ``address``, as the kit's own admin calls make it (signed with the
    cluster's ACL account, over TLS when the cluster enforces it), with no JVM: mqadmin costs 3.5 s
    and a CPU-second per call on the test machine."""
    fields = {} if header is None else to_ext_fields(header)
    return _request(address, code, fields, 10.0, body, cluster.ssl_context, cluster.credentials)


def stored_messages(cluster: Cluster, topic: str) -> int:
    """Messages stored in ``topic``: the sum of its queues' max offsets on each master of its route
    (GET_TOPIC_STATS_INFO, what ``mqadmin topicStatus`` asks; test_admin.py checks our Admin's
    ``topic_stats`` against that tool); 0 while the topic has no route. Works for topics no client
    may read, like 4.x DLQ topics."""
    route = topic_route(cluster.admin_namesrv_addr, topic, ssl_context=cluster.ssl_context)
    if route is None:
        return 0
    header = GetTopicStatsInfoRequestHeader(topic=topic)
    total = 0
    for broker in route.broker_datas:
        address = broker.broker_addrs.get(MASTER_ID)
        if address is None:
            continue
        reply = admin_request(cluster, address, RequestCode.GET_TOPIC_STATS_INFO, header)
        if reply.code == ResponseCode.TOPIC_NOT_EXIST:
            continue  # routed, not created on that broker yet
        assert reply.code == ResponseCode.SUCCESS, (
            f"{address}: topic stats of {topic}: {reply.code} {reply.remark}"
        )
        total += sum(o.max_offset for o in decode_body(TopicStatsTable, reply.body).offset_table.values())
    return total


def wait_stored(cluster: Cluster, topic: str, at_least: int, timeout: float = 15.0) -> int:
    """:func:`stored_messages` once it shows ``at_least`` (or at ``timeout``): a send is answered when
    its message is in the commit log, and the broker's dispatch thread moves it into its consume queue,
    where the queue's max offset counts it, moments later (``ReputMessageService``, a 1 ms poll, 20 ms
    with ``make test``'s timer slack)."""
    deadline = time.monotonic() + timeout
    while (found := stored_messages(cluster, topic)) < at_least and time.monotonic() < deadline:
        time.sleep(0.05)
    return found
