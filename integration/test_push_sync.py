"""The blocking PushConsumer against the real two-broker cluster, with a plain-function listener."""

from __future__ import annotations

import threading
from collections.abc import Callable

from rocketmq_py import ConsumeStatus, MessageExt
from rocketmq_py.sync import Message, Producer, PushConsumer
from rocketmq_py.testing import Cluster


def test_blocking_consumer_with_a_thread_listener(cluster: Cluster, create_topic: Callable[..., str]) -> None:
    topic = create_topic(4)
    with Producer("it-sync-push-producer", namesrv=cluster.namesrv_addr) as producer:
        sent = {producer.send(Message(topic, f"m-{i}".encode())).msg_id for i in range(40)}
    got: list[MessageExt] = []
    threads: set[str] = set()
    lock = threading.Lock()
    all_in = threading.Event()

    def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        with lock:
            got.extend(msgs)
            threads.add(threading.current_thread().name)
            if len(got) >= len(sent):
                all_in.set()
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        f"it-sync-push-{topic}",
        namesrv=cluster.namesrv_addr,
        listener=listener,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
    )
    consumer.subscribe(topic)
    with consumer:
        assert all_in.wait(30)
        owned = [q for q in sorted(consumer.assignment()) if q.topic == topic]
        stats = [s for s in consumer.statistics() if s.queue.topic == topic]
    assert {m.msg_id for m in got} == sent
    assert len(got) == len(sent)
    assert len(owned) == 8  # alone in its group: every queue of both brokers
    assert [s.queue for s in stats] == owned
    assert threading.current_thread().name not in threads  # the listener ran in worker threads
