"""What the side-by-side benchmarks share: watched processes, CPU seconds from /proc, medians.

A :class:`Watched` process is started tied to this one (it dies with it), its output read line by
line in a thread; at every line the thread samples the process's CPU seconds (user + system of all
its threads, ``/proc/<pid>/stat``) and the brokers' (:func:`broker_pids`). A window between two
lines then gives both sides' CPU over exactly the same stretch of wall-clock time: the Java tools
report once a second, our children print a line when their measured window opens and closes.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import statistics
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rocketmq_py.testing._processes import popen_tied

_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads); 0.0 once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime (fields 14, 15)


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident set (VmHWM) in MiB; 0.0 once it is gone."""
    try:
        found = re.search(r"VmHWM:\s+(\d+)", Path(f"/proc/{pid}/status").read_text())
    except OSError:
        return 0.0
    return int(found.group(1)) / 1024 if found else 0.0


def jvm_pids(main_class: str, marker: str | None = None) -> list[int]:
    """This machine's JVMs running ``main_class``; with ``marker``, only those whose command line holds it
    (the kit tags every JVM of a cluster: ``rocketmq_py.testing._processes.marker_for``)."""
    pids = []
    wanted = main_class.encode()
    tag = marker.encode() if marker else b""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if wanted in cmdline and tag in cmdline:
            pids.append(int(entry.name))
    return pids


def broker_pids(marker: str | None = None) -> list[int]:
    """This machine's RocketMQ broker JVMs (the local cluster's; their CPU is sampled too)."""
    return jvm_pids("org.apache.rocketmq.broker.BrokerStartup", marker)


def proxy_pids(marker: str | None = None) -> list[int]:
    """This machine's RocketMQ Proxy JVMs (``ProxyStartup``)."""
    return jvm_pids("org.apache.rocketmq.proxy.ProxyStartup", marker)


@dataclass(frozen=True, slots=True)
class Line:
    """One output line and what was sampled when it arrived."""

    at: float  # time.perf_counter()
    text: str
    cpu: float  # the watched process's CPU seconds so far
    broker_cpu: float  # the brokers' CPU seconds so far
    proxy_cpu: float = 0.0  # the Proxy's CPU seconds so far (when ``Watched.proxies`` names it)


@dataclass
class Watched:
    """A child process whose lines are timestamped and CPU-sampled as they arrive.

    ``brokers`` are the broker JVMs sampled (default: every broker of the machine), ``proxies`` the
    Proxy JVMs (default none).
    """

    argv: Sequence[str]
    env: dict[str, str] | None = None
    cwd: Path | None = None
    lines: list[Line] = field(default_factory=list)
    brokers: list[int] | None = None
    proxies: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._brokers = broker_pids() if self.brokers is None else self.brokers
        self.proc = popen_tied(
            list(self.argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self.env,
            cwd=self.cwd,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.append(Line(time.perf_counter(), raw.decode(errors="replace"), *self.sample()))

    def sample(self) -> tuple[float, float, float]:
        """(this process's, the brokers', the Proxy's CPU seconds) now."""
        return (
            cpu_seconds(self.proc.pid),
            sum(cpu_seconds(pid) for pid in self._brokers),
            sum(cpu_seconds(pid) for pid in self.proxies),
        )

    def wait_for(self, pattern: str, timeout: float) -> Line:
        """The first line matching ``pattern``; SystemExit when the process ends or time runs out."""
        deadline = time.perf_counter() + timeout
        seen = 0
        while True:
            for line in self.lines[seen:]:
                if re.search(pattern, line.text):
                    return line
            seen = len(self.lines)
            if self.proc.poll() is not None and seen == len(self.lines):
                self._reader.join(2)
                if len(self.lines) == seen:
                    raise SystemExit(f"{self.argv[-1]!r} ended before {pattern!r}:\n{self.tail()}")
            if time.perf_counter() > deadline:
                raise SystemExit(f"no {pattern!r} within {timeout:g} s:\n{self.tail()}")
            time.sleep(0.05)

    def tail(self, count: int = 40) -> str:
        """The last output lines, for an error message."""
        return "".join(line.text for line in self.lines[-count:])

    def stop(self) -> None:
        """Kill the process (and anything it started) and wait for it."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self._reader.join(5)


def median(values: Sequence[float]) -> float:
    """The median (the mean of the middle two for an even count)."""
    return statistics.median(values)


def ratio_line(name: str, ours: Sequence[float], java: Sequence[float], label: str = "ours/Java") -> str:
    """``name: median ratio ours/Java r (per round ...)`` for rounds paired in order."""
    per_round = ", ".join(f"{o / j:.2f}" for o, j in zip(ours, java, strict=True) if j)
    return (
        f"{name}: median ratio {label} {median([o / j for o, j in zip(ours, java, strict=True) if j]):.2f}"
        f" (per round {per_round})"
    )


#: The column names of the benchmarks' sides in result files (``ours`` is the trio API).
RESULT_SIDES = {"java": "java", "ours": "trio", "aio": "asyncio"}


def write_results(path: str | None, benchmark: str, rows: list[dict[str, object]]) -> None:
    """Write ``rows`` (``case``, ``side``, ``round``, ``rate`` msg/s, ``cpu_us``) as JSON for ``plot.py``.

    Each row gets ``benchmark``; sides are renamed by :data:`RESULT_SIDES`. Nothing when ``path``
    is ``None``.
    """
    if path is None:
        return
    import json

    out = [
        {"benchmark": benchmark, **row, "side": RESULT_SIDES.get(str(row["side"]), str(row["side"]))}
        for row in rows
    ]
    Path(path).write_text(json.dumps(out, indent=1) + "\n")
    print(f"results written to {path}")
