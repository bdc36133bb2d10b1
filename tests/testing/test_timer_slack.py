"""The timer slack of the kit's RocketMQ JVMs (``RMQ_TIMER_SLACK_MS``): set on the spawner thread
before the fork, inherited by the child and kept across ``exec``; the next child without one gets the
thread's default again."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._processes import TIMER_SLACK_ENV, JvmProcess, timer_slack_ns

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="timer slack is Linux's")


def _slack(pid: int) -> int:
    return int(Path(f"/proc/{pid}/timerslack_ns").read_text())


def _sleeper(tmp_path: Path, name: str, slack: int | None) -> JvmProcess:
    proc = JvmProcess(
        name,
        ["sleep", "30"],
        log_path=tmp_path / f"{name}.log",
        env={"PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        die_with_parent=True,
        timer_slack_ns=slack,
    )
    proc.start()
    return proc


@linux
def test_a_jvm_gets_its_slack_and_the_next_one_the_default(tmp_path: Path) -> None:
    default = _slack(int(Path("/proc/thread-self").resolve().name))
    slow = _sleeper(tmp_path, "slack", 20_000_000)
    plain = _sleeper(tmp_path, "plain", None)
    try:
        assert _slack(slow.pid) == 20_000_000  # through setpriv and sh, across exec
        assert _slack(plain.pid) == default
    finally:
        slow.kill()
        plain.kill()


@pytest.mark.parametrize(("text", "ns"), [("", None), ("20", 20_000_000), (" 0.5 ", 500_000), ("0", 0)])
def test_the_setting_in_milliseconds(text: str, ns: int | None) -> None:
    assert timer_slack_ns({TIMER_SLACK_ENV: text}) == ns
    assert timer_slack_ns({}) is None


@pytest.mark.parametrize("text", ["fast", "-1", "60001", "nan"])
def test_a_bad_setting_is_named(text: str) -> None:
    with pytest.raises(ClusterError, match=f"RMQ_TIMER_SLACK_MS='{text}': expected milliseconds"):
        timer_slack_ns({TIMER_SLACK_ENV: text})
