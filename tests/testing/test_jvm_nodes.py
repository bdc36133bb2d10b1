"""A local cluster's node launcher: the config file it writes and the JVM it builds (none is started)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._distribution import Classpath, resolve_proxy
from rocketmq_py.testing._jvm_nodes import (
    BROKER_HEAP,
    JVM_OPTS_ENV,
    NAMESRV_HEAP,
    PROXY_HEAP,
    NodeLauncher,
    no_tls_file,
    node_log,
    proxy_config,
)
from rocketmq_py.testing._local import LocalCluster
from rocketmq_py.testing._processes import TIMER_SLACK_ENV, marker_for


@pytest.fixture
def java(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text("")
    monkeypatch.setenv("JAVA_HOME", str(home))
    monkeypatch.setenv("NAMESRV_ADDR", "10.0.0.1:9876")  # must not leak into the nodes
    return str(home / "bin" / "java")


def _launcher(workdir: Path, version: str = "5.3.1") -> NodeLauncher:
    classpath = Classpath("server", version, workdir / "lib")
    return NodeLauncher(workdir, classpath, "py-1-abc", version, tls_files=None, detached=False)


def test_the_namesrv_gets_its_port_in_its_own_directory(tmp_path: Path, java: str) -> None:
    proc = _launcher(tmp_path).namesrv(19876)
    node = tmp_path / "namesrv"
    conf = node / "namesrv.properties"
    assert conf.read_text().splitlines() == ["listenPort=19876"]
    assert proc.name == "namesrv"
    assert proc.cwd == node
    assert proc.log_path == node_log(tmp_path, "namesrv") == node / "stdout.log"
    assert proc.argv[0] == java
    assert proc.argv[1 : 1 + len(NAMESRV_HEAP)] == NAMESRV_HEAP
    assert f"-Duser.home={node / 'home'}" in proc.argv
    assert marker_for("py-1-abc") in proc.argv
    assert proc.argv[-5:] == [
        "-cp",
        str(tmp_path / "lib" / "*"),
        "org.apache.rocketmq.namesrv.NamesrvStartup",
        "-c",
        str(conf),
    ]
    assert proc.env["ROCKETMQ_HOME"] == str(tmp_path)
    assert "NAMESRV_ADDR" not in proc.env


def test_a_broker_gets_its_conf_and_a_4x_one_keeps_logback_chatter(tmp_path: Path, java: str) -> None:
    proc = _launcher(tmp_path, "4.9.7").broker("broker-b-slave", {"brokerName": "broker-b", "brokerId": "1"})
    conf = tmp_path / "broker-b-slave" / "broker.conf"
    assert conf.read_text().splitlines() == ["brokerName=broker-b", "brokerId=1"]
    assert proc.argv[1 : 1 + len(BROKER_HEAP)] == BROKER_HEAP
    assert proc.argv[-3:] == ["org.apache.rocketmq.broker.BrokerStartup", "-c", str(conf)]
    assert not any(arg.startswith("-Dlogback.statusListenerClass=") for arg in proc.argv)
    assert not any(arg.startswith("-Dtls.") for arg in proc.argv)
    five = _launcher(tmp_path).broker("broker-a", {})
    assert any(arg.startswith("-Dlogback.statusListenerClass=") for arg in five.argv)


def test_the_tls_config_file_is_one_that_does_not_exist(tmp_path: Path) -> None:
    assert no_tls_file(tmp_path) == tmp_path / "tls" / "no-tls.properties"
    assert not no_tls_file(tmp_path).exists()


def test_a_proxy_runs_in_cluster_mode_from_its_own_jars_with_its_json_config(
    tmp_path: Path, java: str
) -> None:
    conf = proxy_config("DefaultCluster", "127.0.0.1:19876", 18080, 18081)
    proxy_jars = Classpath("proxy", "5.3.1", tmp_path / "proxy-lib")
    proc = _launcher(tmp_path).proxy(proxy_jars, conf)
    node = tmp_path / "proxy"
    written = json.loads((node / "rmq-proxy.json").read_text())
    assert written == {
        "rocketMQClusterName": "DefaultCluster",
        "namesrvAddr": "127.0.0.1:19876",
        "remotingListenPort": 18080,
        "grpcServerPort": 18081,
        "proxyMode": "cluster",
        "localServeAddr": "127.0.0.1",
    }
    assert (proc.name, proc.cwd, proc.log_path) == ("proxy", node, node / "stdout.log")
    assert proc.argv[1 : 1 + len(PROXY_HEAP)] == PROXY_HEAP
    assert f"-Duser.home={node / 'home'}" in proc.argv
    assert proc.argv[-7:] == [
        "-cp",
        str(tmp_path / "proxy-lib" / "*"),
        "org.apache.rocketmq.proxy.ProxyStartup",
        "-pc",
        str(node / "rmq-proxy.json"),
        "-pm",
        "cluster",
    ]
    assert proc.env["RMQ_PROXY_HOME"] == str(node)
    assert "NAMESRV_ADDR" not in proc.env


def test_a_proxy_needs_a_5x_release_and_a_plain_cluster() -> None:
    with pytest.raises(ClusterError, match=r"4\.9\.7 has no Proxy"):
        resolve_proxy("4.9.7")
    with pytest.raises(ClusterError, match=r"4\.9\.7 has no Proxy"):
        LocalCluster(1, version="4.9.7", proxy=True)
    with pytest.raises(ClusterError, match="ACL or TLS"):
        LocalCluster(1, acl=True, proxy=True)
    plain = LocalCluster(1)
    assert plain.proxy_addr is None
    with pytest.raises(ClusterError, match="has no Proxy"):
        plain.client_options(proxy=True)


def test_every_node_keeps_its_temporary_files_in_its_own_directory(tmp_path: Path, java: str) -> None:
    """RocketMQ's TLS test mode writes self-signed certificates to ``java.io.tmpdir`` and deletes
    them only on a clean exit: a killed JVM left them in /tmp (1,292 there after a few CI runs)."""
    launcher = _launcher(tmp_path)
    for proc, node in (
        (launcher.namesrv(19876), "namesrv"),
        (launcher.broker("broker-a", {"brokerName": "broker-a"}), "broker-a"),
    ):
        assert f"-Djava.io.tmpdir={tmp_path / node}" in proc.argv


def test_extra_jvm_options_come_from_the_environment(
    tmp_path: Path, java: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``RMQ_JVM_OPTS`` (make test's C1-only JIT) joins every node's options, after its own and
    before the class path; unset, nothing joins."""
    monkeypatch.delenv(JVM_OPTS_ENV, raising=False)
    plain = _launcher(tmp_path).namesrv(19876).argv
    monkeypatch.setenv(JVM_OPTS_ENV, " -XX:TieredStopAtLevel=1   -XX:CICompilerCount=1 ")
    for proc in (_launcher(tmp_path).namesrv(19876), _launcher(tmp_path).broker("broker-a", {})):
        cp = proc.argv.index("-cp")
        assert proc.argv[cp - 2 : cp] == ["-XX:TieredStopAtLevel=1", "-XX:CICompilerCount=1"]
        assert proc.argv.index("-XX:+UseG1GC") < cp - 2
    assert not any(arg.startswith("-XX:Tiered") for arg in plain)


def test_the_nodes_get_the_kits_timer_slack(
    tmp_path: Path, java: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``RMQ_TIMER_SLACK_MS`` (``make test``: 20) reaches every RocketMQ node of the jar backend."""
    monkeypatch.delenv(TIMER_SLACK_ENV, raising=False)
    assert _launcher(tmp_path).namesrv(19876).timer_slack_ns is None
    monkeypatch.setenv(TIMER_SLACK_ENV, "20")
    launcher = _launcher(tmp_path)
    proxy = launcher.proxy(Classpath("proxy", "5.3.1", tmp_path / "proxy-lib"), {})
    for proc in (launcher.namesrv(19876), launcher.broker("broker-a", {}), proxy):
        assert proc.timer_slack_ns == 20_000_000, proc.name
