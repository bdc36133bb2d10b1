"""Tool processes (mqadmin, the Java benchmarks) die with the Python process that started them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from rocketmq_py.testing._processes import popen_tied

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux's")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie no one reaped yet is dead too
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_tool_dies_when_its_python_parent_is_killed() -> None:
    code = textwrap.dedent(
        """
        import sys, threading, time
        from rocketmq_py.testing._processes import popen_tied
        def start():  # from a short-lived thread, as trio.to_thread does
            tool = popen_tied(["sleep", "60"])
            print(tool.pid, flush=True)
        t = threading.Thread(target=start); t.start(); t.join()
        time.sleep(60)
        """
    )
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) as parent:
        assert parent.stdout is not None
        tool_pid = int(parent.stdout.readline())
        time.sleep(0.5)  # the starting thread is gone: the tool must outlive it
        assert _alive(tool_pid)
        parent.kill()
    deadline = time.monotonic() + 10
    while _alive(tool_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(tool_pid)


def test_popen_tied_gives_the_tool_its_own_session() -> None:
    with popen_tied(["sleep", "5"]) as tool:
        assert os.getsid(tool.pid) == tool.pid
        tool.kill()


def test_starting_a_tool_leaves_other_threads_connections_open() -> None:
    """The fork must not run Python code in the child: there, the other threads' thread-locals are
    freed and their finalizers run. py4j (pyspark) closes a thread's gateway connection that way,
    and the shutdown reached the parent's socket: the Spark driver's thread lost its active session
    (Spark then refused the pushdown reader of ``df.rdd``)."""
    import socket
    import threading

    ours, peer = socket.socketpair()

    class Connection:  # like py4j's: shut down when the owning thread's local goes away
        def __del__(self) -> None:
            ours.shutdown(socket.SHUT_RDWR)

    local = threading.local()
    local.connection = Connection()
    try:
        with popen_tied(["true"]) as tool:
            tool.wait(10)
        peer.setblocking(False)
        with pytest.raises(BlockingIOError):  # b"" here: the child shut our connection down
            peer.recv(1)
    finally:
        del local.connection
        ours.close()
        peer.close()


SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


def test_a_child_whose_parent_died_before_the_signal_was_armed_exits() -> None:
    """The parent-death signal is armed after the fork; a parent gone by then never sends it, and
    the child (reparented) would live on: once armed, it checks its parent. Here the tied command
    runs under another parent than the process that tied it, which is what the child sees then.
    (test_cluster_parts.py::test_jvm_dies_with_its_parent SIGKILLs the parent right after the
    start and failed 2 runs in 15 under load before the check: the sleeper lived its 120 s.)"""
    from rocketmq_py.testing import _processes

    command, preexec = _processes._tied(SLEEPER)
    assert preexec is None  # setpriv is there (util-linux)
    started = time.monotonic()
    # A shell in between: the tied child's parent is the shell, not this process.
    run = subprocess.run(
        ["/bin/sh", "-c", '"$@"; echo "rc=$?"', "sh", *command],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.stdout.strip() == "rc=1", run.stdout + run.stderr
    assert time.monotonic() - started < 30


def test_the_preexec_fallback_checks_the_parent_too() -> None:
    """Without setpriv the signal is armed by a preexec_fn, which checks the parent the same way:
    told to expect another parent than the one it has, the child exits before it runs anything."""
    from rocketmq_py.testing import _processes

    started = time.monotonic()
    run = subprocess.run(
        SLEEPER, preexec_fn=_processes._die_with_parent(os.getppid()), timeout=60, check=False
    )
    assert run.returncode == 1
    assert time.monotonic() - started < 30
    ran = subprocess.run(
        [sys.executable, "-c", "print('ran')"],
        preexec_fn=_processes._die_with_parent(os.getpid()),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (ran.returncode, ran.stdout.strip()) == (0, b"ran")


def test_a_tied_child_of_a_live_parent_runs() -> None:
    with popen_tied([sys.executable, "-c", "print('ran')"], stdout=subprocess.PIPE) as tool:
        out, _ = tool.communicate(timeout=60)
    assert (tool.returncode, out.strip()) == (0, b"ran")
