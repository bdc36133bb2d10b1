"""mqadmin reads our LitePullConsumer's running info on the real cluster.

The broker forwards GET_CONSUMER_RUNNING_INFO to the lite consumer's connection:

- ``mqadmin consumerStatus -g G -i CID`` prints the consumer's properties (a pull consumer:
  ``CONSUME_ACTIVELY``), its subscription and one ``#Consumer MQ Detail#`` line per assigned queue;
- ``mqadmin consumerStatus -g G`` lists the member and analyses the group without failing;
- ``mqadmin consumerProgress -g G -s true`` shows the group's committed offsets (written by the
  auto-commit) and, from the running info's queue table, names our client for each queue.

mqadmin exits 0 even when it fails: its output is what is checked.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from rocketmq_py import Message, MessageExt, Producer
from rocketmq_py.consumer._lite_pull import LitePullConsumer
from rocketmq_py.testing import Cluster, ToolResult


async def mqadmin(cluster: Cluster, *args: str) -> ToolResult:
    return await trio.to_thread.run_sync(lambda: cluster.mqadmin(*args))


async def test_mqadmin_consumer_status_and_progress_show_our_lite_consumer(
    cluster: Cluster, create_topic: Callable[..., str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # consumerStatus writes each member's running info under the cwd
    topic = create_topic(4)
    group = f"it-lite-admin-{topic}"
    async with Producer("it-lite-admin-producer", namesrv=cluster.namesrv_addr) as producer:
        for i in range(16):
            await producer.send(Message(topic, f"a{i}".encode()))
    got: list[MessageExt] = []
    async with LitePullConsumer(
        group,
        namesrv=cluster.namesrv_addr,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        rebalance_interval=2,
        auto_commit_interval=1,
        instance_name=f"lite-admin-{uuid.uuid4().hex[:8]}",
    ) as consumer:
        consumer.subscribe(topic)
        with trio.fail_after(60):
            while len(got) < 16:
                got.extend(await consumer.poll(timeout=1))
        with trio.fail_after(30):  # auto-committed (every second here): the brokers hold all 16
            while sum([max(await consumer.committed(mq), 0) for mq in consumer.assignment()]) < 16:  # noqa: ASYNC110 - the brokers hold it
                await trio.sleep(0.2)
        client_id = consumer.client_id
        status = (await mqadmin(cluster, "consumerStatus", "-g", group, "-i", client_id)).output
        listing = (await mqadmin(cluster, "consumerStatus", "-g", group)).output
        progress = (await mqadmin(cluster, "consumerProgress", "-g", group, "-s", "true")).output
        assigned = consumer.assignment()

    assert sorted(m.body.decode() for m in got) == sorted(f"a{i}" for i in range(16))
    assert len(assigned) == 8
    # consumerStatus -i: a pull consumer, our group and subscription, one line per assigned queue.
    assert "PROP_CONSUME_TYPE                       : CONSUME_ACTIVELY" in status, status
    assert f"consumerGroup                           : {group}" in status
    subs = status.split("#Consumer Subscription#", 1)[1].split("\n\n", 1)[0]
    assert f"Topic: {topic} " in subs
    detail = status.split("#Consumer MQ Detail#", 1)[1].split("\n\n", 1)[0]
    rows = {
        (f[0], f[1], int(f[2])): line
        for line in detail.splitlines()
        if len(f := line.split()) > 3 and f[2].isdigit()
    }
    assert set(rows) == {(mq.topic, mq.broker_name, mq.queue_id) for mq in assigned}
    assert all("droped=false" in line for line in rows.values())
    offsets = status.split("#Consumer Offset#", 1)[1].split("\n\n", 1)[0]
    committed = {
        (f[1], int(f[2])): int(f[3]) for line in offsets.splitlines() if (f := line.split()) and f[0] == topic
    }
    assert sum(committed.values()) == 16
    # consumerStatus without -i: the member was found and its running info analysed.
    assert client_id in listing, listing
    assert "Same subscription in the same group of consumer" in listing
    # consumerProgress: per queue the committed offset reached the broker offset, and the client
    # column (from our running info's queue table) names us.
    table = [line.split() for line in progress.splitlines() if line.startswith(topic)]
    assert len(table) == 8, progress
    for fields in table:
        assert fields[3] == fields[4]  # broker offset == consumer offset
        assert client_id.split("@")[0] in " ".join(fields[5:])
    assert sum(int(f[3]) for f in table) == 16
