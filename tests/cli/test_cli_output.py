"""Pure parts of the CLI: permission letters, tables, the cluster-info body, progress lines."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest

from rocketmq_py.admin._calls import (
    ClusterInfo,
    order_conf,
    parse_cluster_info,
    reregistering_headers,
    route_has_queues,
    stale_brokers,
    topic_header,
)
from rocketmq_py.cli._format import format_send_result, perm_letters, route_lines, table
from rocketmq_py.cli._progress import Progress
from rocketmq_py.errors import ClientError, MalformedBody
from rocketmq_py.producer._types import SendResult, SendStatus
from rocketmq_py.protocol import BrokerData, MessageQueue, QueueData, TopicRouteData

# Recorded from a 5.3 NameServer (GET_BROKER_CLUSTER_INFO): fastjson writes the broker ids bare.
CLUSTER_INFO = (
    b'{"brokerAddrTable":{"broker-b":{"brokerAddrs":{0:"127.0.0.1:20516"},"brokerName":"broker-b",'
    b'"cluster":"DefaultCluster","enableActingMaster":false},"broker-a":{"brokerAddrs":'
    b'{0:"127.0.0.1:15203"},"brokerName":"broker-a","cluster":"DefaultCluster",'
    b'"enableActingMaster":false}},"clusterAddrTable":{"DefaultCluster":["broker-b","broker-a"]}}'
)


@pytest.mark.parametrize(
    ("perm", "letters"),
    [(0, "---"), (1, "--X"), (2, "-W-"), (4, "R--"), (6, "RW-"), (7, "RWX"), (8 | 6, "RW-")],
)
def test_perm_letters_as_java_perm2string(perm: int, letters: str) -> None:
    assert perm_letters(perm) == letters


def test_table_aligns_columns() -> None:
    assert table(["A", "LONG"], [["xxx", "1"], ["y", "22"]]) == ["A    LONG", "xxx  1", "y    22"]


def test_route_lines() -> None:
    route = TopicRouteData(
        queue_datas=(
            QueueData(broker_name="broker-b", read_queue_nums=4, write_queue_nums=2, perm=4),
            QueueData(broker_name="broker-a", read_queue_nums=8, write_queue_nums=8, perm=6),
            QueueData(broker_name="broker-c", read_queue_nums=1, write_queue_nums=1, perm=7),
        ),
        broker_datas=(
            BrokerData(cluster="C1", broker_name="broker-a", broker_addrs={1: "s:2", 0: "m:1", 2: "s:3"}),
            BrokerData(cluster="C1", broker_name="broker-b", broker_addrs={1: "s:9"}),
        ),
        order_topic_conf="broker-a:8;broker-b:2",
    )
    assert route_lines("T", route) == [
        "topic T",
        "BROKER    CLUSTER  MASTER  SLAVES   READ  WRITE  PERM",
        "broker-a  C1       m:1     s:2,s:3  8     8      RW- (6)",
        "broker-b  C1       -       s:9      4     2      R-- (4)",
        "broker-c  -        -       -        1     1      RWX (7)",
        "3 broker(s), 13 read / 11 write queues",
        "order conf: broker-a:8;broker-b:2",
    ]


def test_format_send_result() -> None:
    result = SendResult(
        status=SendStatus.SEND_OK,
        msg_id="ID1",
        offset_msg_id="OFF1",
        queue=MessageQueue("T", "broker-a", 3),
        queue_offset=42,
        transaction_id="ID1",
    )
    assert format_send_result(result) == "SEND_OK msgId=ID1 offsetMsgId=OFF1 queue=broker-a:3 queueOffset=42"
    half = SendResult(
        status=SendStatus.FLUSH_DISK_TIMEOUT,
        msg_id="ID2",
        offset_msg_id="OFF2",
        queue=MessageQueue("T", "broker-b", 0),
        queue_offset=0,
        transaction_id="TX",
    )
    assert format_send_result(half).endswith("queueOffset=0 transactionId=TX")
    assert format_send_result(half).startswith("FLUSH_DISK_TIMEOUT ")


# --- GET_BROKER_CLUSTER_INFO ------------------------------------------------------------------


def test_parse_cluster_info_with_bare_int_keys() -> None:
    info = parse_cluster_info(CLUSTER_INFO)
    assert info.clusters == {"DefaultCluster": ("broker-a", "broker-b")}
    assert info.brokers["broker-a"].broker_addrs == {0: "127.0.0.1:15203"}
    assert info.masters("DefaultCluster") == {"broker-a": "127.0.0.1:15203", "broker-b": "127.0.0.1:20516"}
    assert info.only_cluster() == "DefaultCluster"


def test_cluster_info_errors() -> None:
    info = ClusterInfo(
        brokers={"b1": BrokerData(cluster="C1", broker_name="b1", broker_addrs={1: "slave:1"})},
        clusters={"C1": ("b1",), "C2": ()},
    )
    assert info.masters("C1") == {}  # no master: nothing to create on
    with pytest.raises(ClientError, match=r"no cluster named 'C3' \(clusters: C1, C2\)"):
        info.masters("C3")
    with pytest.raises(ClientError, match=r"choose a cluster with --cluster \(clusters: C1, C2\)"):
        info.only_cluster()
    with pytest.raises(ClientError, match=r"clusters: none"):
        ClusterInfo(brokers={}, clusters={}).only_cluster()


def test_parse_cluster_info_empty_and_malformed() -> None:
    assert parse_cluster_info(b"{}") == ClusterInfo(brokers={}, clusters={})
    assert parse_cluster_info(b'{"brokerAddrTable":null}') == ClusterInfo(brokers={}, clusters={})
    for bad in (b"[]", b'{"clusterAddrTable":{"C":"b1"}}', b'{"brokerAddrTable":[]}', b"{nope"):
        with pytest.raises(MalformedBody):
            parse_cluster_info(bad)


def test_order_conf_and_route_has_queues() -> None:
    assert order_conf({"broker-b": 4, "broker-a": 4}) == "broker-a:4;broker-b:4"
    route = TopicRouteData(
        queue_datas=(QueueData(broker_name="a", read_queue_nums=4, write_queue_nums=4, perm=6),)
    )
    assert route_has_queues(route, {"a": 4})
    assert not route_has_queues(route, {"a": 8})
    assert not route_has_queues(route, {"a": 4, "b": 4})


def test_stale_brokers_are_those_not_showing_the_asked_counts() -> None:
    route = TopicRouteData(
        queue_datas=(
            QueueData(broker_name="a", read_queue_nums=4, write_queue_nums=4, perm=6),
            QueueData(broker_name="b", read_queue_nums=8, write_queue_nums=4, perm=6),
            QueueData(broker_name="c", read_queue_nums=8, write_queue_nums=8, perm=6),
        )
    )
    assert stale_brokers(route, {"a": 4}) == []
    assert stale_brokers(route, {"d": 4, "c": 4, "b": 4, "a": 4}) == ["b", "c", "d"]  # fewer, more, absent
    assert stale_brokers(None, {"b": 1, "a": 1}) == ["a", "b"]


def test_reregistering_headers_differ_first_then_end_as_asked() -> None:
    for order in (False, True):
        header = topic_header("T", 5, perm=6, order=order)
        first, last = reregistering_headers(header)
        assert last == header
        assert (first.topic_filter_type, header.topic_filter_type) == ("MULTI_TAG", "SINGLE_TAG")
        assert replace(first, topic_filter_type="SINGLE_TAG") == header  # nothing else differs
    multi = replace(topic_header("T", 5, perm=6, order=False), topic_filter_type="MULTI_TAG")
    assert reregistering_headers(multi)[0].topic_filter_type == "SINGLE_TAG"


# --- progress ---------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_on_a_terminal_rewrites_one_line() -> None:
    clock, out = FakeClock(), io.StringIO()
    progress = Progress(100, out, terminal=True, clock=clock)
    progress.sent()  # too soon to draw
    assert out.getvalue() == ""
    clock.now += 0.5
    for _ in range(9):
        progress.sent()  # draws once, then the interval starts again
    clock.now += 0.5
    progress.failed()
    progress.finish()
    assert out.getvalue() == (
        "\rsent 2/100 (2%)  failed 0  4.0 msg/s  0.5 s"
        "\rsent 10/100 (11%)  failed 1  10.0 msg/s  1.0 s"
        "\rsent 10/100 (11%)  failed 1  10.0 msg/s  1.0 s\n"
    )


def test_progress_pads_a_shorter_line() -> None:
    clock, out = FakeClock(), io.StringIO()
    progress = Progress(10, out, terminal=True, clock=clock)
    clock.now += 1000
    progress.sent()
    clock.now = 101
    progress.finish()
    first, second = out.getvalue().split("\r")[1:]
    assert len(second.rstrip("\n")) == len(first)


def test_progress_in_a_file_prints_periodic_lines() -> None:
    clock, out = FakeClock(), io.StringIO()
    progress = Progress(1000, out, terminal=False, clock=clock)
    assert progress.interval == 5.0
    for step in range(1, 21):
        clock.now = 100 + step
        progress.sent()
    progress.finish()
    lines = out.getvalue().splitlines()
    assert lines == [
        "sent 5/1000 (0%)  failed 0  1.0 msg/s  5.0 s",
        "sent 10/1000 (1%)  failed 0  1.0 msg/s  10.0 s",
        "sent 15/1000 (1%)  failed 0  1.0 msg/s  15.0 s",
        "sent 20/1000 (2%)  failed 0  1.0 msg/s  20.0 s",
        "sent 20/1000 (2%)  failed 0  1.0 msg/s  20.0 s",
    ]


def test_disabled_progress_only_counts() -> None:
    out = io.StringIO()
    progress = Progress(3, out, terminal=True, clock=FakeClock(), interval=0, enabled=False)
    progress.sent()
    progress.failed()
    progress.finish()
    assert (progress.ok, progress.errors, progress.done) == (1, 1, 2)
    assert out.getvalue() == ""


def test_progress_default_follows_isatty() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert Progress(1, Tty()).terminal
    assert not Progress(1, io.StringIO()).terminal
