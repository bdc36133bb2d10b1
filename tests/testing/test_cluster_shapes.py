"""The production shapes of the launcher without a JVM: ACL files, TLS certificates, slaves, options."""

from __future__ import annotations

import json
import os
import socket
import ssl
import threading
from pathlib import Path

import pytest

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing import Credentials, LocalCluster, start_cluster
from rocketmq_py.testing._acl import acl_broker_config, write_plain_acl, write_tools_credentials
from rocketmq_py.testing._cluster import BrokerInfo
from rocketmq_py.testing._local import REGISTER_PERIOD_MS, broker_config
from rocketmq_py.testing._tls import make_tls_files


def test_credentials_hide_the_secret_and_generate_valid_keys() -> None:
    creds = Credentials("alice-ak", "very-secret-1")
    assert "very-secret-1" not in repr(creds)
    assert "alice-ak" in repr(creds)
    fresh = Credentials.generate()
    assert fresh != Credentials.generate()
    assert len(fresh.access_key) > 6
    assert len(fresh.secret_key) > 6  # 4.x refuses keys of 6 characters or fewer


def test_acl_on_4x_is_plain_acl_with_one_admin_and_no_white_list(tmp_path: Path) -> None:
    creds = Credentials("alice-ak", 'se"cret:1')
    assert acl_broker_config("4.9.7", creds) == {"aclEnable": "true"}
    write_plain_acl(tmp_path, "4.9.7", creds)
    text = (tmp_path / "conf" / "plain_acl.yml").read_text()
    assert "globalWhiteRemoteAddresses: []\n" in text
    assert f"accessKey: {json.dumps('alice-ak')}\n" in text
    assert f"secretKey: {json.dumps(creds.secret_key)}\n" in text
    assert "admin: true\n" in text
    assert "whiteRemoteAddress:\n" in text  # empty: the signature is always checked


def test_acl_on_5x_is_acl_2_with_a_super_user_and_inner_credentials(tmp_path: Path) -> None:
    creds = Credentials("alice-ak", "secret-12")
    conf = acl_broker_config("5.3.3", creds)
    assert conf["authenticationEnabled"] == "true"
    assert conf["authorizationEnabled"] == "true"
    assert conf["authenticationMetadataProvider"].endswith(".LocalAuthenticationMetadataProvider")
    assert conf["authorizationMetadataProvider"].endswith(".LocalAuthorizationMetadataProvider")
    assert json.loads(conf["initAuthenticationUser"]) == {"username": "alice-ak", "password": "secret-12"}
    assert json.loads(conf["innerClientAuthenticationCredentials"]) == {
        "accessKey": "alice-ak",
        "secretKey": "secret-12",
    }
    assert "aclEnable" not in conf  # ACL 1.0 is gone from 5.3
    write_plain_acl(tmp_path, "5.3.3", creds)
    assert not (tmp_path / "conf").exists()


def test_tools_read_the_account_from_tools_yml(tmp_path: Path) -> None:
    write_tools_credentials(tmp_path, Credentials("alice-ak", "secret-12"))
    assert (tmp_path / "conf" / "tools.yml").read_text() == 'accessKey: "alice-ak"\nsecretKey: "secret-12"\n'


def test_slave_config_shares_the_name_with_id_1(tmp_path: Path) -> None:
    conf = broker_config("broker-b", namesrv="127.0.0.1:9876", port=20911, store=tmp_path, broker_id=1)
    assert conf["brokerName"] == "broker-b"
    assert conf["brokerId"] == "1"
    assert conf["brokerRole"] == "SLAVE"
    assert conf["haListenPort"] == "20912"
    master = broker_config("broker-b", namesrv="127.0.0.1:9876", port=20811, store=tmp_path)
    assert master["brokerRole"] == "ASYNC_MASTER"
    # A restarted NameServer learns the brokers within a period: the shortest one brokers accept.
    assert master["registerNameServerPeriod"] == str(REGISTER_PERIOD_MS) == "10000"


def test_tls_files_make_a_server_a_verifying_client_trusts(tmp_path: Path) -> None:
    files = make_tls_files(tmp_path / "tls")
    assert "BEGIN PRIVATE KEY" in files.server_key.read_text()  # PKCS#8, as netty wants
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(files.server_cert, files.server_key)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def serve() -> None:
            conn, _ = listener.accept()
            with server_ctx.wrap_socket(conn, server_side=True) as tls:
                tls.sendall(b"ok")

        thread = threading.Thread(target=serve)
        thread.start()
        raw = socket.create_connection(("127.0.0.1", port), timeout=10)
        with files.client_context().wrap_socket(raw, server_hostname="127.0.0.1") as client:
            assert client.recv(2) == b"ok"
        thread.join(10)
    flags = files.jvm_properties(tmp_path / "none.properties")
    assert "-Dtls.server.mode=enforcing" in flags
    assert "-Dtls.test.mode.enable=false" in flags
    assert f"-Dtls.client.trustCertPath={files.ca_cert}" in flags
    assert "-Dtls.enable=true" in files.tool_properties(tmp_path / "none.properties")


def test_an_untrusting_client_refuses_the_cluster_certificate(tmp_path: Path) -> None:
    files = make_tls_files(tmp_path / "tls")
    other = make_tls_files(tmp_path / "other")
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(files.server_cert, files.server_key)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def serve() -> None:
            conn, _ = listener.accept()
            with conn, pytest.raises(ssl.SSLError):
                server_ctx.wrap_socket(conn, server_side=True)

        thread = threading.Thread(target=serve)
        thread.start()
        raw = socket.create_connection(("127.0.0.1", port), timeout=10)
        with pytest.raises(ssl.SSLCertVerificationError):
            other.client_context().wrap_socket(raw, server_hostname="127.0.0.1")
        raw.close()
        thread.join(10)


def test_shape_options_and_node_names_before_start() -> None:
    creds = Credentials("alice-ak", "secret-12")
    cluster = LocalCluster(2, acl=creds, slaves=["broker-b"])
    assert cluster.credentials == creds
    assert LocalCluster(1, acl=True).credentials is not None
    assert LocalCluster(1).credentials is None
    cluster._broker_ports.update({"broker-a": 20001, "broker-b": 20101, "broker-b-slave": 20201})
    assert cluster.brokers == [
        BrokerInfo("broker-a", "127.0.0.1:20001"),
        BrokerInfo("broker-b", "127.0.0.1:20101"),
    ]
    assert cluster.slaves == [BrokerInfo("broker-b", "127.0.0.1:20201", broker_id=1)]
    options = cluster.client_options()
    assert options["access_key"] == "alice-ak"
    assert options["secret_key"] == "secret-12"
    assert "ssl_context" not in options
    with pytest.raises(ClusterError, match="broker-z"):
        LocalCluster(2, slaves=["broker-z"])
    slave_conf = cluster.broker_conf("broker-b-slave")
    assert (slave_conf["brokerName"], slave_conf["brokerId"], slave_conf["brokerRole"]) == (
        "broker-b",
        "1",
        "SLAVE",
    )
    assert slave_conf["listenPort"] == "20201"
    # 5.x slaves refuse pulls without it; the 5.x ACL account is in every broker's config.
    assert slave_conf["slaveReadEnable"] == cluster.broker_conf("broker-a")["slaveReadEnable"] == "true"
    assert "alice-ak" in cluster.broker_conf("broker-a")["initAuthenticationUser"]
    plain = LocalCluster(1)
    plain._broker_ports["broker-a"] = 20001
    assert "slaveReadEnable" not in plain.broker_conf("broker-a")


def test_a_relayed_cluster_binds_brokers_behind_the_relay_and_refuses_what_cannot_be_relayed() -> None:
    relayed = LocalCluster(2, relay=True)
    relayed._broker_ports.update({"broker-a": 20001, "broker-b": 20101})
    conf = relayed.broker_conf("broker-a")
    assert conf["bindAddress"] == "127.0.0.2"  # the broker listens there ...
    assert conf["brokerIP1"] == "127.0.0.1"  # ... and advertises the relay's address
    assert relayed.brokers[0].address == "127.0.0.1:20001"
    plain = LocalCluster(1)
    plain._broker_ports["broker-a"] = 20001
    assert "bindAddress" not in plain.broker_conf("broker-a")
    plain._brokers["broker-a"] = None  # type: ignore[assignment]  # a known node, never started
    with pytest.raises(ClusterError, match="relay=True"):
        plain.block_broker("broker-a")
    for refused, why in (
        ({"version": "4.9.7"}, r"needs a 5\.x broker: a 4\.9\.7 broker listens on every address"),
        ({"detached": True}, "cannot be detached"),
        ({"broker_config": {"brokerIP1": "10.0.0.5"}}, "takes brokerIP1"),
    ):
        with pytest.raises(ClusterError, match=why):
            LocalCluster(1, relay=True, **refused)  # type: ignore[arg-type]
    LocalCluster(1, version="4.9.7")  # without a relay, all fine


def test_other_backends_refuse_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCKETMQ_NAMESRV", "127.0.0.1:1")
    with pytest.raises(ClusterError, match="jar backend"):
        start_cluster(acl=True)
    with pytest.raises(ClusterError, match="jar backend"):
        start_cluster(slaves=["broker-a"])
    with pytest.raises(ClusterError, match="jar backend"):
        start_cluster(relay=True)


def test_tools_of_a_detached_shaped_cluster_sign_and_speak_tls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rocketmq_py.testing import _cli
    from rocketmq_py.testing._processes import Registry

    monkeypatch.setenv("ROCKETMQ_PY_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("ROCKETMQ_NAMESRV", raising=False)
    reg = Registry(
        cluster_id="up-shape",
        owner_pid=os.getpid(),
        owner_start=None,
        detached=True,
        workdir=str(tmp_path / "work"),
        namesrv="127.0.0.1:9876",
        pids={"namesrv": os.getpid()},
        version="5.3.3",
        shape={"acl": True, "tls": True},
    )
    reg.save()
    namesrv, version, settings = _cli._target()
    assert (namesrv, version) == ("127.0.0.1:9876", "5.3.3")
    assert settings["home"] == tmp_path / "work" / "tools-home"
    assert f"-Dtls.client.trustCertPath={tmp_path / 'work' / 'tls' / 'ca.pem'}" in settings["jvm_opts"]
    reg.shape = {}
    reg.save()
    assert _cli._target()[2] == {}
    reg.remove()
