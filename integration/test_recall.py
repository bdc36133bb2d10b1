"""Recalling timer messages on the real broker, with the official Java client on the other side.

On 5.3.2+ brokers (the default 5.3.3 and 5.5.0 of the release matrix): a recall is refused while
the broker's ``recallMessageEnable`` is off; once on, messages recalled before their delivery time
(the Java client's by us, ours by the Java client) never reach the topic, while one sent after
them arrives, and recalling it after its delivery is refused. (Ours recalled by us is due only
after the test: the mqadmin run that turns recall on comes between its send and its recall.) On 4.9.7 the client
refuses before sending anything. The Java side is ``integration/java/RecallInterop.java`` on the
classpath of the Java tools that go with the cluster's release (``rocketmq-client`` 5.5.0 for 5.x).

Through a 5.x Proxy (``make proxy``) both clients send and recall through it: the Proxy forwards
RECALL_MESSAGE to the broker the request names, on a topic of message type DELAY only (it checks
the recall's topic as it checks a timed send's), hence the DELAY topic here.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import trio

from rocketmq_py import Message, MessageExt, Producer
from rocketmq_py.errors import IllegalOperation, NoPermission, RecallNotSupported
from rocketmq_py.protocol import RecallHandle
from rocketmq_py.protocol._versions import V5_3_2
from rocketmq_py.testing import Cluster
from rocketmq_py.testing._tools import run_java_program, start_java_program

JAVA_DRIVER = Path(__file__).parent / "java" / "RecallInterop.java"
#: Far enough out that each recall lands before it, near enough that the test can see it pass.
DELAY_SEC = 20
#: For the message recalled only after an mqadmin run (a JVM start, tens of seconds on a busy
#: machine) has switched recall on: far enough out that the recall always lands first.
LONG_DELAY_SEC = 300

PullAll = Callable[..., Awaitable[list[MessageExt]]]


def _java(cluster: Cluster, *args: str) -> str:
    result = run_java_program(
        JAVA_DRIVER, [args[0], cluster.namesrv_addr, *args[1:]], version=cluster.version, timeout=120
    )
    assert result.ok, result.output
    [line] = [line for line in result.output.splitlines() if line.startswith(("SENT ", "RECALLED "))]
    return line


async def _java_line(proc: subprocess.Popen[bytes]) -> str:
    """The driver's next line that says something to the test (READY, RECALLED or ERROR)."""
    assert proc.stdout is not None
    while True:
        raw = await trio.to_thread.run_sync(proc.stdout.readline, abandon_on_cancel=True)
        if not raw:
            raise AssertionError(f"the Java driver ended (exit status {proc.poll()})")
        line = raw.decode(errors="replace").strip()
        if line.startswith("ERROR "):
            raise AssertionError(line)
        if line.startswith(("READY", "RECALLED ")):
            return line


def _stop(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # its own session
    proc.wait()
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()


def _set_recall(cluster: Cluster, enabled: bool) -> None:
    value = "true" if enabled else "false"
    cluster.mqadmin(
        "updateBrokerConfig", "-c", "DefaultCluster", "-k", "recallMessageEnable", "-v", value
    ).check()


def _timed(topic: str, body: bytes, delay: int = DELAY_SEC) -> Message:
    message = Message(topic, body)
    message.delay_time_sec = delay
    return message


async def test_recalled_timer_messages_are_never_delivered_both_ways_with_java(
    cluster: Cluster, broker_version: int, create_topic: Callable[..., str], pull_all: PullAll
) -> None:
    if broker_version < V5_3_2:
        pytest.skip(f"RocketMQ {cluster.version} has no recall (5.3.2+); see the next test")
    topic = create_topic(2, message_type="DELAY")  # a Proxy sends and recalls only on DELAY topics
    await trio.to_thread.run_sync(_set_recall, cluster, False)
    async with Producer("it-recall", namesrv=cluster.namesrv_addr) as producer:
        ours = await producer.send(_timed(topic, b"ours-recalled", LONG_DELAY_SEC))
        assert ours.recall_handle is not None
        handle = RecallHandle.parse(ours.recall_handle)
        assert (handle.topic, handle.broker_name, handle.message_id) == (
            topic,
            ours.queue.broker_name,
            ours.msg_id,
        )
        with pytest.raises(NoPermission, match="forbidden"):
            await producer.recall(topic, ours.recall_handle)

        await trio.to_thread.run_sync(_set_recall, cluster, True)
        assert await producer.recall(topic, ours.recall_handle) == ours.msg_id

        # The Java client's message, recalled by us.
        _, java_id, java_handle = (
            await trio.to_thread.run_sync(_java, cluster, "send", topic, str(DELAY_SEC))
        ).split()
        assert await producer.recall(topic, java_handle) == java_id

        # Ours, recalled by the Java client: started first, so that its JVM's start (tens of
        # seconds on a busy machine) does not use up the delivery time (CI on 5.5.0 once answered
        # 'recall failed, timestamp invalid' when the JVM was started after the send).
        recaller = start_java_program(
            JAVA_DRIVER, ["recall-each", cluster.namesrv_addr, topic], version=cluster.version
        )
        try:
            with trio.fail_after(120):
                assert await _java_line(recaller) == "READY"
                for_java = await producer.send(_timed(topic, b"recalled-by-java"))
                assert for_java.recall_handle is not None
                assert recaller.stdin is not None
                recaller.stdin.write(f"{for_java.recall_handle}\n".encode())
                recaller.stdin.flush()
                assert await _java_line(recaller) == f"RECALLED {for_java.msg_id}"
        finally:
            _stop(recaller)

        # Sent last, so due last: once it is in the topic, the recalled ones would be too.
        kept = await producer.send(_timed(topic, b"kept"))
        assert kept.recall_handle is not None
        arrived = await pull_all(topic, expect=1, wait=DELAY_SEC + 40)
        assert [m.body for m in arrived] == [b"kept"]
        assert arrived[0].msg_id == kept.msg_id

        with pytest.raises(IllegalOperation, match="timestamp invalid"):
            await producer.recall(topic, kept.recall_handle)  # too late
    assert [m.body for m in await pull_all(topic)] == [b"kept"]


async def test_recall_on_a_broker_before_5_3_2_is_refused_before_sending(
    cluster: Cluster, broker_version: int, create_topic: Callable[..., str]
) -> None:
    if broker_version >= V5_3_2:
        pytest.skip(
            f"RocketMQ {cluster.version} recalls (the test above); this runs on 4.9.7 in the release matrix"
        )
    topic = create_topic(2)
    handle = RecallHandle(topic, "broker-a", "4102444800000", "7F0000010000000000000000000000AA").encode()
    async with Producer("it-recall", namesrv=cluster.namesrv_addr) as producer:
        with pytest.raises(RecallNotSupported, match=r"5\.3\.2"):
            await producer.recall(topic, handle)
