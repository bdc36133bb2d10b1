"""The controller-mode group without a JVM: what each node is given, its ports, what the controller's
replies decode to (bytes written by hand as the 5.3.3 controller writes them), and the waits."""

from __future__ import annotations

import json
import random
import socket
import struct
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from rocketmq_py.errors import ClusterError
from rocketmq_py.protocol._frame import FrameBuffer
from rocketmq_py.testing import BrokerInfo, ControllerCluster, ReplicaInfo, start_cluster
from rocketmq_py.testing._cli import main
from rocketmq_py.testing._controller import (
    controller_broker_config,
    controller_metadata,
    decode_controller_metadata,
    decode_replica_info,
    namesrv_controller_config,
    read_controller_id,
    replica_info,
)
from rocketmq_py.testing._controller_cluster import check_controller_jars
from rocketmq_py.testing._distribution import Classpath
from rocketmq_py.testing._jvm_nodes import NodeLauncher

NODES = ["broker-a-n0", "broker-a-n1", "broker-a-n2"]
GET_REPLICA_INFO = 1004
GET_METADATA_INFO = 1005
GET_BROKER_CLUSTER_INFO = 106

Answer = tuple[int, dict[str, str], bytes]


def java_reply(opaque: int, code: int, ext_fields: Mapping[str, str], body: bytes = b"") -> bytes:
    """A response frame as a 5.3.3 JVM writes it: fastjson's header (fields in name order, extFields
    values as strings, RESPONSE flag), then the body."""
    header = {
        "code": code,
        "extFields": dict(ext_fields),
        "flag": 1,
        "language": "JAVA",
        "opaque": opaque,
        "serializeTypeCurrentRPC": "JSON",
        "version": 483,
    }
    encoded = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack(">ii", 4 + len(encoded) + len(body), len(encoded)) + encoded + body


def sync_state_body(ids: list[int], epoch: int) -> bytes:
    """``SyncStateSet.encode()``: fastjson of the bean, properties in name order."""
    return ("{" + f'"syncStateSet":[{",".join(map(str, ids))}],"syncStateSetEpoch":{epoch}' + "}").encode()


class FakeServer:
    """A remoting server on 127.0.0.1 answering from a thread: ``answer(code, ext_fields)``."""

    def __init__(self, answer: Callable[[int, Mapping[str, str]], Answer]) -> None:
        self._answer = answer
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.port = self._listener.getsockname()[1]
        self.address = f"127.0.0.1:{self.port}"
        self.requests: list[tuple[int, dict[str, str]]] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._done.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            with conn:
                buf = FrameBuffer()
                for request in buf.feed(conn.recv(65536)):
                    self.requests.append((request.code, dict(request.ext_fields)))
                    code, fields, body = self._answer(request.code, request.ext_fields)
                    conn.sendall(java_reply(request.opaque, code, fields, body))

    def close(self) -> None:
        self._done.set()
        self._thread.join(5)
        self._listener.close()


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[int, Mapping[str, str]], Answer]], FakeServer]]:
    servers: list[FakeServer] = []

    def start(answer: Callable[[int, Mapping[str, str]], Answer]) -> FakeServer:
        servers.append(FakeServer(answer))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


class StubJvm:
    """Stands in for a node's JvmProcess: only whether it runs."""

    def __init__(self, alive: bool = True) -> None:
        self.alive = alive

    def running(self) -> bool:
        return self.alive

    def tail(self, lines: int = 40) -> str:
        return ""

    def kill(self) -> None:
        self.alive = False


def cluster_on(tmp_path: Path, *, controller: int = 1, namesrv: int = 2) -> ControllerCluster:
    """A ControllerCluster never started: its ports set by hand, every node running, ids 1, 2, 3."""
    cluster = ControllerCluster(workdir=tmp_path)
    cluster.workdir = tmp_path
    cluster._namesrv_port, cluster._controller_port = namesrv, controller
    cluster._ports.update({"broker-a-n0": 20001, "broker-a-n1": 20101, "broker-a-n2": 20201})
    for index, node in enumerate(NODES):
        store = tmp_path / node / "store"
        store.mkdir(parents=True)
        (store / "brokerIdentity").write_text(f"DefaultCluster#broker-a#{index + 1}")
        cluster._brokers[node] = StubJvm()  # type: ignore[assignment]
    return cluster


# --- what each node is given -------------------------------------------------------------------


def test_the_namesrv_embeds_a_dledger_controller_of_one_peer() -> None:
    conf = namesrv_controller_config(19876, 19878, Path("/w/namesrv/controller"))
    assert conf == {
        "listenPort": "19876",
        "enableControllerInNamesrv": "true",
        "controllerType": "DLedger",
        "controllerDLegerGroup": "rocketmq-py-controller",
        "controllerDLegerPeers": "n0-127.0.0.1:19878",
        "controllerDLegerSelfId": "n0",
        "controllerStorePath": "/w/namesrv/controller",
        "mappedFileSize": str(16 * 1024 * 1024),
        "enableElectUncleanMaster": "false",
        "notifyBrokerRoleChanged": "true",
    }


def test_the_launcher_writes_the_controller_into_namesrv_properties(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "jdk" / "bin").mkdir(parents=True)
    (tmp_path / "jdk" / "bin" / "java").write_text("")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    classpath = Classpath("server", "5.3.3", tmp_path / "lib")
    launcher = NodeLauncher(tmp_path, classpath, "py-1-abc", "5.3.3", tls_files=None, detached=False)
    cluster = ControllerCluster(workdir=tmp_path)
    cluster.workdir = tmp_path
    cluster._namesrv_port, cluster._controller_port = 19876, 19878
    proc = launcher.namesrv(19876, cluster.namesrv_conf())
    lines = (tmp_path / "namesrv" / "namesrv.properties").read_text().splitlines()
    assert lines[0] == "listenPort=19876"
    assert "enableControllerInNamesrv=true" in lines
    assert "controllerDLegerPeers=n0-127.0.0.1:19878" in lines
    assert f"controllerStorePath={tmp_path / 'namesrv' / 'controller'}" in lines
    assert proc.argv[-3] == "org.apache.rocketmq.namesrv.NamesrvStartup"
    plain = launcher.namesrv(19876)
    assert (tmp_path / "namesrv" / "namesrv.properties").read_text() == "listenPort=19876\n"
    assert plain.name == "namesrv"


def test_every_replica_is_in_controller_mode_with_its_own_ports_and_store(tmp_path: Path) -> None:
    cluster = cluster_on(tmp_path, controller=19878, namesrv=19876)
    confs = {node: cluster.broker_conf(node) for node in NODES}
    first = confs["broker-a-n0"]
    assert first["brokerClusterName"] == "DefaultCluster"
    assert first["brokerName"] == "broker-a"
    assert (first["brokerId"], first["brokerRole"]) == ("-1", "SLAVE")  # the controller decides
    assert first["enableControllerMode"] == "true"
    assert first["controllerAddr"] == "127.0.0.1:19878"  # the controller's port, not the NameServer's
    assert first["namesrvAddr"] == "127.0.0.1:19876"
    assert first["allAckInSyncStateSet"] == "true"
    assert first["slaveReadEnable"] == "true"
    assert first["brokerIP1"] == first["brokerIP2"] == "127.0.0.1"  # HA replication on loopback too
    assert (first["listenPort"], first["haListenPort"]) == ("20001", "20002")
    store = tmp_path / "broker-a-n0" / "store"
    assert first["storePathRootDir"] == str(store)
    assert first["storePathBrokerIdentity"] == str(store / "brokerIdentity")
    assert first["storePathEpochFile"] == str(store / "epochFileCheckpoint")
    assert first["registerNameServerPeriod"] == "10000"  # the kit's broker defaults still apply
    # The replicas differ in their ports and store paths only.
    per_node = {"listenPort", "haListenPort", "storePathRootDir", "storePathCommitLog"}
    per_node |= {"storePathBrokerIdentity", "storePathEpochFile"}
    for node in NODES[1:]:
        differing = {k for k in first if confs[node][k] != first[k]}
        assert differing == per_node
        assert confs[node].keys() == first.keys()
    with pytest.raises(ClusterError, match="broker-a-n7"):
        cluster.broker_conf("broker-a-n7")


def test_extra_broker_entries_come_last() -> None:
    conf = controller_broker_config(
        "broker-a",
        namesrv="127.0.0.1:1",
        controller="127.0.0.1:2",
        port=20001,
        store=Path("/s"),
        extra={"allAckInSyncStateSet": "false", "brokerElectionPriority": "1"},
    )
    assert conf["allAckInSyncStateSet"] == "false"
    assert conf["brokerElectionPriority"] == "1"


def test_ports_are_free_blocks_none_shared() -> None:
    cluster = ControllerCluster()
    cluster.pick_ports(random.Random(7))
    used = [cluster._namesrv_port, cluster._controller_port]
    for node in NODES:
        port = int(cluster.node_address(node).rpartition(":")[2])
        used += [port - 2, port, port + 1]  # VIP channel, listen, HA
    assert len(set(used)) == len(used) == 11
    assert cluster.namesrv_addr == f"127.0.0.1:{cluster._namesrv_port}"
    assert cluster.controller_addr == f"127.0.0.1:{cluster._controller_port}"


def test_the_controller_id_is_read_from_the_identity_file(tmp_path: Path) -> None:
    assert read_controller_id(tmp_path, "broker-a") is None  # not registered yet
    (tmp_path / "brokerIdentity").write_text("DefaultCluster#broker-a#2")
    assert read_controller_id(tmp_path, "broker-a") == 2
    assert read_controller_id(tmp_path, "broker-b") is None
    for junk in ("DefaultCluster#broker-a#x", "DefaultCluster#broker-a", ""):
        (tmp_path / "brokerIdentity").write_text(junk)
        assert read_controller_id(tmp_path, "broker-a") is None


# --- the controller's replies ------------------------------------------------------------------


def test_a_replica_info_reply_decodes_header_and_sync_state_set(serve: Callable[..., FakeServer]) -> None:
    fields = {"masterAddress": "127.0.0.1:20101", "masterBrokerId": "2", "masterEpoch": "3"}
    server = serve(lambda code, ext: (0, fields, sync_state_body([1, 2, 3], 4)))
    info = replica_info(server.address, "broker-a")
    assert info == ReplicaInfo(2, "127.0.0.1:20101", 3, frozenset({1, 2, 3}), 4)
    assert server.requests == [(GET_REPLICA_INFO, {"brokerName": "broker-a"})]


def test_a_group_without_a_master_has_no_master_fields() -> None:
    info = decode_replica_info({"masterEpoch": "2"}, sync_state_body([], 5))
    assert info == ReplicaInfo(None, None, 2, frozenset(), 5)
    assert decode_replica_info({}, b"") == ReplicaInfo(None, None, 0, frozenset(), 0)


@pytest.mark.parametrize(
    ("fields", "body", "match"),
    [
        ({"masterBrokerId": "two"}, b"", "masterBrokerId is not a number"),
        ({}, b"{nope", "does not parse"),
        ({}, b"[1,2]", "not an object"),
        ({}, b'{"syncStateSet":["1"],"syncStateSetEpoch":1}', "not ids and an epoch"),
    ],
)
def test_a_reply_that_is_not_what_java_writes_is_an_error(
    fields: dict[str, str], body: bytes, match: str
) -> None:
    with pytest.raises(ClusterError, match=match):
        decode_replica_info(fields, body)


def test_not_leader_and_unknown_group_mean_not_yet_other_codes_fail(
    serve: Callable[..., FakeServer],
) -> None:
    for code in (2007, 2008):  # CONTROLLER_NOT_LEADER, CONTROLLER_BROKER_METADATA_NOT_EXIST
        server = serve(lambda c, ext, code=code: (code, {}, b""))
        assert replica_info(server.address, "broker-a") is None
    failing = serve(lambda c, ext: (1, {}, b""))
    with pytest.raises(ClusterError, match="answered code 1 about broker-a"):
        replica_info(failing.address, "broker-a")


def test_the_metadata_names_the_leader(serve: Callable[..., FakeServer]) -> None:
    fields = {
        "group": "rocketmq-py-controller",
        "controllerLeaderId": "n0",
        "controllerLeaderAddress": "127.0.0.1:19878",
        "isLeader": "true",
        "peers": "n0:127.0.0.1:19878;",
    }
    server = serve(lambda code, ext: (0, fields, b""))
    meta = controller_metadata(server.address)
    assert (meta.leader_id, meta.leader_address, meta.is_leader) == ("n0", "127.0.0.1:19878", True)
    assert server.requests == [(GET_METADATA_INFO, {})]
    assert not decode_controller_metadata({"isLeader": "false"}).is_leader
    assert decode_controller_metadata({}).leader_address is None


# --- members and waits -------------------------------------------------------------------------


def cluster_info_body(addrs: dict[int, str]) -> bytes:
    """GET_BROKER_CLUSTER_INFO's body as the NameServer writes it (fastjson: unquoted int keys)."""
    table = ",".join(f'{k}:"{v}"' for k, v in sorted(addrs.items()))
    return (
        '{"brokerAddrTable":{"broker-a":{"brokerAddrs":{' + table + '},"brokerName":"broker-a",'
        '"cluster":"DefaultCluster","enableActingMaster":false}},'
        '"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
    ).encode()


def test_a_new_master_is_awaited_until_elected_and_registered(
    tmp_path: Path, serve: Callable[..., FakeServer]
) -> None:
    masters = iter(["127.0.0.1:20001", "127.0.0.1:20001", "127.0.0.1:20101"])
    last = ["127.0.0.1:20001"]

    def controller(code: int, ext: Mapping[str, str]) -> Answer:
        last[0] = next(masters, last[0])
        broker_id = {"127.0.0.1:20001": "1", "127.0.0.1:20101": "2"}[last[0]]
        fields = {"masterAddress": last[0], "masterBrokerId": broker_id, "masterEpoch": "2"}
        return 0, fields, sync_state_body([int(broker_id)], 3)

    registered = iter([{2: "127.0.0.1:20101", 3: "127.0.0.1:20201"}])

    def namesrv(code: int, ext: Mapping[str, str]) -> Answer:
        assert code == GET_BROKER_CLUSTER_INFO
        return 0, {}, cluster_info_body(next(registered, {0: "127.0.0.1:20101", 3: "127.0.0.1:20201"}))

    ctl, ns = serve(controller), serve(namesrv)
    cluster = cluster_on(tmp_path, controller=ctl.port, namesrv=ns.port)
    cluster._master = "broker-a-n0"
    cluster.kill_broker("broker-a-n0")
    assert cluster.master is None
    assert cluster.wait_for_master(10, other_than="broker-a-n0") == "broker-a-n1"
    assert cluster.master == "broker-a-n1"
    assert cluster.brokers == [BrokerInfo("broker-a", "127.0.0.1:20101", 0)]
    assert cluster.slaves == [BrokerInfo("broker-a", "127.0.0.1:20201", 3)]  # n0 is dead
    assert cluster.expected_members() == [*cluster.brokers, *cluster.slaves]
    assert cluster.missing_members() == []


def test_no_master_within_the_timeout_says_what_the_controller_said(
    tmp_path: Path, serve: Callable[..., FakeServer]
) -> None:
    ctl = serve(lambda code, ext: (0, {"masterEpoch": "2"}, sync_state_body([], 3)))
    cluster = cluster_on(tmp_path, controller=ctl.port)
    with pytest.raises(ClusterError, match=r"no master was elected.*master_broker_id=None.*'broker-a-n0': 1"):
        cluster.wait_for_master(0.3)


def test_in_sync_means_every_running_replica_in_the_sync_state_set(
    tmp_path: Path, serve: Callable[..., FakeServer]
) -> None:
    sets = iter([[1], [1, 2]])

    def controller(code: int, ext: Mapping[str, str]) -> Answer:
        fields = {"masterAddress": "127.0.0.1:20001", "masterBrokerId": "1", "masterEpoch": "1"}
        return 0, fields, sync_state_body(next(sets, [1, 2, 3]), 2)

    cluster = cluster_on(tmp_path, controller=serve(controller).port)
    assert cluster.wait_until_in_sync(10).sync_state_set == {1, 2, 3}
    cluster._brokers["broker-a-n2"].alive = False  # type: ignore[attr-defined]
    stuck = serve(lambda code, ext: (0, {"masterBrokerId": "1", "masterEpoch": "1"}, sync_state_body([1], 2)))
    cluster._controller_port = stuck.port
    with pytest.raises(ClusterError, match="did not all get in sync"):
        cluster.wait_until_in_sync(0.3)


def test_the_master_node_is_what_the_controller_names(
    tmp_path: Path, serve: Callable[..., FakeServer]
) -> None:
    fields = {"masterAddress": "127.0.0.1:20201", "masterBrokerId": "3", "masterEpoch": "1"}
    cluster = cluster_on(tmp_path, controller=serve(lambda code, ext: (0, fields, b"")).port)
    assert cluster.master_node() == "broker-a-n2"
    assert cluster.controller_id("broker-a-n2") == 3
    cluster.kill_broker("broker-a-n2")
    assert cluster.master is None
    assert cluster.brokers == []


def test_the_controller_is_awaited_until_it_leads(tmp_path: Path, serve: Callable[..., FakeServer]) -> None:
    answers = iter(["false", "false"])
    ctl = serve(lambda code, ext: (0, {"isLeader": next(answers, "true")}, b""))
    cluster = cluster_on(tmp_path, controller=ctl.port)
    cluster._wait_for_controller()
    assert len(ctl.requests) == 3


# --- errors ------------------------------------------------------------------------------------


def test_a_controller_group_needs_5x_and_two_replicas() -> None:
    with pytest.raises(ClusterError, match=r"4\.9\.7 has no controller mode: it came with 5\.0"):
        ControllerCluster(version="4.9.7")
    with pytest.raises(ClusterError, match="2 to 9 replicas, not 1"):
        ControllerCluster(1)
    cluster = ControllerCluster()
    assert cluster.nodes == NODES
    assert cluster.brokers == []  # nothing elected before start
    with pytest.raises(ClusterError, match="its controller"):
        cluster.stop_namesrv()
    with pytest.raises(ClusterError, match="no broker node named 'broker-a'"):
        cluster.kill_broker("broker-a")
    with pytest.raises(ClusterError, match="never started"):
        cluster.kill_broker("broker-a-n0")


def test_the_server_jars_must_hold_the_controller(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "rocketmq-broker-5.3.3.jar").write_text("")
    with pytest.raises(ClusterError, match="no rocketmq-controller-"):
        check_controller_jars(Classpath("server", "5.3.3", lib))
    (lib / "rocketmq-controller-5.3.3.jar").write_text("")
    check_controller_jars(Classpath("server", "5.3.3", lib))


def test_start_cluster_takes_controller_alone_on_the_jar_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROCKETMQ_NAMESRV", raising=False)
    for shape in ({"brokers": 2}, {"acl": True}, {"slaves": ["broker-a"]}, {"proxy": True}):
        with pytest.raises(ClusterError, match="one broker group of three replicas"):
            start_cluster(controller=True, backend="jar", **shape)
    with pytest.raises(ClusterError, match="no controller mode"):
        start_cluster(controller=True, backend="jar", version="4.9.7")
    monkeypatch.setenv("ROCKETMQ_NAMESRV", "127.0.0.1:1")
    with pytest.raises(ClusterError, match="jar backend"):
        start_cluster(controller=True)


def test_up_controller_takes_no_other_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROCKETMQ_PY_CACHE", str(tmp_path / "cache"))
    assert main(["up", "--controller", "--acl"]) == 1
    assert "takes no other shape" in capsys.readouterr().err
    assert main(["up", "--controller", "--version", "4.9.7"]) == 1
    assert "no controller mode" in capsys.readouterr().err
