"""JVM processes that never outlive their owner.

Three mechanisms, so that no JVM is left behind even when the Python process dies:

1. Every JVM runs in its own process group (``start_new_session``), so a signal reaches the JVM and
   anything it forks; on Linux it also gets ``PR_SET_PDEATHSIG(SIGKILL)``, so the kernel kills it
   when the process that started it dies, even by SIGKILL. The kernel sends that signal when the
   *thread* that forked the JVM ends, so every such JVM is forked by one spawner thread that lives
   as long as the interpreter: a broker restarted from a worker thread (``trio.to_thread``, a pool)
   used to die as soon as that thread retired, about 10 s later for trio's idle workers. The signal
   is armed in the child after the fork; a parent that dies before that moment (SIGKILLed right
   after starting it, on a busy machine) would leave it unarmed for good, so once it is armed the
   child checks that its parent is still the process that started it, and exits if not.
2. ``atexit`` stops every cluster this process started (unless started ``detached``).
3. A registry file per cluster under ``<cache>/run/`` records the owner (pid and start time) and
   the JVMs' pids. The next start of any cluster kills the JVMs of registries whose owner is gone.
   A pid is only signalled if its command line still carries the cluster's marker
   (``-Drocketmq_py.cluster=<id>``), so a recycled pid is never hit.

A JVM may be given a Linux timer slack (``timer_slack_ns``; the kit's RocketMQ nodes take
:data:`TIMER_SLACK_ENV`): set on the spawner thread just before the fork, it is inherited by the
child and kept across ``exec``, so every thread of the JVM gets it. A broker's idle threads poll on
short sleeps (``ReputMessageService`` every 1 ms, ``BrokerFastFailure`` every 10 ms); a slack lets
the kernel wake them together, and an idle 5.3.3 broker used half the CPU with 20 ms (2.2 CPU-s a
minute instead of 4.4, ``/proc/<pid>/task/*/stat``), at the price of up to that much more delay
before a stored message is dispatched to its consume queue.

Detached clusters (``python -m rocketmq_py.testing up``) outlive the command that started them on
purpose; ``down`` stops them.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._distribution import cache_dir

__all__ = [
    "TIMER_SLACK_ENV",
    "JvmProcess",
    "Registry",
    "cleanup_stale",
    "marker_for",
    "pid_alive",
    "process_start_time",
    "registry_dir",
    "timer_slack_ns",
]

_PR_SET_PDEATHSIG = 1
_PR_SET_TIMERSLACK = 29
_PR_GET_TIMERSLACK = 30
#: ``RMQ_TIMER_SLACK_MS``: milliseconds of timer slack for the kit's RocketMQ JVMs (NameServers,
#: brokers, Proxies, controllers; see the module docstring). Unset: the kernel's default (50 µs).
TIMER_SLACK_ENV: Final = "RMQ_TIMER_SLACK_MS"


def timer_slack_ns(environ: Mapping[str, str] | None = None) -> int | None:
    """The timer slack :data:`TIMER_SLACK_ENV` asks for, in ns (``None``: not set).

    Raises:
        ClusterError: the value is not a number of milliseconds from 0 to 60000 (0: the kernel's
            default).
    """
    text = (os.environ if environ is None else environ).get(TIMER_SLACK_ENV, "").strip()
    if not text:
        return None
    try:
        ms = float(text)
    except ValueError:
        ms = -1.0
    if not 0 <= ms <= 60_000:
        raise ClusterError(f"{TIMER_SLACK_ENV}={text!r}: expected milliseconds from 0 to 60000, such as 20")
    return int(ms * 1_000_000)


def _set_timer_slack(libc: Any, ns: int) -> None:
    """This thread's timer slack (Linux; inherited by what it forks next). ``0`` is the default."""
    if libc is not None:
        libc.prctl(_PR_SET_TIMERSLACK, ctypes.c_ulong(ns), 0, 0, 0)


def marker_for(cluster_id: str) -> str:
    """The JVM system property that tags every process of one cluster."""
    return f"-Drocketmq_py.cluster={cluster_id}"


def registry_dir() -> Path:
    path = cache_dir() / "run"
    path.mkdir(parents=True, exist_ok=True)
    return path


def pid_alive(pid: int) -> bool:
    """True when ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():
        with contextlib.suppress(OSError, IndexError):
            return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def process_start_time(pid: int) -> str | None:
    """An opaque token that differs between two processes that had the same pid."""
    stat = Path(f"/proc/{pid}/stat")
    with contextlib.suppress(OSError, IndexError):
        return stat.read_text().rsplit(")", 1)[1].split()[19]
    try:
        out = subprocess.run(
            ["ps", "-o", "lstart=", "-p", str(pid)], capture_output=True, text=True, check=False
        )
    except OSError:
        return None
    return out.stdout.strip() or None


def _command_line(pid: int) -> str:
    cmdline = Path(f"/proc/{pid}/cmdline")
    with contextlib.suppress(OSError):
        return cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
    try:
        out = subprocess.run(
            ["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True, check=False
        )
    except OSError:
        return ""
    return out.stdout


def _kill_marked(pid: int, marker: str) -> bool:
    """SIGKILL ``pid``'s process group if its command line carries ``marker``."""
    if not pid_alive(pid) or marker not in _command_line(pid):
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)
    return True


def _die_with_parent(parent: int) -> Callable[[], None]:
    """The ``preexec_fn`` of the fallback: arm the signal, then exit if ``parent`` is gone already."""

    def arm() -> None:  # pragma: no cover - runs in the child between fork and exec
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return arm


#: Run by ``sh`` after ``setpriv`` armed the signal: go on only if the parent that forked us
#: (``$1``) is still our parent; a parent that died before the signal was armed has left us with
#: another one (init or a subreaper), and no signal will ever come.
_PARENT_CHECK: Final = '[ "$PPID" = "$1" ] || exit 1; shift; exec "$@"'


def _tied(argv: Sequence[str]) -> tuple[list[str], Callable[[], None] | None]:
    """``argv`` and the ``preexec_fn`` that give a child the parent-death signal (Linux only).

    util-linux's ``setpriv`` sets the signal and execs ``argv`` through ``sh``, which checks that
    the parent is still this process (see the module docstring), so no Python code runs in the
    forked child. A ``preexec_fn`` does, and there the other threads' thread-locals are freed and
    their finalizers run: py4j (pyspark) shuts down a thread's gateway connection that way, which
    also cut the parent's connection (the Spark driver thread lost its active session). The
    ``preexec_fn`` is only the fallback for a system without ``setpriv``.
    """
    if not sys.platform.startswith("linux"):
        return list(argv), None
    setpriv = shutil.which("setpriv")
    if setpriv is not None:
        check = ["/bin/sh", "-c", _PARENT_CHECK, "sh", str(os.getpid())]
        return [setpriv, "--pdeathsig", "KILL", "--", *check, *argv], None
    return list(argv), _die_with_parent(os.getpid())


_Spawn = tuple[Callable[[], "subprocess.Popen[bytes]"], "Future[subprocess.Popen[bytes]]", int | None]
_spawns: queue.SimpleQueue[_Spawn] = queue.SimpleQueue()
_spawner_lock = threading.Lock()
_spawner: threading.Thread | None = None


def _spawn_forever() -> None:
    libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
    # PR_SET_TIMERSLACK with 0 restores the thread's default slack.
    current = 0
    while True:
        popen, done, slack = _spawns.get()
        try:
            if (slack or 0) != current:
                _set_timer_slack(libc, slack or 0)
                current = slack or 0
            done.set_result(popen())
        except BaseException as exc:  # handed to the caller
            done.set_exception(exc)


def popen_on_spawner(
    popen: Callable[[], subprocess.Popen[bytes]], *, timer_slack_ns: int | None = None
) -> subprocess.Popen[bytes]:
    """Run ``popen`` on the interpreter-long spawner thread, so the child's parent-death signal
    fires when this process ends, not when the calling thread does (see the module docstring);
    with ``timer_slack_ns``, the child gets that timer slack (Linux)."""
    global _spawner
    with _spawner_lock:
        if _spawner is None or not _spawner.is_alive():
            # Named outside the clients' "rocketmq-py" thread prefix: tests look for client threads
            # left running by that prefix, and this one lives as long as the interpreter on purpose.
            _spawner = threading.Thread(
                target=_spawn_forever, name="rocketmq_py.testing spawner", daemon=True
            )
            _spawner.start()
    done: Future[subprocess.Popen[bytes]] = Future()
    _spawns.put((popen, done, timer_slack_ns))
    return done.result()


def popen_tied(argv: Sequence[str], **options: Any) -> subprocess.Popen[bytes]:
    """Start ``argv`` in its own session, to be killed with this process (Linux: by the kernel).

    For short-lived tools (mqadmin, the Java benchmarks): forked on the spawner thread with the
    parent-death signal, so that a tool left running (a benchmark producer with no end) dies with
    the Python process that started it, even when that process is killed.
    """
    command, preexec = _tied(argv)

    def popen() -> subprocess.Popen[bytes]:
        return subprocess.Popen(command, start_new_session=True, preexec_fn=preexec, **options)

    return popen_on_spawner(popen)


@dataclass
class Registry:
    """What one cluster's registry file holds."""

    cluster_id: str
    owner_pid: int
    owner_start: str | None
    detached: bool
    workdir: str
    backend: str = "jar"
    namesrv: str = ""
    brokers: dict[str, str] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    version: str = ""
    #: ``{"acl": bool, "tls": bool}`` of a LocalCluster: how its tools connect (``<workdir>/tools-home``).
    shape: dict[str, bool] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return registry_dir() / f"{self.cluster_id}.json"

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2, sort_keys=True))
        tmp.replace(self.path)

    def remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    @classmethod
    def load(cls, path: Path) -> Registry | None:
        try:
            data = json.loads(path.read_text())
            return cls(**data)
        except (OSError, ValueError, TypeError):
            return None

    @classmethod
    def all(cls) -> list[Registry]:
        found = [cls.load(p) for p in sorted(registry_dir().glob("*.json"))]
        return [r for r in found if r is not None]

    def owner_alive(self) -> bool:
        return pid_alive(self.owner_pid) and process_start_time(self.owner_pid) == self.owner_start

    def kill_all(self) -> list[str]:
        """SIGKILL every JVM of this cluster still running; returns the names killed."""
        marker = marker_for(self.cluster_id)
        return [name for name, pid in self.pids.items() if _kill_marked(pid, marker)]

    def discard(self) -> None:
        """Kill what is left, delete the work directory and the registry file."""
        self.kill_all()
        shutil.rmtree(self.workdir, ignore_errors=True)
        self.remove()


def cleanup_stale() -> list[str]:
    """Stop the JVMs of clusters whose owner died; returns their cluster ids."""
    cleaned = []
    for reg in Registry.all():
        if reg.detached:
            if not any(pid_alive(pid) for pid in reg.pids.values()):
                reg.discard()
            continue
        if reg.owner_pid == os.getpid() or reg.owner_alive():
            continue
        reg.discard()
        cleaned.append(reg.cluster_id)
    return cleaned


class JvmProcess:
    """One JVM (NameServer, broker or tool) in its own process group, output to a log file."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        log_path: Path,
        env: dict[str, str],
        cwd: Path,
        die_with_parent: bool,
        timer_slack_ns: int | None = None,
    ) -> None:
        self.name = name
        #: The JVM's timer slack (see the module docstring; only with ``die_with_parent``).
        self.timer_slack_ns = timer_slack_ns
        self.argv = list(argv)
        self.log_path = log_path
        self.env = env
        self.cwd = cwd
        self.die_with_parent = die_with_parent and sys.platform.startswith("linux")
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_offset = 0

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise RuntimeError(f"{self.name} was never started")
        return self._proc.pid

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        # Appending keeps the output of earlier runs (restarts) for post-mortems; boot detection
        # only reads what this run wrote.
        with open(self.log_path, "ab") as log:
            self._log_offset = log.tell()
            command, preexec = _tied(self.argv) if self.die_with_parent else (self.argv, None)

            def popen() -> subprocess.Popen[bytes]:
                return subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=self.env,
                    cwd=self.cwd,
                    start_new_session=True,
                    preexec_fn=preexec,
                )

            self._proc = (
                popen_on_spawner(popen, timer_slack_ns=self.timer_slack_ns)
                if self.die_with_parent
                else popen()
            )

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def returncode(self) -> int | None:
        return None if self._proc is None else self._proc.poll()

    def output_since_start(self) -> str:
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self._log_offset)
                return log.read().decode(errors="replace")
        except OSError:
            return ""

    def tail(self, lines: int = 40) -> str:
        text = [ln for ln in self.output_since_start().splitlines() if not _is_logback_noise(ln)]
        return "\n".join(text[-lines:])

    def signal_group(self, sig: signal.Signals) -> None:
        if self._proc is None or self._proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, sig)

    def kill(self, timeout: float = 10.0) -> None:
        """SIGKILL the process group and reap the JVM."""
        if self._proc is None:
            return
        self.signal_group(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout)

    def terminate(self, timeout: float = 15.0) -> None:
        """SIGTERM (the JVM's shutdown hooks run), then SIGKILL after ``timeout``."""
        if self._proc is None or self._proc.poll() is not None:
            return
        self.signal_group(signal.SIGCONT)  # a paused JVM cannot run its shutdown hooks
        self.signal_group(signal.SIGTERM)
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()


def _is_logback_noise(line: str) -> bool:
    return "|-INFO in " in line or "|-WARN in " in line


def wait_for_line(proc: JvmProcess, needle: str, timeout: float, what: str) -> str:
    """Wait until ``needle`` appears in ``proc``'s output of this run; return that line.

    Raises:
        ClusterError: the process exited, or the timeout passed; the message carries the last log lines.
    """
    deadline = time.monotonic() + timeout
    while True:
        out = proc.output_since_start()
        for line in out.splitlines():
            if needle in line:
                return line
        code = proc.returncode()
        if code is not None:
            raise ClusterError(
                f"{what} exited with code {code} before booting; last log lines:\n{proc.tail()}"
            )
        if time.monotonic() > deadline:
            raise ClusterError(f"{what} did not boot within {timeout:.0f} s; last log lines:\n{proc.tail()}")
        time.sleep(0.1)


_atexit_callbacks: list[Callable[[], None]] = []
_atexit_registered = False


def _run_atexit() -> None:
    for cb in reversed(_atexit_callbacks):
        with contextlib.suppress(Exception):
            cb()


def on_exit(cb: Callable[[], None]) -> Callable[[], None]:
    """Run ``cb`` when the interpreter exits; returns a function that cancels it."""
    global _atexit_registered
    if not _atexit_registered:
        atexit.register(_run_atexit)
        _atexit_registered = True
    _atexit_callbacks.append(cb)

    def cancel() -> None:
        with contextlib.suppress(ValueError):
            _atexit_callbacks.remove(cb)

    return cancel
