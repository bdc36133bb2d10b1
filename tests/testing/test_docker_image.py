"""The docker backend's pure parts: the image's start scripts and build context, the containers'
start commands (no Docker engine needed)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from rocketmq_py.testing._docker import _proxy_command, _start_command
from rocketmq_py.testing._image import _DOCKERFILE, _context, local_image
from rocketmq_py.testing._jvm_nodes import proxy_config

FAKE_JAVA = """#!/bin/sh
printf '%s\\n' "$@" > "$ARGS_OUT"
"""


@pytest.fixture
def image_tree(tmp_path: Path) -> Path:
    """The build context of a 5.3.3 image unpacked into ``tmp_path/ctx`` (two fake server jars and
    one fake Proxy jar)."""
    jars = []
    for name in ("rocketmq-broker-5.3.3.jar", "rocketmq-namesrv-5.3.3.jar", "proxy/rocketmq-proxy-5.3.3.jar"):
        jar = tmp_path / name
        jar.parent.mkdir(exist_ok=True)
        jar.write_bytes(b"PK")
        jars.append(jar)
    data = _context("5.3.3", jars[:2], jars[2:], "abc123")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(tmp_path / "ctx", filter="data")
    return tmp_path / "ctx"


def test_context_has_the_upstream_layout(image_tree: Path) -> None:
    home = image_tree / "rocketmq-5.3.3"
    assert sorted(p.name for p in (home / "lib").iterdir()) == [
        "rocketmq-broker-5.3.3.jar",
        "rocketmq-namesrv-5.3.3.jar",
    ]
    # The Proxy's jars apart: its dependencies differ from the server's in a few versions.
    assert [p.name for p in (home / "lib-proxy").iterdir()] == ["rocketmq-proxy-5.3.3.jar"]
    for script in ("mqnamesrv", "mqbroker", "mqadmin", "mqproxy"):
        assert os.access(home / "bin" / script, os.X_OK)
    dockerfile = (image_tree / "Dockerfile").read_text()
    assert "WORKDIR /home/rocketmq/rocketmq-5.3.3/bin" in dockerfile
    assert "USER rocketmq" in dockerfile
    assert "org.rocketmq-py.recipe=abc123" in dockerfile
    assert _DOCKERFILE.startswith("FROM rocketmq-py/debian-jre:bookworm")
    assert local_image("4.9.7") == "rocketmq-py/rocketmq:4.9.7"


def test_scripts_pass_arguments_and_java_opt_ext(image_tree: Path, tmp_path: Path) -> None:
    fake_bin = tmp_path / "fakebin"
    fake_bin.mkdir()
    (fake_bin / "java").write_text(FAKE_JAVA)
    (fake_bin / "java").chmod(0o755)
    out = tmp_path / "args"
    env = {"PATH": f"{fake_bin}:/usr/bin:/bin", "ARGS_OUT": str(out), "JAVA_OPT_EXT": "-Xmx123m -Dx=1"}
    home = image_tree / "rocketmq-5.3.3"
    subprocess.run(["sh", "mqbroker", "-c", "/conf/b.conf"], cwd=home / "bin", env=env, check=True)
    args = out.read_text().splitlines()
    assert args[-3:] == ["org.apache.rocketmq.broker.BrokerStartup", "-c", "/conf/b.conf"]
    assert "-Xmx123m" in args
    assert "-Dx=1" in args
    assert f"-Drocketmq.home.dir={home}" in args
    assert args[args.index("-cp") + 1] == f"{home}/lib/*"
    env["JAVA_OPT"] = "-Xmx64m"
    subprocess.run(["sh", "mqnamesrv"], cwd=home / "bin", env=env, check=True)
    args = out.read_text().splitlines()
    assert args[-1] == "org.apache.rocketmq.namesrv.NamesrvStartup"
    assert "-Xmx64m" in args  # JAVA_OPT replaces the default heap
    assert "-Xmx512m" not in args
    del env["JAVA_OPT"]
    subprocess.run(
        ["sh", "mqproxy", "-pc", "/tmp/p.json", "-pm", "cluster"], cwd=home / "bin", env=env, check=True
    )
    args = out.read_text().splitlines()
    assert args[-5:] == ["org.apache.rocketmq.proxy.ProxyStartup", "-pc", "/tmp/p.json", "-pm", "cluster"]
    assert args[args.index("-cp") + 1] == f"{home}/lib-proxy/*"
    assert "-Xmx123m" in args


def test_a_4x_image_has_no_proxy(tmp_path: Path) -> None:
    jar = tmp_path / "rocketmq-broker-4.9.7.jar"
    jar.write_bytes(b"PK")
    with tarfile.open(fileobj=io.BytesIO(_context("4.9.7", [jar], [], "r"))) as tar:
        names = tar.getnames()
    assert "rocketmq-4.9.7/bin/mqbroker" in names
    assert not [n for n in names if "proxy" in n]


def test_start_command_writes_the_properties_then_runs_the_script(tmp_path: Path) -> None:
    (tmp_path / "mqbroker").write_text('cat "$2" > seen.conf\necho "args: $*"\n')
    conf_path = tmp_path / "broker-a.conf"
    conf = {"brokerName": "broker-a", "namesrvAddr": "127.0.0.1:9876", "weird": "a b 'c' $HOME \\n"}
    command = _start_command(str(conf_path), conf, "mqbroker")
    assert command.startswith("sh -c ")
    done = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == f"args: -c {conf_path}"
    assert (tmp_path / "seen.conf").read_text() == "".join(f"{k}={v}\n" for k, v in conf.items())


def test_proxy_command_writes_its_json_then_starts_it_in_cluster_mode(tmp_path: Path) -> None:
    (tmp_path / "mqproxy").write_text('cat "$2" > seen.json\necho "args: $*"\n')
    conf_path = tmp_path / "rmq-proxy.json"
    conf = proxy_config("DefaultCluster", "127.0.0.1:9876", 18080, 18081)
    done = subprocess.run(
        _proxy_command(str(conf_path), conf),
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == f"args: -pc {conf_path} -pm cluster"
    assert json.loads((tmp_path / "seen.json").read_text()) == conf


def test_a_4x_docker_cluster_has_no_proxy() -> None:
    from rocketmq_py.errors import ClusterError
    from rocketmq_py.testing._docker import DockerCluster

    with pytest.raises(ClusterError, match=r"4\.9\.7 has no Proxy"):
        DockerCluster(version="4.9.7", proxy=True)
    assert DockerCluster(version="5.3.3").proxy_addr is None


def test_no_engine_is_a_cluster_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from rocketmq_py.errors import ClusterError
    from rocketmq_py.testing._docker import DockerCluster

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(ClusterError, match="needs a Docker engine that answers"):
        DockerCluster(1).start()


class _Images:
    """The part of docker's ``client.images`` that ensure_image uses, over a set of present tags."""

    def __init__(self, present: set[str], pullable: bool) -> None:
        self.present = present
        self.pullable = pullable
        self.pulled: list[str] = []

    def get(self, tag: str) -> object:
        import docker

        if tag not in self.present:
            raise docker.errors.ImageNotFound(tag)
        return type("Image", (), {"attrs": {"Config": {"Labels": {}}}})()

    def pull(self, repository: str, tag: str) -> None:
        import docker

        if not self.pullable:
            raise docker.errors.APIError("Get https://registry-1.docker.io/v2/: dial tcp: lookup failed")
        self.pulled.append(f"{repository}:{tag}")
        self.present.add(f"{repository}:{tag}")


class _Client:
    def __init__(self, images: _Images) -> None:
        self.images = images

    def close(self) -> None:
        pass


@pytest.mark.parametrize(
    ("present", "pullable", "expected", "built"),
    [
        (set(), True, "apache/rocketmq:5.3.3", False),  # a registry answers: no debootstrap, no root
        ({"apache/rocketmq:5.3.3"}, False, "apache/rocketmq:5.3.3", False),
        (set(), False, "rocketmq-py/rocketmq:5.3.3", True),  # no registry: ours is built
        ({"rocketmq-py/rocketmq:5.3.3"}, True, "rocketmq-py/rocketmq:5.3.3", True),  # kept up to date
    ],
)
def test_ensure_image_builds_only_where_no_registry_answers(
    monkeypatch: pytest.MonkeyPatch, present: set[str], pullable: bool, expected: str, built: bool
) -> None:
    from rocketmq_py.testing import _image

    images = _Images(set(present), pullable)
    builds: list[str] = []

    def build_image(version: str, *, log: object = None) -> str:
        builds.append(version)
        return _image.local_image(version)

    monkeypatch.setattr(_image, "_client", lambda: _Client(images))
    monkeypatch.setattr(_image, "build_image", build_image)
    said: list[str] = []
    assert _image.ensure_image("5.3.3", log=said.append) == expected
    assert builds == (["5.3.3"] if built else [])
    if not pullable and not present:
        assert any("cannot be pulled (" in line and "lookup failed" in line for line in said), said


class _RacingApi:
    """A Docker engine's API as docker-py's ``ContainerCollection`` calls it, where a container the
    listing named is removed before it is inspected: another process's cluster stopping at that moment
    (the engine answers 404 "No such container" to the inspect)."""

    def __init__(self, live: dict[str, dict[str, str]], gone: list[str]) -> None:
        self.live = live
        self.gone = gone
        self.removed: list[str] = []

    def containers(self, **_: object) -> list[dict[str, str]]:
        return [{"Id": cid} for cid in [*self.gone, *self.live]]

    def inspect_container(self, cid: str) -> dict[str, object]:
        import docker

        if cid not in self.live:
            raise docker.errors.NotFound(f"No such container: {cid}")
        return {"Id": cid, "Config": {"Labels": self.live[cid]}}

    def remove_container(self, cid: str, **_: object) -> None:
        self.removed.append(cid)


def test_orphan_cleanup_passes_over_a_container_removed_while_it_lists() -> None:
    """``DockerCluster.start`` removes the containers of dead owners; a container another live cluster
    removes between the engine's listing and the inspect of it is not an error (CI on 317b10f: the
    docker step's cluster did not start, "404 ... No such container")."""
    from docker.models.containers import ContainerCollection

    from rocketmq_py.testing._docker import _LABEL, _remove_orphans

    dead_pid = 1 << 23  # above any pid_max: no such process
    api = _RacingApi(
        live={"orphan": {_LABEL: f"{dead_pid}-0a0b0c0d"}, "alive": {_LABEL: f"{os.getpid()}-01020304"}},
        gone=["stopping"],
    )

    class Client:
        def __init__(self) -> None:
            self.api = api
            self.containers = ContainerCollection(client=self)

    _remove_orphans(Client())
    assert api.removed == ["orphan"]


def test_container_jvms_get_the_kits_options_after_their_heap(monkeypatch: pytest.MonkeyPatch) -> None:
    """RMQ_JVM_OPTS reaches the containers' JVMs as it reaches the jar backend's (after the node's
    own options, so it wins): ``make test``'s C1-only JIT and single GC thread for the docker run."""
    from rocketmq_py.testing._docker import _java_opt
    from rocketmq_py.testing._jvm_nodes import BROKER_HEAP, JVM_OPTS_ENV

    monkeypatch.setenv(JVM_OPTS_ENV, " -XX:TieredStopAtLevel=1  -XX:CICompilerCount=1 ")
    assert _java_opt(BROKER_HEAP) == " ".join(
        [*BROKER_HEAP, "-XX:TieredStopAtLevel=1", "-XX:CICompilerCount=1"]
    )
    monkeypatch.delenv(JVM_OPTS_ENV)
    assert _java_opt(BROKER_HEAP) == " ".join(BROKER_HEAP)
