"""The cluster launcher's pieces that need no JVM: configs, ports, backend choice, process hygiene."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing import _distribution, _processes, _settings
from rocketmq_py.testing._cluster import broker_names
from rocketmq_py.testing._local import broker_config, pick_port_block, render_properties
from rocketmq_py.testing._processes import JvmProcess, Registry, cleanup_stale, marker_for, wait_for_line
from rocketmq_py.testing._start import choose_backend


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("ROCKETMQ_PY_CACHE", str(cache))
    return cache


def test_broker_names() -> None:
    assert broker_names(1) == ["broker-a"]
    assert broker_names(3) == ["broker-a", "broker-b", "broker-c"]
    with pytest.raises(ClusterError):
        broker_names(0)


def test_broker_config_is_a_loopback_master_with_small_files(tmp_path: Path) -> None:
    conf = broker_config("broker-b", namesrv="127.0.0.1:9876", port=20911, store=tmp_path, extra={"x": "1"})
    assert conf["brokerName"] == "broker-b"
    assert conf["brokerId"] == "0"
    assert conf["brokerIP1"] == "127.0.0.1"
    assert conf["listenPort"] == "20911"
    assert conf["haListenPort"] == "20912"
    assert conf["storePathCommitLog"] == str(tmp_path / "commitlog")
    assert int(conf["mappedFileSizeCommitLog"]) < 1 << 30
    assert conf["x"] == "1"
    text = render_properties(conf)
    assert "brokerName=broker-b\n" in text
    assert text.endswith("\n")


def test_port_blocks_are_free_and_distinct() -> None:
    taken: set[int] = set()
    a = pick_port_block([-2, 0, 1], taken)
    b = pick_port_block([-2, 0, 1], taken)
    assert {a - 2, a, a + 1, b - 2, b, b + 1} <= taken
    assert len({a - 2, a, a + 1} & {b - 2, b, b + 1}) == 0


def test_xdist_workers_pick_ports_from_disjoint_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two pytest-xdist workers starting clusters at once never pick the same port block: a port
    is checked free when picked but bound only when the JVM starts. None picks from the part kept
    for the cluster they share."""
    whole = _settings.port_range({})
    shared = _settings._SHARED_PORTS
    assert whole[0] < shared[0] < shared[1] == whole[1]
    assert _settings.port_range({"PYTEST_XDIST_WORKER": "gw0", "PYTEST_XDIST_WORKER_COUNT": "1"}) == (
        whole[0],
        shared[0],
    )
    slices = [
        _settings.port_range({"PYTEST_XDIST_WORKER": f"gw{n}", "PYTEST_XDIST_WORKER_COUNT": "3"})
        for n in range(3)
    ]
    assert slices[0][0] == whole[0]
    assert slices[-1][1] <= shared[0]
    assert all(low < high <= nxt for (low, high), (nxt, _) in itertools.pairwise(slices))
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw2")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
    low, high = slices[2]
    taken: set[int] = set()
    assert all(low <= pick_port_block([-2, 0, 1], taken) < high for _ in range(5))


def test_the_owner_of_a_shared_cluster_picks_from_the_kept_part(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_settings, "_shared_owner", False)
    _settings.claim_shared_ports()
    assert _settings.port_range({"PYTEST_XDIST_WORKER": "gw0", "PYTEST_XDIST_WORKER_COUNT": "3"}) == (
        _settings._SHARED_PORTS
    )
    taken: set[int] = set()
    low, high = _settings._SHARED_PORTS
    assert all(low <= pick_port_block([-2, 0, 1], taken) < high for _ in range(5))


def test_home_conf_appears_whole(tmp_path: Path) -> None:
    """Tool JVMs of several processes share one home: its conf files are renamed into place whole."""
    _distribution.write_home_conf(tmp_path)
    files = sorted(p.name for p in (tmp_path / "conf").iterdir())
    assert files
    assert all(name.startswith("logback_") and name.endswith(".xml") for name in files)
    assert all((tmp_path / "conf" / name).read_text().startswith("<") for name in files)


def test_pom_lists_every_artifact_at_the_version() -> None:
    pom = _distribution._pom("server", "5.3.3", ["rocketmq-namesrv", "rocketmq-broker"])
    assert pom.count("<version>5.3.3</version></dependency>") == 2
    assert "<artifactId>rocketmq-broker</artifactId>" in pom


def test_bench_version(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _distribution.bench_version_for("5.3.3") == "5.5.0"
    assert _distribution.bench_version_for("4.9.7") == "4.7.0"
    monkeypatch.setenv("ROCKETMQ_BENCH_VERSION", "9.9.9")
    assert _distribution.bench_version_for("5.3.3") == "9.9.9"


def test_cached_distribution_runs_no_maven(monkeypatch: pytest.MonkeyPatch, private_cache: Path) -> None:
    lib = private_cache / "dist" / "server-1.2.3" / "lib"
    lib.mkdir(parents=True)
    (lib / "a.jar").write_bytes(b"jar")
    (lib.parent / ".complete").write_text("1.2.3\n")
    monkeypatch.setenv("PATH", "")  # no mvn: resolution must not need it
    cp = _distribution.resolve_server("1.2.3")
    assert cp.lib == lib
    assert cp.resolve_seconds == 0.0
    assert cp.size_bytes() == 3


def test_missing_maven_and_cache_is_a_cluster_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    with pytest.raises(ClusterError, match="not cached"):
        _distribution.resolve_server("1.2.3")


def test_pom_of_any_coordinates() -> None:
    pom = _distribution._coordinates_pom("kafka", "4.1.1", ["org.apache.kafka:kafka_2.13:4.1.1", "g.x:y:2"])
    assert (
        "<groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>4.1.1</version>"
        in pom
    )
    assert "<groupId>g.x</groupId><artifactId>y</artifactId><version>2</version>" in pom


def test_resolve_maven_uses_the_cache_only_for_the_same_coordinates(
    monkeypatch: pytest.MonkeyPatch, private_cache: Path
) -> None:
    coordinates = ["org.example:thing:1.0", "org.example:other:2.0"]
    lib = private_cache / "dist" / "thing-1.0" / "lib"
    lib.mkdir(parents=True)
    (lib / "thing-1.0.jar").write_bytes(b"jar")
    (lib.parent / ".complete").write_text("\n".join(coordinates) + "\n")
    monkeypatch.setenv("PATH", "")  # no mvn: only the cache can answer
    cp = _distribution.resolve_maven("thing", coordinates)
    assert (cp.name, cp.version, cp.lib, cp.resolve_seconds) == ("thing", "1.0", lib, 0.0)
    with pytest.raises(ClusterError, match="not cached"):  # a cache entry made for other artifacts
        _distribution.resolve_maven("thing", coordinates[:1])


@pytest.mark.parametrize("coordinates", [[], ["org.example:thing"], ["org.example::1.0"], ["a:b:c:d"]])
def test_resolve_maven_wants_full_coordinates(coordinates: list[str]) -> None:
    with pytest.raises(ClusterError, match="group:artifact:version"):
        _distribution.resolve_maven("thing", coordinates)


def test_backend_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROCKETMQ_BACKEND", raising=False)
    monkeypatch.setenv("ROCKETMQ_NAMESRV", "10.1.2.3:9876")
    assert choose_backend("jar") == "external"  # the env var overrides everything
    monkeypatch.delenv("ROCKETMQ_NAMESRV")
    assert choose_backend("docker") == "docker"
    monkeypatch.setenv("ROCKETMQ_BACKEND", "docker")
    assert choose_backend() == "docker"
    monkeypatch.setenv("ROCKETMQ_BACKEND", "jar")
    assert choose_backend() == "jar"
    with pytest.raises(ClusterError, match="unknown backend"):
        choose_backend("podman")


def _sleeper(marker: str, tmp_path: Path, *, die_with_parent: bool = False) -> JvmProcess:
    code = "import sys, time; print('booting', flush=True); time.sleep(0.2); print('boot success', flush=True); time.sleep(120)"
    return JvmProcess(
        "fake",
        [sys.executable, "-c", code, marker],
        log_path=tmp_path / "fake" / "stdout.log",
        env=dict(os.environ),
        cwd=tmp_path,
        die_with_parent=die_with_parent,
    )


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_process_boot_wait_pause_and_kill(tmp_path: Path) -> None:
    proc = _sleeper(marker_for("t1"), tmp_path)
    proc.start()
    try:
        assert wait_for_line(proc, "boot success", 10, "fake") == "boot success"
        proc.signal_group(signal.SIGSTOP)
        deadline = time.monotonic() + 5
        while _state(proc.pid) != "T" and time.monotonic() < deadline:
            time.sleep(0.01)  # the signal is delivered asynchronously
        assert _state(proc.pid) == "T"
        proc.signal_group(signal.SIGCONT)
    finally:
        proc.kill()
    assert not proc.running()


def test_boot_failure_reports_the_last_log_lines(tmp_path: Path) -> None:
    proc = JvmProcess(
        "broken",
        [sys.executable, "-c", "print('Please set the ROCKETMQ_HOME variable'); raise SystemExit(254)"],
        log_path=tmp_path / "b.log",
        env=dict(os.environ),
        cwd=tmp_path,
        die_with_parent=False,
    )
    proc.start()
    try:
        with pytest.raises(ClusterError, match=r"exited with code 254[\s\S]*ROCKETMQ_HOME"):
            wait_for_line(proc, "boot success", 10, "broker broken")
    finally:
        proc.kill()


def test_boot_timeout_is_a_cluster_error(tmp_path: Path) -> None:
    proc = _sleeper(marker_for("t2"), tmp_path)
    proc.start()
    try:
        with pytest.raises(ClusterError, match="did not boot within"):
            wait_for_line(proc, "never printed", 0.5, "fake")
    finally:
        proc.kill()


def test_stale_cluster_of_a_dead_owner_is_killed(tmp_path: Path) -> None:
    # The "owner" is a short-lived process that has already exited when cleanup runs.
    owner = subprocess.Popen([sys.executable, "-c", "pass"])
    owner.wait()
    proc = _sleeper(marker_for("stale1"), tmp_path)
    proc.start()
    # Until the child has exec'd, its command line is still pytest's, without the marker, and
    # cleanup rightly leaves it alone (seen under load: the sleeper lived on for 120 s).
    wait_for_line(proc, "booting", 30, "fake")
    workdir = tmp_path / "work"
    workdir.mkdir()
    reg = Registry(
        cluster_id="stale1",
        owner_pid=owner.pid,
        owner_start="0",
        detached=False,
        workdir=str(workdir),
        pids={"fake": proc.pid},
    )
    reg.save()
    try:
        assert cleanup_stale() == ["stale1"]
        # Judged by /proc: a killed process may stay a zombie until it is reaped.
        deadline = time.monotonic() + 30
        while _processes.pid_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _processes.pid_alive(proc.pid), _processes._command_line(proc.pid)
        assert not workdir.exists()
        assert not reg.path.exists()
    finally:
        proc.kill()


def test_cleanup_never_kills_a_pid_without_the_marker(tmp_path: Path) -> None:
    proc = _sleeper("no-marker-here", tmp_path)
    proc.start()
    reg = Registry(
        cluster_id="reused",
        owner_pid=2**22 + 7,  # no such process
        owner_start=None,
        detached=False,
        workdir=str(tmp_path / "nothing"),
        pids={"fake": proc.pid},
    )
    reg.save()
    try:
        assert cleanup_stale() == ["reused"]
        time.sleep(0.2)
        assert proc.running()  # the pid was "reused" by an unrelated process: left alone
    finally:
        proc.kill()


def test_live_owner_keeps_its_cluster(tmp_path: Path) -> None:
    reg = Registry(
        cluster_id="mine",
        owner_pid=os.getpid(),
        owner_start=_processes.process_start_time(os.getpid()),
        detached=False,
        workdir=str(tmp_path),
    )
    reg.save()
    assert cleanup_stale() == []
    assert reg.path.exists()


def test_jvm_dies_with_its_parent(tmp_path: Path) -> None:
    """PR_SET_PDEATHSIG: a child started by a process that is SIGKILLed dies too."""
    if not sys.platform.startswith("linux"):
        pytest.skip("PDEATHSIG is Linux-only; other platforms rely on the registry cleanup")
    script = tmp_path / "parent.py"
    log = tmp_path / "child.log"
    script.write_text(
        "import os, sys, time\n"
        "from pathlib import Path\n"
        "from rocketmq_py.testing._processes import JvmProcess\n"
        f"p = JvmProcess('c', [sys.executable, '-c', 'import time; time.sleep(120)'], log_path=Path({str(log)!r}),"
        " env=dict(os.environ), cwd=Path('.'), die_with_parent=True)\n"
        "p.start()\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(120)\n"
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert _processes.pid_alive(child)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    parent.stdout.close()
    deadline = time.monotonic() + 30
    while _processes.pid_alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _processes.pid_alive(child)


def test_a_jvm_started_from_a_short_lived_thread_outlives_that_thread(tmp_path: Path) -> None:
    """Linux sends the parent-death signal when the *thread* that forked the child ends: a broker
    restarted from a worker thread (trio.to_thread, a pool) must not die when that thread does."""
    if not sys.platform.startswith("linux"):
        pytest.skip("PDEATHSIG is Linux-only")
    proc = _sleeper(marker_for("t-thread"), tmp_path, die_with_parent=True)
    starter = threading.Thread(target=proc.start)
    starter.start()
    starter.join()
    try:
        assert wait_for_line(proc, "boot success", 10, "fake") == "boot success"
        time.sleep(0.5)  # the signal would have arrived by now
        assert proc.running(), f"killed with {proc.returncode()} when its starting thread ended"
    finally:
        proc.kill()
