"""The blocking Producer against the real two-broker cluster, read back by mqadmin and a raw pull.

The tests are plain functions, as blocking code would be; the raw pull (the async ``pull_all``
fixture of conftest.py) runs in its own ``trio.run``.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Awaitable, Callable

import pytest
import trio

from rocketmq_py import MessageExt, RouteNotFound, StateError
from rocketmq_py.sync import Message, Producer, SendResult, SendStatus, select_by_hash
from rocketmq_py.testing import Cluster

PullAll = Callable[..., Awaitable[list[MessageExt]]]  # the `pull_all` fixture of conftest.py


def _pull(pull_all: PullAll, topic: str, expect: int) -> list[MessageExt]:
    return trio.run(functools.partial(pull_all, topic, expect=expect))


def _threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("rocketmq-py")]


def test_blocking_sends_from_several_threads_are_stored(
    cluster: Cluster, create_topic: Callable[..., str], pull_all: PullAll
) -> None:
    topic = create_topic(4)
    results: list[SendResult] = []
    with Producer("it-sync-producer", namesrv=cluster.namesrv_addr) as producer:

        def work(thread: int) -> None:
            for i in range(5):
                message = Message(
                    topic,
                    f"sync {thread}-{i} ✓".encode(),
                    tags=f"T{thread}",
                    keys=[f"k{thread}-{i}", "sync"],
                    properties={"n": str(i)},
                )
                results.append(producer.send(message))

        workers = [threading.Thread(target=work, args=(t,)) for t in range(3)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
        stats = producer.statistics()
    assert _threads() == []
    assert len(results) == 15
    assert all(r.status is SendStatus.SEND_OK for r in results)
    assert {r.queue.broker_name for r in results} == {"broker-a", "broker-b"}
    assert (stats.sent, stats.failed) == (15, 0)

    pulled = _pull(pull_all, topic, 15)
    assert len(pulled) == 15
    seen = {(m.body.decode(), m.tags, m.keys, m.properties["n"]) for m in pulled}
    assert seen == {
        (f"sync {t}-{i} ✓", f"T{t}", (f"k{t}-{i}", "sync"), str(i)) for t in range(3) for i in range(5)
    }
    assert {m.properties["UNIQ_KEY"] for m in pulled} == {r.msg_id for r in results}

    # and the official tool finds one by its id, with body, tags and keys
    one = next(m for m in pulled if m.body.decode() == "sync 1-3 ✓")
    shown = cluster.mqadmin("queryMsgById", "-i", one.properties["UNIQ_KEY"], "-t", topic, "-f", "UTF-8")
    output = shown.check().output
    assert re.search(r"Message Body:\s+sync 1-3 ✓", output), output
    assert re.search(r"Tags:\s+\[T1\]", output), output
    assert re.search(r"Keys:\s+\[k1-3 sync\]", output), output


def test_batch_oneway_and_ordered_sends(
    cluster: Cluster, create_topic: Callable[..., str], pull_all: PullAll
) -> None:
    topic = create_topic(4)
    producer = Producer("it-sync-producer", namesrv=cluster.namesrv_addr).start()
    try:
        batch = producer.send_batch([Message(topic, f"batch {i}".encode()) for i in range(4)])
        ordered = [
            producer.send(Message(topic, f"order {i}".encode()), selector=select_by_hash, arg=42)
            for i in range(3)
        ]
        producer.send_oneway(Message(topic, b"oneway"))
    finally:
        producer.shutdown()
    assert len(batch.msg_id.split(",")) == 4
    assert len({r.queue for r in ordered}) == 1
    assert [r.queue_offset for r in ordered] == sorted(r.queue_offset for r in ordered)

    pulled = _pull(pull_all, topic, 8)
    bodies = sorted(m.body for m in pulled)
    assert bodies == sorted(
        [*(f"batch {i}".encode() for i in range(4)), *(f"order {i}".encode() for i in range(3)), b"oneway"]
    )
    in_queue = [
        m.body for m in pulled if m.queue_id == ordered[0].queue.queue_id and m.body.startswith(b"order")
    ]
    assert in_queue == [b"order 0", b"order 1", b"order 2"]


def test_errors_keep_their_types_and_shutdown_is_final(cluster: Cluster) -> None:
    producer = Producer("it-sync-producer", namesrv=cluster.namesrv_addr, auto_create_topic=False)
    with producer, pytest.raises(RouteNotFound, match="no-such-topic-for-sync"):
        producer.send(Message("no-such-topic-for-sync", b"x"))
    with pytest.raises(StateError, match="closed"):
        producer.send(Message("no-such-topic-for-sync", b"x"))
    assert _threads() == []


def test_blocking_transaction_producer_commits_and_rolls_back(
    cluster: Cluster, create_topic: Callable[..., str], pull_all: PullAll
) -> None:
    from rocketmq_py import LocalTransactionState
    from rocketmq_py.sync import TransactionProducer

    topic = create_topic(1)

    def execute(message: Message, arg: object) -> LocalTransactionState:
        return (
            LocalTransactionState.COMMIT_MESSAGE if arg == "yes" else LocalTransactionState.ROLLBACK_MESSAGE
        )

    def check(message: MessageExt) -> LocalTransactionState:
        return LocalTransactionState.ROLLBACK_MESSAGE

    with TransactionProducer(
        "it-sync-tx",
        namesrv=cluster.namesrv_addr,
        execute_local_transaction=execute,
        check_local_transaction=check,
    ) as producer:
        kept = producer.send_message_in_transaction(Message(topic, b"kept"), "yes")
        dropped = producer.send_message_in_transaction(Message(topic, b"dropped"), "no")
    assert kept.local_transaction_state is LocalTransactionState.COMMIT_MESSAGE
    assert dropped.local_transaction_state is LocalTransactionState.ROLLBACK_MESSAGE
    assert [m.body for m in _pull(pull_all, topic, expect=1)] == [b"kept"]
    assert _threads() == []
