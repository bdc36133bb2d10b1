"""benchmarks/spark_vs_kafka.py and _kafka_node.py: their pure parts (no JVM, no Spark, no timing asserted).

The Kafka Metadata probe's frames are written out by hand from the protocol's field list (Metadata
v4, non-flexible); the CPU accounting is checked on made-up /proc snapshots.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def bench(load_benchmark: Callable[[str], ModuleType]) -> ModuleType:
    return load_benchmark("spark_vs_kafka")


@pytest.fixture(scope="module")
def node(load_benchmark: Callable[[str], ModuleType]) -> ModuleType:
    return load_benchmark("_kafka_node")


# --- the Kafka node and its probe --------------------------------------------------------------------


def test_properties_make_one_combined_node_on_loopback(node: ModuleType, tmp_path: Path) -> None:
    props = node.kafka_properties(39001, 39002, tmp_path / "logs", 16)
    assert props["process.roles"] == "broker,controller"
    assert props["controller.quorum.voters"] == "1@127.0.0.1:39002"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:39001,CONTROLLER://127.0.0.1:39002"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:39001"
    assert props["num.partitions"] == "16"
    assert props["log.dirs"] == str(tmp_path / "logs")
    assert all(39000 <= p < 39100 for p in node.PORTS)


def test_cluster_id_is_a_base64_uuid(node: ModuleType) -> None:
    cluster_id = node.random_cluster_id()
    assert len(cluster_id) == 22
    assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16


def test_metadata_request_bytes(node: ModuleType) -> None:
    frame = node.metadata_request(7, ["t"], True)
    body = (
        b"\x00\x03\x00\x04\x00\x00\x00\x07"  # api key 3, version 4, correlation id 7
        + b"\x00\x0bbench-probe"  # client id
        + b"\x00\x00\x00\x01\x00\x01t"  # topics: ["t"]
        + b"\x01"  # allow auto-creation
    )
    assert frame == struct.pack(">i", len(body)) + body
    assert node.metadata_request(1, None, False).endswith(b"\xff\xff\xff\xff\x00")  # null array: all topics


def _metadata_response(partitions: list[tuple[int, int, int]], topic_error: int = 0) -> bytes:
    """Correlation 9, one broker, topic ``t`` with (error, partition, leader) partitions."""
    out = struct.pack(">ii", 9, 0)
    out += (
        struct.pack(">i", 1)
        + struct.pack(">i", 1)
        + b"\x00\x09127.0.0.1"
        + struct.pack(">i", 39000)
        + b"\xff\xff"
    )
    out += b"\x00\x02id" + struct.pack(">i", 1)  # cluster id, controller id
    out += struct.pack(">i", 1) + struct.pack(">h", topic_error) + b"\x00\x01t" + b"\x00"
    out += struct.pack(">i", len(partitions))
    for error, partition, leader in partitions:
        out += struct.pack(">hii", error, partition, leader)
        out += struct.pack(">ii", 1, leader) + struct.pack(">ii", 1, leader)  # replicas, isr
    return out


def test_metadata_response_parsed_whole(node: ModuleType) -> None:
    frame = _metadata_response([(0, 0, 1), (0, 1, 1), (5, 2, -1)])
    correlation_id, brokers, topics = node.parse_metadata(frame)
    assert (correlation_id, brokers) == (9, 1)
    assert topics == [node.TopicMetadata("t", 0, {0: 1, 1: 1})]  # partition 2 had an error
    with pytest.raises(ValueError, match="left over"):
        node.parse_metadata(frame + b"\x00")
    with pytest.raises(struct.error):
        node.parse_metadata(frame[:-1])


def test_partitions_ready_needs_every_leader(node: ModuleType) -> None:
    def topics(parts: list[tuple[int, int, int]], error: int = 0) -> list[object]:
        return list(node.parse_metadata(_metadata_response(parts, error))[2])

    assert node.partitions_ready(topics([(0, 0, 1), (0, 1, 1)]), "t", 2)
    assert not node.partitions_ready(topics([(0, 0, 1), (0, 1, -1)]), "t", 2)  # no leader yet
    assert not node.partitions_ready(topics([(0, 0, 1)]), "t", 2)
    assert not node.partitions_ready(topics([], error=5), "t", 2)  # LEADER_NOT_AVAILABLE: being created
    assert not node.partitions_ready(topics([(0, 0, 1), (0, 1, 1)]), "other", 2)


# --- CPU accounting ------------------------------------------------------------------------------------


def test_parse_stat_with_parentheses_in_the_name(bench: ModuleType) -> None:
    fields = ["S", "42"] + ["0"] * 9 + ["300", "100", "50", "50"] + ["0"] * 4 + ["12345"] + ["0"] * 20
    proc = bench.parse_stat("77 (python3 (worker) x) " + " ".join(fields))
    tick = bench._TICK
    assert (proc.ppid, proc.start) == (42, 12345)
    assert proc.own == pytest.approx(400 / tick)
    assert proc.reaped == pytest.approx(100 / tick)


def test_tree_cpu_splits_the_jvm_from_its_python_descendants(bench: ModuleType) -> None:
    P = bench.ProcCpu
    jvm, daemon, old, gone, born, other = 10, 11, 12, 13, 14, 99
    before = {
        jvm: P(1, 100, own=50.0, reaped=1.0),
        daemon: P(jvm, 101, own=2.0, reaped=0.0),
        old: P(daemon, 102, own=5.0, reaped=0.0),  # a reused worker, alive throughout
        gone: P(daemon, 103, own=3.0, reaped=0.0),  # exits during the run: the daemon reaps it
        other: P(1, 104, own=7.0, reaped=0.0),  # not below the JVM
    }
    after = {
        jvm: P(1, 100, own=60.0, reaped=1.5),  # +10 own; +0.5 of a Python child it reaped
        daemon: P(jvm, 101, own=2.5, reaped=4.0),  # reaped ``gone`` with its whole life's 4.0 s
        old: P(daemon, 102, own=8.0, reaped=0.0),
        born: P(daemon, 105, own=1.0, reaped=0.0),
        other: P(1, 104, own=70.0, reaped=0.0),
    }
    own, below = bench.tree_cpu(jvm, before, after)
    assert own == pytest.approx(10.0)
    # daemon 0.5 + reaped 4.0 - gone's 3.0 before the start + old 3.0 + born 1.0 + the JVM's reaped 0.5
    assert below == pytest.approx(0.5 + 4.0 - 3.0 + 3.0 + 1.0 + 0.5)


def test_tree_cpu_counts_a_reused_pid_as_new(bench: ModuleType) -> None:
    P = bench.ProcCpu
    before = {1: P(0, 1, 0.0, 0.0), 2: P(1, 50, own=9.0, reaped=0.0)}
    after = {1: P(0, 1, 0.0, 9.5), 2: P(1, 60, own=1.0, reaped=0.0)}  # 2 died (9.5 s in all), 2 again
    assert bench.tree_cpu(1, before, after) == (0.0, pytest.approx(9.5 - 9.0 + 1.0))


def test_broker_cpu_skips_processes_missing_from_a_snapshot(bench: ModuleType) -> None:
    P = bench.ProcCpu
    before = {5: P(1, 1, 1.0, 0.0), 6: P(1, 1, 1.0, 0.0)}
    after = {5: P(1, 1, 3.5, 0.0)}
    assert bench.jvms_cpu([5, 6, 7], before, after) == pytest.approx(2.5)


# --- rounds, ratios, jars, command line --------------------------------------------------------------


def _run(bench: ModuleType, reader: str, rnd: int, rate: float, columns: str = "all") -> object:
    return bench.Run(reader, columns, rnd, 1000, 1000 / rate, 1.0, 2.0, 3.0, 0.0)


def test_round_order_rotates(bench: ModuleType) -> None:
    orders = [bench.round_order(bench.READERS, r) for r in range(len(bench.READERS))]
    assert [o[0] for o in orders] == list(bench.READERS)
    assert all(sorted(o) == sorted(bench.READERS) for o in orders)


def test_ratios_pair_runs_of_the_same_round_and_skip_the_warm_up(bench: ModuleType) -> None:
    runs = [
        _run(bench, "rocketmq", 0, 1.0),
        _run(bench, "kafka", 0, 100.0),
        _run(bench, "rocketmq", 1, 100.0),
        _run(bench, "kafka", 1, 50.0),
        _run(bench, "rocketmq", 2, 90.0),
        _run(bench, "kafka", 2, 100.0),
        _run(bench, "rocketmq", 1, 10.0, columns="body"),
    ]
    assert bench.ratios(runs, "rocketmq", "kafka", "all") == pytest.approx([2.0, 0.9])
    assert bench.ratios(runs, "rocketmq", "kafka", "body") == []
    lines = bench.summary(runs, ["all"])
    assert any("median ratio rocketmq/kafka 1.45 (per round 2.00, 0.90)" in line for line in lines)


def test_run_row_has_what_plot_needs(bench: ModuleType) -> None:
    row = _run(bench, "kafka-tuned", 1, 500.0, columns="body").row()
    assert {"case", "side", "round", "rate", "cpu_us"} <= set(row)
    assert row["rate"] == 500.0
    assert row["cpu_us"] == 3000.0  # (1 s Python + 2 s JVM) / 1000 rows
    assert row["broker_cpu_s_per_m"] == 3000.0


def test_only_jars_spark_lacks_are_added(bench: ModuleType) -> None:
    assert bench.artifact_name("/x/kafka-clients-3.9.2.jar") == "kafka-clients"
    assert bench.artifact_name("spark-sql-kafka-0-10_2.13-4.2.0.jar") == "spark-sql-kafka-0-10_2.13"
    assert bench.artifact_name("hadoop-client-api-3.5.0.jar") == "hadoop-client-api"
    assert bench.artifact_name("antlr4-runtime-4.13.1.jar") == "antlr4-runtime"
    assert bench.artifact_name("zstd-jni-1.5.6-10.jar") == "zstd-jni"
    assert bench.artifact_name("log4j-1.2-api-2.25.4.jar") == "log4j-1.2-api"
    assert bench.artifact_name("netty-all-4.1.118.Final.jar") == "netty-all"
    wanted = ["/c/commons-pool2-2.13.1.jar", "/c/scala-library-2.13.15.jar", "/c/lz4-java-1.10.1.jar"]
    shipped = ["scala-library-2.13.18.jar", "lz4-java-1.11.0.jar", "commons-pool-1.5.4.jar"]
    assert bench.missing_jars(wanted, shipped) == ["/c/commons-pool2-2.13.1.jar"]


def test_defaults_are_the_issue_s_measurement(bench: ModuleType) -> None:
    args = bench.parse_args([])
    assert (args.count, args.size, args.rounds, args.columns, args.json) == (1_000_000, 128, 3, "both", None)
    assert bench.PARTITIONS == bench.BROKERS * bench.QUEUES_PER_BROKER == 16
