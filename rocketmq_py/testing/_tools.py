"""Running the official Java tools: mqadmin and the benchmark Producer / Consumer.

Both are plain JVM main classes on a Maven-resolved classpath (see ``_distribution``). Their output
is captured, with the logback start-up chatter of RocketMQ 5.x filtered out.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._distribution import (
    DEFAULT_VERSION,
    cache_dir,
    find_java,
    resolve_bench,
    resolve_server,
    write_home_conf,
)
from rocketmq_py.testing._java_programs import compiled
from rocketmq_py.testing._processes import popen_tied

__all__ = [
    "BENCH_MAIN_CLASSES",
    "MQADMIN_MAIN_CLASS",
    "ToolResult",
    "run_java_bench",
    "run_java_program",
    "run_mqadmin",
    "start_java_program",
]

MQADMIN_MAIN_CLASS = "org.apache.rocketmq.tools.command.MQAdminStartup"
BENCH_MAIN_CLASSES = {
    "producer": "org.apache.rocketmq.example.benchmark.Producer",
    "consumer": "org.apache.rocketmq.example.benchmark.Consumer",
    "batch-producer": "org.apache.rocketmq.example.benchmark.BatchProducer",
    "transaction-producer": "org.apache.rocketmq.example.benchmark.TransactionProducer",
}
# A short-lived tool JVM starts faster with the C1 compiler only and the serial collector.
_TOOL_JVM_OPTS = ["-Xms64m", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
_BENCH_JVM_OPTS = ["-Xms256m", "-Xmx512m", "-XX:+UseG1GC"]
# A Java client program: the 4.x clients' netty reads java.nio internals, closed by default on Java 17.
_CLIENT_JVM_OPTS = [
    "-Xms64m",
    "-Xmx256m",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of one tool run."""

    argv: tuple[str, ...]
    returncode: int | None
    output: str
    timed_out: bool

    @property
    def ok(self) -> bool:
        """Exited with 0 in time."""
        return self.returncode == 0 and not self.timed_out

    def check(self) -> ToolResult:
        """Return self, or raise ClusterError with the output when the tool failed."""
        if not self.ok:
            why = "timed out" if self.timed_out else f"exited with {self.returncode}"
            raise ClusterError(f"{' '.join(self.argv[-6:])} {why}:\n{self.output[-4000:]}")
        return self


def _clean(text: str) -> str:
    return "\n".join(ln for ln in text.splitlines() if "|-INFO in " not in ln and "|-WARN in " not in ln)


def _java_command(
    classpath: str, main_class: str, args: Sequence[str], jvm_opts: Sequence[str], home: Path | None
) -> tuple[tuple[str, ...], dict[str, str], Path]:
    """The argv, environment and working directory of a Java tool run in its home (see :func:`run_java`).

    A ``main_class`` that names a ``.java`` file runs compiled once (:func:`compiled`) where a
    ``javac`` is at hand.
    """
    if main_class.endswith(".java") and Path(main_class).is_file():
        program = compiled(Path(main_class), classpath)
        if program is not None:
            classpath, main_class = program
    home = home or cache_dir() / "tools-home"
    write_home_conf(home)
    env = dict(os.environ, ROCKETMQ_HOME=str(home))
    argv = (
        find_java(),
        *jvm_opts,
        f"-Duser.home={home}",
        f"-Drocketmq.home.dir={home}",
        "-cp",
        classpath,
        main_class,
        *args,
    )
    return argv, env, home


def run_java(
    classpath: str,
    main_class: str,
    args: Sequence[str],
    *,
    jvm_opts: Sequence[str] = (),
    timeout: float | None = 120.0,
    home: Path | None = None,
) -> ToolResult:
    """Run ``main_class`` and capture its output; a timeout kills it and is reported, not raised.

    The tool runs in its home directory (``ROCKETMQ_HOME``; default the shared tools home in the
    cache): some (``mqadmin consumerStatus``) write files into their working directory, and mqadmin
    reads ACL credentials from ``conf/tools.yml`` there.
    """
    argv, env, home = _java_command(classpath, main_class, args, jvm_opts, home)
    # Tied to this process: a tool still running when it dies (killed, or a benchmark with no end)
    # dies with it instead of spinning on alone.
    proc = popen_tied(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=home
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # its own session: the JVM and anything it forked
        out, _ = proc.communicate()
        return ToolResult(argv, None, _clean(out.decode(errors="replace")), timed_out=True)
    return ToolResult(argv, proc.returncode, _clean(out.decode(errors="replace")), timed_out=False)


def _with_namesrv(args: Sequence[str], namesrv: str | None) -> list[str]:
    out = list(args)
    if namesrv and "-n" not in out and "--namesrvAddr" not in out:
        out += ["-n", namesrv]
    return out


def run_mqadmin(
    args: Sequence[str],
    *,
    namesrv: str | None = None,
    version: str = DEFAULT_VERSION,
    timeout: float | None = 120.0,
    jvm_opts: Sequence[str] = (),
    home: Path | None = None,
) -> ToolResult:
    """Run ``mqadmin <args>`` (``-n namesrv`` is added when given and absent).

    ``jvm_opts`` are added to the tool's JVM (e.g. TLS system properties); ``home`` is its
    ROCKETMQ_HOME (see :func:`run_java`).
    """
    cp = resolve_server(version)
    return run_java(
        cp.classpath,
        MQADMIN_MAIN_CLASS,
        _with_namesrv(args, namesrv),
        jvm_opts=[*_TOOL_JVM_OPTS, *jvm_opts],
        timeout=timeout,
        home=home,
    )


def run_java_bench(
    tool: str,
    args: Sequence[str],
    *,
    namesrv: str | None = None,
    version: str = DEFAULT_VERSION,
    timeout: float | None = 600.0,
) -> ToolResult:
    """Run one of the official benchmark tools (``producer``, ``consumer``, ``batch-producer``, ...)."""
    try:
        main = BENCH_MAIN_CLASSES[tool]
    except KeyError:
        raise ClusterError(
            f"unknown benchmark tool {tool!r}; one of {', '.join(BENCH_MAIN_CLASSES)}"
        ) from None
    cp = resolve_bench(version)
    return run_java(
        cp.classpath, main, _with_namesrv(args, namesrv), jvm_opts=_BENCH_JVM_OPTS, timeout=timeout
    )


def start_java_program(
    source: str | Path, args: Sequence[str], *, version: str = DEFAULT_VERSION
) -> subprocess.Popen[bytes]:
    """Start a single-file Java program as :func:`run_java_program` runs it, and leave it running.

    For a program that talks with the test while it runs: its stdin and stdout (stderr merged)
    are pipes. It is tied to this process, in a session of its own; stop it with ``killpg``.
    """
    argv, env, home = _java_command(
        resolve_bench(version).classpath, str(source), args, _CLIENT_JVM_OPTS, None
    )
    return popen_tied(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.PIPE, env=env, cwd=home
    )


def run_java_program(
    source: str | Path, args: Sequence[str], *, version: str = DEFAULT_VERSION, timeout: float | None = 180.0
) -> ToolResult:
    """Run a single-file Java program (``java Program.java``) with the Java client of the benchmark
    tools that go with server ``version`` (``rocketmq-client`` 5.5.0 for 5.x, 4.7.0 for 4.x)."""
    return run_java(
        resolve_bench(version).classpath, str(source), args, jvm_opts=_CLIENT_JVM_OPTS, timeout=timeout
    )
