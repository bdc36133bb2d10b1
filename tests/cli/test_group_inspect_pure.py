"""``group inspect``'s comparison (pure): strategies, owned vs computed queues, flags, text and JSON."""

from __future__ import annotations

import json

import pytest

from rocketmq_py.cli._format import group_report_lines
from rocketmq_py.cli._inspect import (
    FLAG_KINDS,
    STRATEGY_NAME_PROPERTY,
    inspect_group,
    member_view,
    strategy_of,
)
from rocketmq_py.consumer._allocate import get_strategy, sort_consumers, sort_queues
from rocketmq_py.protocol import (
    PROP_ALLOCATE_STRATEGY,
    ConsumerRunningInfo,
    MessageQueue,
    ProcessQueueInfo,
    build_subscription_data,
)

TOPIC = "T"
QUEUES = [MessageQueue(TOPIC, b, q) for b in ("broker-a", "broker-b") for q in range(4)]
A, B, C = "10.0.0.1@a", "10.0.0.1@b", "10.0.0.1@c"


def info(
    owned: list[MessageQueue],
    strategy: str | None = "AVG",
    *,
    model: str = "CLUSTERING",
    java: bool = False,
    dropped: list[MessageQueue] | None = None,
) -> ConsumerRunningInfo:
    props = {"messageModel": model}
    if strategy is not None:
        if java:
            props[PROP_ALLOCATE_STRATEGY] = strategy
        else:
            props[STRATEGY_NAME_PROPERTY] = strategy
    table = {mq: ProcessQueueInfo(commit_offset=1) for mq in owned}
    table |= {mq: ProcessQueueInfo(dropped=True) for mq in dropped or []}
    return ConsumerRunningInfo(props, (build_subscription_data(TOPIC, "*", sub_version=1),), table, {})


def allocation(strategy: str, cids: list[str]) -> dict[str, list[MessageQueue]]:
    algo = get_strategy(strategy)
    ordered = sort_consumers(cids)
    return {cid: algo.allocate("g", cid, sort_queues(QUEUES), ordered) for cid in ordered}


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({STRATEGY_NAME_PROPERTY: "AVG"}, "AVG"),
        ({STRATEGY_NAME_PROPERTY: "averagely_by_circle"}, "AVG_BY_CIRCLE"),
        ({STRATEGY_NAME_PROPERTY: "MACHINE_ROOM_NEARBY-AVG"}, "MACHINE_ROOM_NEARBY"),
        ({STRATEGY_NAME_PROPERTY: "MY_OWN"}, "MY_OWN"),
        (
            {
                PROP_ALLOCATE_STRATEGY: "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely@6783d3b5"
            },
            "AVG",
        ),
        ({PROP_ALLOCATE_STRATEGY: "x.AllocateMessageQueueAveragelyByCircle@1"}, "AVG_BY_CIRCLE"),
        ({PROP_ALLOCATE_STRATEGY: "x.AllocateMessageQueueConsistentHash@ab"}, "CONSISTENT_HASH"),
        ({PROP_ALLOCATE_STRATEGY: "x.AllocateMessageQueueByConfig@ab"}, "CONFIG"),
        ({PROP_ALLOCATE_STRATEGY: "x.AllocateMessageQueueByMachineRoom@ab"}, "MACHINE_ROOM"),
        ({PROP_ALLOCATE_STRATEGY: "x.AllocateMachineRoomNearby@ab"}, "MACHINE_ROOM_NEARBY"),
        # Our own class names, as a Python consumer may write them:
        ({PROP_ALLOCATE_STRATEGY: "org.apache.rocketmq.client.consumer.rebalance.AllocateAveragely"}, "AVG"),
        ({PROP_ALLOCATE_STRATEGY: "AllocateAveragelyByCircle"}, "AVG_BY_CIRCLE"),
        ({PROP_ALLOCATE_STRATEGY: "com.acme.Custom$1@ff"}, "com.acme.Custom$1@ff"),
        ({}, None),
    ],
)
def test_strategy_of(props: dict[str, str], expected: str | None) -> None:
    assert strategy_of(props) == expected


def test_the_name_property_wins_over_the_class() -> None:
    props = {
        STRATEGY_NAME_PROPERTY: "AVG_BY_CIRCLE",
        PROP_ALLOCATE_STRATEGY: "x.AllocateMessageQueueAveragely@1",
    }
    assert strategy_of(props) == "AVG_BY_CIRCLE"


def test_member_view_ignores_dropped_queues() -> None:
    view = member_view(A, info(QUEUES[:2], dropped=QUEUES[2:3]))
    assert view.owned == frozenset(QUEUES[:2])
    assert view.topics == frozenset({TOPIC})
    assert view.answered
    assert not member_view(B, "timed out").answered


def test_healthy_group_has_no_flags() -> None:
    expected = allocation("AVG", [A, B])
    report = inspect_group("g", [B, A], {A: info(expected[A]), B: info(expected[B])}, {TOPIC: QUEUES})
    assert report.flags == ()
    assert report.healthy
    assert report.strategy == "AVG"
    assert report.consumer_ids == (A, B)
    (topic,) = report.topics
    assert topic.queues == tuple(sort_queues(QUEUES))
    assert topic.expected == {A: tuple(expected[A]), B: tuple(expected[B])}
    assert all(topic.owners[mq] == (topic.expected_owner(mq),) for mq in QUEUES)
    assert group_report_lines(report)[-1] == "no problems found"


def test_java_strategy_class_names_count_as_the_same_strategy() -> None:
    expected = allocation("AVG", [A, B])
    java = "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely@1b2c"
    report = inspect_group(
        "g", [A, B], {A: info(expected[A], java, java=True), B: info(expected[B])}, {TOPIC: QUEUES}
    )
    assert report.flags == ()


def test_two_strategies_in_one_group() -> None:
    # A allocates by AVG (broker-a's queues), B by AVG_BY_CIRCLE (every second queue): some queues
    # are taken twice, others by nobody.
    mine_a = allocation("AVG", [A, B])[A]
    mine_b = allocation("AVG_BY_CIRCLE", [A, B])[B]
    report = inspect_group(
        "g", [A, B], {A: info(mine_a, "AVG"), B: info(mine_b, "AVG_BY_CIRCLE")}, {TOPIC: QUEUES}
    )
    kinds = [f.kind for f in report.flags]
    assert report.strategy == "AVG"  # a tie goes to the first client id
    assert set(kinds) == {"shared-queue", "unowned-queue", "allocation-differs", "strategy-differs"}
    shared = {f.queues[0] for f in report.flags if f.kind == "shared-queue"}
    assert shared == set(mine_a) & set(mine_b)
    assert all(f.client_ids == (A, B) for f in report.flags if f.kind == "shared-queue")
    (unowned,) = [f for f in report.flags if f.kind == "unowned-queue"]
    assert set(unowned.queues) == set(QUEUES) - set(mine_a) - set(mine_b)
    (differs,) = [f for f in report.flags if f.kind == "allocation-differs"]
    assert differs.client_ids == (B,)
    assert set(differs.queues) == set(mine_b) ^ set(allocation("AVG", [A, B])[B])
    (odd,) = [f for f in report.flags if f.kind == "strategy-differs"]
    assert odd.client_ids == (B,)
    assert "AVG_BY_CIRCLE" in odd.message
    assert kinds == sorted(kinds, key=FLAG_KINDS.index)
    text = "\n".join(group_report_lines(report))
    assert "[strategy-differs]" in text
    assert f"{len(report.flags)} problem(s):" in text


def test_majority_strategy_is_the_groups() -> None:
    cids = [A, B, C]
    avg = allocation("AVG", cids)
    report = inspect_group(
        "g",
        cids,
        {A: info(allocation("AVG_BY_CIRCLE", cids)[A], "AVG_BY_CIRCLE"), B: info(avg[B]), C: info(avg[C])},
        {TOPIC: QUEUES},
    )
    assert report.strategy == "AVG"
    assert [f.client_ids for f in report.flags if f.kind == "strategy-differs"] == [(A,)]


def test_a_consumer_that_does_not_answer() -> None:
    expected = allocation("AVG", [A, B])
    report = inspect_group("g", [A, B], {A: info(expected[A]), B: "timed out"}, {TOPIC: QUEUES})
    kinds = {f.kind for f in report.flags}
    assert kinds == {"no-answer", "unowned-queue"}
    (silent,) = [f for f in report.flags if f.kind == "no-answer"]
    assert silent.client_ids == (B,)
    assert "timed out" in silent.message
    # A still owns what AVG gives it: no allocation flag for A.
    lines = group_report_lines(report)
    assert any(line.split()[:4] == [B, "-", "-", "NO"] for line in lines)


def test_a_member_missing_from_infos_counts_as_silent() -> None:
    report = inspect_group("g", [A], {}, {TOPIC: QUEUES})
    assert [f.kind for f in report.flags] == ["unowned-queue", "no-answer"]
    assert report.strategy is None
    assert report.topics[0].expected is None
    assert report.topics[0].note == "no consumer reported its strategy"


def test_a_consumer_the_broker_does_not_list() -> None:
    report = inspect_group("g", [A], {A: info(QUEUES), B: info(QUEUES[:1])}, {TOPIC: QUEUES})
    kinds = [f.kind for f in report.flags]
    assert "unknown-consumer" in kinds
    assert "shared-queue" in kinds


def test_strategy_needing_configuration_is_not_recomputed() -> None:
    report = inspect_group("g", [A], {A: info(QUEUES, "CONFIG")}, {TOPIC: QUEUES})
    assert report.flags == ()
    assert report.topics[0].expected is None
    assert report.topics[0].note is not None
    assert "CONFIG" in report.topics[0].note


def test_broadcasting_group_expects_every_queue_everywhere() -> None:
    report = inspect_group(
        "g",
        [A, B],
        {A: info(QUEUES, model="BROADCASTING"), B: info(QUEUES, model="BROADCASTING")},
        {TOPIC: QUEUES},
    )
    assert report.broadcasting
    assert report.flags == ()
    partial = inspect_group(
        "g",
        [A, B],
        {A: info(QUEUES, model="BROADCASTING"), B: info(QUEUES[:3], model="BROADCASTING")},
        {TOPIC: QUEUES},
    )
    assert [(f.kind, f.client_ids) for f in partial.flags] == [("allocation-differs", (B,))]


def test_no_consumer_online() -> None:
    report = inspect_group("g", [], {}, {})
    assert report.flags == ()
    assert group_report_lines(report)[-1] == "no consumer of this group is online"


def test_json_report() -> None:
    mine_a = allocation("AVG", [A, B])[A]
    mine_b = allocation("AVG_BY_CIRCLE", [A, B])[B]
    report = inspect_group(
        "g", [A, B], {A: info(mine_a, "AVG"), B: info(mine_b, "AVG_BY_CIRCLE")}, {TOPIC: QUEUES}
    )
    data = json.loads(json.dumps(report.to_json()))
    assert data["group"] == "g"
    assert data["healthy"] is False
    assert data["strategy"] == "AVG"
    assert [m["strategy"] for m in data["members"]] == ["AVG", "AVG_BY_CIRCLE"]
    queues = {(q["brokerName"], q["queueId"]): q for q in data["topics"][0]["queues"]}
    shared = next(f for f in data["flags"] if f["kind"] == "shared-queue")
    q = shared["queues"][0]
    assert queues[(q["brokerName"], q["queueId"])]["owners"] == [A, B]
    assert {f["kind"] for f in data["flags"]} <= set(FLAG_KINDS)
