"""Message trace on the real broker, read by ``mqadmin queryMsgTraceById``, both ways with Java.

Our producer (``enable_trace=True``) sends and the Java client's trace-enabled consumer consumes:
the tool shows our ``Pub`` and Java's ``Sub`` for one message id. Then the Java client's
trace-enabled producer sends and our push consumer consumes: Java's ``Pub`` and our ``Sub``. The
trace topic holds records both clients wrote, and ours decode as Java's decoder reads them (the
tool would fail on a short record). Java's side: ``integration/java/TraceInterop.java``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import trio

from rocketmq_py import Message, MessageExt, Producer, PushConsumer
from rocketmq_py.testing import Cluster
from rocketmq_py.testing._tools import run_java_program

JAVA_DRIVER = Path(__file__).parent / "java" / "TraceInterop.java"
COUNT = 3


def _java(cluster: Cluster, *args: str) -> list[str]:
    result = run_java_program(
        JAVA_DRIVER, [args[0], cluster.namesrv_addr, *args[1:]], version=cluster.version, timeout=150
    )
    assert result.ok, result.output
    return [line.split()[1] for line in result.output.splitlines() if line.startswith(("SENT ", "GOT "))]


async def _trace_shows(cluster: Cluster, msg_id: str, *rows: tuple[str, str]) -> str:
    """Run ``queryMsgTraceById`` until every (type, group) row shows (records are flushed in the background)."""
    output = ""
    with trio.move_on_after(60):
        while True:
            result = await trio.to_thread.run_sync(lambda: cluster.mqadmin("queryMsgTraceById", "-i", msg_id))
            output = result.output
            lines = [line.split() for line in output.splitlines()]
            if all(
                any(line[:2] == [kind, group] for line in lines if len(line) >= 2) for kind, group in rows
            ):
                return output
            await trio.sleep(1)
    raise AssertionError(f"queryMsgTraceById {msg_id} does not show {rows}:\n{output}")


async def test_our_sends_and_javas_consumption_in_one_trace(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(2)
    async with Producer("it-trace-pg", namesrv=cluster.namesrv_addr, enable_trace=True) as producer:
        sent = [
            await producer.send(Message(topic, b"ours %d" % i, tags="TagP", keys=[f"our-key-{i}"]))
            for i in range(COUNT)
        ]
    got = await trio.to_thread.run_sync(_java, cluster, "consume", topic, "it-trace-java-cg", str(COUNT))
    assert sorted(got) == sorted(r.msg_id for r in sent)
    await _trace_shows(cluster, sent[0].msg_id, ("Pub", "it-trace-pg"), ("Sub", "it-trace-java-cg"))


async def test_javas_sends_and_our_consumption_in_one_trace(
    cluster: Cluster, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(2)
    ids = await trio.to_thread.run_sync(_java, cluster, "produce", topic, "it-trace-java-pg", str(COUNT))
    got: list[MessageExt] = []

    async def listener(msgs: list[MessageExt]) -> None:
        got.extend(msgs)

    consumer = PushConsumer(
        "it-trace-cg",
        namesrv=cluster.namesrv_addr,
        listener=listener,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        enable_trace=True,
    )
    consumer.subscribe(topic)
    async with consumer:
        with trio.fail_after(60):
            while len(got) < COUNT:  # noqa: ASYNC110 - the listener fills it
                await trio.sleep(0.1)
    assert sorted(m.msg_id for m in got) == sorted(ids)
    await _trace_shows(cluster, ids[0], ("Pub", "it-trace-java-pg"), ("Sub", "it-trace-cg"))
