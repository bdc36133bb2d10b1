"""``integration/_java_consumer.start_java_consumer``: a benchmark Consumer that exited because a
request of its start was lost is started again; any other exit is the test's failure. No cluster
and no Java: a shell script stands in for the JVM, through the same JvmProcess."""

from __future__ import annotations

from pathlib import Path

import pytest

from integration import _java_consumer
from integration._java_consumer import channel_log, start_java_consumer
from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._processes import JvmProcess

#: What the 5.3.3 benchmark Consumer printed in CI when its first route request was lost.
LOST = (
    'Exception in thread "main" java.lang.IllegalStateException: org.apache.rocketmq.remoting.exception.'
    "RemotingSendRequestException: send request to </127.0.0.1:12384> failed"
)


def stand_in(tmp_path: Path, *runs: str) -> JvmProcess:
    """A process whose n-th start runs the n-th shell snippet of ``runs``."""
    for n, run in enumerate(runs, 1):
        (tmp_path / f"run-{n}.sh").write_text(run)
    script = 'n=$(( $(cat count 2>/dev/null || echo 0) + 1 )); echo $n > count; exec sh "run-$n.sh"'
    return JvmProcess(
        "stand-in",
        ["sh", "-c", script],
        log_path=tmp_path / "out.log",
        env={"PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        die_with_parent=False,
    )


def starts(tmp_path: Path) -> int:
    return int((tmp_path / "count").read_text())


def test_a_consumer_that_lost_its_start_request_is_started_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "logs" / "rocketmqlogs" / "tools_default.log"
    log.parent.mkdir(parents=True)
    log.write_text("INFO NETTY CLIENT PIPELINE: CLOSE channel[addr=127.0.0.1:12384, id=1]\nINFO other\n")
    java = stand_in(tmp_path, f"echo '{LOST}'; exit 1", "echo 'Consumer Started.'; sleep 30")
    try:
        assert start_java_consumer(java, tmp_path, timeout=10) == "Consumer Started."
        assert java.running()
    finally:
        java.kill()
    assert starts(tmp_path) == 2
    out = capsys.readouterr().out
    assert "lost a request of its start" in out
    assert "CLOSE channel[addr=127.0.0.1:12384" in out
    assert "INFO other" not in out


def test_other_exits_are_the_tests_failure(tmp_path: Path) -> None:
    java = stand_in(
        tmp_path, "echo 'Error: Could not find or load main class'; exit 1", "echo 'Consumer Started.'"
    )
    with pytest.raises(ClusterError, match="exited with code 1 before booting") as info:
        start_java_consumer(java, tmp_path, timeout=10)
    assert starts(tmp_path) == 1
    assert "the Java client's channels:\n(nothing about channels" in str(info.value)


def test_the_starts_are_bounded(tmp_path: Path) -> None:
    java = stand_in(tmp_path, *[f"echo '{LOST}'; exit 1"] * (_java_consumer.ATTEMPTS + 1))
    with pytest.raises(ClusterError, match="RemotingSendRequestException"):
        start_java_consumer(java, tmp_path, timeout=10)
    assert starts(tmp_path) == _java_consumer.ATTEMPTS


def test_a_consumer_that_never_starts_is_not_started_again(tmp_path: Path) -> None:
    java = stand_in(tmp_path, "sleep 30", "echo 'Consumer Started.'")
    try:
        with pytest.raises(ClusterError, match="did not boot within 1 s"):
            start_java_consumer(java, tmp_path, timeout=1)
    finally:
        java.kill()
    assert starts(tmp_path) == 1


def test_the_channel_log_keeps_the_channel_lines_only(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "rocketmqlogs" / "tools_default.log"
    log.parent.mkdir(parents=True)
    log.write_text("a createChannel: begin\nb unrelated\nc closeChannel: the channel\n")
    (log.parent / "tools.log").write_text("d NETTY CLIENT PIPELINE: CLOSE\n")
    assert channel_log(tmp_path).splitlines() == [
        "tools.log: d NETTY CLIENT PIPELINE: CLOSE",
        "tools_default.log: a createChannel: begin",
        "tools_default.log: c closeChannel: the channel",
    ]
