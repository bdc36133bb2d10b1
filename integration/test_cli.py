"""The ``rocketmq-py`` CLI against the real two-broker cluster, checked with mqadmin.

``main()`` is called in-process (it runs its own ``trio.run``); stdout and stderr are captured.
Through a Proxy (``make proxy``) every command but ``topic create`` is given the Proxy; topics are
created with the NameServer (``admin_namesrv_addr``), as there, where a Proxy refuses it
(``integration/test_proxy.py``).
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable

import pytest

from rocketmq_py.cli import EXIT_ERROR, EXIT_OK, main
from rocketmq_py.testing import Cluster, topic_route


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def _max_offsets(topic_status: str) -> dict[tuple[str, int], int]:
    """(broker, queue id) -> max offset, from ``mqadmin topicStatus`` output."""
    out = {}
    for line in topic_status.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[0].startswith("broker-") and fields[1].isdigit():
            out[(fields[0], int(fields[1]))] = int(fields[3])
    return out


def _via_proxy(cluster: Cluster) -> bool:
    """The clients go through a Proxy (``make proxy``): it is their NameServer and every broker."""
    return cluster.namesrv_addr != cluster.admin_namesrv_addr


def test_topic_create_then_route(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    topic = _topic("cli")
    assert main(["-n", cluster.admin_namesrv_addr, "topic", "create", topic, "--queues", "3"]) == EXIT_OK
    out, err = capsys.readouterr()
    assert err == ""
    for broker in cluster.brokers:
        assert (
            f"created {topic} on {broker.name} ({broker.address}): 3 read / 3 write queues, perm RW-" in out
        )

    route = topic_route(cluster.admin_namesrv_addr, topic)  # the NameServer already shows it
    assert route is not None
    assert sorted(
        (q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas
    ) == [
        ("broker-a", 3, 3, 6),
        ("broker-b", 3, 3, 6),
    ]

    assert main(["route", topic, "-n", cluster.namesrv_addr]) == EXIT_OK
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"topic {topic}"
    assert lines[1].split() == ["BROKER", "CLUSTER", "MASTER", "SLAVES", "READ", "WRITE", "PERM"]
    rows = [line.split() for line in lines[2:4]]
    # A Proxy's route names it as the master of every broker.
    masters = [cluster.namesrv_addr if _via_proxy(cluster) else b.address for b in cluster.brokers]
    assert rows == [
        [b.name, cluster.cluster_name, master, "-", "3", "3", "RW-", "(6)"]
        for b, master in zip(cluster.brokers, masters, strict=True)
    ]
    assert lines[4] == "2 broker(s), 6 read / 6 write queues"


def test_send_count_20_shows_in_topic_status(
    cluster: Cluster, create_topic: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    topic = create_topic(2)
    argv = ["-n", cluster.namesrv_addr, "send", topic, "--body", "twenty", "--count", "20", "--tags", "T"]
    assert main([*argv, "--concurrency", "3"]) == EXIT_OK
    out, err = capsys.readouterr()
    assert out.startswith(f"sent 20 of 20 message(s) to {topic} in ")
    assert out.rstrip().endswith(", 0 failed")
    assert err.splitlines()[-1].startswith("sent 20/20 (100%)  failed 0")

    status = cluster.mqadmin("topicStatus", "-t", topic).check().output
    offsets = _max_offsets(status)
    assert set(offsets) == {(b.name, q) for b in cluster.brokers for q in range(2)}, status
    assert sum(offsets.values()) == 20, status


def test_a_namespace_on_the_real_broker(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    """``--namespace``: the topic is ``ns%T`` on the brokers (mqadmin sees it there), and send and
    consume in the namespace use the plain name."""
    topic = _topic("cli-ns")
    base = ["-n", cluster.namesrv_addr, "--namespace", "clins"]
    create = ["-n", cluster.admin_namesrv_addr, "--namespace", "clins", "topic", "create", topic]
    assert main([*create, "--queues", "1"]) == EXIT_OK
    assert f"created clins%{topic} on broker-a" in capsys.readouterr().out
    assert main([*base, "send", topic, "--body", "in-ns", "--count", "4"]) == EXIT_OK
    assert f"sent 4 of 4 message(s) to {topic} in " in capsys.readouterr().out

    status = cluster.mqadmin("topicStatus", "-t", f"clins%{topic}").check().output
    assert sum(_max_offsets(status).values()) == 4, status
    argv = [*base, "consume", topic, "-g", f"cg-{topic}", "--from-beginning", "--count", "4"]
    assert main(argv) == EXIT_OK
    out, err = capsys.readouterr()
    assert [line.split("body=")[1] for line in out.splitlines()] == ["in-ns"] * 4
    assert err == f"consumed 4 message(s) from {topic} as cg-{topic}; offsets persisted\n"


def test_send_and_consume_with_trace_show_in_query_msg_trace(
    cluster: Cluster, create_topic: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--trace``: the CLI's producer and consumer write trace records, as Java's enableMsgTrace.

    Through a Proxy the consumer's only: the Proxy answers each send with its own trace switch
    (``traceOn``, off unless configured), and the producer then writes no record, as Java's does;
    a consumer's trace does not depend on it."""
    topic = create_topic(1)
    group = f"cg-trace-{topic}"
    base = ["-n", cluster.namesrv_addr]
    assert main([*base, "send", topic, "--body", "traced", "--trace"]) == EXIT_OK
    msg_id = capsys.readouterr().out.split("msgId=")[1].split()[0]
    assert main([*base, "consume", topic, "-g", group, "--from-beginning", "--count", "1", "--trace"]) == 0
    capsys.readouterr()
    wanted = [["Sub", group]] if _via_proxy(cluster) else [["Pub", "rocketmq-py-cli"], ["Sub", group]]
    deadline = time.monotonic() + 60  # records are flushed in the background
    while True:
        output = cluster.mqadmin("queryMsgTraceById", "-i", msg_id).output
        shown = [line.split()[:2] for line in output.splitlines()]
        if all(row in shown for row in wanted):
            break
        assert time.monotonic() < deadline, f"queryMsgTraceById {msg_id} does not show {wanted}:\n{output}"
        time.sleep(1)


def test_send_one_then_query_it(
    cluster: Cluster, create_topic: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    topic = create_topic(2)
    argv = ["-n", cluster.namesrv_addr, "send", topic, "--body", "héllo cli", "--tags", "TagC"]
    assert main([*argv, "--keys", "a1,b2", "--property", "color=blue"]) == EXIT_OK
    out = capsys.readouterr().out
    found = re.match(
        r"SEND_OK msgId=(\w+) offsetMsgId=\w+ queue=(broker-\w):(\d+) queueOffset=0$", out.splitlines()[0]
    )
    assert found, out
    shown = cluster.mqadmin("queryMsgById", "-i", found.group(1), "-t", topic, "-f", "UTF-8").check().output
    assert re.search(r"Message Body:\s+héllo cli", shown), shown
    assert re.search(r"Tags:\s+\[TagC\]", shown), shown
    assert re.search(r"Keys:\s+\[a1 b2\]", shown), shown
    assert "color=blue" in shown


def test_errors_exit_1_with_one_line(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    missing = _topic("cli-missing")
    assert main(["-n", cluster.namesrv_addr, "route", missing]) == EXIT_ERROR
    assert capsys.readouterr().err == (
        f"rocketmq-py: error: no route info for topic {missing!r} (name servers: {cluster.namesrv_addr})\n"
    )
    argv = [
        "-n",
        cluster.admin_namesrv_addr,
        "topic",
        "create",
        _topic("cli"),
        "--queues",
        "1",
        "--cluster",
        "Nope",
    ]
    assert main(argv) == EXIT_ERROR
    assert capsys.readouterr().err == (
        f"rocketmq-py: error: no cluster named 'Nope' (clusters: {cluster.cluster_name})\n"
    )
